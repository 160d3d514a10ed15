#include "dra-agent/agent/kubelet_cpu_manager.h"

#include <rapidjson/document.h>

namespace dracpu::dra {

Result<KubeletCpuManagerState> ParseKubeletCpuManagerState(std::string_view text,
                                                           const std::string& path) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("kubelet CPU Manager state " + path + ": " + why);
  };
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) return bad("not a JSON object");
  KubeletCpuManagerState state;
  state.path = path;
  if (!doc.HasMember("policyName") || !doc["policyName"].IsString()) {
    return bad("no policyName");
  }
  state.policy = doc["policyName"].GetString();
  if (doc.HasMember("defaultCpuSet") && doc["defaultCpuSet"].IsString()) {
    auto set = CpuSet::ParseList(doc["defaultCpuSet"].GetString(), "defaultCpuSet");
    if (!set.ok()) return bad(set.status().message());
    state.default_cpu_set = *set;
  }
  if (doc.HasMember("entries") && doc["entries"].IsObject()) {
    for (const auto& pod : doc["entries"].GetObject()) {
      if (!pod.value.IsObject()) return bad("entries of a pod are not an object");
      for (const auto& ctr : pod.value.GetObject()) {
        if (!ctr.value.IsString()) return bad("the CPUs of a container are not a string");
        auto set = CpuSet::ParseList(ctr.value.GetString(), "entries");
        if (!set.ok()) return bad(set.status().message());
        state.exclusive_cpus |= *set;
        ++state.exclusive_containers;
      }
    }
  }
  return state;
}

Result<KubeletCpuManagerState> ReadKubeletCpuManagerState(const FileSystem& fs,
                                                          const std::string& kubelet_root) {
  const std::string path = kubelet_root + "/" + kCpuManagerStateFile;
  ASSIGN_OR_RETURN(const std::string text, fs.ReadFile(path, 1 << 20));
  return ParseKubeletCpuManagerState(text, fs.HostPath(path));
}

std::string KubeletCpuManagerConflict(const Result<KubeletCpuManagerState>& state) {
  if (!state.ok() || state->policy == "none") return "";
  std::string exclusive;
  if (state->exclusive_containers > 0) {
    exclusive = "; it holds CPUs " + state->exclusive_cpus.ToListString() + " for " +
                std::to_string(state->exclusive_containers) + " container(s)";
  }
  return "the kubelet's CPU Manager runs with policy " + state->policy + " (" + state->path +
         exclusive +
         "): it rewrites every container's cpuset and undoes dracpu's pinning; set the kubelet's "
         "cpuManagerPolicy to none, remove " +
         state->path + " and restart the kubelet";
}

}  // namespace dracpu::dra
