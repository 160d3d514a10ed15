// Test helpers for the pinning policy: a real segment in a temp dir, opened once as the
// dra-agent (to insert claims and the topology) and once as the nri-agent. Tests only.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/claim_env.h"
#include "nri-agent/nri/types.h"
#include "shm-schema/segment.h"
#include "tests/testing/shm_test_util.h"

namespace dracpu::policy::testing {

class SegmentPair {
 public:
  // A node whose allocatable CPUs are `allocatable` (online = allocatable, nothing reserved).
  // `real_boot_id`: record this machine's boot id (for a segment another process, such as the
  // dracpu-nri-agent binary, attaches to) instead of the tests' fixed one.
  explicit SegmentPair(const CpuSet& allocatable, uint32_t containers_capacity = 64,
                       bool real_boot_id = false)
      : real_boot_id_(real_boot_id) {
    shm::OpenOptions o = shm::testing::TestOptions(shm::Role::kDraAgent, 64, containers_capacity);
    if (real_boot_id_) o.boot_id = nullptr;
    auto dra = shm::Segment::Open(dir_.File("state.shm"), o);
    EXPECT_TRUE(dra.ok()) << dra.status().ToString();
    dra_ = std::move(*dra);
    shm::TopologySummary topo{};
    topo.online = allocatable;
    topo.allocatable = allocatable;
    topo.numa_nodes = 2;
    topo.sockets = 1;
    shm::ConfigSummary config{};
    config.flags = shm::kConfigStrictCpuReservation;
    config.min_shared_cpus = 1;
    auto tx = dra_->Begin();
    EXPECT_TRUE(tx.ok());
    EXPECT_TRUE(tx->SetTopology(topo).ok());
    EXPECT_TRUE(tx->SetConfig(config).ok());
    tx->Commit();
    ReopenNri();
  }

  // Closes and reopens the nri-agent's attachment (an nri-agent restart).
  void ReopenNri() {
    nri_.reset();
    shm::OpenOptions o = shm::testing::TestOptions(shm::Role::kNriAgent);
    if (real_boot_id_) o.boot_id = nullptr;
    auto nri = shm::Segment::Open(dir_.File("state.shm"), o);
    EXPECT_TRUE(nri.ok()) << nri.status().ToString();
    nri_ = std::move(*nri);
  }

  // Prepares claim `i` (uid shm::testing::Uid(i)) holding `cpus`.
  void Prepare(int i, const CpuSet& cpus, shm::ClaimState state = shm::ClaimState::kPrepared,
               uint32_t flags = 0, std::vector<int> mems = {0}) {
    shm::ClaimSpec spec = shm::testing::TestClaim(i, cpus);
    spec.state = state;
    spec.flags = flags;
    spec.mems = std::move(mems);
    auto tx = dra_->Begin();
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(tx->UpsertClaim(spec).ok());
    tx->Commit();
  }
  void Release(int i) {
    auto tx = dra_->Begin();
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(tx->RemoveClaim(shm::testing::Uid(i)).ok());
    tx->Commit();
  }

  // Detaches the nri-agent role (so that another attachment, e.g. a child process, can take it).
  void CloseNri() { nri_.reset(); }

  shm::Segment* nri() { return nri_.get(); }
  shm::Segment* dra() { return dra_.get(); }
  const std::string& dir() const { return dir_.path(); }
  std::string path() const { return dir_.File("state.shm"); }

 private:
  bool real_boot_id_ = false;
  shm::testing::TempDir dir_;
  std::unique_ptr<shm::Segment> dra_;
  std::unique_ptr<shm::Segment> nri_;
};

inline std::string ClaimVar(int i, const std::string& cpus) {
  return "DRA_CPUSET_" + shm::testing::Uid(i) + "=" + cpus;
}

inline nri::Pod MakePod(const std::string& id) {
  nri::Pod p;
  p.id = id;
  p.name = "pod-" + id;
  p.uid = "uid-" + id;
  p.namespace_name = "default";
  return p;
}

inline nri::Container MakeContainer(const std::string& id, const nri::Pod& pod,
                                    const std::string& name, std::vector<std::string> env = {},
                                    const std::string& cpus = "") {
  nri::Container c;
  c.id = id;
  c.pod_sandbox_id = pod.id;
  c.name = name;
  c.state = nri::ContainerState::kRunning;
  c.env = std::move(env);
  c.cpuset.cpus = cpus;
  return c;
}

}  // namespace dracpu::policy::testing
