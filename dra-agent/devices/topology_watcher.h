// TopologyWatcher: notices CPUs going online or offline, so the agent can rebuild its
// DeviceCatalog and re-publish (SlicePublisher::SetDesired).
//
//   TopologyWatcher watcher(fs, clock, initial_topology, [&](const CpuTopology& t) { ... });
//   std::jthread t([&](std::stop_token stop) { watcher.Run(stop); });  // every `interval` (10 s)
//
// A poll reads <root>/sys/devices/system/cpu/online and stops there when its text is the one
// seen last time (one small read: cheap when nothing changed). The constructor reads it once:
// when it names the initial topology's online set, that text is the first one seen. Otherwise (and
// on kernels without that file, every poll) it runs DiscoverTopology and calls back when the online
// CPU set differs from the last one reported (or the initial topology's). A failed read or
// discovery is counted and kept in stats().last_error; the next poll tries again.
//
// Thread safety: Poll and Run must not run concurrently; stats() may be called from any thread.
// The callback runs on the polling thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>

#include "common/clock.h"
#include "common/cpu_topology.h"
#include "common/file_system.h"
#include "common/status.h"
#include "common/topology_discovery.h"

namespace dracpu::dra {

struct TopologyWatcherOptions {
  std::chrono::milliseconds interval{10000};
  DiscoveryOptions discovery;
};

struct TopologyWatcherStats {
  uint64_t polls = 0;
  uint64_t discoveries = 0;  // full DiscoverTopology runs
  uint64_t changes = 0;      // callbacks
  uint64_t errors = 0;
  std::string last_error;
};

class TopologyWatcher {
 public:
  using Callback = std::function<void(const CpuTopology&)>;

  // `fs` (rooted at the sysfs root) and `clock` must outlive the watcher. `initial` is the
  // topology the current catalog was built from.
  TopologyWatcher(const FileSystem& fs, Clock& clock, const CpuTopology& initial,
                  Callback on_change, TopologyWatcherOptions options = {});

  // One poll. Returns whether the callback ran, or the read/discovery error.
  Result<bool> Poll();
  // Polls every `interval` until a stop is requested on `stop`; in between the thread sleeps in
  // the kernel (one wakeup per interval, none to check for the stop).
  void Run(const std::stop_token& stop);

  TopologyWatcherStats stats() const;

 private:
  const FileSystem& fs_;
  Clock& clock_;
  const Callback on_change_;
  const TopologyWatcherOptions options_;
  CpuSet online_;            // the last reported online set
  std::string online_text_;  // cpu/online as read at the last poll ("" before the first)
  mutable std::mutex mu_;
  TopologyWatcherStats stats_;  // guarded by mu_
};

}  // namespace dracpu::dra
