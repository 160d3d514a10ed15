// Writers SIGKILLed at random points inside transactions (fork, real SIGKILL): the next locker
// recovers, a concurrent reader never observes a torn record, and verify passes after repair.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>

#include "shm-schema/segment.h"
#include "shm-schema/verify.h"
#include "tests/integration/shm_test_support.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::shm {
namespace {

using testing::CheckPattern;
using testing::PatternClaim;
using testing::TempDir;
using testing::TestOptions;
using testing::Uid;

constexpr int kRuns = 240;
// Claims 0..7 are never removed (containers refer to them) but the killed dra writers keep
// updating them in place, so a torn update must be rolled back, never lose them.
constexpr int kPermanentClaims = testing::kStableCpuClaims;
constexpr int kClaimKeys = 32;
constexpr int kContainerKeys = 16;

// Child-side kill switch: SIGKILL at the n-th kill point.
int g_points_left = 0;
void KillAtNthPoint(KillPoint) {
  if (--g_points_left == 0) ::raise(SIGKILL);
}

struct ReaderStats {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> snapshots{0};
  std::atomic<uint64_t> lookups{0};
  std::atomic<uint64_t> torn{0};
  std::atomic<uint64_t> generation_went_back{0};
  char first_problem[256];
};

// Reader process: consistent snapshots and lookups, each claim checked against its pattern.
[[noreturn]] void RunReader(const std::string& path, ReaderStats* stats) {
  Result<std::unique_ptr<Segment>> seg = Segment::Open(path, TestOptions(Role::kReader));
  if (!seg.ok()) ::_exit(3);
  Snapshot snap;
  SnapshotOptions so;
  so.timeout = std::chrono::milliseconds(20);  // a dead writer's odd generation: just retry
  uint64_t last_gen = 0;
  std::mt19937 rng(::getpid());
  auto problem = [stats](const std::string& what) {
    if (stats->torn.fetch_add(1) == 0) {
      std::snprintf(stats->first_problem, sizeof stats->first_problem, "%s", what.c_str());
    }
  };
  while (!stats->stop.load()) {
    if ((*seg)->ReadSnapshotInto(snap, so).ok()) {
      if (snap.generation < last_gen) stats->generation_went_back.fetch_add(1);
      last_gen = snap.generation;
      for (const ClaimEntry& e : snap.claims) {
        const std::string_view uid = e.Uid();
        const int k = std::atoi(std::string(uid.substr(uid.size() - 4)).c_str());
        const std::string p = CheckPattern(e, k);
        if (!p.empty()) problem(p);
      }
      for (const ContainerEntry& c : snap.containers) {
        const Status st = CheckContainerEntry(c);
        if (!st.ok()) problem("container " + std::string(c.Id()) + ": " + st.message());
      }
      stats->snapshots.fetch_add(1);
    }
    const int k = static_cast<int>(rng() % kClaimKeys);
    Result<std::optional<ClaimEntry>> f = (*seg)->FindClaim(Uid(k), std::chrono::milliseconds(20));
    if (f.ok()) {
      if (f->has_value()) {
        const std::string p = CheckPattern(**f, k);
        if (!p.empty()) problem("lookup: " + p);
      }
      stats->lookups.fetch_add(1);
    }
  }
  ::_exit(0);
}

// A dra-agent writer: updates claims 0..31 and removes claims 8..31 forever (until killed).
[[noreturn]] void RunDraWriter(const std::string& path, int kill_after, unsigned seed) {
  OpenOptions o = TestOptions(Role::kDraAgent);
  o.create_if_missing = false;
  if (kill_after > 0) {
    g_points_left = kill_after;
    o.kill_point = &KillAtNthPoint;
  }
  Result<std::unique_ptr<Segment>> seg = Segment::Open(path, o);
  if (!seg.ok()) {
    std::fprintf(stderr, "dra writer: %s\n", seg.status().ToString().c_str());
    ::_exit(3);
  }
  std::mt19937 rng(seed);
  for (uint64_t v = seed * 100000ull;; ++v) {
    Result<WriteTransaction> txn = (*seg)->Begin();
    if (!txn.ok()) ::_exit(4);
    const int ops = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < ops; ++i) {
      const int k = static_cast<int>(rng() % kClaimKeys);
      if (k >= kPermanentClaims && rng() % 4 == 0) {
        if (!txn->RemoveClaim(Uid(k)).ok()) ::_exit(5);
      } else if (!txn->UpsertClaim(PatternClaim(k, v)).ok()) {
        ::_exit(6);
      }
    }
  }
}

