// ProcessMetrics: the standard process_* metrics every Prometheus client library exports (the
// reference driver's Go client does), read from /proc/self at each scrape:
//   process_cpu_seconds_total      counter  user + system CPU time
//   process_resident_memory_bytes  gauge    resident set size
//   process_virtual_memory_bytes   gauge    virtual memory size
//   process_start_time_seconds     gauge    start time, seconds since the Unix epoch
//   process_open_fds               gauge    open file descriptors
//   process_max_fds                gauge    the RLIMIT_NOFILE soft limit
// `proc` is a FileSystem whose root holds proc/ (the host root, or a recorded tree in tests).
// A file that cannot be read leaves its metric at the last value (the scrape never fails).
// Thread safety: Update may run concurrently with itself and with rendering.
#pragma once

#include "common/file_system.h"
#include "common/metrics.h"

namespace dracpu {

class ProcessMetrics {
 public:
  ProcessMetrics(MetricsRegistry& registry, const FileSystem& proc);
  void Update();

 private:
  const FileSystem& proc_;
  Metric& cpu_seconds_;
  Metric& resident_bytes_;
  Metric& virtual_bytes_;
  Metric& start_time_;
  Metric& open_fds_;
  Metric& max_fds_;
};

}  // namespace dracpu
