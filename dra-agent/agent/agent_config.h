// The dra-agent's effective configuration: built-in defaults < the --config file < flags set
// explicitly on the command line (the reference driver's precedence). main() reads argv, the
// environment and the file; this code only combines them, so it is testable.
//
// Node name: --node-name, else hostnameOverride (file or --hostname-override), else $NODE_NAME
// (which the chart sets from spec.nodeName), else the hostname; lowercased. As in the reference,
// hostnameOverride wins over everything but our own --node-name.
// $HOST_ROOT (the reference's): the root holding sys/ when --sysfs-root is not given.
#pragma once

#include <string>
#include <vector>

#include "common/driver_config.h"
#include "common/flag_parser.h"
#include "common/status.h"

namespace dracpu::dra {

struct AgentConfig {
  DriverConfig driver;
  std::string config_file;
  std::string node_name;
  std::string kubeconfig;  // "" = in-cluster
  std::string sysfs_root = "/";
  std::string kubelet_root_dir = "/var/lib/kubelet";
  std::string cdi_root = "/var/run/cdi";
  std::string shm_path;  // "" = the segment's default path
  std::string bind_address = ":8080";
  bool expose_pcie_roots = false;
  int verbosity = 0;
  std::string vmodule;  // glog's -vmodule (the reference's klog flag of the same name)
  // One line per deprecated flag set explicitly, for main to log once logging is up.
  std::vector<std::string> warnings;
};

// Flag values before the file is applied; `parser` remembers which were set explicitly.
struct AgentFlags {
  AgentConfig values;
  std::string hostname_override;
  std::string cpu_device_mode;
  std::string group_by;
  std::string reserved_cpus;
  std::string sysfs_overlay;
};

// Registers every agent flag on `parser`, writing into `flags`.
void RegisterAgentFlags(FlagParser& parser, AgentFlags& flags);

// What main passes in from outside the process.
struct AgentEnvironment {
  std::string node_name_env;  // $NODE_NAME
  std::string hostname;       // gethostname()
  std::string config_text;    // content of --config ("" when no file)
  std::string host_root;      // $HOST_ROOT
};

// Combines defaults, the config file and the explicit flags. INVALID_ARGUMENT naming the flag,
// key or value that is wrong; FAILED_PRECONDITION when no node name can be determined.
Result<AgentConfig> ResolveAgentConfig(const FlagParser& parser, const AgentFlags& flags,
                                       const AgentEnvironment& env);

}  // namespace dracpu::dra