// An nri-agent writer: upserts and removes containers; exclusive ones take a permanent claim's
// CPUs (read inside the transaction), shared ones arbitrary CPUs.
[[noreturn]] void RunNriWriter(const std::string& path, int kill_after, unsigned seed) {
  OpenOptions o = TestOptions(Role::kNriAgent);
  if (kill_after > 0) {
    g_points_left = kill_after;
    o.kill_point = &KillAtNthPoint;
  }
  Result<std::unique_ptr<Segment>> seg = Segment::Open(path, o);
  if (!seg.ok()) {
    std::fprintf(stderr, "nri writer: %s\n", seg.status().ToString().c_str());
    ::_exit(3);
  }
  std::mt19937 rng(seed);
  for (;;) {
    Result<WriteTransaction> txn = (*seg)->Begin();
    if (!txn.ok()) ::_exit(4);
    const int j = static_cast<int>(rng() % kContainerKeys);
    const std::string id = "ctr-" + std::to_string(j);
    if (rng() % 4 == 0) {
      if (!txn->RemoveContainer(id).ok()) ::_exit(5);
      continue;
    }
    ContainerSpec c;
    c.id = id;
    c.pod_namespace = "ns";
    c.pod_name = "pod-" + std::to_string(j);
    c.name = "main";
    if (j % 2 == 0) {
      const int k = j % kPermanentClaims;
      std::optional<ClaimEntry> claim = txn->FindClaim(Uid(k));
      if (!claim) ::_exit(7);
      c.kind = ContainerKind::kExclusive;
      c.claim_uids = {Uid(k)};
      c.cpus = claim->cpus;
    } else {
      c.kind = ContainerKind::kShared;
      c.cpus = CpuSet::Range(100, 100 + static_cast<int>(rng() % 20));
    }
    if (!txn->UpsertContainer(c).ok()) ::_exit(6);
  }
}

