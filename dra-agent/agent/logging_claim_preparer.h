// LoggingClaimPreparer: the dra-agent's per-operation log of the kubelet's Prepare and Unprepare
// calls, a ClaimPreparer that forwards to another one (as the nri-agent logs each NRI event).
//
// Every call gets an operation id (8 hex digits, as the nri-agent's), and each of its claims
// one begin and one end line, at -v 2:
//   op=1f3a09c2 Prepare begin claim=ns/name uid=...
//   op=1f3a09c2 Prepare end claim=ns/name uid=... cpus=4-7 devices=2 in 1.2ms
//   op=1f3a09c2 Unprepare end claim=ns/name uid=... cpus=4-7 in 0.4ms
// The CPUs are the claim's as `cpus_of` reports them: after Prepare, the ones it took; for
// Unprepare, the ones it held before (read before forwarding). A claim that fails is logged at
// WARNING whatever the verbosity, with its error, so refusals are never silent. The duration is
// the whole call's (claims of one call are prepared together).
//
// Thread safety: as the wrapped preparer (calls come concurrently from gRPC threads); `cpus_of`
// and `clock` must be safe for concurrent use.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/cpu_set.h"
#include "dra-agent/prepare/claim_preparer.h"

namespace dracpu::dra {

class LoggingClaimPreparer final : public ClaimPreparer {
 public:
  // The claim's CPUs as recorded (nullopt: not recorded). Errors are the caller's to hide.
  using CpusOf = std::function<std::optional<CpuSet>(const std::string& uid)>;

  // `inner`, `clock` and `random` are not owned and must outlive this.
  LoggingClaimPreparer(ClaimPreparer& inner, CpusOf cpus_of, const Clock& clock, Random& random);

  std::map<std::string, ClaimPrepareResult> Prepare(const std::vector<ClaimRef>& claims) override;
  std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims) override;

 private:
  std::string NewOp();
  std::string CpusText(const std::optional<CpuSet>& cpus) const;

  ClaimPreparer& inner_;
  CpusOf cpus_of_;
  const Clock& clock_;
  Random& random_;
};

}  // namespace dracpu::dra
