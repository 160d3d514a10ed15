#include "nri-agent/policy/pinning_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "shm-schema/verify.h"
#include "tests/testing/policy_test_util.h"

namespace dracpu::policy {
namespace {

using shm::testing::Uid;
using testing::ClaimVar;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakeContainer;
using testing::MakePod;
using testing::SegmentPair;

CpuSet Cpus(const std::string& list) { return *CpuSet::ParseList(list); }

class PolicyTest : public ::testing::Test {
 protected:
  PolicyTest() : seg_(CpuSet::Range(0, 7)), policy_(seg_.nri(), PolicyOptions{}) {}

  Result<nri::CreateContainerResult> Create(const std::string& id, const std::string& pod_id,
                                            const std::string& name,
                                            std::vector<std::string> env = {}) {
    return policy_.CreateContainer(MakePod(pod_id), MakeContainer(id, MakePod(pod_id), name, env));
  }
  std::optional<shm::ContainerEntry> Recorded(const std::string& id) {
    auto r = seg_.nri()->FindContainer(id);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : std::nullopt;
  }

  SegmentPair seg_;
  PinningPolicy policy_;
};

TEST_F(PolicyTest, SharedContainerGetsAllocatableMinusClaims) {
  seg_.Prepare(1, Cpus("2-3"));
  auto r = Create("c1", "p1", "app");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->adjust.cpus, "0-1,4-7");
  EXPECT_EQ(r->adjust.mems, "");
  EXPECT_THAT(r->updates, IsEmpty());
  auto e = Recorded("c1");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->Kind(), shm::ContainerKind::kShared);
  EXPECT_EQ(e->cpus, Cpus("0-1,4-7"));
  auto snap = seg_.nri()->ReadSnapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->shared_pool.cpus, Cpus("0-1,4-7"));
}

struct RefusalCase {
  std::string name;
  std::vector<std::string> env;
  StatusCode code;
  std::string message;
};

TEST_F(PolicyTest, CreateRefusesBadOrForgedClaims) {
  seg_.Prepare(1, Cpus("2-3"));
  seg_.Prepare(2, Cpus("4"), shm::ClaimState::kReserved);
  seg_.Prepare(3, Cpus("5"), shm::ClaimState::kReleasing);
  const std::vector<RefusalCase> cases = {
      {"malformed value", {ClaimVar(1, "2-x")}, StatusCode::kInvalidArgument, "DRA_CPUSET_"},
      {"empty value", {ClaimVar(1, "")}, StatusCode::kInvalidArgument, "DRA_CPUSET_"},
      {"no equals sign", {"DRA_CPUSET_" + Uid(1)}, StatusCode::kInvalidArgument, "no value"},
      {"bad uid", {"DRA_CPUSET_bad_uid!=1"}, StatusCode::kInvalidArgument, "DRA_CPUSET_bad_uid!"},
      {"unknown claim", {ClaimVar(9, "6")}, StatusCode::kNotFound, "not prepared"},
      {"forged cpus", {ClaimVar(1, "2-4")}, StatusCode::kPermissionDenied, "does not match"},
      {"subset of the claim", {ClaimVar(1, "2")}, StatusCode::kPermissionDenied, "does not match"},
      {"reserved, not prepared", {ClaimVar(2, "4")}, StatusCode::kFailedPrecondition, "reserved"},
      {"releasing", {ClaimVar(3, "5")}, StatusCode::kFailedPrecondition, "releasing"},
      {"one good one forged",
       {ClaimVar(1, "2-3"), ClaimVar(9, "7")},
       StatusCode::kNotFound,
       Uid(9)},
      {"same claim twice, different cpus",
       {ClaimVar(1, "2-3"), ClaimVar(1, "2")},
       StatusCode::kInvalidArgument,
       "twice"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    auto r = Create("c-" + tc.name, "p1", "app", tc.env);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), tc.code) << r.status().ToString();
    EXPECT_THAT(r.status().message(), HasSubstr(tc.message));
    EXPECT_THAT(r.status().message(), HasSubstr("default/pod-p1/app"));
    EXPECT_FALSE(Recorded("c-" + tc.name).has_value());
  }
  EXPECT_TRUE(policy_.containers().empty());
}

