#include "dra-agent/prepare/cpu_claim_preparer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/log_escape.h"
#include "dra-agent/cdi/cdi_spec.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/shm_test_util.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::dra {
namespace {

using ::dracpu::IsLogSafe;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The test directory's FileSystem with its batches of atomic writes, removals and directory syncs
// logged in order ("batch", "write <path>", "finish", "remove <path>", "sync <dir> <dir>...");
// `on_sync` runs at each sync before it is done (to look at shared memory then), and `sync_error`
// fails the syncs.
class LoggingFileSystem final : public FileSystem {
 public:
  explicit LoggingFileSystem(std::unique_ptr<FileSystem> base) : base_(std::move(base)) {}

  Result<std::string> ReadFile(std::string_view path, size_t max_size) const override {
    return base_->ReadFile(path, max_size);
  }
  Result<std::vector<DirEntry>> ListDirectory(std::string_view path) const override {
    return base_->ListDirectory(path);
  }
  Result<std::string> ReadLink(std::string_view path) const override {
    return base_->ReadLink(path);
  }
  bool Exists(std::string_view path) const override { return base_->Exists(path); }
  bool IsDirectory(std::string_view path) const override { return base_->IsDirectory(path); }
  Status WriteFileAtomically(std::string_view path, std::string_view content,
                             mode_t mode) override {
    return base_->WriteFileAtomically(path, content, mode);
  }
  std::unique_ptr<AtomicWrites> BeginAtomicWrites() override {
    Log("batch");
    return std::make_unique<LoggedWrites>(base_->BeginAtomicWrites(), *this);
  }
  Status RemoveFile(std::string_view path) override {
    Log("remove " + std::string(path));
    return base_->RemoveFile(path);
  }
  Status MakeDirectories(std::string_view path, mode_t mode) override {
    return base_->MakeDirectories(path, mode);
  }
  std::string HostPath(std::string_view path) const override { return base_->HostPath(path); }
  Status SyncDirectories(const std::vector<std::string>& paths) override {
    std::string entry = "sync";
    for (const std::string& p : paths) entry += " " + p;
    Log(entry);
    if (on_sync) on_sync();
    return sync_error.ok() ? base_->SyncDirectories(paths) : sync_error;
  }

  std::vector<std::string> log;  // read it while no call runs
  std::function<void()> on_sync;
  Status sync_error = Status::Ok();

 private:
  class LoggedWrites final : public AtomicWrites {
   public:
    LoggedWrites(std::unique_ptr<AtomicWrites> base, LoggingFileSystem& fs)
        : base_(std::move(base)), fs_(fs) {}
    void Add(FileWrite file) override {
      fs_.Log("write " + file.path);
      base_->Add(std::move(file));
    }
    std::vector<Status> Finish() override {
      fs_.Log("finish");
      return base_->Finish();
    }

   private:
    std::unique_ptr<AtomicWrites> base_;
    LoggingFileSystem& fs_;
  };

  // Concurrent calls (the tests of concurrent claims) log from several threads.
  void Log(std::string entry) {
    std::lock_guard lock(log_mu_);
    log.push_back(std::move(entry));
  }

