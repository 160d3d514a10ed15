#include "nri-agent/nri/convert.h"

namespace dracpu::nri {

Pod FromProto(const api::PodSandbox& pod) {
  Pod out;
  out.id = pod.id();
  out.name = pod.name();
  out.uid = pod.uid();
  out.namespace_name = pod.namespace_();
  out.labels.insert(pod.labels().begin(), pod.labels().end());
  out.annotations.insert(pod.annotations().begin(), pod.annotations().end());
  return out;
}

Cpuset CpusetFromProto(const api::LinuxResources& resources) {
  return Cpuset{resources.cpu().cpus(), resources.cpu().mems()};
}

Container FromProto(const api::Container& container) {
  Container out;
  out.id = container.id();
  out.pod_sandbox_id = container.pod_sandbox_id();
  out.name = container.name();
  // Values the runtime may add later map to kUnknown rather than to an invalid enum.
  const int state = container.state();
  out.state =
      (state >= 0 && state <= 4) ? static_cast<ContainerState>(state) : ContainerState::kUnknown;
  out.env.assign(container.env().begin(), container.env().end());
  out.annotations.insert(container.annotations().begin(), container.annotations().end());
  out.cpuset = CpusetFromProto(container.linux().resources());
  out.pid = container.pid();
  return out;
}

RuntimeInfo FromProto(const api::ConfigureRequest& request) {
  RuntimeInfo out;
  out.runtime_name = request.runtime_name();
  out.runtime_version = request.runtime_version();
  out.nri_version = request.nri_version();
  out.config = request.config();
  out.registration_timeout = std::chrono::milliseconds(request.registration_timeout());
  out.request_timeout = std::chrono::milliseconds(request.request_timeout());
  return out;
}

CpusetUpdate FromProto(const api::ContainerUpdate& update) {
  return CpusetUpdate{update.container_id(), CpusetFromProto(update.linux().resources()),
                      update.ignore_failure()};
}

void ToProto(const Cpuset& cpuset, api::LinuxResources* resources) {
  if (cpuset.cpus.empty() && cpuset.mems.empty()) return;
  auto* cpu = resources->mutable_cpu();
  if (!cpuset.cpus.empty()) cpu->set_cpus(cpuset.cpus);
  if (!cpuset.mems.empty()) cpu->set_mems(cpuset.mems);
}

void ToProto(const CpusetUpdate& update, api::ContainerUpdate* out) {
  out->set_container_id(update.container_id);
  ToProto(update.cpuset, out->mutable_linux()->mutable_resources());
  out->set_ignore_failure(update.ignore_failure);
}

void ToProto(const CreateContainerResult& result, api::CreateContainerResponse* out) {
  // An adjustment is sent only when there is one: an empty `adjust` is harmless, but leaving it
  // out keeps the runtime's owner tracking from seeing us touch anything.
  if (!result.adjust.empty()) {
    ToProto(result.adjust, out->mutable_adjust()->mutable_linux()->mutable_resources());
  }
  for (const CpusetUpdate& u : result.updates) ToProto(u, out->add_update());
}

void ToProto(const Pod& pod, api::PodSandbox* out) {
  out->set_id(pod.id);
  out->set_name(pod.name);
  out->set_uid(pod.uid);
  out->set_namespace_(pod.namespace_name);
  out->mutable_labels()->insert(pod.labels.begin(), pod.labels.end());
  out->mutable_annotations()->insert(pod.annotations.begin(), pod.annotations.end());
}

void ToProto(const Container& container, api::Container* out) {
  out->set_id(container.id);
  out->set_pod_sandbox_id(container.pod_sandbox_id);
  out->set_name(container.name);
  out->set_state(static_cast<api::ContainerState>(container.state));
  for (const std::string& e : container.env) out->add_env(e);
  out->mutable_annotations()->insert(container.annotations.begin(), container.annotations.end());
  ToProto(container.cpuset, out->mutable_linux()->mutable_resources());
  out->set_pid(container.pid);
}

}  // namespace dracpu::nri
