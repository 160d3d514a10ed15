// Fuzz target claim_env: the DRA_CPUSET_<uid>=<cpulist> variables a pod's author controls.
// The input is a container's environment, one entry per line. Each entry goes through
// ParseClaimEnvEntry (an accepted entry re-renders and re-parses to the same claim and CPUs; a
// refusal names the variable and prints nothing unescaped), then the whole environment
// through the nri-agent's CreateContainer on the fixture node: a refused env never yields CPUs.
#include <string>
#include <vector>

#include "common/claim_env.h"
#include "common/log_escape.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/policy_fixture.h"

namespace dracpu::fuzz {
namespace {

void CheckEntry(std::string_view entry, std::string_view input) {
  Result<std::optional<ClaimEnv>> parsed = ParseClaimEnvEntry(entry);
  const bool reserved = entry.substr(0, kClaimEnvPrefix.size()) == kClaimEnvPrefix;
  if (!reserved) {
    Check(parsed.ok() && !parsed->has_value(), "a variable without the prefix was not ignored",
          input);
    return;
  }
  if (!parsed.ok()) {
    Check(parsed.status().code() == StatusCode::kInvalidArgument,
          "a refused entry is not INVALID_ARGUMENT", input);
    Check(IsLogSafe(parsed.status().message()), "a refusal carries unescaped bytes", input);
    return;
  }
  Check(parsed->has_value(), "a reserved variable was ignored", input);
  const ClaimEnv& env = **parsed;
  Check(ValidateClaimUid(env.claim_uid).ok(), "an accepted uid is not valid", input);
  Check(!env.cpus.Empty(), "an accepted entry names no CPUs", input);
  Check(
      entry.substr(0, ClaimEnvName(env.claim_uid).size() + 1) == ClaimEnvName(env.claim_uid) + "=",
      "the accepted uid is not the variable's", input);
  Result<std::optional<ClaimEnv>> again =
      ParseClaimEnvEntry(ClaimEnvEntry(env.claim_uid, env.cpus));
  Check(again.ok() && again->has_value() && (*again)->claim_uid == env.claim_uid &&
            (*again)->cpus == env.cpus,
        "render and parse do not round-trip", input);
}

}  // namespace
}  // namespace dracpu::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dracpu;
  const std::string_view input = fuzz::AsText(data, size);
  nri::Container container;
  container.id = "fuzz-container";
  container.pod_sandbox_id = "fuzz-sandbox";
  container.name = "app";
  container.state = nri::ContainerState::kCreated;
  for (size_t start = 0; start <= input.size();) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view entry = input.substr(start, end - start);
    fuzz::CheckEntry(entry, input);
    container.env.emplace_back(entry);
    start = end + 1;
  }
  fuzz::PolicyFixture& fixture = fuzz::PolicyFixture::Get();
  nri::Pod pod;
  pod.id = "fuzz-sandbox";
  pod.name = "pod";
  pod.uid = "4d2a1c3b-0000-4000-8000-000000000001";
  pod.namespace_name = "fuzz";
  policy::PinningPolicy& policy = fixture.FreshPolicy();
  fixture.CheckCreateContainer(container, policy.CreateContainer(pod, container), input);
  return 0;
}
