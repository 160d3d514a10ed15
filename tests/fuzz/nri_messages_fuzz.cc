// Fuzz target nri_messages: the NRI requests a runtime sends the plugin, as protobuf bytes
// (selector % 3: 0 CreateContainerRequest, 1 UpdateContainerRequest, 2 SynchronizeRequest),
// through the adapter's conversions (nri-agent/nri/convert.h, as plugin.cc calls them) into the
// pinning policy on the fixture node (policy_fixture.h). Contracts: the conversion of a pod and
// a container round-trips; CreateContainer gives exactly a claim's CPUs or the shared pool and
// never CPUs for a refused or unknown DRA_CPUSET_ env; every update the policy answers (for an
// UpdateContainer after the same container's creation, or for a Synchronize) names exactly the
// shared pool or claimed CPUs.
#include "nri-agent/nri/convert.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/policy_fixture.h"

namespace dracpu::fuzz {
namespace {

namespace api = ::nri::pkg::api::v1alpha1;

void CheckRoundTrip(const nri::Pod& pod, const nri::Container& container, std::string_view input) {
  api::PodSandbox pod_pb;
  nri::ToProto(pod, &pod_pb);
  Check(nri::FromProto(pod_pb) == pod, "a pod does not round-trip through the adapter", input);
  api::Container container_pb;
  nri::ToProto(container, &container_pb);
  Check(nri::FromProto(container_pb) == container,
        "a container does not round-trip through the adapter", input);
}

template <typename Message>
bool ParseInto(std::string_view bytes, Message& message) {
  return message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

void CreateThenUpdate(std::string_view bytes, bool update, std::string_view input) {
  api::UpdateContainerRequest request;  // CreateContainerRequest is its prefix (fields 1, 2)
  if (!ParseInto(bytes, request)) return;
  const nri::Pod pod = nri::FromProto(request.pod());
  const nri::Container container = nri::FromProto(request.container());
  CheckRoundTrip(pod, container, input);
  PolicyFixture& fixture = PolicyFixture::Get();
  policy::PinningPolicy& policy = fixture.FreshPolicy();
  const Result<nri::CreateContainerResult> created = policy.CreateContainer(pod, container);
  fixture.CheckCreateContainer(container, created, input);
  if (!update) return;
  const Result<std::vector<nri::CpusetUpdate>> updates =
      policy.UpdateContainer(pod, container, nri::CpusetFromProto(request.linux_resources()));
  if (updates.ok()) fixture.CheckUpdates(*updates, input);
}

void Synchronize(std::string_view bytes, std::string_view input) {
  api::SynchronizeRequest request;
  if (!ParseInto(bytes, request)) return;
  std::vector<nri::Pod> pods;
  std::vector<nri::Container> containers;
  for (const auto& p : request.pods()) pods.push_back(nri::FromProto(p));
  for (const auto& c : request.containers()) containers.push_back(nri::FromProto(c));
  PolicyFixture& fixture = PolicyFixture::Get();
  policy::PinningPolicy& policy = fixture.FreshPolicy();
  const Result<std::vector<nri::CpusetUpdate>> updates = policy.Synchronize(pods, containers);
  if (updates.ok()) fixture.CheckUpdates(*updates, input);
  // Whatever the runtime reported, the pool handed to new shared containers stays the pool.
  nri::Container fresh;
  fresh.id = "fuzz-after-sync";
  fresh.pod_sandbox_id = "fuzz-sandbox";
  fresh.name = "after";
  nri::Pod pod;
  pod.id = "fuzz-sandbox";
  pod.uid = "4d2a1c3b-0000-4000-8000-000000000002";
  fixture.CheckCreateContainer(fresh, policy.CreateContainer(pod, fresh), input);
}

}  // namespace
}  // namespace dracpu::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = dracpu::fuzz::AsText(data, size);
  const dracpu::fuzz::Selected s = dracpu::fuzz::Select(input);
  switch (s.selector % 3) {
    case 0:
      dracpu::fuzz::CreateThenUpdate(s.rest, /*update=*/false, input);
      break;
    case 1:
      dracpu::fuzz::CreateThenUpdate(s.rest, /*update=*/true, input);
      break;
    default:
      dracpu::fuzz::Synchronize(s.rest, input);
  }
  return 0;
}
