// dracpu-dra-agent: the DRA half of dracpu. With flags only it runs the agent (kubelet plugin,
// ResourceClaims, CDI, shared memory); with a subcommand it runs that tool and exits. This file
// is the only dra-agent code that reads argv, the environment and the config file.
#include <glog/logging.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_system.h"
#include "common/flag_parser.h"
#include "common/local_time_zone.h"
#include "common/sysfs_overlay.h"
#include "common/unique_fd.h"
#include "dra-agent/agent/agent_config.h"
#include "dra-agent/agent/claim_status_writer.h"
#include "dra-agent/agent/dra_agent.h"
#include "dra-agent/agent/dra_env.h"
#include "dra-agent/allocator/allocate_command.h"
#include "dra-agent/diagnostics/gatherinfo_command.h"
#include "dra-agent/kube/cluster_config.h"
#include "dra-agent/kube/curl_http_client.h"
#include "dra-agent/kube/resources.h"
#include "dra-agent/kubelet/kubelet_plugin_server.h"
#include "dra-agent/kubelet/sleeping_grpc_timers.h"
#include "dra-agent/metrics/dra_metrics.h"
#include "dra-agent/subcommand.h"
#include "dracpu_version.h"

namespace {

using dracpu::dra::Subcommand;

constexpr Subcommand kSubcommands[] = {
    {"version", "print the version and exit",
     [](const std::vector<std::string>&, dracpu::dra::CommandIo io) {
       io.out << "dracpu-dra-agent " << DRACPU_VERSION << "\n";
       return dracpu::dra::kExitOk;
     }},
    {"gatherinfo", "report the CPU topology and the running agent's configuration",
     dracpu::dra::GatherInfoCommand},
    {"introspect", "introspect metrics: print the agent's metrics as JSON (name, type, labels)",
     [](const std::vector<std::string>& args, dracpu::dra::CommandIo io) {
       if (args.size() != 1 || args[0] != "metrics") {
         io.err << "dracpu-dra-agent introspect: " << (args.empty() ? "needs" : "supports only")
                << " a subcommand: metrics\n";
         return dracpu::dra::kExitUsage;
       }
       io.out << dracpu::MetricSpecsToJson(dracpu::dra::DraMetrics::Specs());
       return dracpu::dra::kExitOk;
     }},
    {"allocate", "choose CPUs for one request (JSON in, JSON out)",
     dracpu::allocator::RunAllocateCommand},
    {"api-calls", "print every Kubernetes API call the agents make (JSON; for RBAC checks)",
     [](const std::vector<std::string>& args, dracpu::dra::CommandIo io) {
       if (!args.empty()) {
         io.err << "dracpu-dra-agent api-calls: takes no arguments\n";
         return dracpu::dra::kExitUsage;
       }
       // Names are plain identifiers and paths: no JSON escaping is needed.
       const std::vector<dracpu::kube::ApiCall> calls = dracpu::kube::ApiCallsUsed();
       io.out << "[";
       for (size_t i = 0; i < calls.size(); ++i) {
         const auto& c = calls[i];
         io.out << (i ? ",\n " : "\n ") << "{\"apiGroup\": \"" << c.api_group
                << "\", \"resource\": \"" << c.resource << "\", \"verb\": \"" << c.verb
                << "\", \"nonResourceURL\": \"" << c.non_resource_path << "\"}";
       }
       io.out << "\n]\n";
       return dracpu::dra::kExitOk;
     }},
};

void PrintUsage(std::ostream& os, const std::string& flags) {
  os << "usage: dracpu-dra-agent [flags]            run the agent\n"
        "       dracpu-dra-agent <subcommand> [...]  run a tool\n"
        "       dracpu-gatherinfo [flags]           the reference driver's name for gatherinfo\n"
        "\nsubcommands:\n";
  for (const Subcommand& s : kSubcommands) {
    os << "  " << s.name << std::string(14 - std::string(s.name).size(), ' ') << s.summary << "\n";
  }
  os << "\nagent flags:\n" << flags;
}

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::string AbsolutePath(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

dracpu::Result<std::string> ReadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return dracpu::NotFoundError("cannot read --config file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

dracpu::Result<std::unique_ptr<dracpu::kube::KubeClient>> MakeClient(
    const dracpu::dra::AgentConfig& config, const dracpu::FileSystem& fs, dracpu::Clock& clock,
    dracpu::Random& random) {
  dracpu::Result<dracpu::kube::ClusterConfig> cluster =
      config.kubeconfig.empty()
          ? dracpu::kube::InClusterConfig(fs, Getenv("KUBERNETES_SERVICE_HOST"),
                                          Getenv("KUBERNETES_SERVICE_PORT"))
          : dracpu::kube::LoadKubeconfig(fs, config.kubeconfig);
  if (!cluster.ok()) return cluster.status();
  auto http = dracpu::kube::NewCurlHttpClient(cluster->tls);
  if (!http.ok()) return http.status();
  return dracpu::kube::KubeClient::Create(*cluster, std::move(http).value(), fs, clock, random);
}

// The node's CPUs as the agent reads them: --sysfs-root, with the sysfsOverlay over it.
dracpu::Result<std::unique_ptr<dracpu::FileSystem>> SysfsOf(const dracpu::dra::AgentConfig& config,
                                                            const dracpu::FileSystem& host) {
  auto sysfs = dracpu::NewPosixFileSystem(config.sysfs_root);
  if (!sysfs.ok()) return sysfs.status();
  if (!config.driver.sysfs_overlay.empty()) {
    LOG(INFO) << "sysfs overlay " << config.driver.sysfs_overlay << " is read over "
              << config.sysfs_root;
  }
  return dracpu::WithSysfsOverlay(std::move(sysfs).value(), host, config.driver.sysfs_overlay);
}

int RunAgent(const std::vector<std::string>& args) {
  dracpu::FlagParser parser;
  dracpu::dra::AgentFlags flags;
  dracpu::dra::RegisterAgentFlags(parser, flags);
  auto rest = parser.Parse(args);
  if (!rest.ok() || !rest->empty()) {
    std::cerr << "dracpu-dra-agent: "
              << (rest.ok() ? "unexpected argument \"" + rest->front() + "\""
                            : rest.status().message())
              << "\n\n";
    PrintUsage(std::cerr, parser.Usage());
    return dracpu::dra::kExitUsage;
  }
  dracpu::dra::AgentEnvironment env;
  env.node_name_env = Getenv("NODE_NAME");
  env.host_root = Getenv("HOST_ROOT");
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) env.hostname = host;
  if (!flags.values.config_file.empty()) {
    auto text = ReadConfigFile(flags.values.config_file);
    if (!text.ok()) {
      std::cerr << "dracpu-dra-agent: " << text.status().message() << "\n";
      return dracpu::dra::kExitUsage;
    }
    env.config_text = *text;
  }
  auto config = dracpu::dra::ResolveAgentConfig(parser, flags, env);
  if (!config.ok()) {
    std::cerr << "dracpu-dra-agent: " << config.status().message() << "\n";
    return dracpu::dra::kExitUsage;
  }
  // A relative sysfsOverlay is the reference's os.ReadFile: relative to the working directory.
  config->driver.sysfs_overlay = AbsolutePath(config->driver.sysfs_overlay);
  FLAGS_logtostderr = true;
  FLAGS_v = config->verbosity;
  FLAGS_vmodule = config->vmodule;
  dracpu::PinLocalTimeZone();  // before glog's first line and before any thread
  google::InitGoogleLogging("dracpu-dra-agent");
  for (const std::string& w : config->warnings) LOG(WARNING) << w;
  LOG(INFO) << "dracpu-dra-agent " << DRACPU_VERSION << " on node " << config->node_name
            << ", effective config:\n"
            << dracpu::DriverConfigToYaml(config->driver);

  // Signals arrive through a signalfd that the agent's event loop watches, so no handler runs
  // inside library code and no thread waits for them. Blocked before any thread starts, so
  // every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  dracpu::UniqueFd sigfd(::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd) {
    LOG(ERROR) << "signalfd: " << std::strerror(errno);
    return 1;
  }

  // Before gRPC's first use and after the signal mask, as gRPC starts threads here.
  if (dracpu::Status timers = dracpu::dra::InstallSleepingGrpcTimers(); !timers.ok()) {
    LOG(WARNING) << "gRPC's timer thread keeps waking about once a second: " << timers.ToString();
  }

  // Every real implementation the agent uses is built here and handed down (DraEnv).
  auto fs = dracpu::NewPosixFileSystem("/");
  if (!fs.ok()) LOG(FATAL) << fs.status().ToString();
  auto sysfs = SysfsOf(*config, **fs);
  if (!sysfs.ok()) {
    LOG(ERROR) << "cannot start: " << sysfs.status().ToString();
    return 1;
  }
  dracpu::SystemClock clock;
  dracpu::DefaultRandom random;
  bool client_failed = false;
  dracpu::dra::DraEnv seams{
      .host = **fs,
      .sysfs = **sysfs,
      .clock = clock,
      .wall_time = dracpu::dra::ClaimStatusWriter::SystemWallClock,
      .random = random,
      .kube_client = [&]() -> dracpu::Result<std::unique_ptr<dracpu::kube::KubeClient>> {
        auto client = MakeClient(*config, **fs, clock, random);
        client_failed = !client.ok();
        return client;
      },
      .kubelet_server = dracpu::dra::KubeletPluginServer::Start,
  };
  auto agent = dracpu::dra::DraAgent::Start(*config, DRACPU_VERSION, std::move(seams));
  if (!agent.ok() && client_failed) {
    LOG(ERROR) << "Kubernetes API: " << agent.status().ToString();
    return 1;
  }
  if (!agent.ok()) {
    LOG(ERROR) << "cannot start: " << agent.status().ToString();
    return 1;
  }
  sd_notify(0, "READY=1\nSTATUS=serving the kubelet");
  // Under systemd with WatchdogSec=, every heartbeat (5 s) also feeds the watchdog.
  uint64_t watchdog_usec = 0;
  const bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
  if (watchdog) LOG(INFO) << "systemd watchdog every " << watchdog_usec / 1000 << " ms";
  const dracpu::Status run = (*agent)->Run(sigfd.get(), [watchdog] {
    if (watchdog) sd_notify(0, "WATCHDOG=1");
  });
  if (!run.ok()) {
    LOG(ERROR) << "event loop: " << run.ToString() << "; shutting down";
  } else if (signalfd_siginfo info; ::read(sigfd.get(), &info, sizeof info) == sizeof info) {
    LOG(INFO) << "signal " << info.ssi_signo << ": shutting down";
  }
  sd_notify(0, "STOPPING=1");
  (*agent)->Stop();
  LOG(INFO) << "stopped";
  return 0;
}

std::string Basename(const char* path) {
  const std::string p = path == nullptr ? "" : path;
  return p.substr(p.rfind('/') + 1);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  dracpu::dra::CommandIo io{std::cin, std::cout, std::cerr, Getenv("HOST_ROOT"), Getenv("TMPDIR")};
  // The reference driver's image has /dracpu-gatherinfo; ours has the same name as a link.
  if (argc > 0 && Basename(argv[0]) == "dracpu-gatherinfo") {
    return dracpu::dra::LegacyGatherInfoCommand(args, io);
  }
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help" || args[0] == "help")) {
    dracpu::FlagParser parser;
    dracpu::dra::AgentFlags flags;
    dracpu::dra::RegisterAgentFlags(parser, flags);
    PrintUsage(std::cout, parser.Usage());
    return dracpu::dra::kExitOk;
  }
  // --version is the version subcommand, the flag the nri-agent and dracpu-shm take too.
  const bool version_flag = !args.empty() && args[0] == "--version";
  if (!args.empty() && (version_flag || args[0].rfind('-', 0) != 0)) {
    for (const Subcommand& s : kSubcommands) {
      if (args[0] == s.name || (version_flag && std::string_view(s.name) == "version")) {
        return s.run(std::vector<std::string>(args.begin() + 1, args.end()), io);
      }
    }
    std::cerr << "dracpu-dra-agent: unknown subcommand \"" << args[0] << "\"\n";
    return dracpu::dra::kExitUsage;
  }
  return RunAgent(args);
}