  std::mutex log_mu_;
  std::unique_ptr<FileSystem> base_;
};

std::vector<std::string> Syncs(const std::vector<std::string>& log) {
  std::vector<std::string> out;
  for (const std::string& e : log) {
    if (e.rfind("sync", 0) == 0) out.push_back(e);
  }
  return out;
}

struct Result_ {
  std::string request, device, consumed;
};

// A ResourceClaim as the API server returns it, allocated to `results` on pool node-a.
std::string ClaimJson(const std::string& uid, const std::vector<Result_>& results,
                      const std::string& config = "") {
  std::string r;
  for (const Result_& x : results) {
    if (!r.empty()) r += ",";
    r += R"({"request":")" + x.request + R"(","driver":"dra.cpu","pool":"node-a","device":")" +
         x.device + "\"";
    if (!x.consumed.empty()) r += R"(,"consumedCapacity":{"dra.cpu/cpu":")" + x.consumed + "\"}";
    r += "}";
  }
  return R"({"metadata":{"namespace":"ns","name":"c-)" + uid + R"(","uid":")" + uid +
         R"("},"status":{"allocation":{"devices":{"results":[)" + r + "],\"config\":[" + config +
         "]}}}}";
}

class PreparerTest : public ::testing::Test {
 protected:
  void SetUp() override { Build(CpuDeviceMode::kGrouped); }

  // 2 sockets x 1 NUMA x 4 cores x SMT2: node 0 = 0-3,8-11; node 1 = 4-7,12-15.
  void Build(CpuDeviceMode mode, int min_shared = 1) {
    preparer_.reset();
    topology_ = testing::SyntheticTopology({2, 1, 4, 2});
    index_ = std::make_unique<allocator::TopologyIndex>(
        allocator::TopologyIndex::Build(topology_).value());
    CatalogOptions co;
    co.mode = mode;
    co.min_shared_cpus = min_shared;
    catalog_ = BuildDeviceCatalog(topology_, co).value();
    if (!segment_) {
      segment_ = shm::Segment::Open(dir_.File("state.shm"),
                                    shm::testing::TestOptions(shm::Role::kDraAgent))
                     .value();
      std::filesystem::create_directories(dir_.File("cdi"));
      auto fs = std::make_unique<LoggingFileSystem>(NewPosixFileSystem(dir_.path()).value());
      fs_log_ = fs.get();
      fs_ = std::move(fs);
      cdi_ = std::make_unique<CdiStore>(*fs_, "cdi");
      metadata_ = std::make_unique<DeviceMetadataWriter>(*fs_, "/kubelet/plugins/dra.cpu", "/cdi");
    }
    PreparerOptions po;
    po.pool_name = "node-a";
    po.min_shared_cpus = min_shared;
    po.metadata = metadata_.get();
    po.online_cpus = [this]() -> Result<CpuSet> {
      std::lock_guard lock(mu_);
      if (!online_error_.ok()) return online_error_;
      return online_ ? *online_ : topology_.online;
    };
    preparer_ = std::make_unique<CpuClaimPreparer>(
        topology_, *index_, catalog_, *segment_, *cdi_,
        [this](const std::string& ns, const std::string& name) -> Result<std::string> {
          std::lock_guard lock(mu_);
          auto it = claims_.find(ns + "/" + name);
          if (it == claims_.end())
            return NotFoundError("resourceclaims \"" + name + "\" not found");
          return it->second;
        },
        po, &dra_metrics_, clock_);
  }

  ClaimRef Add(const std::string& uid, const std::vector<Result_>& results,
               const std::string& config = "") {
    std::lock_guard lock(mu_);
    claims_["ns/c-" + uid] = ClaimJson(uid, results, config);
    return {"ns", "c-" + uid, uid};
  }

  ClaimPrepareResult PrepareOne(const ClaimRef& ref) {
    return preparer_->Prepare({ref}).at(ref.uid);
  }

  CpuSet Held(const std::string& uid) {
    auto c = segment_->FindClaim(uid).value();
    return c ? shm::DecodeClaim(*c).cpus : CpuSet();
  }

  shm::testing::TempDir dir_;
  CpuTopology topology_;
  std::unique_ptr<allocator::TopologyIndex> index_;
  DeviceCatalog catalog_;
  std::unique_ptr<shm::Segment> segment_;
  std::unique_ptr<FileSystem> fs_;
  LoggingFileSystem* fs_log_ = nullptr;  // fs_
  std::unique_ptr<CdiStore> cdi_;
  std::unique_ptr<DeviceMetadataWriter> metadata_;
  MetricsRegistry metrics_;
  DraMetrics dra_metrics_{metrics_};
  dracpu::testing::FakeClock clock_;
  std::unique_ptr<CpuClaimPreparer> preparer_;
  std::mutex mu_;
  std::map<std::string, std::string> claims_;
  std::optional<CpuSet> online_;  // what sysfs cpu/online says now (unset: the topology's)
  Status online_error_;
};

TEST_F(PreparerTest, GroupedClaimGetsWholeCoresInItsNumaNode) {
  const ClaimRef ref = Add("u1", {{"req", "cpudevnuma000", "4"}});
  ClaimPrepareResult r = PrepareOne(ref);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].device_name, "cpudevnuma000");
  EXPECT_EQ(r.devices[0].pool_name, "node-a");
  EXPECT_THAT(r.devices[0].request_names, ElementsAre("req"));
  EXPECT_THAT(r.devices[0].cdi_device_ids,
              ElementsAre("dra.k8s.io/cpu=claim-u1", "dra.cpu/metadata=u1_req"));
  // KEP-5304: the device's published attributes and the CPUs it got, in the metadata file.
  std::ifstream meta(
      dir_.File("kubelet/plugins/dra.cpu/dra-device-metadata/ns_c-u1/req/metadata.json"));
  std::stringstream text;
  text << meta.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("\"dra.cpu/allocatedNumCPUs\": {\n"));
  EXPECT_THAT(text.str(), HasSubstr("\"int\": 4"));
  EXPECT_THAT(text.str(), HasSubstr("\"resource.kubernetes.io/numaNode\""));
  EXPECT_TRUE(std::filesystem::exists(dir_.File("cdi/dra.cpu_metadata_u1_req.json")));
  const CpuSet held = Held("u1");
  EXPECT_EQ(held.Count(), 4);
  EXPECT_TRUE(held.IsSubsetOf(topology_.numa_nodes[0].cpus));
  for (const Core& core : topology_.cores) {  // whole cores: both threads or neither
    EXPECT_TRUE(core.cpus.IsSubsetOf(held) || !core.cpus.Intersects(held)) << core.id;
  }
  auto listing = cdi_->List().value();
  ASSERT_EQ(listing.claims.size(), 1u);
  EXPECT_EQ(listing.claims[0].cpus, held);
  EXPECT_EQ(static_cast<shm::ClaimState>(segment_->FindClaim("u1").value()->state),
            shm::ClaimState::kPrepared);
  const std::string exposition = metrics_.RenderText();
  EXPECT_THAT(exposition, HasSubstr("dra_cpu_prepare_claims_total{result=\"success\"} 1\n"));
  EXPECT_THAT(exposition, HasSubstr("dra_cpu_prepare_claims_total{result=\"unknown\"} 0\n"));
  EXPECT_THAT(exposition, HasSubstr("dra_cpu_claim_allocated_cpus_bucket{le=\"4\"} 1\n"));
  EXPECT_THAT(exposition, HasSubstr("dra_cpu_claim_allocated_cpus_bucket{le=\"2\"} 0\n"));
}

