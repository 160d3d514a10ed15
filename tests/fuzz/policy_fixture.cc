#include "tests/fuzz/policy_fixture.h"

#include "common/claim_env.h"
#include "tests/fuzz/fuzz_check.h"

namespace dracpu::fuzz {
namespace {

const CpuSet kAllocatable = CpuSet::Range(0, 15);

struct FixtureClaim {
  std::string_view uid;
  CpuSet cpus;
  shm::ClaimState state;
  uint32_t flags;
  std::vector<int> mems;
};

std::vector<FixtureClaim> FixtureClaims() {
  return {{kClaimA, CpuSet::Range(2, 3), shm::ClaimState::kPrepared, 0, {0}},
          {kClaimB, CpuSet::Range(8, 11), shm::ClaimState::kPrepared, shm::kClaimAlignMemory, {1}},
          {kClaimC, CpuSet::Range(4, 5), shm::ClaimState::kReserved, 0, {0}}};
}

// The fixture cannot work without its segment: stop with the reason.
template <typename T>
T Must(Result<T> result, std::string_view what) {
  if (!result.ok()) Broken(std::string(what) + ": " + result.status().ToString(), {});
  return std::move(result).value();
}
void Must(const Status& status, std::string_view what) {
  if (!status.ok()) Broken(std::string(what) + ": " + status.ToString(), {});
}

shm::OpenOptions Options(shm::Role role) {
  shm::OpenOptions o;
  o.role = role;
  o.create_if_missing = role == shm::Role::kDraAgent;
  o.node_name = "fuzz-node";
  o.version = "fuzz";
  o.claims_capacity = 8;
  o.containers_capacity = 64;
  o.boot_id = [] { return Result<std::string>(std::string("fuzz-boot")); };
  return o;
}

}  // namespace

PolicyFixture& PolicyFixture::Get() {
  static PolicyFixture fixture;  // destroyed at exit, which removes its temp dir
  return fixture;
}

PolicyFixture::PolicyFixture() : dir_("dracpu-fuzz") {
  const std::string path = dir_.File("state.shm");
  dra_ = Must(shm::Segment::Open(path, Options(shm::Role::kDraAgent)), "create the segment");
  shm::TopologySummary topology{};
  topology.online = kAllocatable;
  topology.allocatable = kAllocatable;
  topology.numa_nodes = 2;
  topology.sockets = 1;
  shm::ConfigSummary config{};
  config.flags = shm::kConfigStrictCpuReservation;
  config.min_shared_cpus = 1;
  shm::WriteTransaction txn = Must(dra_->Begin(), "lock the segment");
  Must(txn.SetTopology(topology), "record the topology");
  Must(txn.SetConfig(config), "record the config");
  for (const FixtureClaim& c : FixtureClaims()) {
    shm::ClaimSpec spec;
    spec.uid = std::string(c.uid);
    spec.namespace_ = "fuzz";
    spec.name = "claim";
    spec.state = c.state;
    spec.flags = c.flags;
    spec.request_names = {"cpus"};
    spec.cpus = c.cpus;
    spec.mems = c.mems;
    Must(txn.UpsertClaim(spec), "insert a claim");
    claimed_ |= c.cpus;
  }
  txn.Commit();
  pool_ = kAllocatable - claimed_;
  nri_ = Must(shm::Segment::Open(path, Options(shm::Role::kNriAgent)), "attach the nri-agent");
}

policy::PinningPolicy& PolicyFixture::FreshPolicy() {
  policy_ = std::make_unique<policy::PinningPolicy>(nri_.get(), policy::PolicyOptions{});
  // The runtime says it has nothing: the table empties, whatever the last input left there.
  Must(policy_->Synchronize({}, {}).status(), "empty the containers table");
  return *policy_;
}

CpuSet PolicyFixture::PreparedCpus(std::string_view uid) const {
  for (const FixtureClaim& c : FixtureClaims()) {
    if (c.uid == uid && c.state == shm::ClaimState::kPrepared) return c.cpus;
  }
  return CpuSet();
}

void PolicyFixture::CheckCreateContainer(const nri::Container& container,
                                         const Result<nri::CreateContainerResult>& result,
                                         std::string_view input) const {
  bool refused = false;
  bool unknown = false;
  CpuSet wanted;
  int claims = 0;
  for (const std::string& entry : container.env) {
    Result<std::optional<ClaimEnv>> env = ParseClaimEnvEntry(entry);
    if (!env.ok()) {
      refused = true;
      continue;
    }
    if (!env->has_value()) continue;
    ++claims;
    const CpuSet prepared = PreparedCpus((*env)->claim_uid);
    if (prepared.Empty() || !(prepared == (*env)->cpus)) unknown = true;
    wanted |= (*env)->cpus;
  }
  if (refused) Check(!result.ok(), "a refused DRA_CPUSET_ env yielded CPUs", input);
  if (unknown) Check(!result.ok(), "an env naming no prepared claim's CPUs yielded CPUs", input);
  if (!result.ok()) return;
  Result<CpuSet> got = CpuSet::ParseList(result->adjust.cpus);
  Check(got.ok(), "the adjusted cpuset does not parse", input);
  if (claims > 0) {
    Check(*got == wanted, "an exclusive container did not get exactly its claims' CPUs", input);
  } else {
    Check(*got == pool_, "a shared container did not get exactly the shared pool", input);
    Check(!got->Intersects(claimed_), "the shared pool overlaps a claim", input);
  }
  CheckUpdates(result->updates, input);
}

void PolicyFixture::CheckUpdates(const std::vector<nri::CpusetUpdate>& updates,
                                 std::string_view input) const {
  for (const nri::CpusetUpdate& u : updates) {
    Result<CpuSet> cpus = CpuSet::ParseList(u.cpuset.cpus);
    Check(cpus.ok() && !cpus->Empty(), "an update's cpuset does not parse or is empty", input);
    if (*cpus == pool_) continue;
    Check(cpus->IsSubsetOf(claimed_), "an update hands out CPUs no claim holds", input);
  }
}

}  // namespace dracpu::fuzz