TEST_F(PolicyTest, ExclusiveContainerGetsClaimCpusAndShrinksRunningSharedOnly) {
  ASSERT_TRUE(Create("s1", "p1", "a").ok());
  ASSERT_TRUE(Create("s2", "p2", "a").ok());
  ASSERT_TRUE(Create("s3", "p3", "a").ok());
  ASSERT_TRUE(policy_.StopContainer(MakePod("p3"), MakeContainer("s3", MakePod("p3"), "a")).ok());
  seg_.Prepare(1, Cpus("2-3"));
  seg_.Prepare(2, Cpus("6"));
  auto r = Create("x1", "p4", "main", {"A=1", ClaimVar(1, "2,3"), ClaimVar(2, "6")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->adjust.cpus, "2-3,6");
  EXPECT_EQ(r->adjust.mems, "");
  EXPECT_THAT(r->updates, ElementsAre(nri::CpusetUpdate{"s1", {"0-1,4-5,7", ""}, false},
                                      nri::CpusetUpdate{"s2", {"0-1,4-5,7", ""}, false}));
  auto e = Recorded("x1");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->Kind(), shm::ContainerKind::kExclusive);
  EXPECT_EQ(e->claim_count, 2u);
  EXPECT_EQ(e->ClaimUid(0), Uid(1));
  EXPECT_EQ(e->cpus, Cpus("2-3,6"));
  EXPECT_EQ(Recorded("s1")->cpus, Cpus("0-1,4-5,7"));
  EXPECT_EQ(Recorded("s3")->cpus, Cpus("0-7"));  // stopped: left alone

  // A later shared container gets the shrunk pool; nothing else changes.
  auto s4 = Create("s4", "p5", "a");
  ASSERT_TRUE(s4.ok());
  EXPECT_EQ(s4->adjust.cpus, "0-1,4-5,7");
  EXPECT_THAT(s4->updates, IsEmpty());
}

TEST(PolicyMovesAfterReplyTest, TheBindingBeforeTheReplyTheMovedContainersAfter) {
  SegmentPair seg(CpuSet::Range(0, 7));
  PolicyOptions options;
  options.record_moves_after_reply = true;
  PinningPolicy policy(seg.nri(), options);
  auto create = [&](const std::string& id, const std::string& pod,
                    std::vector<std::string> env = {}) {
    return policy.CreateContainer(MakePod(pod), MakeContainer(id, MakePod(pod), "a", env));
  };
  auto recorded_cpus = [&](const std::string& id) {
    auto r = seg.nri()->FindContainer(id);
    EXPECT_TRUE(r.ok() && r->has_value()) << id;
    return r.ok() && r->has_value() ? (*r)->cpus : CpuSet();
  };
  ASSERT_TRUE(create("s1", "p1").ok());
  ASSERT_TRUE(create("s2", "p2").ok());
  // Their records are in; the wake of the segment's waiters for them is not.
  EXPECT_EQ(recorded_cpus("s2"), Cpus("0-7"));
  EXPECT_TRUE(seg.nri()->has_deferred_wake());
  EXPECT_TRUE(policy.has_work_after_reply());
  ASSERT_TRUE(policy.RecordAfterReply().ok());
  EXPECT_FALSE(seg.nri()->has_deferred_wake());
  EXPECT_FALSE(policy.has_work_after_reply());
  seg.Prepare(1, Cpus("2-3"));
  auto r = create("x1", "p3", {ClaimVar(1, "2-3")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->updates.size(), 2u);
  // Before the reply: the binding and the pool; the shrunk containers not yet.
  EXPECT_EQ(recorded_cpus("x1"), Cpus("2-3"));
  auto snap = seg.nri()->ReadSnapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->shared_pool.cpus, Cpus("0-1,4-7"));
  EXPECT_EQ(recorded_cpus("s1"), Cpus("0-7"));
  EXPECT_EQ(policy.containers().at("s1").cpus, Cpus("0-1,4-7"));  // its own view moved at once
  EXPECT_TRUE(policy.has_work_after_reply());
  ASSERT_TRUE(policy.RecordAfterReply().ok());
  EXPECT_FALSE(policy.has_work_after_reply());
  EXPECT_FALSE(seg.nri()->has_deferred_wake());
  EXPECT_EQ(recorded_cpus("s1"), Cpus("0-1,4-7"));
  EXPECT_EQ(recorded_cpus("s2"), Cpus("0-1,4-7"));
  auto verified = shm::VerifySnapshot(*seg.nri()->ReadSnapshot());
  EXPECT_THAT(verified.violations, IsEmpty());

  // Without RecordAfterReply, the next call records them first (here a removal of a moved one).
  ASSERT_TRUE(policy.StopContainer(MakePod("p3"), MakeContainer("x1", MakePod("p3"), "a")).ok());
  ASSERT_TRUE(policy.RemoveContainer(MakePod("p3"), MakeContainer("x1", MakePod("p3"), "a")).ok());
  seg.Release(1);
  auto widened = policy.UpdateContainer(MakePod("p1"), MakeContainer("s1", MakePod("p1"), "a"),
                                        nri::Cpuset{"0-1,4-7", ""});
  ASSERT_TRUE(widened.ok());
  EXPECT_EQ(widened->size(), 2u);  // s2 widened, s1 re-asserted
  EXPECT_TRUE(policy.has_work_after_reply());
  ASSERT_TRUE(policy.RemoveContainer(MakePod("p2"), MakeContainer("s2", MakePod("p2"), "a")).ok());
  EXPECT_FALSE(policy.has_work_after_reply());
  EXPECT_EQ(recorded_cpus("s1"), Cpus("0-7"));
  auto gone = seg.nri()->FindContainer("s2");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
}