TEST(ShmCrashTest, WritersKilledInsideTransactionsAreRecoveredAndReadersNeverSeeATornRecord) {
  TempDir dir;
  const std::string path = dir.File(SegmentFileName());
  {
    Result<std::unique_ptr<Segment>> dra = Segment::Open(path, TestOptions(Role::kDraAgent));
    ASSERT_THAT(dra, IsOk());
    Result<WriteTransaction> txn = (*dra)->Begin();
    ASSERT_THAT(txn, IsOk());
    TopologySummary topo{};
    topo.online = CpuSet::Range(0, 8191);
    topo.allocatable = topo.online;
    ASSERT_THAT(txn->SetTopology(topo), IsOk());
    for (int k = 0; k < kPermanentClaims; ++k) {
      ASSERT_THAT(txn->UpsertClaim(PatternClaim(k, static_cast<uint64_t>(k) + 1)), IsOk());
    }
  }
  ReaderStats* stats = testing::SharedBlock<ReaderStats>();
  ASSERT_NE(stats, nullptr);
  const pid_t reader = ::fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) RunReader(path, stats);
  testing::ChildGuard reader_guard(reader);

  std::mt19937 rng(20261129);
  int owner_died = 0, torn = 0, repaired_entries = 0, restored = 0, timed_kills = 0;
  for (int run = 0; run < kRuns; ++run) {
    const bool dra = run % 2 == 0;
    const bool timed = run % 5 == 4;  // every fifth run: killed by the parent at a random time
    const int kill_after = timed ? 0 : 1 + static_cast<int>(rng() % 60);
    const unsigned seed = static_cast<unsigned>(run + 1);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (dra) RunDraWriter(path, kill_after, seed);
      RunNriWriter(path, kill_after, seed);
    }
    testing::ChildGuard child_guard(child);
    if (timed) {
      std::this_thread::sleep_for(std::chrono::microseconds(2000 + rng() % 8000));
      ::kill(child, SIGKILL);
      ++timed_kills;
    }
    const int status = child_guard.Wait();
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "run " << run << ": writer exited with status " << status << " instead of being killed";

    // The next locker recovers: usually the same role restarting, every third run the peer.
    const bool peer_recovers = run % 3 == 0;
    const Role next_role = (dra != peer_recovers) ? Role::kDraAgent : Role::kNriAgent;
    Result<std::unique_ptr<Segment>> next = Segment::Open(path, TestOptions(next_role));
    ASSERT_THAT(next, IsOk()) << "run " << run;
    if (const auto& rec = (*next)->open_recovery()) {
      owner_died += rec->owner_died;
      torn += rec->torn;
      for (const auto& a : rec->actions) {
        repaired_entries += a.find("dropped") != std::string::npos;
        restored += a.find("restored the version saved before it") != std::string::npos;
      }
    }
    Result<Snapshot> snap = (*next)->ReadSnapshot();
    ASSERT_THAT(snap, IsOk());
    const VerifyResult v = VerifySnapshot(*snap);
    ASSERT_THAT(v.violations, ::testing::IsEmpty()) << "run " << run;
    for (int k = 0; k < kPermanentClaims; ++k) {
      ASSERT_NE(snap->FindClaim(Uid(k)), nullptr) << "permanent claim lost in run " << run;
    }
  }
  stats->stop.store(true);
  const int status = reader_guard.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(stats->torn.load(), 0u) << "first: " << stats->first_problem;
  EXPECT_EQ(stats->generation_went_back.load(), 0u);
  EXPECT_GT(stats->snapshots.load(), 0u);
  EXPECT_GT(stats->lookups.load(), 0u);
  // The kill points cover dying inside the write (torn) and while holding the lock.
  EXPECT_GT(owner_died, kRuns / 2);
  EXPECT_GT(torn, kRuns / 4);
  EXPECT_GT(restored, 0);  // some kills landed inside an in-place overwrite
  RecordProperty("owner_died", owner_died);
  RecordProperty("torn", torn);
  std::printf(
      "%d runs (%d killed at a random time): %d EOWNERDEAD recoveries, %d torn writes, "
      "%d entries dropped, %d restored; reader: %llu snapshots, %llu lookups, %llu torn\n",
      kRuns, timed_kills, owner_died, torn, repaired_entries, restored,
      static_cast<unsigned long long>(stats->snapshots.load()),
      static_cast<unsigned long long>(stats->lookups.load()),
      static_cast<unsigned long long>(stats->torn.load()));

  // The tool agrees.
  const testing::ToolResult r = testing::RunTool({"verify", "--path", path});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("every invariant holds"));
}

}  // namespace
}  // namespace dracpu::shm