TEST_F(PreparerTest, RepeatedPrepareIsIdempotent) {
  const ClaimRef ref = Add("u1", {{"req", "cpudevnuma001", "3"}});
  ASSERT_EQ(PrepareOne(ref).error, "");
  const CpuSet first = Held("u1");
  std::filesystem::remove(dir_.File("cdi/" + CdiSpecFileName("u1")));  // lost spec is rewritten
  ASSERT_EQ(PrepareOne(ref).error, "");
  EXPECT_EQ(Held("u1"), first);
  EXPECT_EQ(cdi_->List()->claims.at(0).cpus, first);
  EXPECT_EQ(dra_metrics_.claim_allocated_cpus.Value({}), 1) << "a repeated Prepare is not new";
}

TEST_F(PreparerTest, ResultsOfOneClaimAreDisjoint) {
  const ClaimRef ref =
      Add("u1",
          {{"a", "cpudevnuma000", "2"}, {"b", "cpudevnuma000", "2"}, {"c", "cpudevnuma001", "2"}});
  ClaimPrepareResult r = PrepareOne(ref);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.devices.size(), 3u);
  EXPECT_EQ(Held("u1").Count(), 6);
  EXPECT_EQ((Held("u1") & topology_.numa_nodes[0].cpus).Count(), 4);
}

TEST_F(PreparerTest, ConcurrentClaimsNeverOverlap) {
  std::vector<ClaimRef> refs;
  for (int i = 0; i < 7; ++i)
    refs.push_back(
        Add("u" + std::to_string(i), {{"r", i % 2 ? "cpudevnuma001" : "cpudevnuma000", "2"}}));
  std::vector<std::thread> threads;
  std::vector<std::string> errors(refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    threads.emplace_back([&, i] { errors[i] = PrepareOne(refs[i]).error; });
  }
  for (auto& t : threads) t.join();
  CpuSet all;
  int granted = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    if (!errors[i].empty()) {
      EXPECT_THAT(errors[i], HasSubstr("not enough")) << "only lack of CPUs may refuse";
      continue;
    }
    const CpuSet held = Held(refs[i].uid);
    EXPECT_FALSE(all.Intersects(held)) << refs[i].uid;
    all |= held;
    ++granted;
  }
  // 16 CPUs, floor 1: node 0 fits 3 claims of 2 beside... at least 6 of 7 fit.
  EXPECT_GE(granted, 6);
  EXPECT_GE((topology_.online - all).Count(), 1);
}

// Issue 6: 100 claims prepared concurrently on a 1024-CPU machine (8 sockets x 64 cores x SMT2),
// one kubelet call per claim on 8 threads: every claim succeeds, no CPU is held twice, every
// claim's CPUs are whole cores inside its NUMA node, and the CDI specs agree with shared memory.
TEST_F(PreparerTest, HundredConcurrentClaimsOnA1024CpuMachine) {
  preparer_.reset();
  segment_ =
      shm::Segment::Open(dir_.File("big.shm"), shm::testing::TestOptions(shm::Role::kDraAgent, 256))
          .value();
  topology_ = testing::SyntheticTopology({8, 1, 64, 2});
  index_ = std::make_unique<allocator::TopologyIndex>(
      allocator::TopologyIndex::Build(topology_).value());
  CatalogOptions co;
  catalog_ = BuildDeviceCatalog(topology_, co).value();
  PreparerOptions po;
  po.pool_name = "node-a";
  auto fetch = [this](const std::string& ns, const std::string& name) -> Result<std::string> {
    std::lock_guard lock(mu_);
    auto it = claims_.find(ns + "/" + name);
    if (it == claims_.end()) return NotFoundError(name);
    return it->second;
  };
  preparer_ = std::make_unique<CpuClaimPreparer>(topology_, *index_, catalog_, *segment_, *cdi_,
                                                 fetch, po, nullptr, clock_);
  std::vector<ClaimRef> refs;
  for (int i = 0; i < 100; ++i) {
    // 8 claims of 8 CPUs (4 whole cores) per NUMA node + a few of 2: 100 claims, 784 CPUs.
    refs.push_back(
        Add("c" + std::to_string(i), {{"r", NumaDeviceName(i % 8), i < 96 ? "8" : "2"}}));
  }
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  std::vector<std::string> errors(refs.size());
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < static_cast<int>(refs.size()); i = next++) {
        errors[static_cast<size_t>(i)] = preparer_->Prepare({refs[static_cast<size_t>(i)]})
                                             .at(refs[static_cast<size_t>(i)].uid)
                                             .error;
      }
    });
  }
  for (auto& t : threads) t.join();
  CpuSet all;
  for (size_t i = 0; i < refs.size(); ++i) {
    ASSERT_EQ(errors[i], "") << refs[i].uid;
    const CpuSet held = Held(refs[i].uid);
    EXPECT_FALSE(all.Intersects(held))
        << refs[i].uid << " overlaps: " << (all & held).ToListString();
    all |= held;
    EXPECT_TRUE(held.IsSubsetOf(topology_.numa_nodes[i % 8].cpus)) << refs[i].uid;
    for (const Core& core : topology_.cores) {
      EXPECT_TRUE(core.cpus.IsSubsetOf(held) || !core.cpus.Intersects(held)) << refs[i].uid;
    }
  }
  EXPECT_EQ(all.Count(), 96 * 8 + 4 * 2);
  auto listing = cdi_->List();
  ASSERT_THAT(listing, IsOk());
  ASSERT_EQ(listing->claims.size(), 100u);
  for (const ClaimEnv& c : listing->claims) EXPECT_EQ(c.cpus, Held(c.claim_uid)) << c.claim_uid;
}

