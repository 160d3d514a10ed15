#include "dra-agent/agent/agent_config.h"

#include <algorithm>
#include <cctype>

namespace dracpu::dra {
namespace {

// The reference driver's deprecated flags and the config key each one sets.
struct DeprecatedFlag {
  const char* flag;
  const char* key;
};
constexpr DeprecatedFlag kDeprecatedFlags[] = {{"cpu-device-mode", "cpuDeviceMode"},
                                               {"group-by", "groupBy"},
                                               {"reserved-cpus", "reservedCPUs"},
                                               {"hostname-override", "hostnameOverride"},
                                               {"sysfs-overlay", "sysfsOverlay"}};

// The help text of a deprecated flag, with the reference's "(DEPRECATED: prefer driverConfig
// field ...)" marker so scripts that look for it find it.
std::string Deprecated(const char* help, const char* key) {
  return std::string(help) + " (DEPRECATED: prefer driverConfig field \"" + key + "\" in --config)";
}

}  // namespace

void RegisterAgentFlags(FlagParser& p, AgentFlags& f) {
  AgentConfig& v = f.values;
  p.String("config", &v.config_file, "driver config file (flat YAML, reference keys plus ours)");
  p.String("node-name", &v.node_name,
           "node name (default hostnameOverride, then $NODE_NAME, then the hostname)");
  p.String("hostname-override", &f.hostname_override,
           Deprecated("the node name to register as", "hostnameOverride"));
  p.String("kubeconfig", &v.kubeconfig, "kubeconfig file (default: in-cluster service account)");
  p.String("sysfs-root", &v.sysfs_root, "root that holds sys/ (default $HOST_ROOT, else /)");
  p.String(
      "sysfs-overlay", &f.sysfs_overlay,
      Deprecated("YAML file of /sys paths and contents read over the sysfs tree", "sysfsOverlay"));
  p.String("kubelet-root-dir", &v.kubelet_root_dir,
           "kubelet root directory (default /var/lib/kubelet)");
  p.String("cdi-root", &v.cdi_root, "CDI spec directory (default /var/run/cdi)");
  p.String("shm-path", &v.shm_path,
           "shared-memory segment file (default /run/dracpu/state.v<MAJOR>.shm)");
  p.String("bind-address", &v.bind_address,
           "address of /metrics, /healthz, /readyz (default :8080)");
  p.String("cpu-device-mode", &f.cpu_device_mode,
           Deprecated("grouped|individual", "cpuDeviceMode"));
  p.String("group-by", &f.group_by, Deprecated("numanode|socket|machine", "groupBy"));
  p.String("reserved-cpus", &f.reserved_cpus,
           Deprecated("CPUs never granted to claims", "reservedCPUs"));
  p.Bool("expose-pcie-roots", &v.expose_pcie_roots, "publish resource.kubernetes.io/pcieRoot");
  p.Int("v", &v.verbosity, "log verbosity (glog)");
  p.String("vmodule", &v.vmodule, "per-file verbosity, pattern=N,... (glog)");
}

Result<AgentConfig> ResolveAgentConfig(const FlagParser& parser, const AgentFlags& flags,
                                       const AgentEnvironment& env) {
  AgentConfig config = flags.values;  // defaults, or explicit flag values
  config.driver = DriverConfig();
  if (!config.config_file.empty()) {
    RETURN_IF_ERROR(ParseDriverConfig(env.config_text, config.config_file, config.driver));
  }
  // Explicit flags beat the file.
  if (parser.WasSet("cpu-device-mode")) {
    auto mode = ParseCpuDeviceMode(flags.cpu_device_mode);
    if (!mode.ok()) return mode.status().WithContext("flag --cpu-device-mode");
    config.driver.cpu_device_mode = *mode;
  }
  if (parser.WasSet("group-by")) {
    auto g = ParseGroupBy(flags.group_by);
    if (!g.ok()) return g.status().WithContext("flag --group-by");
    config.driver.group_by = *g;
  }
  if (parser.WasSet("reserved-cpus")) {
    auto r = CpuSet::ParseList(flags.reserved_cpus, "flag --reserved-cpus");
    if (!r.ok()) return r.status();
    config.driver.reserved_cpus = *r;
  }
  if (parser.WasSet("hostname-override")) config.driver.hostname_override = flags.hostname_override;
  if (parser.WasSet("sysfs-overlay")) config.driver.sysfs_overlay = flags.sysfs_overlay;
  for (const DeprecatedFlag& d : kDeprecatedFlags) {
    if (parser.WasSet(d.flag)) {
      config.warnings.push_back(std::string("flag --") + d.flag +
                                " is deprecated and will be removed; set \"" + d.key +
                                "\" in the --config file instead");
    }
  }
  if (!parser.WasSet("kubeconfig") && !config.driver.kubeconfig.empty()) {
    config.kubeconfig = config.driver.kubeconfig;
  }
  if (!parser.WasSet("sysfs-root") && !env.host_root.empty()) config.sysfs_root = env.host_root;
  if (config.node_name.empty()) config.node_name = config.driver.hostname_override;
  if (config.node_name.empty()) config.node_name = env.node_name_env;
  if (config.node_name.empty()) config.node_name = env.hostname;
  std::transform(config.node_name.begin(), config.node_name.end(), config.node_name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (config.node_name.empty()) {
    return FailedPreconditionError("no node name: set --node-name, $NODE_NAME or hostnameOverride");
  }
  if (config.kubelet_root_dir.empty() || config.kubelet_root_dir.front() != '/') {
    return InvalidArgumentError("flag --kubelet-root-dir=" + config.kubelet_root_dir +
                                ": must be absolute");
  }
  return config;
}

}  // namespace dracpu::dra