TEST_F(PolicyTest, OneClaimOneContainer) {
  ASSERT_TRUE(Create("s1", "p0", "a").ok());
  seg_.Prepare(1, Cpus("2-3"));
  auto first = Create("x1", "p1", "main", {ClaimVar(1, "2-3")});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->updates.size(), 1u);

  auto other_pod = Create("x2", "p2", "main", {ClaimVar(1, "2-3")});
  ASSERT_FALSE(other_pod.ok());
  EXPECT_EQ(other_pod.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(other_pod.status().message(), HasSubstr("x1"));

  auto other_container = Create("x3", "p1", "sidecar", {ClaimVar(1, "2-3")});
  ASSERT_FALSE(other_container.ok());
  EXPECT_EQ(other_container.status().code(), StatusCode::kAlreadyExists);

  // The same container restarting (same pod uid and name, new id): allowed, nothing to shrink.
  ASSERT_TRUE(
      policy_.StopContainer(MakePod("p1"), MakeContainer("x1", MakePod("p1"), "main")).ok());
  auto restart = Create("x1b", "p1", "main", {ClaimVar(1, "2-3")});
  ASSERT_TRUE(restart.ok()) << restart.status().ToString();
  EXPECT_EQ(restart->adjust.cpus, "2-3");
  EXPECT_THAT(restart->updates, IsEmpty());

  // Once both are removed, a new pod may use the claim (the kubelet would not, but the rule is
  // about live bindings).
  ASSERT_TRUE(
      policy_.RemoveContainer(MakePod("p1"), MakeContainer("x1", MakePod("p1"), "main")).ok());
  ASSERT_TRUE(
      policy_.RemoveContainer(MakePod("p1"), MakeContainer("x1b", MakePod("p1"), "main")).ok());
  EXPECT_TRUE(Create("x4", "p3", "main", {ClaimVar(1, "2-3")}).ok());
}

TEST_F(PolicyTest, AlignMemoryPerClaim) {
  seg_.Prepare(1, Cpus("2-3"), shm::ClaimState::kPrepared, shm::kClaimAlignMemory, {1});
  seg_.Prepare(2, Cpus("4"), shm::ClaimState::kPrepared, 0, {0});
  seg_.Prepare(3, Cpus("5"), shm::ClaimState::kPrepared, 0, {1});
  auto aligned = Create("x1", "p1", "a", {ClaimVar(1, "2-3")});
  ASSERT_TRUE(aligned.ok());
  EXPECT_EQ(aligned->adjust.mems, "1");
  EXPECT_EQ(shm::NodeMaskToList(Recorded("x1")->mems), "1");
  auto plain = Create("x2", "p2", "a", {ClaimVar(2, "4")});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->adjust.mems, "");
  auto mixed = Create("x3", "p3", "a", {ClaimVar(3, "5"), ClaimVar(1, "2-3")});
  ASSERT_FALSE(mixed.ok());  // claim 1 is x1's
  ASSERT_TRUE(policy_.RemoveContainer(MakePod("p1"), MakeContainer("x1", MakePod("p1"), "a")).ok());
  mixed = Create("x3", "p3", "a", {ClaimVar(3, "5"), ClaimVar(1, "2-3")});
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  EXPECT_EQ(mixed->adjust.mems, "1");
}

