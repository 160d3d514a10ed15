// A node for the fuzz targets that drive the nri-agent's pinning policy: a real segment in a
// temp dir (removed at exit) with CPUs 0-15 allocatable, claim kClaimA prepared on CPUs 2-3,
// kClaimB prepared on 8-11 with aligned memory, and kClaimC only reserved (a Prepare in
// progress) on 4-5; the nri-agent's attachment drives a fresh PinningPolicy per input.
//
// CheckCreateContainer states what the policy must do with any container: a DRA_CPUSET_ entry
// that ParseClaimEnvEntry refuses, or one that does not match a prepared claim exactly, never
// yields CPUs; an accepted container gets exactly its claims' CPUs, and every other container
// exactly the shared pool, which never overlaps a claim.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/cpu_set.h"
#include "nri-agent/nri/types.h"
#include "nri-agent/policy/pinning_policy.h"
#include "shm-schema/segment.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::fuzz {

inline constexpr std::string_view kClaimA = "0b1e4a52-7c1d-4d0e-9a4b-1f1e2d3c4b5a";
inline constexpr std::string_view kClaimB = "8f2c6d1e-3b4a-4c5d-8e6f-7a8b9c0d1e2f";
inline constexpr std::string_view kClaimC = "c0ffee00-1111-4222-8333-444455556666";

class PolicyFixture {
 public:
  // The one fixture of the process, made on first use.
  static PolicyFixture& Get();

  // A new policy over the nri-agent attachment, after emptying the containers table, so every
  // input starts from the same state.
  policy::PinningPolicy& FreshPolicy();

  // The CPUs of a prepared claim (empty for any other uid).
  CpuSet PreparedCpus(std::string_view uid) const;
  CpuSet AllClaimedCpus() const { return claimed_; }
  CpuSet SharedPool() const { return pool_; }

  // Aborts (fuzz::Broken) when `result` breaks the contract in the file comment.
  void CheckCreateContainer(const nri::Container& container,
                            const Result<nri::CreateContainerResult>& result,
                            std::string_view input) const;
  // Every update names CPUs the policy may hand out: exactly the shared pool, or exactly the
  // CPUs of prepared or releasing claims.
  void CheckUpdates(const std::vector<nri::CpusetUpdate>& updates, std::string_view input) const;

 private:
  PolicyFixture();

  testing::TempDir dir_;
  std::unique_ptr<shm::Segment> dra_;
  std::unique_ptr<shm::Segment> nri_;
  std::unique_ptr<policy::PinningPolicy> policy_;
  CpuSet claimed_;
  CpuSet pool_;
};

}  // namespace dracpu::fuzz