TEST_F(PreparerTest, ExplicitCpusetIsValidated) {
  const std::string cfg =
      R"({"source":"FromClaim","requests":[],"opaque":{"driver":"dra.cpu","parameters":{"apiVersion":"v1alpha1","cpuConfig":{"cpuset":"1,9"}}}})";
  ASSERT_EQ(PrepareOne(Add("u1", {{"r", "cpudevnuma000", "2"}}, cfg)).error, "");
  EXPECT_EQ(Held("u1").ToListString(), "1,9");
  EXPECT_THAT(PrepareOne(Add("u2", {{"r", "cpudevnuma000", "2"}}, cfg)).error,
              HasSubstr("held by another claim"));
  EXPECT_THAT(PrepareOne(Add("u3", {{"r", "cpudevnuma000", "3"}}, cfg)).error,
              HasSubstr("has 2 CPUs, the allocation 3"));
  const std::string other_node =
      R"({"source":"FromClaim","opaque":{"driver":"dra.cpu","parameters":{"apiVersion":"v1alpha1","cpuConfig":{"cpuset":"4-5"}}}})";
  EXPECT_THAT(PrepareOne(Add("u4", {{"r", "cpudevnuma000", "2"}}, other_node)).error,
              HasSubstr("not allocatable CPUs of the device"));
  EXPECT_TRUE(Held("u2").Empty());
  EXPECT_EQ(cdi_->List()->claims.size(), 1u);
}

// A result without consumedCapacity (a cluster without DRAConsumableCapacity allocates grouped
// devices whole) gets every CPU the device publishes.
TEST_F(PreparerTest, WholeDeviceGetsEveryCpuItPublishes) {
  ASSERT_EQ(PrepareOne(Add("w1", {{"r", "cpudevnuma001", ""}})).error, "");
  EXPECT_EQ(Held("w1"), topology_.numa_nodes[1].cpus);
  // The first device publishes 7 of its 8 CPUs (the shared-pool floor): the claim gets those 7.
  ASSERT_EQ(PrepareOne(Add("w0", {{"r", "cpudevnuma000", ""}})).error, "");
  EXPECT_EQ(Held("w0").Count(), 7);
  EXPECT_TRUE(Held("w0").IsSubsetOf(topology_.numa_nodes[0].cpus));
  // Idempotent, and released like any claim.
  EXPECT_EQ(PrepareOne(Add("w0", {{"r", "cpudevnuma000", ""}})).error, "");
  EXPECT_EQ(Held("w0").Count(), 7);
  EXPECT_THAT(preparer_->Unprepare({{"ns", "c-w0", "w0"}}).at("w0"), IsEmpty());
  EXPECT_TRUE(Held("w0").Empty());
}

TEST_F(PreparerTest, WholeDeviceUnderFullCoresGetsItsWholeCores) {
  const std::string full_cores =
      R"({"opaque":{"driver":"dra.cpu","parameters":{"apiVersion":"v1alpha1","policy":{"fullPCPUsOnly":true}}}})";
  ASSERT_EQ(PrepareOne(Add("w", {{"r", "cpudevnuma000", ""}}, full_cores)).error, "");
  const CpuSet held = Held("w");
  EXPECT_EQ(held.Count(), 6) << "7 published CPUs hold 3 whole cores";
  for (const Core& core : topology_.cores) {
    EXPECT_TRUE(core.cpus.IsSubsetOf(held) || !core.cpus.Intersects(held)) << core.id;
  }
}

TEST_F(PreparerTest, WholeDeviceErrorsSayTheDeviceWasAllocatedWhole) {
  // Part of the device is already held (a claim prepared with consumedCapacity before the
  // cluster lost consumable capacity): the whole device cannot be granted.
  ASSERT_EQ(PrepareOne(Add("c", {{"r", "cpudevnuma001", "2"}})).error, "");
  EXPECT_THAT(PrepareOne(Add("w", {{"r", "cpudevnuma001", ""}})).error,
              HasSubstr("allocated whole (no consumedCapacity), which needs all 8 CPUs it "
                        "publishes; 6 of them are free"));
  EXPECT_TRUE(Held("w").Empty());
}

TEST_F(PreparerTest, WholeDevicesStillKeepTheSharedPoolFloor) {
  // CPU 11 (NUMA 0) went offline: both devices whole would leave no shared CPU.
  {
    std::lock_guard lock(mu_);
    online_ = topology_.online - CpuSet{11};
  }
  ASSERT_EQ(PrepareOne(Add("w0", {{"r", "cpudevnuma000", ""}})).error, "");
  const std::string error = PrepareOne(Add("w1", {{"r", "cpudevnuma001", ""}})).error;
  EXPECT_THAT(error, HasSubstr("claim ns/c-w1 (uid w1): granting CPUs"));
  EXPECT_THAT(error, HasSubstr("below minSharedCPUs 1 (cpudevnuma001 allocated whole, with no "
                               "consumedCapacity"));
  EXPECT_TRUE(Held("w1").Empty());
}

struct BadClaim {
  const char* name;
  std::vector<Result_> results;
  const char* config;
  const char* error;
};

