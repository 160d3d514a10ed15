// dracpu-nri-agent: the NRI half of dracpu. Pins every container on the node: exclusive
// containers to their claims' CPUs, every other container to the shared pool, over the
// shared-memory segment the dra-agent writes (docs/nri-agent.md).
//
// Exit codes: 0 after SIGTERM/SIGINT; 1 when start-up fails (bad config, topology, bind address)
// or, for a pre-launched plugin (NRI_PLUGIN_SOCKET), when the runtime's connection ends (the
// runtime relaunches it); 2 for a usage error.
#include <glog/logging.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/driver_config.h"
#include "common/event_loop.h"
#include "common/file_system.h"
#include "common/flag_parser.h"
#include "common/http_server.h"
#include "common/local_time_zone.h"
#include "common/metrics.h"
#include "common/process_metrics.h"
#include "common/sysfs_overlay.h"
#include "common/topology_discovery.h"
#include "common/unique_fd.h"
#include "dracpu_version.h"
#include "nri-agent/agent/nri_agent.h"
#include "nri-agent/nri/plugin.h"
#include "shm-schema/cpu_admission.h"
#include "shm-schema/segment.h"

namespace dracpu {
namespace {

struct Flags {
  std::string nri_socket;
  std::string shm_path = shm::DefaultSegmentPath();
  std::string sysfs_root = "/";
  std::string bind_address = ":8081";
  std::string config;
  std::string plugin_name = "dra.cpu";
  std::string plugin_index = "00";
  int segment_wait_ms = 10000;
  int verbosity = 0;
  bool version = false;
};

Result<DriverConfig> LoadConfig(const std::string& path) {
  DriverConfig config;
  if (path.empty()) return config;
  std::ifstream in(path);
  if (!in) return NotFoundError("--config " + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  RETURN_IF_ERROR(ParseDriverConfig(text.str(), path, config));
  // A relative sysfsOverlay is relative to the working directory, as for the dra-agent.
  if (!config.sysfs_overlay.empty() && config.sysfs_overlay.front() != '/') {
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd) != nullptr) {
      config.sysfs_overlay = std::string(cwd) + "/" + config.sysfs_overlay;
    }
  }
  return config;
}

// The real implementations of every seam, built once here and handed down (NriEnv for the
// agent; the filesystems for the fallback pool and the process metrics).
struct SystemEnv {
  SystemClock clock;
  DefaultRandom random;
  std::unique_ptr<FileSystem> host;   // rooted at /: /proc/self for the process metrics
  std::unique_ptr<FileSystem> sysfs;  // rooted at --sysfs-root, with the sysfsOverlay
  agent::NriEnv agent() { return {clock, random}; }
};

Result<std::unique_ptr<SystemEnv>> MakeSystemEnv(const std::string& sysfs_root,
                                                 const DriverConfig& config) {
  auto env = std::make_unique<SystemEnv>();
  ASSIGN_OR_RETURN(env->host, NewPosixFileSystem("/"));
  ASSIGN_OR_RETURN(env->sysfs, NewPosixFileSystem(sysfs_root));
  ASSIGN_OR_RETURN(env->sysfs,
                   WithSysfsOverlay(std::move(env->sysfs), *env->host, config.sysfs_overlay));
  return env;
}

// The shared pool with no claim, by the node's one rule (shm::CpuAdmission) over this agent's
// own view of the topology: used until the dra-agent's topology record is in the segment.
Result<CpuSet> FallbackPool(const FileSystem& sysfs, const DriverConfig& config) {
  DiscoveryOptions options;
  options.pcie_roots = false;
  ASSIGN_OR_RETURN(CpuTopology topo, DiscoverTopology(sysfs, options));
  const shm::CpuAdmission rule(
      {topo.online - config.reserved_cpus, topo.online & config.reserved_cpus, topo.online,
       config.strict_cpu_reservation, static_cast<uint32_t>(config.min_shared_cpus)});
  return rule.SharedPool(CpuSet());
}

int Run(const Flags& flags) {
  auto config = LoadConfig(flags.config);
  if (!config.ok()) {
    LOG(ERROR) << config.status().ToString();
    return 1;
  }
  auto env = MakeSystemEnv(flags.sysfs_root, *config);
  if (!env.ok()) {
    LOG(ERROR) << "reading the CPU topology under " << flags.sysfs_root << ": "
               << env.status().ToString();
    return 1;
  }
  auto fallback = FallbackPool(*(*env)->sysfs, *config);
  if (!fallback.ok()) {
    LOG(ERROR) << "reading the CPU topology under " << flags.sysfs_root << ": "
               << fallback.status().ToString();
    return 1;
  }
  if (Status s = nri::ValidatePluginIdentity(flags.plugin_name, flags.plugin_index); !s.ok()) {
    LOG(ERROR) << s.ToString();
    return 2;
  }

  // SIGTERM/SIGINT arrive through a signalfd on the loop; blocked before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  UniqueFd sigfd(::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd.valid()) {
    LOG(ERROR) << "signalfd failed";
    return 1;
  }

