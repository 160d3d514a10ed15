#include "common/process_metrics.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace dracpu {
namespace {

// The fields of /proc/self/stat after the parenthesised command name (which may hold spaces):
// out[0] is field 3 (state), so field N is out[N - 3].
std::vector<std::string> StatFields(const std::string& stat) {
  std::vector<std::string> out;
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream in(stat.substr(close + 1));
  std::string f;
  while (in >> f) out.push_back(f);
  return out;
}

// A number field; 0 when it is not one (strtod does not throw, unlike std::stod).
double Number(const std::string& s) { return std::strtod(s.c_str(), nullptr); }

}  // namespace

ProcessMetrics::ProcessMetrics(MetricsRegistry& r, const FileSystem& proc)
    : proc_(proc),
      cpu_seconds_(r.AddCounter("process_cpu_seconds_total",
                                "Total user and system CPU time spent in seconds.")),
      resident_bytes_(
          r.AddGauge("process_resident_memory_bytes", "Resident memory size in bytes.")),
      virtual_bytes_(r.AddGauge("process_virtual_memory_bytes", "Virtual memory size in bytes.")),
      start_time_(r.AddGauge("process_start_time_seconds",
                             "Start time of the process since unix epoch in seconds.")),
      open_fds_(r.AddGauge("process_open_fds", "Number of open file descriptors.")),
      max_fds_(r.AddGauge("process_max_fds", "Maximum number of open file descriptors.")) {}

void ProcessMetrics::Update() {
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (auto stat = proc_.ReadFile("proc/self/stat"); stat.ok()) {
    const std::vector<std::string> f = StatFields(*stat);
    if (f.size() > 21) {
      // utime 14, stime 15, starttime 22, vsize 23, rss 24.
      const double cpu = (Number(f[11]) + Number(f[12])) / ticks;
      cpu_seconds_.Set({}, cpu);
      virtual_bytes_.Set({}, Number(f[20]));
      resident_bytes_.Set({}, Number(f[21]) * page);
      if (auto boot = proc_.ReadFile("proc/stat"); boot.ok()) {
        std::istringstream in(*boot);
        std::string key;
        double btime = 0;
        while (in >> key) {
          if (key == "btime" && in >> btime) break;
          in.ignore(1 << 20, '\n');
        }
        if (btime > 0) start_time_.Set({}, btime + Number(f[19]) / ticks);
      }
    }
  }
  if (auto fds = proc_.ListDirectory("proc/self/fd"); fds.ok()) {
    open_fds_.Set({}, static_cast<double>(fds->size()));
  }
  if (auto limits = proc_.ReadFile("proc/self/limits"); limits.ok()) {
    std::istringstream in(*limits);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("Max open files", 0) != 0) continue;
      std::istringstream fields(line.substr(14));
      double soft = 0;
      if (fields >> soft) max_fds_.Set({}, soft);
    }
  }
}

}  // namespace dracpu