TEST_F(PolicyTest, EmptyPoolIsNeverUsed) {
  seg_.Prepare(1, Cpus("0-7"));
  auto shared = Create("s1", "p1", "a");
  ASSERT_FALSE(shared.ok());
  EXPECT_EQ(shared.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(shared.status().message(), HasSubstr("shared CPU pool is empty"));
  // No shared container runs: the exclusive one may start.
  EXPECT_TRUE(Create("x1", "p2", "a", {ClaimVar(1, "0-7")}).ok());
}

TEST_F(PolicyTest, ExclusiveRefusedWhenItWouldEmptyThePoolUnderRunningShared) {
  ASSERT_TRUE(Create("s1", "p1", "a").ok());
  seg_.Prepare(1, Cpus("0-7"));
  auto r = Create("x1", "p2", "a", {ClaimVar(1, "0-7")});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("1 shared containers"));
  EXPECT_EQ(Recorded("s1")->cpus, Cpus("0-7"));
  // Once the shared container stopped, the claim's container may start.
  ASSERT_TRUE(policy_.StopContainer(MakePod("p1"), MakeContainer("s1", MakePod("p1"), "a")).ok());
  EXPECT_TRUE(Create("x1", "p2", "a", {ClaimVar(1, "0-7")}).ok());
}

TEST_F(PolicyTest, UpdateContainerReassertsOurCpuset) {
  seg_.Prepare(1, Cpus("2-3"), shm::ClaimState::kPrepared, shm::kClaimAlignMemory, {1});
  ASSERT_TRUE(Create("x1", "p1", "a", {ClaimVar(1, "2-3")}).ok());
  ASSERT_TRUE(Create("s1", "p2", "a").ok());
  auto pod = MakePod("p1");
  auto c = MakeContainer("x1", pod, "a");
  struct Case {
    nri::Cpuset requested;
    std::vector<nri::CpusetUpdate> want;
  };
  const std::vector<Case> cases = {
      {{"", ""}, {}},
      {{"2-3", ""}, {}},
      {{"3,2", "1"}, {}},
      {{"0-7", ""}, {{"x1", {"2-3", "1"}, false}}},
      {{"2-3", "0"}, {{"x1", {"2-3", "1"}, false}}},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.requested.cpus + "/" + tc.requested.mems);
    auto r = policy_.UpdateContainer(pod, c, tc.requested);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, tc.want);
  }
  auto shared =
      policy_.UpdateContainer(MakePod("p2"), MakeContainer("s1", MakePod("p2"), "a"), {"2", ""});
  ASSERT_TRUE(shared.ok());
  EXPECT_THAT(*shared, ElementsAre(nri::CpusetUpdate{"s1", {"0-1,4-7", ""}, false}));
  // Unknown containers are not ours to re-assert.
  auto unknown = policy_.UpdateContainer(pod, MakeContainer("zz", pod, "a"), {"1", ""});
  ASSERT_TRUE(unknown.ok());
  EXPECT_THAT(*unknown, IsEmpty());
}