TEST_F(PreparerTest, BadClaimsGetTheirError) {
  const std::vector<BadClaim> cases = {
      {"fraction", {{"r", "cpudevnuma000", "1500m"}}, "", "fraction of a CPU"},
      {"zero", {{"r", "cpudevnuma000", "0"}}, "", "not positive"},
      {"wholetwice",
       {{"a", "cpudevnuma001", ""}, {"b", "cpudevnuma001", ""}},
       "",
       "16 CPUs (with the claim's other results on this device) is more than the capacity 8"},
      {"unknown", {{"r", "cpudevnuma007", "1"}}, "", "no such device"},
      // cpudevnuma000 publishes 7 of its 8 CPUs (the floor), cpudevnuma001 all 8.
      {"overcap",
       {{"r", "cpudevnuma000", "8"}},
       "",
       "8 CPUs is more than the capacity 7 of device cpudevnuma000"},
      {"toomany",
       {{"r", "cpudevnuma001", "9"}},
       "",
       "9 CPUs is more than the capacity 8 of device cpudevnuma001"},
      {"oversum",
       {{"a", "cpudevnuma000", "4"}, {"b", "cpudevnuma000", "4"}},
       "",
       "8 CPUs (with the claim's other results on this device) is more than the capacity 7"},
      {"smt",
       {{"r", "cpudevnuma000", "3"}},
       R"({"opaque":{"driver":"dra.cpu","parameters":{"apiVersion":"v1alpha1","policy":{"fullPCPUsOnly":true}}}})",
       "not a whole number of cores"},
  };
  for (const BadClaim& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(PrepareOne(Add(c.name, c.results, c.config)).error, HasSubstr(c.error));
    EXPECT_TRUE(Held(c.name).Empty());
  }
  EXPECT_THAT(cdi_->List()->claims, IsEmpty());
  // The API's view of the claim decides.
  EXPECT_THAT(PrepareOne({"ns", "missing", "u9"}).error, HasSubstr("not found"));
  Add("real", {{"r", "cpudevnuma000", "1"}});
  EXPECT_THAT(PrepareOne({"ns", "c-real", "other-uid"}).error, HasSubstr("has uid real"));
  {
    std::lock_guard lock(mu_);
    claims_["ns/c-unalloc"] =
        R"({"metadata":{"namespace":"ns","name":"c-unalloc","uid":"unalloc"},"status":{}})";
  }
  EXPECT_THAT(PrepareOne({"ns", "c-unalloc", "unalloc"}).error, HasSubstr("not allocated"));
  EXPECT_THAT(PrepareOne({"ns", "x", "bad/uid"}).error, HasSubstr("other than letters"));
}

// Claim uids, names and device names that Kubernetes would never allow (path characters,
// control characters, overlong), from the kubelet's request or the API server's document:
// refused, answered with printable bounded text, and no file appears anywhere but the CDI dir.
TEST_F(PreparerTest, HostileNamesNeverReachAFileNameOrALogLineUnescaped) {
  {
    std::lock_guard lock(mu_);
    claims_["ns/bad-device"] = ClaimJson("good-uid", {{"r", "cpudev\\nnuma000\\u001b[2J", "1"}});
  }
  const std::vector<ClaimRef> refs = {
      {"ns", "x", "../../etc/passwd"},
      {"ns", "x", "abc\ndef"},
      {"ns", "x", std::string(300, 'u')},
      {"ns\x1b[2J", "name\nforged: line", "0b1e4a52-7c1d-4d0e-9a4b-1f1e2d3c4b5a"},
      {"ns", std::string(100000, 'n'), "0b1e4a52-7c1d-4d0e-9a4b-1f1e2d3c4b5b"},
      {"ns", "bad-device", "good-uid"},
  };
  for (const ClaimRef& ref : refs) {
    const std::string error = PrepareOne(ref).error;
    SCOPED_TRACE(error);
    EXPECT_FALSE(error.empty());
    EXPECT_TRUE(IsLogSafe(error));
    EXPECT_LT(error.size(), 1000u);
    EXPECT_TRUE(Held(ref.uid).Empty());
    EXPECT_TRUE(IsLogSafe(preparer_->Unprepare({ref}).at(ref.uid)));
  }
  EXPECT_THAT(PrepareOne(refs[5]).error, HasSubstr("(device cpudev\\x0anuma000\\x1b[2J)"));
  EXPECT_THAT(cdi_->List()->claims, IsEmpty());
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_.path())) {
    files.push_back(e.path().filename().string());
  }
  EXPECT_THAT(files, ::testing::UnorderedElementsAre("state.shm", "cdi"));
}

// Unprepare checks the kubelet's names as Prepare does: the metadata directory is named after
// them (<ns>_<name>), so a '/' in a name would reach into another claim's directory.
TEST_F(PreparerTest, UnprepareRefusesNamesThatAreNotKubernetesNamesAndTouchesNothing) {
  ASSERT_EQ(PrepareOne(Add("u1", {{"req", "cpudevnuma000", "2"}})).error, "");
  const std::string meta =
      dir_.File("kubelet/plugins/dra.cpu/dra-device-metadata/ns_c-u1/req/metadata.json");
  ASSERT_TRUE(std::filesystem::exists(meta));
  const std::pair<ClaimRef, std::string> refused[] = {
      {{"ns", "c-u1/req", "u9"}, "ResourceClaim name \"c-u1/req\" is not a DNS subdomain"},
      {{"ns", "../c-u1", "u9"}, "ResourceClaim name \"../c-u1\" is not a DNS subdomain"},
      {{"..", "c-u1", "u9"}, "namespace \"..\" is not a DNS label"},
      {{"ns", "c-u1\nforged", "u9"}, "ResourceClaim name \"c-u1\\x0aforged\" is not a DNS"},
      {{"ns", "c-u1", "u1/../u1"}, "claim uid \"u1/../u1\" has a character other than"},
  };
  for (const auto& [ref, reason] : refused) {
    const std::string error = preparer_->Unprepare({ref}).at(ref.uid);
    EXPECT_THAT(error, HasSubstr(reason));
    EXPECT_TRUE(IsLogSafe(error)) << error;
  }
  EXPECT_TRUE(std::filesystem::exists(meta));
  EXPECT_EQ(Held("u1").Count(), 2);
  EXPECT_EQ(cdi_->List()->claims.size(), 1u);
}