  auto loop = loop::EventLoop::Create((*env)->clock);
  if (!loop.ok()) {
    LOG(ERROR) << "event loop: " << loop.status().ToString();
    return 1;
  }
  loop::EventLoop& l = **loop;

  agent::NriAgentOptions options;
  options.shm_path = flags.shm_path;
  options.shm_open.version = DRACPU_VERSION;
  options.segment_wait = std::chrono::milliseconds(flags.segment_wait_ms);
  options.plugin.name = flags.plugin_name;
  options.plugin.index = flags.plugin_index;
  options.policy.shared_pool_updates = config->shared_pool_updates;
  options.policy.fallback_pool = *fallback;

  bool prelaunched_lost = false;
  const char* env_fd = std::getenv("NRI_PLUGIN_SOCKET");
  if (env_fd != nullptr && flags.nri_socket.empty()) {
    auto fd = nri::AdoptPluginSocket(env_fd);
    if (!fd.ok()) {
      LOG(ERROR) << "NRI_PLUGIN_SOCKET: " << fd.status().ToString();
      return 1;
    }
    auto adopted = std::make_shared<std::optional<UniqueFd>>(std::move(*fd));
    options.connect = [adopted, &l, &prelaunched_lost]() -> Result<UniqueFd> {
      if (adopted->has_value()) {
        UniqueFd out = std::move(**adopted);
        adopted->reset();
        return out;
      }
      // A pre-launched plugin cannot reconnect: the runtime relaunches it.
      LOG(ERROR) << "the runtime's pre-connected socket is gone; exiting for a relaunch";
      prelaunched_lost = true;
      l.Stop();
      return FailedPreconditionError("pre-launched plugin: no socket to reconnect to");
    };
    LOG(INFO) << "using the runtime's pre-connected socket (NRI_PLUGIN_SOCKET=" << env_fd << ")";
  } else {
    const std::string path = flags.nri_socket.empty() ? nri::kDefaultSocketPath : flags.nri_socket;
    options.connect = [path] { return nri::ConnectNriSocket(path); };
    LOG(INFO) << "NRI socket " << path;
  }

  MetricsRegistry metrics;
  agent::NriAgent agent(l, (*env)->agent(), std::move(options), &metrics);
  ProcessMetrics process_metrics(metrics, *(*env)->host);

  std::map<std::string, HttpHandler> routes;
  routes["/metrics"] = [&metrics, &process_metrics] {
    process_metrics.Update();
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", metrics.RenderText()};
  };
  routes["/healthz"] = [&agent] {
    return agent.healthy() ? HttpResponse{200, "text/plain; charset=utf-8", "ok\n"}
                           : HttpResponse{503, "text/plain; charset=utf-8", "event loop stalled\n"};
  };
  routes["/readyz"] = [&agent] {
    return agent.ready() ? HttpResponse{200, "text/plain; charset=utf-8", "ok\n"}
                         : HttpResponse{503, "text/plain; charset=utf-8",
                                        "not ready: segment not attached or not synchronized\n"};
  };
  // On the NRI loop (no thread of its own): a loop stuck in a handler answers no probe at all,
  // which the kubelet counts as a failed probe as it would a 503.
  auto http = HttpServer::Start(l, flags.bind_address, std::move(routes));
  if (!http.ok()) {
    LOG(ERROR) << "--bind-address " << flags.bind_address << ": " << http.status().ToString();
    return 1;
  }