// A prepared claim without a container takes nothing from running shared containers (the lazy
// shrink); without unsolicited updates a running shared container keeps an older pool after a
// release, and the answer to its next UpdateContainer (a reply, safe on every runtime) brings it
// to the current one.
TEST_F(PolicyTest, UpdateOfASharedContainerGivesTheCurrentPool) {
  ASSERT_TRUE(Create("s1", "p1", "a").ok());  // pool 0-7
  auto pod = MakePod("p1");
  auto c = MakeContainer("s1", pod, "a");
  seg_.Prepare(1, Cpus("2-3"));
  auto lazy = policy_.UpdateContainer(pod, c, {"0-7", ""});
  ASSERT_TRUE(lazy.ok());
  EXPECT_THAT(*lazy, IsEmpty());
  EXPECT_EQ(Recorded("s1")->cpus, Cpus("0-7"));
  auto reassert = policy_.UpdateContainer(pod, c, {"5", ""});
  ASSERT_TRUE(reassert.ok());
  EXPECT_THAT(*reassert, ElementsAre(nri::CpusetUpdate{"s1", {"0-7", ""}, false}));
  // The claim's container: its creation's reply shrinks s1.
  auto x = Create("x1", "p2", "main", {ClaimVar(1, "2-3")});
  ASSERT_TRUE(x.ok());
  EXPECT_THAT(x->updates, ElementsAre(nri::CpusetUpdate{"s1", {"0-1,4-7", ""}, false}));
  EXPECT_EQ(Recorded("s1")->cpus, Cpus("0-1,4-7"));
  auto same = policy_.UpdateContainer(pod, c, {"0-1,4-7", ""});
  ASSERT_TRUE(same.ok());
  EXPECT_THAT(*same, IsEmpty());
  ASSERT_TRUE(
      policy_.StopContainer(MakePod("p2"), MakeContainer("x1", MakePod("p2"), "main")).ok());
  seg_.Release(1);  // the pool widens; nobody pushed it
  auto wide = policy_.UpdateContainer(pod, c, {"", ""});
  ASSERT_TRUE(wide.ok());
  EXPECT_THAT(*wide, ElementsAre(nri::CpusetUpdate{"s1", {"0-7", ""}, false}));
  EXPECT_EQ(Recorded("s1")->cpus, Cpus("0-7"));
  // A stopped container does not follow the pool.
  ASSERT_TRUE(policy_.StopContainer(pod, c).ok());
  seg_.Prepare(2, Cpus("4"));
  auto stopped = policy_.UpdateContainer(pod, c, {"0-7", ""});
  ASSERT_TRUE(stopped.ok());
  EXPECT_THAT(*stopped, IsEmpty());
}

TEST_F(PolicyTest, StopKeepsRemoveRemoves) {
  seg_.Prepare(1, Cpus("2-3"));
  ASSERT_TRUE(Create("x1", "p1", "a", {ClaimVar(1, "2-3")}).ok());
  auto pod = MakePod("p1");
  auto c = MakeContainer("x1", pod, "a");
  ASSERT_TRUE(policy_.StopContainer(pod, c).ok());
  EXPECT_TRUE(Recorded("x1").has_value());
  EXPECT_TRUE(policy_.containers().at("x1").stopped);
  ASSERT_TRUE(policy_.RemoveContainer(pod, c).ok());
  EXPECT_FALSE(Recorded("x1").has_value());
  EXPECT_EQ(policy_.containers().count("x1"), 0u);
  // Removing an unknown container is fine (the runtime may repeat).
  EXPECT_TRUE(policy_.RemoveContainer(pod, c).ok());
}

// After a restart the runtime still lists stopped containers whose claims the kubelet already
// unprepared: that is a pod's normal end, not a forged claim, so it is not warned about.
TEST_F(PolicyTest, SynchronizeDoesNotWarnAboutStoppedContainersOfReleasedClaims) {
  PinningPolicy restarted(seg_.nri(), PolicyOptions{});
  auto p1 = MakePod("p1");
  nri::Container stopped = MakeContainer("x1", p1, "a", {ClaimVar(3, "2-3")}, "2-3");
  stopped.state = nri::ContainerState::kStopped;
  nri::Container running = MakeContainer("x2", p1, "b", {ClaimVar(4, "4-5")}, "4-5");
  ASSERT_TRUE(restarted.Synchronize({p1}, {stopped, running}).ok());
  const std::vector<std::string> warnings = restarted.TakeWarnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("x2"));
}

