#include "shm-schema/segment.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "shm-schema/checksum.h"
#include "tests/testing/shm_test_util.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::shm {
namespace {

using ::dracpu::shm::testing::TempDir;
using ::dracpu::shm::testing::TestClaim;
using ::dracpu::shm::testing::TestOptions;
using ::dracpu::shm::testing::Uid;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// Raw access to a segment file for corrupting it the way crashes and bugs would.
class RawFile {
 public:
  explicit RawFile(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR);
    struct stat st;
    ::fstat(fd_, &st);
    size_ = static_cast<size_t>(st.st_size);
    data_ =
        static_cast<uint8_t*>(::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
  }
  ~RawFile() {
    ::munmap(data_, size_);
    ::close(fd_);
  }
  SegmentHeader* header() { return reinterpret_cast<SegmentHeader*>(data_); }
  ClaimEntry* claim(int i) {
    return reinterpret_cast<ClaimEntry*>(data_ + header()->claims.entries_offset) + i;
  }
  void Truncate(off_t size) { ASSERT_EQ(::ftruncate(fd_, size), 0); }

 private:
  int fd_ = -1;
  size_t size_ = 0;
  uint8_t* data_ = nullptr;
};

class SegmentTest : public ::testing::Test {
 protected:
  std::unique_ptr<Segment> OpenDra(OpenOptions o = TestOptions(Role::kDraAgent)) {
    Result<std::unique_ptr<Segment>> s = Segment::Open(path_, o);
    EXPECT_THAT(s, IsOk());
    return s.ok() ? std::move(s).value() : nullptr;
  }
  std::unique_ptr<Segment> OpenRole(Role role) {
    Result<std::unique_ptr<Segment>> s = Segment::Open(path_, TestOptions(role));
    EXPECT_THAT(s, IsOk());
    return s.ok() ? std::move(s).value() : nullptr;
  }

  TempDir dir_;
  std::string path_ = dir_.File(SegmentFileName());
};

TEST_F(SegmentTest, CreatesWithMode0600AndReaderSeesCommittedClaims) {
  ::umask(0);  // the mode must not depend on the umask
  auto dra = OpenDra();
  ASSERT_NE(dra, nullptr);
  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ::umask(022);
  {
    Result<WriteTransaction> txn = dra->Begin();
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT(txn->UpsertClaim(TestClaim(1, CpuSet{2, 3})), IsOk());
    ASSERT_THAT(txn->UpsertClaim(TestClaim(2, CpuSet{4})), IsOk());
  }
  auto reader = OpenRole(Role::kReader);
  ASSERT_NE(reader, nullptr);
  Result<Snapshot> snap = reader->ReadSnapshot();
  ASSERT_THAT(snap, IsOk());
  EXPECT_THAT(snap->claims, SizeIs(2));
  EXPECT_EQ(snap->generation % 2, 0u);
  EXPECT_EQ(snap->identity.node_name, "node-a");
  EXPECT_EQ(snap->agents[0].pid, static_cast<uint32_t>(::getpid()));
  EXPECT_STREQ(snap->agents[0].version, "test");
  Result<std::optional<ClaimEntry>> found = reader->FindClaim(Uid(2));
  ASSERT_THAT(found, IsOk());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->cpus, (CpuSet{4}));
  EXPECT_EQ((*found)->Name(), "claim-2");
  ASSERT_THAT(reader->FindClaim(Uid(3)), IsOk());
  EXPECT_FALSE(reader->FindClaim(Uid(3))->has_value());
  EXPECT_THAT(reader->Begin(), StatusIs(StatusCode::kFailedPrecondition, HasSubstr("read-only")));
}