// Within each device's capacity, claims can still reach the floor when the scheduler's view
// differs from ours (e.g. the floor was raised after they were allocated): the floor holds.
TEST_F(PreparerTest, TheSharedPoolFloorHoldsAcrossClaims) {
  ASSERT_EQ(PrepareOne(Add("fill1", {{"r", "cpudevnuma001", "8"}})).error, "");
  ASSERT_EQ(PrepareOne(Add("fill0", {{"r", "cpudevnuma000", "6"}})).error, "");
  EXPECT_THAT(PrepareOne(Add("over", {{"r", "cpudevnuma000", "2"}})).error,
              HasSubstr("would leave 0 CPUs in the shared pool, below minSharedCPUs 1"));
  EXPECT_TRUE(Held("over").Empty());
  EXPECT_EQ(PrepareOne(Add("fits", {{"r", "cpudevnuma000", "1"}})).error, "");
  EXPECT_EQ(cdi_->List()->claims.size(), 3u);
}

TEST_F(PreparerTest, IndividualModeMapsDevicesToCpus) {
  Build(CpuDeviceMode::kIndividual);
  ASSERT_EQ(PrepareOne(Add("u1", {{"r", "cpudev000", ""}, {"r", "cpudev001", ""}})).error, "");
  EXPECT_EQ(Held("u1").ToListString(), "1,9");  // CPU 0 is the unpublished shared-pool floor
  EXPECT_THAT(PrepareOne(Add("u2", {{"r", "cpudev001", ""}})).error,
              HasSubstr("overlapping device assignment"));
}

TEST_F(PreparerTest, UnprepareReleasesAndIsIdempotent) {
  const ClaimRef ref = Add("u1", {{"r", "cpudevnuma000", "2"}});
  ASSERT_EQ(PrepareOne(ref).error, "");
  EXPECT_TRUE(std::filesystem::exists(dir_.File("cdi/dra.cpu_metadata_u1_r.json")));
  EXPECT_EQ(preparer_->Unprepare({ref}).at("u1"), "");
  EXPECT_TRUE(Held("u1").Empty());
  EXPECT_THAT(cdi_->List()->claims, IsEmpty());
  EXPECT_FALSE(std::filesystem::exists(dir_.File("cdi/dra.cpu_metadata_u1_r.json")));
  EXPECT_FALSE(
      std::filesystem::exists(dir_.File("kubelet/plugins/dra.cpu/dra-device-metadata/ns_c-u1")));
  EXPECT_EQ(preparer_->Unprepare({ref}).at("u1"), "");
  EXPECT_EQ(preparer_->Unprepare({{"ns", "never", "u404"}}).at("u404"), "");
}

// Durable but cheap: however many claims a call has, their files (spec and device metadata) go
// into one batch, whose directories are synced once, after the last claim's files.
TEST_F(PreparerTest, APrepareOfSeveralClaimsWritesAllTheirFilesInOneBatch) {
  const ClaimRef a = Add("u1", {{"r", "cpudevnuma000", "2"}});
  const ClaimRef b = Add("u2", {{"r", "cpudevnuma001", "2"}});
  const ClaimRef c = Add("u3", {{"r", "cpudevnuma000", "2"}});
  fs_log_->log.clear();
  auto out = preparer_->Prepare({a, b, c});
  for (const char* uid : {"u1", "u2", "u3"}) EXPECT_EQ(out.at(uid).error, "") << uid;
  std::vector<std::string> batches;
  for (const std::string& e : fs_log_->log) {
    if (e == "batch" || e == "finish") batches.push_back(e);
  }
  ASSERT_THAT(batches, ElementsAre("batch", "finish"));
  EXPECT_EQ(fs_log_->log.front(), "batch");
  EXPECT_EQ(fs_log_->log.back(), "finish");  // every file of the call before it
  for (const char* uid : {"u1", "u2", "u3"}) {
    EXPECT_TRUE(std::find(fs_log_->log.begin(), fs_log_->log.end(), "write " + cdi_->PathOf(uid)) !=
                fs_log_->log.end())
        << uid;
  }
  // Per claim: its CDI spec, its device metadata and the metadata's own CDI spec.
  EXPECT_EQ(fs_log_->log.size(), 2u + 3u * 3u);
}