namespace dracpu::shm {
namespace {

// A holder dies, and the next locker gives up without making the mutex consistent: the mutex is
// then unrecoverable (ENOTRECOVERABLE). Begin reports DATA_LOSS, and the dra-agent's Open hands
// that to its rebuild callback, which replaces the segment.
TEST(ShmCrashTest, UnrecoverableMutexIsReportedAndRebuilt) {
  TempDir dir;
  const std::string path = dir.File(SegmentFileName());
  {
    Result<std::unique_ptr<Segment>> dra = Segment::Open(path, TestOptions(Role::kDraAgent));
    ASSERT_THAT(dra, IsOk());
  }
  auto* mutex_owner_died = testing::SharedBlock<std::atomic<int>>();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Result<std::unique_ptr<Segment>> nri = Segment::Open(path, TestOptions(Role::kNriAgent));
    if (!nri.ok()) ::_exit(3);
    Result<WriteTransaction> txn = (*nri)->Begin();
    ::raise(SIGKILL);  // dies holding the mutex
  }
  testing::ChildGuard guard(child);
  const int status = guard.Wait();
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  {
    // A faulty locker: sees EOWNERDEAD and unlocks without pthread_mutex_consistent.
    Result<ShmFile> f = ShmFile::Open(path, true);
    ASSERT_THAT(f, IsOk());
    ASSERT_THAT(f->Map(), IsOk());
    auto* h = static_cast<SegmentHeader*>(f->data());
    mutex_owner_died->store(pthread_mutex_lock(&h->lock.mutex));
    pthread_mutex_unlock(&h->lock.mutex);
  }
  ASSERT_EQ(mutex_owner_died->load(), EOWNERDEAD);
  OpenOptions nri = TestOptions(Role::kNriAgent);
  EXPECT_THAT(Segment::Open(path, nri),
              StatusIs(StatusCode::kDataLoss, ::testing::HasSubstr("mutex is not recoverable")));
  OpenOptions dra = TestOptions(Role::kDraAgent);
  dra.rebuild = [](const Status&) { return true; };
  Result<std::unique_ptr<Segment>> rebuilt = Segment::Open(path, dra);
  ASSERT_THAT(rebuilt, IsOk());
  ASSERT_TRUE((*rebuilt)->rebuilt_because().has_value());
  EXPECT_THAT(*(*rebuilt)->rebuilt_because(), StatusIs(StatusCode::kDataLoss));
  Result<WriteTransaction> txn = (*rebuilt)->Begin();
  EXPECT_THAT(txn, IsOk());
}

}  // namespace
}  // namespace dracpu::shm

namespace dracpu::shm {
namespace {

void KillMidRecord(KillPoint p) {
  if (p == KillPoint::kMidRecord) ::raise(SIGKILL);
}

// What an operator sees on a node where a writer died mid-write and no agent has locked since:
// verify fails saying so, dump marks the copy inconsistent; once an agent locks (repairs), both
// are clean again.
TEST(ShmCrashTest, ToolReportsATornSegmentUntilAnAgentRepairsIt) {
  TempDir dir;
  const std::string path = dir.File(SegmentFileName());
  {
    Result<std::unique_ptr<Segment>> dra = Segment::Open(path, TestOptions(Role::kDraAgent));
    ASSERT_THAT(dra, IsOk());
    Result<WriteTransaction> txn = (*dra)->Begin();
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT(txn->UpsertClaim(PatternClaim(1, 1)), IsOk());
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    OpenOptions o = TestOptions(Role::kDraAgent);
    o.kill_point = &KillMidRecord;
    Result<std::unique_ptr<Segment>> dra = Segment::Open(path, o);
    if (!dra.ok()) ::_exit(3);
    Result<WriteTransaction> txn = (*dra)->Begin();
    (void)txn->UpsertClaim(PatternClaim(1, 2));  // killed half-way through the entry
    ::_exit(4);
  }
  testing::ChildGuard guard(child);
  const int status = guard.Wait();
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

  testing::ToolResult r = testing::RunTool({"verify", "--path", path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("no consistent snapshot"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("checksum mismatch"));  // the torn claim itself
  r = testing::RunTool({"dump", "--path", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("INCONSISTENT"));

  Result<std::unique_ptr<Segment>> dra = Segment::Open(path, TestOptions(Role::kDraAgent));
  ASSERT_THAT(dra, IsOk());
  ASSERT_TRUE((*dra)->open_recovery().has_value());
  EXPECT_TRUE((*dra)->open_recovery()->owner_died);
  EXPECT_TRUE((*dra)->open_recovery()->torn);
  EXPECT_THAT(
      (*dra)->open_recovery()->actions,
      ::testing::Contains(::testing::HasSubstr("claims[0] key=" + Uid(1) + ": checksum mismatch")));
  EXPECT_THAT((*dra)->open_recovery()->actions,
              ::testing::Contains(::testing::HasSubstr("restored the version saved before it")));
  Result<std::optional<ClaimEntry>> claim = (*dra)->FindClaim(Uid(1));
  ASSERT_THAT(claim, IsOk());
  ASSERT_TRUE(claim->has_value()) << "the claim was lost instead of rolled back";
  EXPECT_EQ((*claim)->prepared_time_ns, 1u);  // the version before the interrupted update
  r = testing::RunTool({"verify", "--path", path});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace dracpu::shm