TEST_F(PolicyTest, SynchronizeRebuildsMergesAndRepins) {
  seg_.Prepare(1, Cpus("2-3"));
  seg_.Prepare(2, Cpus("4-5"));  // prepared, no container yet: must survive
  // A stale entry from before the restart, gone from the runtime.
  ASSERT_TRUE(Create("gone", "p9", "a").ok());

  PinningPolicy restarted(seg_.nri(), PolicyOptions{});
  auto p1 = MakePod("p1"), p2 = MakePod("p2"), p3 = MakePod("p3");
  std::vector<nri::Container> cs = {
      MakeContainer("x1", p1, "a", {ClaimVar(1, "2-3")}, "2-3"),
      MakeContainer("s1", p2, "a", {}, "0-7"),                             // to shrink
      MakeContainer("s2", p2, "b", {}, "0-1,6-7"),                         // already right
      MakeContainer("f1", p3, "a", {ClaimVar(7, "6-7")}, "6-7"),           // forged: no such claim
      MakeContainer("m1", p3, "b", {"DRA_CPUSET_" + Uid(1) + "=x"}, "1"),  // malformed
  };
  auto r = restarted.Synchronize({p1, p2, p3}, cs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(*r, ElementsAre(nri::CpusetUpdate{"f1", {"0-1,6-7", ""}, false},
                              nri::CpusetUpdate{"m1", {"0-1,6-7", ""}, false},
                              nri::CpusetUpdate{"s1", {"0-1,6-7", ""}, false}));
  EXPECT_EQ(restarted.TakeWarnings().size(), 2u);
  EXPECT_FALSE(Recorded("gone").has_value());
  EXPECT_EQ(Recorded("x1")->Kind(), shm::ContainerKind::kExclusive);
  EXPECT_EQ(Recorded("f1")->Kind(), shm::ContainerKind::kShared);
  EXPECT_EQ(restarted.containers().size(), 5u);

  // Claim 2 is still prepared and can be used now.
  auto claims = seg_.nri()->FindClaim(Uid(2));
  ASSERT_TRUE(claims.ok() && claims->has_value());
  auto x2 = restarted.CreateContainer(p3, MakeContainer("x2", p3, "c", {ClaimVar(2, "4-5")}));
  ASSERT_TRUE(x2.ok()) << x2.status().ToString();
  EXPECT_EQ(x2->adjust.cpus, "4-5");
  // And claim 1 is still bound to x1 after the restart.
  auto steal = restarted.CreateContainer(p3, MakeContainer("x3", p3, "d", {ClaimVar(1, "2-3")}));
  EXPECT_EQ(steal.status().code(), StatusCode::kAlreadyExists);
}

TEST_F(PolicyTest, SynchronizePrefersTheRecordedOwner) {
  seg_.Prepare(1, Cpus("2-3"));
  ASSERT_TRUE(Create("x1", "p1", "a", {ClaimVar(1, "2-3")}).ok());
  PinningPolicy restarted(seg_.nri(), PolicyOptions{});
  auto p1 = MakePod("p1"), p2 = MakePod("p2");
  // The impostor comes first in the runtime's list.
  auto r =
      restarted.Synchronize({p1, p2}, {MakeContainer("imp", p2, "a", {ClaimVar(1, "2-3")}, "2-3"),
                                       MakeContainer("x1", p1, "a", {ClaimVar(1, "2-3")}, "2-3")});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(*r, ElementsAre(nri::CpusetUpdate{"imp", {"0-1,4-7", ""}, false}));
  EXPECT_EQ(restarted.containers().at("x1").kind, shm::ContainerKind::kExclusive);
  EXPECT_EQ(restarted.containers().at("imp").kind, shm::ContainerKind::kShared);
}

TEST_F(PolicyTest, WidenAfterRelease) {
  seg_.Prepare(1, Cpus("2-3"));
  ASSERT_TRUE(Create("s1", "p1", "a").ok());
  ASSERT_TRUE(Create("s2", "p2", "a").ok());
  ASSERT_TRUE(Create("x1", "p3", "a", {ClaimVar(1, "2-3")}).ok());
  auto none = policy_.PendingPoolUpdates();
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(*none, IsEmpty());

  ASSERT_TRUE(policy_.RemoveContainer(MakePod("p3"), MakeContainer("x1", MakePod("p3"), "a")).ok());
  seg_.Release(1);
  auto widen = policy_.PendingPoolUpdates();
  ASSERT_TRUE(widen.ok());
  EXPECT_THAT(*widen, ElementsAre(nri::CpusetUpdate{"s1", {"0-7", ""}, true},
                                  nri::CpusetUpdate{"s2", {"0-7", ""}, true}));
  auto snap = seg_.nri()->ReadSnapshot();
  EXPECT_EQ(snap->shared_pool.cpus, Cpus("0-7"));
  // s2 failed (say it exited meanwhile): only s1 is recorded widened, s2 stays pending.
  ASSERT_TRUE(policy_.UpdatesApplied(*widen, {(*widen)[1]}).ok());
  EXPECT_EQ(Recorded("s1")->cpus, Cpus("0-7"));
  EXPECT_EQ(Recorded("s2")->cpus, Cpus("0-1,4-7"));
  auto again = policy_.PendingPoolUpdates();
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(*again, ElementsAre(nri::CpusetUpdate{"s2", {"0-7", ""}, true}));
}

// An unsolicited widening is in flight (to 0-7, after claim 1 on 2-3 was released) when claim 2
// takes 2-3 again and its container is created. The creation's reply shrinks both shared
// containers although the policy has not seen the widening applied: the runtime may apply it
// first. It may also apply it last, so once it is answered the policy reports the race and the
// next push moves them off the claim again.
TEST_F(PolicyTest, AWideningInFlightNeverLeavesAClaimsCpusShared) {
  seg_.Prepare(1, Cpus("2-3"));
  ASSERT_TRUE(Create("s1", "p1", "a").ok());
  ASSERT_TRUE(Create("s2", "p2", "a").ok());
  seg_.Release(1);
  auto widen = policy_.PendingPoolUpdates();
  ASSERT_TRUE(widen.ok());
  ASSERT_EQ(widen->size(), 2u);
  policy_.UpdatesSent(*widen);

  seg_.Prepare(2, Cpus("2-3"));
  // A shared container created meanwhile: nothing to move (the pool is what s1, s2 run on).
  auto s3 = Create("s3", "p3", "a");
  ASSERT_TRUE(s3.ok());
  EXPECT_EQ(s3->adjust.cpus, "0-1,4-7");
  EXPECT_THAT(s3->updates, IsEmpty());
  auto x = Create("x2", "p4", "main", {ClaimVar(2, "2-3")});
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_THAT(x->updates, ElementsAre(nri::CpusetUpdate{"s1", {"0-1,4-7", ""}, false},
                                      nri::CpusetUpdate{"s2", {"0-1,4-7", ""}, false}));

  // The widening is answered: s1 applied (maybe after the shrink), s2 had exited.
  auto raced = policy_.UpdatesApplied(*widen, {(*widen)[1]});
  ASSERT_TRUE(raced.ok());
  EXPECT_EQ(*raced, 1u);
  EXPECT_EQ(policy_.containers().at("s1").cpus, Cpus("0-7"));
  auto repair = policy_.PendingPoolUpdates();
  ASSERT_TRUE(repair.ok());
  EXPECT_THAT(*repair, ElementsAre(nri::CpusetUpdate{"s1", {"0-1,4-7", ""}, true}));
  auto repaired = policy_.UpdatesApplied(*repair, {});
  ASSERT_TRUE(repaired.ok());
  EXPECT_EQ(*repaired, 0u);
  auto settled = policy_.PendingPoolUpdates();
  ASSERT_TRUE(settled.ok());
  EXPECT_THAT(*settled, IsEmpty());
}

// Without a race (no reply in between), an answered push reports none, and a reply during the
// flight that finds the containers settled on the pool in flight sends nothing again.
TEST_F(PolicyTest, AWideningInFlightIsNotSentTwice) {
  seg_.Prepare(1, Cpus("2-3"));
  ASSERT_TRUE(Create("s1", "p1", "a").ok());
  seg_.Release(1);
  auto widen = policy_.PendingPoolUpdates();
  ASSERT_TRUE(widen.ok());
  ASSERT_EQ(widen->size(), 1u);
  policy_.UpdatesSent(*widen);
  auto s2 = Create("s2", "p2", "a");
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->adjust.cpus, "0-7");
  EXPECT_THAT(s2->updates, IsEmpty());
  auto raced = policy_.UpdatesApplied(*widen, {});
  ASSERT_TRUE(raced.ok());
  EXPECT_EQ(*raced, 0u);
  EXPECT_EQ(Recorded("s1")->cpus, Cpus("0-7"));
}