// A removed spec must not come back after a crash (Reconcile would re-reserve its CPUs for a
// claim the kubelet has forgotten), so the CPUs are freed only after the directories are synced:
// once for the whole call, with every removal of the call before it.
TEST_F(PreparerTest, UnprepareFreesTheCpusOnlyOnceTheRemovalsAreDurableOneSyncPerCall) {
  const ClaimRef a = Add("u1", {{"r", "cpudevnuma000", "2"}});
  const ClaimRef b = Add("u2", {{"r", "cpudevnuma001", "2"}});
  auto prepared = preparer_->Prepare({a, b});
  ASSERT_EQ(prepared.at("u1").error, "");
  ASSERT_EQ(prepared.at("u2").error, "");
  fs_log_->log.clear();
  std::vector<std::string> at_sync;
  fs_log_->on_sync = [&] {
    const bool spec_left = !cdi_->List()->claims.empty();
    for (const char* uid : {"u1", "u2"}) {
      auto c = segment_->FindClaim(uid).value();
      const bool releasing = c && c->state == static_cast<uint8_t>(shm::ClaimState::kReleasing);
      at_sync.push_back(std::string(uid) + (releasing ? " releasing" : " not releasing") +
                        (spec_left ? ", a spec" : ", no spec"));
    }
  };
  auto out = preparer_->Unprepare({a, b});
  EXPECT_EQ(out.at("u1"), "");
  EXPECT_EQ(out.at("u2"), "");
  EXPECT_THAT(Syncs(fs_log_->log),
              ElementsAre("sync cdi /kubelet/plugins/dra.cpu/dra-device-metadata"));
  EXPECT_EQ(fs_log_->log.back(), Syncs(fs_log_->log).front());  // every removal before it
  EXPECT_THAT(at_sync, ElementsAre("u1 releasing, no spec", "u2 releasing, no spec"));
  EXPECT_TRUE(Held("u1").Empty());
  EXPECT_TRUE(Held("u2").Empty());
}

TEST_F(PreparerTest, AnUnprepareWhoseRemovalIsNotDurableKeepsTheCpusUntilARetry) {
  const ClaimRef ref = Add("u1", {{"r", "cpudevnuma000", "2"}});
  ASSERT_EQ(PrepareOne(ref).error, "");
  const CpuSet held = Held("u1");
  fs_log_->sync_error = ErrnoStatus("fsync /x/cdi", EIO);
  const std::string error = preparer_->Unprepare({ref}).at("u1");
  EXPECT_THAT(error, HasSubstr("the removal is not durable"));
  EXPECT_THAT(error, HasSubstr("fsync /x/cdi"));
  EXPECT_THAT(error, HasSubstr("CPUs stay reserved"));
  EXPECT_EQ(Held("u1"), held);
  EXPECT_EQ(static_cast<shm::ClaimState>(segment_->FindClaim("u1").value()->state),
            shm::ClaimState::kReleasing);
  // The kubelet retries; the files are already gone, the sync now works.
  fs_log_->sync_error = Status::Ok();
  EXPECT_EQ(preparer_->Unprepare({ref}).at("u1"), "");
  EXPECT_TRUE(Held("u1").Empty());
}

TEST_F(PreparerTest, ReconcileFinishesAnInterruptedUnprepareDurablyBeforeFreeingTheCpus) {
  const ClaimRef ref = Add("u1", {{"r", "cpudevnuma000", "2"}});
  ASSERT_EQ(PrepareOne(ref).error, "");
  {
    shm::ClaimSpec releasing = shm::DecodeClaim(*segment_->FindClaim("u1").value());
    releasing.state = shm::ClaimState::kReleasing;
    auto txn = segment_->Begin().value();
    ASSERT_THAT(txn.UpsertClaim(releasing), IsOk());
  }
  fs_log_->log.clear();
  ASSERT_THAT(preparer_->Reconcile(), IsOk());
  EXPECT_TRUE(Held("u1").Empty());
  ASSERT_FALSE(fs_log_->log.empty());
  EXPECT_EQ(fs_log_->log.back(), "sync cdi /kubelet/plugins/dra.cpu/dra-device-metadata");
  EXPECT_THAT(fs_log_->log, ::testing::Contains("remove cdi/" + CdiSpecFileName("u1")));
}

TEST_F(PreparerTest, CpusStayHeldWhileTheCdiSpecCannotBeRemoved) {
  const ClaimRef ref = Add("u1", {{"r", "cpudevnuma000", "2"}});
  ASSERT_EQ(PrepareOne(ref).error, "");
  const CpuSet held = Held("u1");
  // A directory in the spec's place makes unlink fail.
  const std::string spec = dir_.File("cdi/" + CdiSpecFileName("u1"));
  std::filesystem::remove(spec);
  std::filesystem::create_directories(spec + "/blocker");
  EXPECT_THAT(preparer_->Unprepare({ref}).at("u1"), HasSubstr("CPUs stay reserved"));
  EXPECT_EQ(Held("u1"), held);
  EXPECT_EQ(static_cast<shm::ClaimState>(segment_->FindClaim("u1").value()->state),
            shm::ClaimState::kPrepared);
}

TEST_F(PreparerTest, FailedCdiWriteRollsBackTheReservation) {
  const std::string spec = dir_.File("cdi/" + CdiSpecFileName("u1"));
  std::filesystem::create_directories(spec + "/blocker");  // rename over a directory fails
  EXPECT_THAT(PrepareOne(Add("u1", {{"r", "cpudevnuma000", "2"}})).error, HasSubstr("rename"));
  EXPECT_TRUE(Held("u1").Empty());
}