// Random upserts and removes against a std::map model: the index, the dense table and the
// lock-free lookups always agree.
TEST_F(SegmentTest, TablesMatchAModelUnderRandomOperations) {
  auto dra = OpenDra();
  auto nri = OpenRole(Role::kNriAgent);
  ASSERT_NE(nri, nullptr);
  std::mt19937 rng(7);
  std::map<std::string, int> claims;      // uid -> cpu
  std::map<std::string, int> containers;  // id -> cpu
  for (int step = 0; step < 3000; ++step) {
    const int k = static_cast<int>(rng() % 80);
    const bool remove = rng() % 3 == 0;
    if (step % 2 == 0) {
      Result<WriteTransaction> txn = dra->Begin();
      ASSERT_THAT(txn, IsOk());
      if (remove) {
        EXPECT_THAT(txn->RemoveClaim(Uid(k)), IsOkAndHolds(claims.erase(Uid(k)) == 1));
      } else {
        const Status st = txn->UpsertClaim(TestClaim(k, CpuSet{k}));
        if (claims.size() == 64 && !claims.contains(Uid(k))) {
          EXPECT_THAT(st, StatusIs(StatusCode::kResourceExhausted));
        } else {
          ASSERT_THAT(st, IsOk());
          claims[Uid(k)] = k;
        }
      }
    } else {
      Result<WriteTransaction> txn = nri->Begin();
      ASSERT_THAT(txn, IsOk());
      const std::string id = "ctr-" + std::to_string(k);
      if (remove) {
        EXPECT_THAT(txn->RemoveContainer(id), IsOkAndHolds(containers.erase(id) == 1));
      } else {
        ContainerSpec c;
        c.id = id;
        c.kind = ContainerKind::kShared;
        c.cpus = CpuSet{k + 1};
        const Status st = txn->UpsertContainer(c);
        if (containers.size() == 64 && !containers.contains(id)) {
          EXPECT_THAT(st, StatusIs(StatusCode::kResourceExhausted));
        } else {
          ASSERT_THAT(st, IsOk());
          containers[id] = k + 1;
        }
      }
    }
    if (step % 100 == 0 || step == 2999) {
      Result<Snapshot> snap = dra->ReadSnapshot();
      ASSERT_THAT(snap, IsOk());
      ASSERT_EQ(snap->claims.size(), claims.size());
      ASSERT_EQ(snap->containers.size(), containers.size());
      for (int u = 0; u < 80; ++u) {
        Result<std::optional<ClaimEntry>> f = nri->FindClaim(Uid(u));
        ASSERT_THAT(f, IsOk());
        ASSERT_EQ(f->has_value(), claims.contains(Uid(u))) << Uid(u);
        if (f->has_value()) {
          EXPECT_EQ((*f)->cpus, (CpuSet{u}));
        }
        Result<std::optional<ContainerEntry>> c = dra->FindContainer("ctr-" + std::to_string(u));
        ASSERT_THAT(c, IsOk());
        ASSERT_EQ(c->has_value(), containers.contains("ctr-" + std::to_string(u)));
      }
    }
  }
}

TEST_F(SegmentTest, EachTableHasOneWriterRole) {
  auto dra = OpenDra();
  auto nri = OpenRole(Role::kNriAgent);
  {
    Result<WriteTransaction> txn = dra->Begin();
    ASSERT_THAT(txn, IsOk());
    ContainerSpec c;
    c.id = "x";
    EXPECT_THAT(txn->UpsertContainer(c),
                StatusIs(StatusCode::kFailedPrecondition, HasSubstr("only by the nri-agent")));
    EXPECT_THAT(txn->SetSharedPool(CpuSet{1}), StatusIs(StatusCode::kFailedPrecondition));
    EXPECT_THAT(txn->SetContainerCpus("x", CpuSet{1}), StatusIs(StatusCode::kFailedPrecondition));
  }
  Result<WriteTransaction> txn = nri->Begin();
  ASSERT_THAT(txn, IsOk());
  EXPECT_THAT(txn->UpsertClaim(TestClaim(1, CpuSet{1})),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("only by the dra-agent")));
  EXPECT_THAT(txn->RemoveClaim(Uid(1)), StatusIs(StatusCode::kFailedPrecondition));
}

TEST_F(SegmentTest, SetContainerCpusChangesOnlyTheCpuset) {
  auto dra = OpenDra();
  auto nri = OpenRole(Role::kNriAgent);
  ContainerSpec c;
  c.id = "ctr-1";
  c.pod_uid = "pod-uid";
  c.pod_namespace = "ns";
  c.pod_name = "pod";
  c.name = "app";
  c.kind = ContainerKind::kExclusive;
  c.claim_uids = {Uid(1)};
  c.cpus = CpuSet{1, 2};
  c.mems = {0};
  c.updated_time_ns = 1;
  {
    Result<WriteTransaction> txn = nri->Begin();
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT(txn->UpsertContainer(c), IsOk());
  }
  {
    Result<WriteTransaction> txn = nri->Begin();
    ASSERT_THAT(txn, IsOk());
    EXPECT_THAT(txn->SetContainerCpus("ctr-1", CpuSet{3, 4, 5}), IsOk());
    EXPECT_THAT(txn->SetContainerCpus("ctr-2", CpuSet{3}),
                StatusIs(StatusCode::kNotFound, HasSubstr("ctr-2")));
  }
  Result<std::optional<ContainerEntry>> e = dra->FindContainer("ctr-1");  // checksum checked
  ASSERT_THAT(e, IsOk());
  ASSERT_TRUE(e->has_value());
  ContainerSpec got = DecodeContainer(**e);
  EXPECT_EQ(got.cpus, (CpuSet{3, 4, 5}));
  EXPECT_GT(got.updated_time_ns, 1u);
  got.cpus = c.cpus;
  got.updated_time_ns = c.updated_time_ns;
  EXPECT_EQ(got.id, c.id);
  EXPECT_EQ(got.pod_uid, c.pod_uid);
  EXPECT_EQ(got.pod_namespace, c.pod_namespace);
  EXPECT_EQ(got.pod_name, c.pod_name);
  EXPECT_EQ(got.name, c.name);
  EXPECT_EQ(got.kind, c.kind);
  EXPECT_EQ(got.claim_uids, c.claim_uids);
  EXPECT_EQ(got.mems, c.mems);
  Result<Snapshot> snap = dra->ReadSnapshot();
  ASSERT_THAT(snap, IsOk());
  EXPECT_THAT(snap->containers, SizeIs(1));
}