TEST(PolicyGateTest, SharedPoolUpdatesTable) {
  struct Case {
    SharedPoolUpdates mode;
    std::string runtime, nri_version;
    bool configured;
    bool allowed;
  };
  const std::vector<Case> cases = {
      {SharedPoolUpdates::kAlways, "containerd", "", true, true},
      {SharedPoolUpdates::kNever, "containerd", "v0.13.0", true, false},
      {SharedPoolUpdates::kAuto, "containerd", "", true, false},         // NRI < 0.12
      {SharedPoolUpdates::kAuto, "containerd", "v0.12.0", true, false},  // before nri#301
      {SharedPoolUpdates::kAuto, "containerd", "v0.12.1", true, true},
      {SharedPoolUpdates::kAuto, "containerd", "v0.13.0", true, true},
      {SharedPoolUpdates::kAuto, "cri-o", "0.12.1", true, true},
      {SharedPoolUpdates::kAuto, "cri-o", "v0.11.9", true, false},
      {SharedPoolUpdates::kAuto, "containerd", "v0.12.1-rc.1", true, true},
      {SharedPoolUpdates::kAuto, "containerd", "garbage", true, false},
      {SharedPoolUpdates::kAuto, "containerd", "v1.0.0", true, true},
      {SharedPoolUpdates::kAuto, "containerd", "v0.12.1", false, false},  // no Configure yet
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.runtime + " " + tc.nri_version);
    PinningPolicy p(nullptr, PolicyOptions{tc.mode, CpuSet::Range(0, 3)});
    if (tc.configured) {
      nri::RuntimeInfo info;
      info.runtime_name = tc.runtime;
      info.nri_version = tc.nri_version;
      auto mask = p.Configure(info);
      ASSERT_TRUE(mask.ok());
      EXPECT_EQ(*mask, PinningPolicy::Events());
      EXPECT_EQ(*mask & ~nri::kEventsValidOnOldRuntimes, 0);
    }
    EXPECT_EQ(p.UnsolicitedUpdatesAllowed(), tc.allowed);
  }
}

