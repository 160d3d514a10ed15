// Two processes hammering the segment: a dra-agent writer and a lock-free reader, 1e6 operations
// in total (1e5 under sanitizers, whose -O0 atomics are ~20x slower; DRACPU_SHM_HAMMER_OPS
// overrides). The reader checks every record against its self-describing pattern, that generations
// never go back and that a claim's version never goes back; afterwards the final table must equal a
// replay of the writer's deterministic operation sequence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <random>

#include "shm-schema/segment.h"
#include "tests/integration/shm_test_support.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::shm {
namespace {

using testing::CheckPattern;
using testing::PatternClaim;
using testing::TempDir;
using testing::TestOptions;
using testing::Uid;

constexpr int kKeys = 64;
constexpr unsigned kSeed = 42;

uint64_t TotalOps() {
  if (const char* env = std::getenv("DRACPU_SHM_HAMMER_OPS"))
    return std::strtoull(env, nullptr, 10);
  return testing::SanitizerBuild() ? 100'000 : 1'000'000;
}

struct Shared {
  std::atomic<bool> writer_done{false};
  std::atomic<uint64_t> reader_ops{0};
  std::atomic<uint64_t> problems{0};
  std::atomic<uint64_t> retries_seen{0};
  char first_problem[256];
};

// The writer's operation i: (key, remove?, version). Deterministic so the parent can replay it.
struct Op {
  int key;
  bool remove;
  uint64_t version;
};
Op OpAt(std::mt19937& rng, uint64_t i) {
  Op op;
  op.key = static_cast<int>(rng() % kKeys);
  op.remove = rng() % 5 == 0;
  op.version = i + 1;
  return op;
}

TEST(ShmHammerTest, WriterAndReaderProcessesAgree) {
  const uint64_t total = TotalOps();
  const uint64_t writes = total / 2;
  const uint64_t min_reads = total - writes;
  std::printf("hammer: %llu operations (%llu writes)%s\n", static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(writes),
              testing::SanitizerBuild() ? " [scaled down under sanitizers]" : "");
  TempDir dir;
  const std::string path = dir.File(SegmentFileName());
  {
    Result<std::unique_ptr<Segment>> create = Segment::Open(path, TestOptions(Role::kDraAgent));
    ASSERT_THAT(create, IsOk());
  }
  Shared* shared = testing::SharedBlock<Shared>();
  ASSERT_NE(shared, nullptr);

  const pid_t writer = ::fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    OpenOptions o = TestOptions(Role::kDraAgent);
    Result<std::unique_ptr<Segment>> seg = Segment::Open(path, o);
    if (!seg.ok()) ::_exit(3);
    std::mt19937 rng(kSeed);
    for (uint64_t i = 0; i < writes; ++i) {
      const Op op = OpAt(rng, i);
      Result<WriteTransaction> txn = (*seg)->Begin();
      if (!txn.ok()) ::_exit(4);
      if (op.remove) {
        if (!txn->RemoveClaim(Uid(op.key)).ok()) ::_exit(5);
      } else if (!txn->UpsertClaim(PatternClaim(op.key, op.version)).ok()) {
        ::_exit(6);
      }
    }
    shared->writer_done.store(true);
    ::_exit(0);
  }
  testing::ChildGuard writer_guard(writer);
  const pid_t reader = ::fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    Result<std::unique_ptr<Segment>> seg = Segment::Open(path, TestOptions(Role::kReader));
    if (!seg.ok()) ::_exit(3);
    auto problem = [shared](const std::string& what) {
      if (shared->problems.fetch_add(1) == 0) {
        std::snprintf(shared->first_problem, sizeof shared->first_problem, "%s", what.c_str());
      }
    };
    std::vector<uint64_t> last_version(kKeys, 0);
    uint64_t last_gen = 0;
    Snapshot snap;
    std::mt19937 rng(7);
    uint64_t ops = 0;
    while (ops < min_reads || !shared->writer_done.load()) {
      if (ops % 16 == 0) {
        if (!(*seg)->ReadSnapshotInto(snap).ok()) {
          problem("snapshot failed");
          break;
        }
        if (snap.generation < last_gen) problem("generation went back");
        last_gen = snap.generation;
        for (const ClaimEntry& e : snap.claims) {
          const int k = std::atoi(std::string(e.Uid().substr(24)).c_str());
          const std::string p = CheckPattern(e, k);
          if (!p.empty()) problem(p);
          if (k < kKeys) {
            if (e.prepared_time_ns < last_version[k]) problem("claim version went back");
            last_version[k] = e.prepared_time_ns;
          }
        }
      } else {
        const int k = static_cast<int>(rng() % kKeys);
        Result<std::optional<ClaimEntry>> f = (*seg)->FindClaim(Uid(k));
        if (!f.ok()) {
          problem("lookup failed: " + f.status().ToString());
          break;
        }
        if (f->has_value()) {
          const std::string p = CheckPattern(**f, k);
          if (!p.empty()) problem("lookup: " + p);
          if ((*f)->prepared_time_ns < last_version[k]) problem("lookup: claim version went back");
          last_version[k] = (*f)->prepared_time_ns;
        }
      }
      ++ops;
    }
    shared->reader_ops.store(ops);
    ::_exit(0);
  }
  testing::ChildGuard reader_guard(reader);
  const int ws = writer_guard.Wait();
  const int rs = reader_guard.Wait();
  EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0) << "writer status " << ws;
  EXPECT_TRUE(WIFEXITED(rs) && WEXITSTATUS(rs) == 0) << "reader status " << rs;
  EXPECT_EQ(shared->problems.load(), 0u) << "first: " << shared->first_problem;
  EXPECT_GE(shared->reader_ops.load(), min_reads);

  // Replay the writer's sequence and compare with the final table.
  std::map<int, uint64_t> model;
  uint64_t committed_writes = 2;  // the creator's and the writer's attach transactions
  std::mt19937 rng(kSeed);
  for (uint64_t i = 0; i < writes; ++i) {
    const Op op = OpAt(rng, i);
    if (op.remove) {
      committed_writes += model.erase(op.key);  // removing an absent claim writes nothing
    } else {
      model[op.key] = op.version;
      ++committed_writes;
    }
  }
  Result<std::unique_ptr<Segment>> seg = Segment::Open(path, TestOptions(Role::kReader));
  ASSERT_THAT(seg, IsOk());
  Result<Snapshot> snap = (*seg)->ReadSnapshot();
  ASSERT_THAT(snap, IsOk());
  ASSERT_EQ(snap->claims.size(), model.size());
  for (const auto& [k, v] : model) {
    const ClaimEntry* e = snap->FindClaim(Uid(k));
    ASSERT_NE(e, nullptr) << Uid(k);
    EXPECT_EQ(e->prepared_time_ns, v);
  }
  EXPECT_EQ(snap->generation, 2 * committed_writes);  // each write: one odd, one even step
}

}  // namespace
}  // namespace dracpu::shm
