// Shared-memory segment benchmarks (Google Benchmark). Each result is printed with its ratio to
// a baseline measured in the same run: a bare memcpy of the same bytes, or a bare futex round
// trip between two processes. Targets (issue 4): write transaction of one claim < 1 us; reader
// snapshot of 1000 claims < 200 us; lookup by uid < 1 us; wake-to-observe between two processes
// < 100 us. Nothing asserts on time; the summary says which targets were met on this machine.
#include <benchmark/benchmark.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shm-schema/segment.h"

namespace dracpu::shm {
namespace {

constexpr int kClaims = 1000;

std::string Uid(int i) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "b0000000-0000-0000-0000-%012d", i);
  return buf;
}

ClaimSpec BenchClaim(int i, uint64_t version) {
  ClaimSpec c;
  c.uid = Uid(i);
  c.namespace_ = "bench";
  c.name = "claim-" + std::to_string(i);
  c.state = ClaimState::kPrepared;
  c.prepared_time_ns = version;
  c.request_names = {"cpus"};
  c.cpus = CpuSet{(2 * i) % 8192, (2 * i + 1) % 8192};
  c.mems = {0};
  return c;
}

// A segment with default (real-node) capacities holding kClaims claims, in a private temp dir.
class Fixture {
 public:
  Fixture() {
    char tmpl[] = "/dev/shm/dracpu-shm-bench.XXXXXX";
    dir_ = ::mkdtemp(tmpl) ? tmpl : "/tmp";
    path_ = dir_ + "/" + SegmentFileName();
    OpenOptions o;
    o.role = Role::kDraAgent;
    o.create_if_missing = true;
    o.node_name = "bench";
    Result<std::unique_ptr<Segment>> s = Segment::Open(path_, o);
    if (!s.ok()) {
      std::fprintf(stderr, "shm_bench: %s\n", s.status().ToString().c_str());
      std::abort();
    }
    dra_ = std::move(s).value();
    Result<WriteTransaction> txn = dra_->Begin();
    for (int i = 0; i < kClaims; ++i) (void)txn->UpsertClaim(BenchClaim(i, 1));
    txn->Commit();
  }
  ~Fixture() {
    dra_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Segment& dra() { return *dra_; }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
  std::unique_ptr<Segment> dra_;
};

std::unique_ptr<Fixture>& FixturePtr() {
  static std::unique_ptr<Fixture> f;
  return f;
}

Fixture& F() {
  if (!FixturePtr()) FixturePtr() = std::make_unique<Fixture>();
  return *FixturePtr();
}

void BM_WriteTransactionOneClaim(benchmark::State& state) {
  Segment& seg = F().dra();
  ClaimEntry entries[2] = {*EncodeClaim(BenchClaim(500, 2)), *EncodeClaim(BenchClaim(500, 3))};
  uint64_t n = 0;
  for (auto _ : state) {
    Result<WriteTransaction> txn = seg.Begin();
    benchmark::DoNotOptimize(txn->UpsertClaimEntry(entries[n++ & 1]));
    txn->Commit();
  }
}

void BM_MemcpyOneClaim(benchmark::State& state) {
  std::vector<ClaimEntry> src(1), dst(1);
  ClaimEntry* s = src.data();
  ClaimEntry* d = dst.data();
  for (auto _ : state) {
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(d);
    std::memcpy(d, s, sizeof(ClaimEntry));
    benchmark::ClobberMemory();
  }
}

void BM_Snapshot1000Claims(benchmark::State& state) {
  Segment& seg = F().dra();
  Snapshot snap;
  SnapshotOptions so;
  for (auto _ : state) {
    if (!seg.ReadSnapshotInto(snap, so).ok() || snap.claims.size() != kClaims) {
      state.SkipWithError("snapshot failed");
      break;
    }
    benchmark::DoNotOptimize(snap.claims.data());
  }
}

void BM_Memcpy1000Claims(benchmark::State& state) {
  std::vector<ClaimEntry> src(kClaims), dst(kClaims);
  ClaimEntry* s = src.data();
  ClaimEntry* d = dst.data();
  for (auto _ : state) {
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(d);
    std::memcpy(d, s, kClaims * sizeof(ClaimEntry));
    benchmark::ClobberMemory();
  }
}

void BM_FindClaimByUid(benchmark::State& state) {
  Segment& seg = F().dra();
  std::vector<std::string> uids;
  for (int i = 0; i < kClaims; ++i) uids.push_back(Uid(i));
  size_t i = 0;
  for (auto _ : state) {
    Result<std::optional<ClaimEntry>> c = seg.FindClaim(uids[i++ % kClaims]);
    benchmark::DoNotOptimize(c);
  }
}

// --- cross-process wake latency

long Futex(uint32_t* word, int op, uint32_t val) {
  return ::syscall(SYS_futex, word, op, val, nullptr, nullptr, 0);
}

// Bare futex ping-pong between two processes on a MAP_SHARED word (shared futex, like the
// segment's). One iteration = one round trip.
void BM_FutexRoundTrip(benchmark::State& state) {
  auto* word = static_cast<uint32_t*>(
      ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  std::atomic_ref<uint32_t> w(*word);
  w.store(0);
  const pid_t child = ::fork();
  if (child == 0) {
    for (uint32_t expect = 1;; expect += 2) {
      while (w.load() != expect) Futex(word, FUTEX_WAIT, expect - 1);
      w.store(expect + 1);
      Futex(word, FUTEX_WAKE, 1);
    }
  }
  uint32_t v = 0;
  for (auto _ : state) {
    w.store(++v);
    Futex(word, FUTEX_WAKE, 1);
    ++v;
    while (w.load() != v) Futex(word, FUTEX_WAIT, v - 1);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::munmap(word, 4096);
}

// Segment ping-pong: the dra-agent commits a claim, an nri-agent process waiting in
// WaitForChange observes it and commits a container, the dra-agent observes that. One
// iteration = one round trip = two wake-to-observe latencies (each including a transaction).
void BM_SegmentWakeRoundTrip(benchmark::State& state) {
  Segment& dra = F().dra();
  const std::string path = F().path();
  const pid_t child = ::fork();
  if (child == 0) {
    OpenOptions o;
    o.role = Role::kNriAgent;
    Result<std::unique_ptr<Segment>> nri = Segment::Open(path, o);
    if (!nri.ok()) ::_exit(3);
    uint64_t seen = (*nri)->generation();
    ContainerSpec c;
    c.id = "bench-container";
    c.kind = ContainerKind::kShared;
    for (uint64_t v = 1;; ++v) {
      Result<uint64_t> g = (*nri)->WaitForChange(seen, std::chrono::seconds(30));
      if (!g.ok()) ::_exit(4);
      c.updated_time_ns = v;
      Result<WriteTransaction> txn = (*nri)->Begin();
      (void)txn->UpsertContainer(c);
      seen = txn->Commit();
    }
  }
  // Wait until the nri-agent has attached (its attach transaction changes the generation).
  while (!dra.RoleLive(Role::kNriAgent).value_or(false)) ::usleep(1000);
  ::usleep(20000);
  ClaimEntry e = *EncodeClaim(BenchClaim(kClaims + 1, 1));
  for (auto _ : state) {
    Result<WriteTransaction> txn = dra.Begin();
    e.prepared_time_ns += 1;
    (void)txn->UpsertClaimEntry(e);
    const uint64_t mine = txn->Commit();
    Result<uint64_t> g = dra.WaitForChange(mine, std::chrono::seconds(30));
    if (!g.ok()) {
      state.SkipWithError("no answer from the nri-agent process");
      break;
    }
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

BENCHMARK(BM_WriteTransactionOneClaim);
BENCHMARK(BM_MemcpyOneClaim);
BENCHMARK(BM_Snapshot1000Claims);
BENCHMARK(BM_Memcpy1000Claims);
BENCHMARK(BM_FindClaimByUid);
BENCHMARK(BM_FutexRoundTrip)->UseRealTime();
BENCHMARK(BM_SegmentWakeRoundTrip)->UseRealTime();

// Console output plus a summary with ratios and targets.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration && !r.error_occurred) {
        const double to_ns = benchmark::GetTimeUnitMultiplier(benchmark::kNanosecond) /
                             benchmark::GetTimeUnitMultiplier(r.time_unit);
        ns_[r.run_name.function_name] = r.GetAdjustedRealTime() * to_ns;
        cpu_ns_[r.run_name.function_name] = r.GetAdjustedCPUTime() * to_ns;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf(
        "\nshm summary (ratio = result / baseline measured in this run; wall time, and in [] the\n"
        "CPU time of this process, which excludes preemption on a shared machine)\n");
    Line("write transaction, one claim", "BM_WriteTransactionOneClaim", "BM_MemcpyOneClaim",
         "memcpy of one 2304-byte claim", 1, 1000);
    Line("snapshot of 1000 claims", "BM_Snapshot1000Claims", "BM_Memcpy1000Claims",
         "memcpy of 1000 claims (2.2 MiB)", 1, 200000);
    Line("lookup by uid", "BM_FindClaimByUid", "BM_MemcpyOneClaim", "memcpy of one 2304-byte claim",
         1, 1000);
    // Wake-to-observe is half a round trip (each half includes one transaction).
    Line("wake-to-observe, two processes", "BM_SegmentWakeRoundTrip", "BM_FutexRoundTrip",
         "bare futex round trip", 0.5, 100000);
  }

 private:
  void Line(const char* what, const std::string& name, const std::string& base,
            const char* base_what, double scale, double target_ns) {
    auto it = ns_.find(name);
    auto bt = ns_.find(base);
    if (it == ns_.end() || bt == ns_.end()) {
      std::printf("  %-32s not measured\n", what);
      return;
    }
    const double v = it->second * scale;
    const double cpu = cpu_ns_[name] * scale;
    std::printf("  %-31s %9.0f ns [cpu %7.0f ns]  target < %6.0f ns: %-6s  %6.1fx %s (%.0f ns)\n",
                what, v, cpu, target_ns, v < target_ns ? "met" : "MISSED", it->second / bt->second,
                base_what, bt->second);
  }
  std::map<std::string, double> ns_;
  std::map<std::string, double> cpu_ns_;
};

}  // namespace
}  // namespace dracpu::shm

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  dracpu::shm::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  dracpu::shm::FixturePtr().reset();  // removes the temp directory
  return 0;
}
