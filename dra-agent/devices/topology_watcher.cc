#include "dra-agent/devices/topology_watcher.h"

namespace dracpu::dra {
namespace {

constexpr char kOnlinePath[] = "sys/devices/system/cpu/online";

// cpu/online's text; "" on old kernels without the file.
Result<std::string> ReadOnlineText(const FileSystem& fs) {
  if (!fs.Exists(kOnlinePath)) return std::string();
  return fs.ReadFile(kOnlinePath, 4096);
}

}  // namespace

TopologyWatcher::TopologyWatcher(const FileSystem& fs, Clock& clock, const CpuTopology& initial,
                                 Callback on_change, TopologyWatcherOptions options)
    : fs_(fs),
      clock_(clock),
      on_change_(std::move(on_change)),
      options_(options),
      online_(initial.online) {
  // Without the file's text the first poll would run a whole discovery (milliseconds on a large
  // machine) only to learn it. The text is taken when it names the initial topology's online
  // set: a CPU that changed state since that discovery leaves it unset, and the first poll
  // discovers and reports it.
  Result<std::string> text = ReadOnlineText(fs_);
  if (!text.ok() || text->empty()) return;  // the first poll reads again and reports the error
  Result<CpuSet> online = CpuSet::ParseList(*text, kOnlinePath);
  if (online.ok() && *online == initial.online) online_text_ = *std::move(text);
}

Result<bool> TopologyWatcher::Poll() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.polls;
  }
  auto record_error = [&](const Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.errors;
    stats_.last_error = s.ToString();
    return s;
  };
  // Old kernels have no cpu/online (text ""): then every poll discovers.
  Result<std::string> read = ReadOnlineText(fs_);
  if (!read.ok()) return record_error(read.status());
  std::string text = *std::move(read);
  if (!text.empty() && text == online_text_) return false;
  Result<CpuTopology> topology = DiscoverTopology(fs_, options_.discovery);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.discoveries;
  }
  if (!topology.ok()) return record_error(topology.status());
  online_text_ = text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.last_error.clear();
  }
  if (topology->online == online_) return false;
  online_ = topology->online;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.changes;
  }
  on_change_(*topology);
  return true;
}

void TopologyWatcher::Run(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    Poll().status().IgnoreError();  // counted in stats; the next poll retries
    clock_.SleepFor(options_.interval, stop);
  }
}

TopologyWatcherStats TopologyWatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace dracpu::dra