TEST(PolicyNoSegmentTest, ConservativeUntilTheSegmentAttaches) {
  PinningPolicy p(nullptr, PolicyOptions{SharedPoolUpdates::kAuto, CpuSet::Range(0, 7)});
  auto pod = MakePod("p1");
  // A running container claims 2-3 through its env: kept off the shared containers.
  auto sync = p.Synchronize({pod}, {MakeContainer("x1", pod, "a", {ClaimVar(1, "2-3")}, "2-3"),
                                    MakeContainer("s1", pod, "b", {}, "")});
  ASSERT_TRUE(sync.ok());
  EXPECT_THAT(*sync, ElementsAre(nri::CpusetUpdate{"s1", {"0-1,4-7", ""}, false}));
  auto shared = p.CreateContainer(pod, MakeContainer("s2", pod, "c"));
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared->adjust.cpus, "0-1,4-7");
  auto excl = p.CreateContainer(pod, MakeContainer("x2", pod, "d", {ClaimVar(2, "5")}));
  ASSERT_FALSE(excl.ok());
  EXPECT_EQ(excl.status().code(), StatusCode::kFailedPrecondition);
  // Malformed env is refused with or without the segment.
  auto bad = p.CreateContainer(pod, MakeContainer("x3", pod, "e", {ClaimVar(2, "5-")}));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(ParseNriVersionTest, Forms) {
  EXPECT_EQ(ParseNriVersion("v0.12.1"), (std::vector<int>{0, 12, 1}));
  EXPECT_EQ(ParseNriVersion("0.8.0"), (std::vector<int>{0, 8, 0}));
  EXPECT_EQ(ParseNriVersion("v0.12.1+dirty"), (std::vector<int>{0, 12, 1}));
  EXPECT_FALSE(ParseNriVersion("").has_value());
  EXPECT_FALSE(ParseNriVersion("v0.12").has_value());
  EXPECT_FALSE(ParseNriVersion("v0.12.1x").has_value());
}

}  // namespace
}  // namespace dracpu::policy
