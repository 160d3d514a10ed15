#include "dra-agent/diagnostics/running_agent.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/flag_parser.h"

namespace dracpu::dra {
namespace {

constexpr char kAgentBinary[] = "dracpu-dra-agent";

std::vector<std::string> SplitNul(const std::string& data) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < data.size()) {
    size_t end = data.find('\0', start);
    if (end == std::string::npos) end = data.size();
    out.push_back(data.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsPid(const std::string& name) {
  return !name.empty() && name.size() < 10 &&
         std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A path of the agent's mount namespace, as a path under the root that holds proc/.
std::string InAgentNamespace(int pid, const std::string& path) {
  const std::string proc = "proc/" + std::to_string(pid);
  return path.front() == '/' ? proc + "/root" + path : proc + "/cwd/" + path;
}

// Rebuilds the configuration `argv` gives, tolerating what cannot be read.
void Rebuild(const FileSystem& root, RunningAgent& agent, const std::vector<std::string>& argv) {
  const std::string proc = "proc/" + std::to_string(agent.pid);
  AgentEnvironment env;
  if (auto environ = root.ReadFile(proc + "/environ"); environ.ok()) {
    for (const std::string& entry : SplitNul(*environ)) {
      if (entry.rfind("NODE_NAME=", 0) == 0) env.node_name_env = entry.substr(10);
      if (entry.rfind("HOST_ROOT=", 0) == 0) env.host_root = entry.substr(10);
    }
  } else {
    agent.warnings.push_back("its environment: " + environ.status().message());
  }
  if (auto host = root.ReadFile("proc/sys/kernel/hostname"); host.ok()) {
    env.hostname = std::string(TrimTrailingNewline(*host));
  }
  FlagParser parser;
  AgentFlags flags;
  RegisterAgentFlags(parser, flags);
  auto rest = parser.Parse(std::vector<std::string>(argv.begin() + 1, argv.end()));
  if (!rest.ok()) {
    agent.warnings.push_back("its command line: " + rest.status().message() +
                             "; the defaults are shown");
    parser = FlagParser();
    flags = AgentFlags();
    RegisterAgentFlags(parser, flags);
  }
  if (!flags.values.config_file.empty()) {
    auto text = root.ReadFile(InAgentNamespace(agent.pid, flags.values.config_file));
    if (text.ok()) {
      env.config_text = *text;
    } else {
      agent.warnings.push_back("its --config file: " + text.status().message());
    }
  }
  auto config = ResolveAgentConfig(parser, flags, env);
  if (!config.ok() && !flags.values.config_file.empty()) {
    agent.warnings.push_back("its configuration: " + config.status().message() +
                             "; shown without the --config file");
    flags.values.config_file.clear();
    config = ResolveAgentConfig(parser, flags, env);
  }
  if (!config.ok()) {
    agent.warnings.push_back("its configuration: " + config.status().message());
    return;
  }
  agent.config = *config;
  if (!agent.config.driver.sysfs_overlay.empty()) {
    agent.overlay_path = InAgentNamespace(agent.pid, agent.config.driver.sysfs_overlay);
  }
}

}  // namespace

Result<RunningAgent> FindRunningAgent(const FileSystem& root, int self_pid) {
  Result<std::vector<DirEntry>> entries = root.ListDirectory("proc");
  if (!entries.ok()) {
    return NotFoundError(std::string("no running ") + kAgentBinary + ": " +
                         entries.status().message());
  }
  std::vector<int> pids;
  for (const DirEntry& e : *entries) {
    if (IsPid(e.name)) pids.push_back(std::stoi(e.name));
  }
  std::sort(pids.begin(), pids.end());
  for (const int pid : pids) {
    if (pid == self_pid) continue;
    auto cmdline = root.ReadFile("proc/" + std::to_string(pid) + "/cmdline");
    if (!cmdline.ok()) continue;  // gone, or not ours to read
    const std::vector<std::string> argv = SplitNul(*cmdline);
    if (argv.empty() || Basename(argv[0]) != kAgentBinary) continue;
    if (argv.size() > 1 && argv[1].rfind('-', 0) != 0) continue;  // a subcommand
    RunningAgent agent;
    agent.pid = pid;
    Rebuild(root, agent, argv);
    return agent;
  }
  return NotFoundError(std::string("no running ") + kAgentBinary + " under " +
                       root.HostPath("proc"));
}

std::vector<ConfigField> EffectiveConfigFields(const AgentConfig& c) {
  std::map<std::string, ConfigValue> file;
  std::vector<std::string> order;
  for (ConfigField& f : DriverConfigFields(c.driver)) {
    order.push_back(f.key);
    file.emplace(f.key, std::move(f.value));
  }
  file["kubeconfig"] = c.kubeconfig;  // the effective one (the flag wins over the file)
  file["bindAddress"] = c.bind_address;
  file["exposePCIeRoots"] = c.expose_pcie_roots;
  file["kubeletRootDir"] = c.kubelet_root_dir;
  const std::vector<std::string> reference = {
      "kubeconfig",      "hostnameOverride",
      "bindAddress",     "reservedCPUs",
      "cpuDeviceMode",   "groupBy",
      "exposePCIeRoots", "sysfsOverlay",
      "kubeletRootDir",  "publishNodeAllocatableResourceMapping"};
  std::vector<ConfigField> out;
  std::set<std::string> done;
  for (const std::string& key : reference) {
    out.push_back({key, file.at(key)});
    done.insert(key);
  }
  for (const std::string& key : order) {
    if (!done.count(key)) out.push_back({key, file.at(key)});
  }
  out.push_back({"nodeName", c.node_name});
  out.push_back({"sysfsRoot", c.sysfs_root});
  out.push_back({"cdiRoot", c.cdi_root});
  out.push_back({"shmPath", c.shm_path});
  return out;
}

}  // namespace dracpu::dra
