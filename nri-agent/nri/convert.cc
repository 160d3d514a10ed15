#include "nri-agent/nri/convert.h"

#include <google/protobuf/io/coded_stream.h>

namespace dracpu::nri {
namespace {

using ::google::protobuf::io::CodedOutputStream;

// The tag of a length-delimited field (wire type 2: strings, bytes, messages).
constexpr uint32_t LengthDelimitedTag(int field) { return (static_cast<uint32_t>(field) << 3) | 2; }

// Appends `updates` as the repeated ContainerUpdate field `field`. A ContainerUpdate is
// container_id (1), linux (2), ignore_failure (3), written in that order as the generated code
// does; fields 2 and 3 are the same bytes for every update to one cpuset, so they are
// serialized once per (cpuset, ignore_failure) and copied after each id.
void AppendUpdates(int field, const std::vector<CpusetUpdate>& updates, std::string& out) {
  struct Tail {
    const CpusetUpdate* first;  // the first update with these fields 2 and 3
    std::string bytes;
  };
  std::vector<Tail> tails;  // usually one: the pool
  std::vector<size_t> tail_of;
  tail_of.reserve(updates.size());
  for (const CpusetUpdate& u : updates) {
    size_t t = 0;
    while (t < tails.size() && !(tails[t].first->ignore_failure == u.ignore_failure &&
                                 tails[t].first->cpuset == u.cpuset)) {
      ++t;
    }
    if (t == tails.size()) {
      api::ContainerUpdate without_id;
      ToProto(CpusetUpdate{"", u.cpuset, u.ignore_failure}, &without_id);
      tails.push_back({&u, without_id.SerializeAsString()});
    }
    tail_of.push_back(t);
  }
  // Sized first, then written in place: one allocation for hundreds of updates.
  const uint32_t update_tag = LengthDelimitedTag(field);
  const uint32_t id_tag = LengthDelimitedTag(api::ContainerUpdate::kContainerIdFieldNumber);
  auto body_size = [&](size_t i) {
    const std::string& id = updates[i].container_id;
    // An empty id is not written at all (proto3), as the generated code does.
    const size_t id_bytes =
        id.empty()
            ? 0
            : CodedOutputStream::VarintSize32(id_tag) +
                  CodedOutputStream::VarintSize32(static_cast<uint32_t>(id.size())) + id.size();
    return id_bytes + tails[tail_of[i]].bytes.size();
  };
  size_t total = 0;
  for (size_t i = 0; i < updates.size(); ++i) {
    const size_t body = body_size(i);
    total += CodedOutputStream::VarintSize32(update_tag) +
             CodedOutputStream::VarintSize32(static_cast<uint32_t>(body)) + body;
  }
  const size_t start = out.size();
  out.resize(start + total);
  auto* p = reinterpret_cast<uint8_t*>(out.data() + start);
  for (size_t i = 0; i < updates.size(); ++i) {
    const std::string& id = updates[i].container_id;
    const std::string& tail = tails[tail_of[i]].bytes;
    p = CodedOutputStream::WriteVarint32ToArray(update_tag, p);
    p = CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(body_size(i)), p);
    if (!id.empty()) {
      p = CodedOutputStream::WriteVarint32ToArray(id_tag, p);
      p = CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(id.size()), p);
      p = CodedOutputStream::WriteRawToArray(id.data(), static_cast<int>(id.size()), p);
    }
    p = CodedOutputStream::WriteRawToArray(tail.data(), static_cast<int>(tail.size()), p);
  }
}

}  // namespace

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

std::string SerializeCreateContainerResponse(const CreateContainerResult& result) {
  CreateContainerResult adjust_only;
  adjust_only.adjust = result.adjust;
  api::CreateContainerResponse head;
  ToProto(adjust_only, &head);
  std::string out = head.SerializeAsString();
  AppendUpdates(api::CreateContainerResponse::kUpdateFieldNumber, result.updates, out);
  return out;
}

std::string SerializeUpdatesResponse(const std::vector<CpusetUpdate>& updates) {
  static_assert(static_cast<int>(api::UpdateContainerResponse::kUpdateFieldNumber) ==
                static_cast<int>(api::StopContainerResponse::kUpdateFieldNumber));
  std::string out;
  AppendUpdates(api::UpdateContainerResponse::kUpdateFieldNumber, updates, out);
  return out;
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