TEST_F(PreparerTest, ReconcileMakesMemoryAndSpecsAgree) {
  // Prepared normally: stays.
  ASSERT_EQ(PrepareOne(Add("kept", {{"r", "cpudevnuma000", "2"}})).error, "");
  // In memory, never acknowledged (no spec): dropped.
  {
    auto txn = segment_->Begin().value();
    ASSERT_THAT(txn.UpsertClaim(shm::testing::TestClaim(50, CpuSet{4})), IsOk());
    shm::ClaimSpec reserved = shm::testing::TestClaim(51, CpuSet{5});
    reserved.state = shm::ClaimState::kReserved;
    ASSERT_THAT(txn.UpsertClaim(reserved), IsOk());
  }
  // Spec on disk, unknown to memory: re-reserved. Conflicting spec: left alone.
  ASSERT_THAT(cdi_->Write("fromdisk", CpuSet{6, 14}), IsOk());
  ASSERT_THAT(cdi_->Write("conflict", Held("kept")), IsOk());
  auto report = preparer_->Reconcile();
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(Held("fromdisk").ToListString(), "6,14");
  EXPECT_TRUE(Held("conflict").Empty());
  EXPECT_TRUE(Held(shm::testing::Uid(51)).Empty());
  // TestClaim(50) is kPrepared without a spec: its spec is rewritten.
  EXPECT_EQ(Held(shm::testing::Uid(50)).ToListString(), "4");
  const std::string text = ::testing::PrintToString(*report);
  EXPECT_THAT(text, HasSubstr("re-reserved CPUs 6,14"));
  EXPECT_THAT(text, HasSubstr("held by another claim"));
  EXPECT_THAT(text, HasSubstr("never finished"));
  EXPECT_THAT(text, HasSubstr("rewrote its missing CDI spec"));
}

// CPUs unplugged after start-up (the catalog still lists them) are never granted, nor counted in
// the shared pool; a repeated Prepare of a claim already holding them still answers the same.
TEST_F(PreparerTest, CpusThatWentOfflineAreNotGranted) {
  const std::string before_cfg =
      R"({"source":"FromClaim","opaque":{"driver":"dra.cpu","parameters":{"apiVersion":"v1alpha1","cpuConfig":{"cpuset":"4,12"}}}})";
  ASSERT_EQ(PrepareOne(Add("before", {{"r", "cpudevnuma001", "2"}}, before_cfg)).error, "");
  const CpuSet before = Held("before");
  {
    std::lock_guard lock(mu_);
    online_ = topology_.online - CpuSet::ParseList("2-3,10-11", "test").value() - before;
  }
  // Node 0 (0-3,8-11) has 4 online CPUs left; the allocator may only use them.
  ASSERT_EQ(PrepareOne(Add("g", {{"r", "cpudevnuma000", "4"}})).error, "");
  EXPECT_EQ(Held("g").ToListString(), "0-1,8-9");
  EXPECT_THAT(PrepareOne(Add("more", {{"r", "cpudevnuma000", "1"}})).error,
              HasSubstr("not enough"));
  const std::string cfg =
      R"({"source":"FromClaim","opaque":{"driver":"dra.cpu","parameters":{"apiVersion":"v1alpha1","cpuConfig":{"cpuset":"5,13"}}}})";
  EXPECT_EQ(PrepareOne(Add("set", {{"r", "cpudevnuma001", "2"}}, cfg)).error, "");
  const std::string offline_cfg =
      R"({"source":"FromClaim","opaque":{"driver":"dra.cpu","parameters":{"apiVersion":"v1alpha1","cpuConfig":{"cpuset":"3"}}}})";
  EXPECT_THAT(PrepareOne(Add("off", {{"r", "cpudevnuma000", "1"}}, offline_cfg)).error,
              HasSubstr("cpuConfig.cpuset CPUs 3 are offline"));
  EXPECT_EQ(PrepareOne(Add("before", {{"r", "cpudevnuma001", "2"}}, before_cfg)).error,
            "");  // idempotent
  EXPECT_EQ(Held("before"), before);
  {
    std::lock_guard lock(mu_);
    online_error_ = InternalError("sys/devices/system/cpu/online: garbage");
  }
  EXPECT_THAT(PrepareOne(Add("err", {{"r", "cpudevnuma001", "1"}})).error,
              HasSubstr("reading the online CPUs: sys/devices/system/cpu/online: garbage"));
  EXPECT_TRUE(Held("err").Empty());
}

// A hotplug that leaves the online shared pool at the floor: the next claim that fits its device
// is refused, since offline CPUs (still allocatable since start-up) do not count as shared.
TEST_F(PreparerTest, AHotplugThatLeavesTheOnlinePoolBelowTheFloorIsRefused) {
  {
    std::lock_guard lock(mu_);
    online_ = topology_.online - CpuSet::ParseList("0-3,8-10", "test").value();
  }
  ASSERT_EQ(PrepareOne(Add("node1", {{"r", "cpudevnuma001", "8"}})).error, "");
  // Only CPU 11 is shared now; granting it would leave none.
  EXPECT_THAT(PrepareOne(Add("last", {{"r", "cpudevnuma000", "1"}})).error,
              HasSubstr("granting CPUs 11 would leave 0 CPUs in the shared pool, below "
                        "minSharedCPUs 1"));
  EXPECT_TRUE(Held("last").Empty());
}

TEST_F(PreparerTest, AnOfflineIndividualDeviceIsRefused) {
  Build(CpuDeviceMode::kIndividual);
  {
    std::lock_guard lock(mu_);
    online_ = topology_.online - CpuSet{9};
  }
  EXPECT_THAT(PrepareOne(Add("u1", {{"r", "cpudev000", ""}, {"r", "cpudev001", ""}})).error,
              HasSubstr("CPU 9 is offline"));
  EXPECT_TRUE(Held("u1").Empty());
  EXPECT_EQ(PrepareOne(Add("u2", {{"r", "cpudev000", ""}})).error, "");
}

}  // namespace
}  // namespace dracpu::dra