TEST_F(SegmentTest, InvalidSpecsAreRefusedAndLeaveNoTrace) {
  auto dra = OpenDra();
  const uint64_t gen = dra->generation();
  Result<WriteTransaction> txn = dra->Begin();
  ASSERT_THAT(txn, IsOk());
  ClaimSpec bad = TestClaim(1, CpuSet{1});
  bad.name = std::string(300, 'x');
  EXPECT_THAT(txn->UpsertClaim(bad), StatusIs(StatusCode::kInvalidArgument, HasSubstr("name")));
  bad = TestClaim(1, CpuSet{1});
  bad.uid = "";
  EXPECT_THAT(txn->UpsertClaim(bad), StatusIs(StatusCode::kInvalidArgument, HasSubstr("uid")));
  bad = TestClaim(1, CpuSet{1});
  bad.mems = {5000};
  EXPECT_THAT(txn->UpsertClaim(bad), StatusIs(StatusCode::kInvalidArgument, HasSubstr("5000")));
  txn->Commit();
  EXPECT_EQ(dra->generation(), gen);  // nothing was written: readers were never disturbed
}

TEST_F(SegmentTest, SecondAgentOfARoleIsRefused) {
  auto dra = OpenDra();
  OpenOptions second_opts = TestOptions(Role::kDraAgent);
  bool asked_to_rebuild = false;
  second_opts.rebuild = [&asked_to_rebuild](const Status&) { return asked_to_rebuild = true; };
  Result<std::unique_ptr<Segment>> second = Segment::Open(path_, second_opts);
  EXPECT_THAT(second, StatusIs(StatusCode::kFailedPrecondition,
                               HasSubstr("another dra-agent holds the role lock")));
  EXPECT_FALSE(asked_to_rebuild);        // a healthy segment held by someone else is never rebuilt
  auto nri = OpenRole(Role::kNriAgent);  // the other role is fine
  EXPECT_THAT(Segment::Open(path_, TestOptions(Role::kNriAgent)),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("another nri-agent")));
  EXPECT_THAT(dra->RoleLive(Role::kNriAgent), IsOkAndHolds(true));
  nri.reset();
  EXPECT_THAT(dra->RoleLive(Role::kNriAgent), IsOkAndHolds(false));
  EXPECT_NE(OpenRole(Role::kNriAgent), nullptr);  // released on close
}

TEST_F(SegmentTest, RefusesALivePeerInAnotherPidNamespace) {
  OpenOptions dra_opts = TestOptions(Role::kDraAgent);
  dra_opts.pid_namespace_inode = [] { return Result<uint64_t>(uint64_t{4026531836}); };
  auto dra = OpenDra(dra_opts);
  OpenOptions nri_opts = TestOptions(Role::kNriAgent);
  nri_opts.pid_namespace_inode = [] { return Result<uint64_t>(uint64_t{4026532999}); };
  EXPECT_THAT(Segment::Open(path_, nri_opts),
              StatusIs(StatusCode::kFailedPrecondition,
                       ::testing::AllOf(HasSubstr("PID namespace 4026531836"),
                                        HasSubstr("PID namespace 4026532999"),
                                        HasSubstr("shareProcessNamespace"))));
  dra.reset();  // the peer is gone: its stale record no longer blocks
  EXPECT_THAT(Segment::Open(path_, nri_opts), IsOk());
}

TEST_F(SegmentTest, WaitForChangeWakesOnCommitAndTimesOut) {
  auto dra = OpenDra();
  auto nri = OpenRole(Role::kNriAgent);
  const uint64_t seen = nri->generation();
  EXPECT_THAT(nri->WaitForChange(seen, std::chrono::milliseconds(20)),
              StatusIs(StatusCode::kDeadlineExceeded));
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    Result<WriteTransaction> txn = dra->Begin();
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT(txn->UpsertClaim(TestClaim(1, CpuSet{1})), IsOk());
  });
  Result<uint64_t> g = nri->WaitForChange(seen, std::chrono::seconds(10));
  writer.join();
  ASSERT_THAT(g, IsOk());
  EXPECT_GT(*g, seen);
  EXPECT_EQ(*g % 2, 0u);
}