  auto watch = l.Watch(sigfd.get(), EPOLLIN, [&](uint32_t) {
    signalfd_siginfo info;
    while (::read(sigfd.get(), &info, sizeof info) == sizeof info) {
      LOG(INFO) << "signal " << info.ssi_signo << ": shutting down";
      l.Stop();
    }
  });
  if (!watch.ok()) {
    LOG(ERROR) << "watching the signalfd: " << watch.status().ToString();
    return 1;
  }

  LOG(INFO) << "dracpu-nri-agent " << DRACPU_VERSION << " starting: plugin " << flags.plugin_index
            << "-" << flags.plugin_name << ", shm " << flags.shm_path
            << ", sharedPoolUpdates=" << SharedPoolUpdatesName(config->shared_pool_updates)
            << ", fallback pool " << fallback->ToListString() << ", http " << (*http)->port();
  agent.Start();
  // For a Type=notify systemd unit: started (the runtime connection and the segment follow
  // asynchronously; /readyz tells when both are there).
  sd_notify(0, "READY=1\nSTATUS=nri-agent started");
  // Under systemd with WatchdogSec=, a timer on the event loop feeds the watchdog at half the
  // interval: it only fires while the loop that serves the runtime actually runs.
  uint64_t watchdog_usec = 0;
  std::function<void()> feed_watchdog;  // outlives l.Run(): its timers refer to it
  if (sd_watchdog_enabled(0, &watchdog_usec) > 0 && watchdog_usec > 0) {
    LOG(INFO) << "systemd watchdog every " << watchdog_usec / 1000 << " ms";
    const auto period = std::chrono::microseconds(watchdog_usec / 2);
    feed_watchdog = [&l, &feed_watchdog, period] {
      sd_notify(0, "WATCHDOG=1");
      l.AddTimer(period, [&feed_watchdog] { feed_watchdog(); });
    };
    feed_watchdog();
  }
  Status s = l.Run();
  sd_notify(0, "STOPPING=1");
  agent.Shutdown();
  (*http)->Stop();
  if (!s.ok()) {
    LOG(ERROR) << "event loop: " << s.ToString();
    return 1;
  }
  LOG(INFO) << "dracpu-nri-agent stopped";
  return prelaunched_lost ? 1 : 0;
}

}  // namespace
}  // namespace dracpu

int main(int argc, char** argv) {
  using dracpu::FlagParser;
  dracpu::Flags flags;
  FlagParser parser;
  parser.String("nri-socket", &flags.nri_socket,
                "the runtime's NRI socket (default /var/run/nri/nri.sock, or the fd in "
                "NRI_PLUGIN_SOCKET when set)");
  parser.String("shm-path", &flags.shm_path, "the shared-memory segment the dra-agent creates");
  parser.String("sysfs-root", &flags.sysfs_root, "the directory holding sys/devices/system/cpu");
  parser.String("bind-address", &flags.bind_address, "/metrics, /healthz and /readyz address");
  parser.String("config", &flags.config, "the driver config file (YAML)");
  parser.String("plugin-name", &flags.plugin_name, "the NRI plugin name");
  parser.String("plugin-index", &flags.plugin_index, "the NRI plugin index (two digits)");
  parser.Int("segment-wait-ms", &flags.segment_wait_ms,
             "how long to wait for the segment before connecting to the runtime without it");
  parser.Int("v", &flags.verbosity, "glog verbosity");
  parser.Bool("version", &flags.version, "print the version and exit");
  auto rest = parser.Parse(std::vector<std::string>(argv + 1, argv + argc));
  if (!rest.ok() || !rest->empty()) {
    std::cerr << "dracpu-nri-agent: "
              << (rest.ok() ? "unexpected argument " + rest->front() : rest.status().message())
              << "\n\nusage: dracpu-nri-agent [flags]\n"
              << parser.Usage();
    return 2;
  }
  if (flags.version) {
    std::cout << "dracpu-nri-agent " << DRACPU_VERSION << "\n";
    return 0;
  }
  FLAGS_logtostderr = true;
  FLAGS_v = flags.verbosity;
  dracpu::PinLocalTimeZone();  // before glog's first line and before any thread
  google::InitGoogleLogging(argv[0]);
  return dracpu::Run(flags);
}
