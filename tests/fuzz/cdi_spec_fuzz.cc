// Fuzz target cdi_spec: a file in the CDI directory as the dra-agent reads it back at start
// (ParseCdiSpec, the durable record of prepared claims). Contracts: an accepted spec names a
// valid claim uid and CPUs, and what RenderCdiSpec writes for them parses back to the same
// claim; the file name made from the uid is one plain path component; a refusal is
// INVALID_ARGUMENT naming the file, with nothing from the file unescaped.
#include "common/log_escape.h"
#include "dra-agent/cdi/cdi_spec.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dracpu;
  using fuzz::Check;
  const std::string_view input = fuzz::AsText(data, size);
  constexpr std::string_view kSource = "/var/run/cdi/fuzz.json";
  Result<ClaimEnv> claim = dra::ParseCdiSpec(input, kSource);
  if (!claim.ok()) {
    Check(claim.status().code() == StatusCode::kInvalidArgument,
          "a refusal is not INVALID_ARGUMENT", input);
    Check(claim.status().message().rfind("CDI spec " + std::string(kSource) + ": ", 0) == 0,
          "a refusal does not name the file", input);
    Check(IsLogSafe(claim.status().message()), "a refusal carries unescaped bytes", input);
    return 0;
  }
  Check(ValidateClaimUid(claim->claim_uid).ok(), "an accepted spec has an invalid uid", input);
  Check(!claim->cpus.Empty(), "an accepted spec names no CPUs", input);
  const std::string file = dra::CdiSpecFileName(claim->claim_uid);
  Check(file.find('/') == std::string::npos && file != "." && file != ".." && IsLogSafe(file),
        "the spec's file name is not one plain path component", input);
  Result<ClaimEnv> again =
      dra::ParseCdiSpec(dra::RenderCdiSpec(claim->claim_uid, claim->cpus), kSource);
  Check(again.ok() && again->claim_uid == claim->claim_uid && again->cpus == claim->cpus,
        "render and parse do not round-trip", input);
  return 0;
}