// A kDeferred commit publishes at once and wakes the sleepers only at WakeDeferredWaiters (or
// the writer's next kNow commit, or its Segment's end): the nri-agent keeps the wake of its own
// watcher off the reply it is answering.
TEST_F(SegmentTest, ADeferredCommitWakesItsWaitersOnlyWhenAsked) {
  auto dra = OpenDra();
  auto nri = OpenRole(Role::kNriAgent);
  ASSERT_TRUE(nri->wakes_on_change());
  auto commit_claim = [&](int n, WakeWaiters wake) {
    Result<WriteTransaction> txn = dra->Begin();
    EXPECT_THAT(txn, IsOk());
    if (!txn.ok()) return uint64_t{0};
    EXPECT_THAT(txn->UpsertClaim(TestClaim(n, CpuSet{n})), IsOk());
    return txn->Commit(wake);
  };
  // A waiter on its own thread; `returned` is set once WaitForChange comes back.
  struct Waiter {
    std::atomic<bool> returned{false};
    Result<uint64_t> result = DeadlineExceededError("not returned");
    std::thread thread;
  };
  auto wait_from = [&](Waiter& w, uint64_t seen) {
    w.thread = std::thread([&w, &nri, seen] {
      w.result = nri->WaitForChange(seen, std::chrono::seconds(60));
      w.returned = true;
    });
    // Registered and asleep before the commit: otherwise it would find the change by itself.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };

  Waiter first;
  wait_from(first, nri->generation());
  const uint64_t published = commit_claim(1, WakeWaiters::kDeferred);
  EXPECT_EQ(nri->generation(), published);  // readers see it at once
  EXPECT_TRUE(dra->has_deferred_wake());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(first.returned) << "a deferred commit woke its waiter";
  dra->WakeDeferredWaiters();
  EXPECT_FALSE(dra->has_deferred_wake());
  first.thread.join();
  ASSERT_THAT(first.result, IsOk());
  EXPECT_EQ(*first.result, published);

  // A later kNow commit wakes for the deferred one too, and leaves nothing deferred.
  commit_claim(2, WakeWaiters::kDeferred);
  commit_claim(3, WakeWaiters::kNow);
  EXPECT_FALSE(dra->has_deferred_wake());

  // The writer's Segment going away wakes what it deferred.
  Waiter second;
  wait_from(second, nri->generation());
  const uint64_t last = commit_claim(4, WakeWaiters::kDeferred);
  dra.reset();
  second.thread.join();
  ASSERT_THAT(second.result, IsOk());
  EXPECT_EQ(*second.result, last);
}

// A stop request that lands at any point of the wait (before it registers its callback, between
// its check and the futex wait, inside the wait) ends it with CANCELLED, never at the timeout:
// the nri-agent's shutdown joins its watcher thread on exactly this. Before the requester kept
// waking, a request in the check-to-wait window was lost and the join took the whole bound (the
// hour here makes such a loss a test timeout).
TEST_F(SegmentTest, WaitForChangeEndsOnStopRequestedAtAnyMoment) {
  auto dra = OpenDra();
  auto nri = OpenRole(Role::kNriAgent);
  const uint64_t seen = nri->generation();
  for (int i = 0; i < 5000; ++i) {
    std::optional<Result<uint64_t>> result;
    std::atomic<bool> started{false};
    std::jthread waiter([&](const std::stop_token& stop) {
      started = true;
      result = nri->WaitForChange(seen, std::chrono::hours(1), nullptr, stop);
    });
    while (!started) std::this_thread::yield();
    // Spread the request over the waiter's first microseconds.
    for (int spin = 0; spin < i % 200; ++spin) std::this_thread::yield();
    waiter.request_stop();
    waiter.join();
    ASSERT_TRUE(result.has_value());
    EXPECT_THAT(*result, StatusIs(StatusCode::kCancelled)) << "round " << i;
  }
}

TEST_F(SegmentTest, HeartbeatAdvancesAndAgentStatusShowsIt) {
  // Both sides on one virtual CLOCK_BOOTTIME: the age is exact and nothing sleeps.
  auto boottime = std::make_shared<std::atomic<uint64_t>>(1'000'000'000);
  auto with_boottime = [&boottime](Role role) {
    OpenOptions o = TestOptions(role);
    o.boottime_ns = [boottime] { return boottime->load(); };
    return o;
  };
  auto dra = OpenDra(with_boottime(Role::kDraAgent));
  Result<std::unique_ptr<Segment>> opened = Segment::Open(path_, with_boottime(Role::kReader));
  ASSERT_THAT(opened, IsOk());
  std::unique_ptr<Segment> reader = std::move(opened).value();
  const uint64_t before = reader->ReadSnapshot()->agents[0].heartbeat_ns;
  EXPECT_EQ(before, 1'000'000'000u);
  boottime->fetch_add(20'000'000);  // 20 ms pass
  Result<AgentStatus> stale = reader->GetAgentStatus(Role::kDraAgent);
  ASSERT_THAT(stale, IsOk());
  ASSERT_TRUE(stale->heartbeat_age.has_value());
  EXPECT_EQ(*stale->heartbeat_age, std::chrono::milliseconds(20));
  dra->Heartbeat();
  EXPECT_GT(reader->ReadSnapshot()->agents[0].heartbeat_ns, before);
  Result<AgentStatus> st = reader->GetAgentStatus(Role::kDraAgent);
  ASSERT_THAT(st, IsOk());
  EXPECT_TRUE(st->attached);
  EXPECT_TRUE(st->live);
  EXPECT_EQ(st->pid, static_cast<uint32_t>(::getpid()));
  EXPECT_EQ(st->version, "test");
  EXPECT_EQ(*st->heartbeat_age, std::chrono::nanoseconds(0));  // just beat
  Result<AgentStatus> nri = reader->GetAgentStatus(Role::kNriAgent);
  ASSERT_THAT(nri, IsOk());
  EXPECT_FALSE(nri->attached);
  EXPECT_FALSE(nri->live);
  EXPECT_FALSE(nri->heartbeat_age.has_value());
}

// A torn write left behind (odd generation, a damaged entry, a duplicate from an interrupted
// move): the next locker drops what is damaged, reports each, and the result is consistent.
TEST_F(SegmentTest, NextLockerRepairsATornWrite) {
  {
    auto dra = OpenDra();
    Result<WriteTransaction> txn = dra->Begin();
    ASSERT_THAT(txn, IsOk());
    for (int i = 0; i < 4; ++i) ASSERT_THAT(txn->UpsertClaim(TestClaim(i, CpuSet{i})), IsOk());
  }
  {
    RawFile raw(path_);
    raw.header()->generation += 1;  // odd: interrupted
    raw.claim(1)->cpus.Set(100);    // torn entry: checksum no longer matches
    *raw.claim(3) = *raw.claim(2);  // interrupted move: duplicate uid
  }
  auto dra = OpenDra();
  ASSERT_NE(dra, nullptr);
  ASSERT_TRUE(dra->open_recovery().has_value());
  const RecoveryReport& r = *dra->open_recovery();
  EXPECT_TRUE(r.torn);
  EXPECT_FALSE(r.owner_died);
  EXPECT_THAT(r.actions,
              ::testing::Contains(HasSubstr("claims[1] key=" + Uid(1) + ": checksum mismatch")));
  EXPECT_THAT(r.actions, ::testing::Contains(HasSubstr("claims[3] key=" + Uid(2) + ": duplicate")));
  Result<Snapshot> snap = dra->ReadSnapshot();
  ASSERT_THAT(snap, IsOk());
  EXPECT_THAT(snap->claims, SizeIs(2));
  EXPECT_THAT(dra->FindClaim(Uid(2)), IsOk());
  EXPECT_TRUE(dra->FindClaim(Uid(2))->has_value());
  EXPECT_FALSE(dra->FindClaim(Uid(1))->has_value());
}

// Corrupt or incompatible segments: the precise reason, for readers and writers alike, and the
// dra-agent's rebuild callback replaces the segment when asked to.
struct BadSegmentCase {
  const char* name;
  std::function<void(RawFile&)> damage;
  StatusCode code;
  const char* message;
};

void OtherBoot(RawFile& r) {
  r.header()->boot_id[0] = 'f';
  r.header()->identity_checksum = HeaderIdentityChecksum(*r.header());
}

class BadSegmentTest : public SegmentTest, public ::testing::WithParamInterface<BadSegmentCase> {};

TEST_P(BadSegmentTest, RefusedWithTheReasonAndRebuiltOnRequest) {
  const BadSegmentCase& c = GetParam();
  {
    auto dra = OpenDra();
    Result<WriteTransaction> txn = dra->Begin();
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT(txn->UpsertClaim(TestClaim(0, CpuSet{0})), IsOk());
  }
  {
    RawFile raw(path_);
    c.damage(raw);
  }
  OpenOptions nri = TestOptions(Role::kNriAgent);
  EXPECT_THAT(Segment::Open(path_, nri), StatusIs(c.code, HasSubstr(c.message)));
  OpenOptions dra = TestOptions(Role::kDraAgent);
  std::optional<Status> seen;
  dra.rebuild = [&seen](const Status& why) {
    seen = why;
    return false;
  };
  EXPECT_THAT(Segment::Open(path_, dra), StatusIs(c.code, HasSubstr(c.message)));
  ASSERT_TRUE(seen.has_value());
  EXPECT_THAT(*seen, StatusIs(c.code, HasSubstr(c.message)));
  dra.rebuild = [](const Status&) { return true; };
  Result<std::unique_ptr<Segment>> rebuilt = Segment::Open(path_, dra);
  ASSERT_THAT(rebuilt, IsOk());
  ASSERT_TRUE((*rebuilt)->rebuilt_because().has_value());
  EXPECT_THAT(*(*rebuilt)->rebuilt_because(), StatusIs(c.code, HasSubstr(c.message)));
  EXPECT_THAT((*rebuilt)->ReadSnapshot()->claims, SizeIs(0));
  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadSegmentTest,
    ::testing::Values(
        BadSegmentCase{"WrongMagic", [](RawFile& r) { r.header()->magic = 0x1234; },
                       StatusCode::kDataLoss, "bad magic 0x0000000000001234"},
        BadSegmentCase{"ShortFile", [](RawFile& r) { r.Truncate(100); }, StatusCode::kDataLoss,
                       "is 100 bytes, shorter than its 16384-byte header"},
        BadSegmentCase{"Truncated", [](RawFile& r) { r.Truncate(20000); }, StatusCode::kDataLoss,
                       "but the file is 20000 bytes"},
        BadSegmentCase{"NewerMajor",
                       [](RawFile& r) {
                         r.header()->major = kLayoutMajor + 1;
                         r.header()->minor = 3;
                       },
                       StatusCode::kFailedPrecondition,
                       "has layout version 2.3, this binary reads 1.x"},
        BadSegmentCase{"BadIdentityChecksum", [](RawFile& r) { r.header()->node_name[0] ^= 1; },
                       StatusCode::kDataLoss, "header identity checksum mismatch"},
        BadSegmentCase{"BadClaimChecksum", [](RawFile& r) { r.claim(0)->name[0] ^= 1; },
                       StatusCode::kDataLoss,
                       "claims[0] uid=00000000-0000-0000-0000-000000000000: checksum mismatch"},
        BadSegmentCase{"CountOverCapacity", [](RawFile& r) { r.header()->claim_count = 1000; },
                       StatusCode::kDataLoss, "claim_count 1000 exceeds capacity 64"},
        BadSegmentCase{"OtherBoot", &OtherBoot, StatusCode::kFailedPrecondition,
                       "written in boot f1111111"}),
    [](const ::testing::TestParamInfo<BadSegmentCase>& info) { return info.param.name; });

// The segment path replaced by a symlink (to a segment elsewhere, or to a host file) or by a
// FIFO: every role is refused at once with the reason, nothing is followed, mapped, blocked on
// or replaced, even with a rebuild callback that would say yes.
TEST_F(SegmentTest, SymlinkOrFifoAtThePathIsRefusedAndLeftAlone) {
  const std::string elsewhere = dir_.File("elsewhere.shm");
  {
    auto real = Segment::Open(elsewhere, TestOptions(Role::kDraAgent));
    ASSERT_THAT(real, IsOk());
  }
  struct Planted {
    const char* name;
    std::function<int()> plant;
    const char* message;
  };
  const Planted kCases[] = {
      {"symlink to a segment", [&] { return ::symlink(elsewhere.c_str(), path_.c_str()); },
       "is a symbolic link; refusing to follow it"},
      {"symlink to a host file", [&] { return ::symlink("/etc/hostname", path_.c_str()); },
       "is a symbolic link; refusing to follow it"},
      {"dangling symlink", [&] { return ::symlink(dir_.File("nowhere").c_str(), path_.c_str()); },
       "is a symbolic link; refusing to follow it"},
      {"FIFO", [&] { return ::mkfifo(path_.c_str(), 0600); }, "is not a regular file"},
  };
  for (const Planted& c : kCases) {
    SCOPED_TRACE(c.name);
    ::unlink(path_.c_str());
    ASSERT_EQ(c.plant(), 0);
    struct stat before;
    ASSERT_EQ(::lstat(path_.c_str(), &before), 0);
    for (Role role : {Role::kReader, Role::kNriAgent, Role::kDraAgent}) {
      OpenOptions o = TestOptions(role);
      o.rebuild = [](const Status&) { return true; };
      EXPECT_THAT(Segment::Open(path_, o),
                  StatusIs(StatusCode::kFailedPrecondition, HasSubstr(c.message)));
    }
    struct stat after;
    ASSERT_EQ(::lstat(path_.c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino);
    EXPECT_EQ(after.st_mode, before.st_mode);
  }
  EXPECT_THAT(Segment::Open(elsewhere, TestOptions(Role::kReader)), IsOk());  // untouched
}

TEST_F(SegmentTest, NewerMinorOfTheSameMajorIsAccepted) {
  OpenDra();
  {
    RawFile raw(path_);
    raw.header()->minor = kLayoutMinor + 5;  // a newer writer's fields live in reserved bytes
  }
  auto nri = OpenRole(Role::kNriAgent);
  ASSERT_NE(nri, nullptr);
  EXPECT_EQ(nri->identity().minor, kLayoutMinor + 5);
  EXPECT_EQ(nri->ReadSnapshot()->identity.minor, kLayoutMinor + 5);
}

TEST_F(SegmentTest, PeerSeesItsSegmentWasRebuilt) {
  OpenDra().reset();
  auto nri = OpenRole(Role::kNriAgent);
  ASSERT_NE(nri, nullptr);
  EXPECT_FALSE(nri->IsStale());
  {
    RawFile raw(path_);
    raw.header()->magic = 1;
  }
  OpenOptions dra = TestOptions(Role::kDraAgent);
  dra.rebuild = [](const Status&) { return true; };
  Result<std::unique_ptr<Segment>> rebuilt = Segment::Open(path_, dra);
  ASSERT_THAT(rebuilt, IsOk());
  EXPECT_TRUE(nri->IsStale());  // the nri-agent must reopen
  nri.reset();
  EXPECT_NE(OpenRole(Role::kNriAgent), nullptr);
}

// Publishes a node of CPUs 0-7 (`online` of them online now), CPU 0 reserved (strict), floor 2.
void PublishNode(WriteTransaction& txn, CpuSet online) {
  TopologySummary topo{};
  topo.online = online;
  topo.reserved = CpuSet{0};
  topo.allocatable = CpuSet::Range(1, 7);
  ASSERT_THAT(txn.SetTopology(topo), IsOk());
  ConfigSummary config{};
  config.flags = kConfigStrictCpuReservation;
  config.min_shared_cpus = 2;
  ASSERT_THAT(txn.SetConfig(config), IsOk());
}

// ReserveClaim on a node of CPUs 0-7, CPU 0 reserved (strict), floor 2, claim 1 holding {1, 2}.
struct ReserveCase {
  const char* name;
  ClaimSpec spec;
  StatusCode code;
  const char* message;  // substring; "" for OK
};

class ReserveClaimTest : public SegmentTest, public ::testing::WithParamInterface<ReserveCase> {};

TEST_P(ReserveClaimTest, ChecksOverlapAllocatableAndFloor) {
  auto dra = OpenDra();
  Result<WriteTransaction> txn = dra->Begin();
  ASSERT_THAT(txn, IsOk());
  PublishNode(*txn, CpuSet::Range(0, 7));
  ASSERT_THAT(txn->ReserveClaim(TestClaim(1, CpuSet{1, 2})), IsOk());
  const ReserveCase& c = GetParam();
  const uint32_t before = txn->claim_count();
  const Status st = txn->ReserveClaim(c.spec);
  if (c.code == StatusCode::kOk) {
    EXPECT_THAT(st, IsOk());
    ASSERT_TRUE(txn->FindClaim(c.spec.uid).has_value());
    EXPECT_EQ(txn->FindClaim(c.spec.uid)->State(), c.spec.state);
  } else {
    EXPECT_THAT(st, StatusIs(c.code, HasSubstr(c.message)));
    EXPECT_EQ(txn->claim_count(), before);
    EXPECT_EQ(txn->FindClaim(Uid(1))->cpus, (CpuSet{1, 2}));
  }
}

ClaimSpec Reserved(int i, CpuSet cpus, ClaimState state = ClaimState::kReserved) {
  ClaimSpec c = TestClaim(i, cpus);
  c.state = state;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ReserveClaimTest,
    ::testing::Values(
        ReserveCase{"Fits", Reserved(2, CpuSet{3, 4}), StatusCode::kOk, ""},
        ReserveCase{"SameClaimSameCpusIsIdempotent",
                    Reserved(1, CpuSet{1, 2}, ClaimState::kPrepared), StatusCode::kOk, ""},
        ReserveCase{"SameClaimOtherCpus", Reserved(1, CpuSet{3}), StatusCode::kAlreadyExists,
                    "already holds CPUs 1-2, not 3"},
        ReserveCase{"Overlap", Reserved(2, CpuSet{2, 3}), StatusCode::kFailedPrecondition,
                    "CPUs 2 are held by claim 00000000-0000-0000-0000-000000000001 (ns/claim-1)"},
        ReserveCase{"Reserved", Reserved(2, CpuSet{0}), StatusCode::kFailedPrecondition,
                    "CPUs 0 are not allocatable"},
        ReserveCase{"Offline", Reserved(2, CpuSet{9}), StatusCode::kFailedPrecondition,
                    "CPUs 9 are not allocatable"},
        ReserveCase{"Floor", Reserved(2, CpuSet::Range(3, 6)), StatusCode::kResourceExhausted,
                    "granting CPUs 3-6 would leave 1 CPUs in the shared pool, below "
                    "minSharedCPUs 2"},
        ReserveCase{"Empty", Reserved(2, CpuSet{}), StatusCode::kInvalidArgument, "no CPUs"}),
    [](const ::testing::TestParamInfo<ReserveCase>& info) { return info.param.name; });

// The bug a second copy of the rule had: after a hotplug the dra-agent rewrites `online` (not
// `allocatable`), so a floor check that ignores `online` counts offline CPUs as shared. Node of
// CPUs 0-7, CPU 0 reserved (strict), floor 2, claim 1 holding {1, 2}; CPUs 5-7 go offline.
TEST_F(SegmentTest, AHotplugThatLeavesTheOnlinePoolBelowTheFloorIsRefused) {
  auto dra = OpenDra();
  Result<WriteTransaction> txn = dra->Begin();
  ASSERT_THAT(txn, IsOk());
  PublishNode(*txn, CpuSet::Range(0, 7));
  ASSERT_THAT(txn->ReserveClaim(TestClaim(1, CpuSet{1, 2})), IsOk());
  // Before the hotplug CPU 3 fits: 4-7 stay shared.
  ASSERT_THAT(txn->ReserveClaim(TestClaim(2, CpuSet{3})), IsOk());
  ASSERT_THAT(txn->RemoveClaim(Uid(2)), IsOkAndHolds(true));

  PublishNode(*txn, CpuSet::Range(0, 4));  // CPUs 5-7 offline, as the topology watcher records
  // The online pool is {3, 4}: taking 3 leaves one CPU, below the floor of 2. Counting the
  // offline CPUs 5-7 (allocatable still lists them) would have admitted it.
  EXPECT_THAT(txn->ReserveClaim(TestClaim(2, CpuSet{3})),
              StatusIs(StatusCode::kResourceExhausted,
                       HasSubstr("granting CPUs 3 would leave 1 CPUs in the shared pool, below "
                                 "minSharedCPUs 2")));
  EXPECT_THAT(txn->ReserveClaim(TestClaim(2, CpuSet{6})),
              StatusIs(StatusCode::kUnavailable, HasSubstr("CPUs 6 are offline")));
  EXPECT_FALSE(txn->FindClaim(Uid(2)).has_value());
  // The pool the nri-agent and `dracpu-shm verify` compute is the same online pool.
  std::vector<ClaimEntry> claims;
  for (uint32_t i = 0; i < txn->claim_count(); ++i) claims.push_back(txn->claim_at(i));
  EXPECT_EQ(ComputeSharedPool(txn->topology(), txn->config(), claims), (CpuSet{3, 4}));
}

TEST(SharedPoolTest, AllocatableMinusClaimsAndReservedUnlessStrict) {
  TopologySummary topo{};
  topo.online = CpuSet::Range(0, 7);
  topo.reserved = CpuSet{0};
  topo.allocatable = CpuSet::Range(1, 7);
  ConfigSummary config{};
  std::vector<ClaimEntry> claims(2);
  claims[0].cpus = CpuSet{2, 3};
  claims[1].cpus = CpuSet{5};
  EXPECT_EQ(ComputeSharedPool(topo, config, claims), (CpuSet{0, 1, 4, 6, 7}));
  config.flags = kConfigStrictCpuReservation;
  EXPECT_EQ(ComputeSharedPool(topo, config, claims), (CpuSet{1, 4, 6, 7}));
  // CPU 6 went offline after start-up: never in the pool, while allocatable stays as it was.
  topo.online = CpuSet{0, 1, 2, 3, 4, 5, 7};
  EXPECT_EQ(ComputeSharedPool(topo, config, claims), (CpuSet{1, 4, 7}));
}

}  // namespace
}  // namespace dracpu::shm
