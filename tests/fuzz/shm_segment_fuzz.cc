// Fuzz target shm_segment: a segment file that is corrupt in any way, opened the way
// dracpu-shm and the agents open it. Selector bit 0: the input is the whole file; otherwise it
// is a list of edits (2-byte offset, 1-byte length, bytes) applied to a valid segment with
// claims and containers, and with bit 1 the header's identity checksum and every record's
// checksum are recomputed afterwards so the edits reach the checks behind them. Then:
//  * as a reader (dracpu-shm): Open, a snapshot, VerifySnapshot and both dumps; the JSON dump
//    parses as JSON and the text dump is printable, one line per record;
//  * as the nri-agent (a writer; the mutex is re-initialized first, as a corrupt mutex word can
//    name a live thread of another process and block any locker, which is not what we fuzz):
//    Open validates and repairs, and what it accepts passes its own checks again.
// Contracts: every failure is a Status with a known code, never a crash, a hang or a read
// outside the file.
#include <pthread.h>

#include <cstring>
#include <fstream>
#include <string>

#include "common/log_escape.h"
#include "common/untrusted_json.h"
#include "shm-schema/checksum.h"
#include "shm-schema/dump.h"
#include "shm-schema/segment.h"
#include "shm-schema/verify.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::fuzz {
namespace {

constexpr char kBootId[] = "fuzz-boot";

shm::OpenOptions Options(shm::Role role, std::string boot_id = kBootId) {
  shm::OpenOptions o;
  o.role = role;
  o.create_if_missing = role == shm::Role::kDraAgent;
  o.node_name = "fuzz-node";
  o.version = "fuzz";
  o.claims_capacity = 4;
  o.containers_capacity = 4;
  o.boot_id = [boot_id] { return Result<std::string>(boot_id); };
  return o;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

class SegmentFixture {
 public:
  static SegmentFixture& Get() {
    static SegmentFixture fixture;  // destroyed at exit, which removes its temp dir
    return fixture;
  }
  const std::string& valid() const { return valid_; }
  std::string path() const { return dir_.File("state.shm"); }

 private:
  SegmentFixture() : dir_("dracpu-fuzz") {
    const std::string seed = dir_.File("seed.shm");
    {
      auto dra = shm::Segment::Open(seed, Options(shm::Role::kDraAgent));
      if (!dra.ok()) Broken("create the seed segment: " + dra.status().ToString(), {});
      auto txn = (*dra)->Begin();
      if (!txn.ok()) Broken("lock the seed segment: " + txn.status().ToString(), {});
      shm::TopologySummary topology{};
      topology.online = CpuSet::Range(0, 7);
      topology.allocatable = CpuSet::Range(1, 7);
      topology.reserved = CpuSet::Range(0, 0);
      topology.numa_nodes = 1;
      topology.sockets = 1;
      txn->SetTopology(topology).IgnoreError();
      shm::ConfigSummary config{};
      config.flags = shm::kConfigStrictCpuReservation;
      config.min_shared_cpus = 1;
      txn->SetConfig(config).IgnoreError();
      for (int i = 0; i < 2; ++i) {
        shm::ClaimSpec c;
        c.uid = "00000000-0000-0000-0000-00000000000" + std::to_string(i);
        c.namespace_ = "ns";
        c.name = "claim-" + std::to_string(i);
        c.state = i == 0 ? shm::ClaimState::kPrepared : shm::ClaimState::kReserved;
        c.request_names = {"cpus"};
        c.cpus = CpuSet::Range(2 + 2 * i, 3 + 2 * i);
        c.mems = {0};
        txn->UpsertClaim(c).IgnoreError();
      }
      txn->Commit();
    }
    {
      auto nri = shm::Segment::Open(seed, Options(shm::Role::kNriAgent));
      if (!nri.ok()) Broken("attach the seed segment: " + nri.status().ToString(), {});
      auto txn = (*nri)->Begin();
      if (!txn.ok()) Broken("lock the seed segment: " + txn.status().ToString(), {});
      shm::ContainerSpec c;
      c.id = "container-0";
      c.pod_uid = "pod-0";
      c.pod_namespace = "ns";
      c.pod_name = "pod";
      c.name = "app";
      c.kind = shm::ContainerKind::kExclusive;
      c.claim_uids = {"00000000-0000-0000-0000-000000000000"};
      c.cpus = CpuSet::Range(2, 3);
      txn->UpsertContainer(c).IgnoreError();
      txn->Commit();
    }
    valid_ = ReadAll(seed);
  }

  testing::TempDir dir_;
  std::string valid_;
};

// Applies the edit list to the valid segment.
std::string Edited(std::string_view edits, bool fix_checksums) {
  std::string file = SegmentFixture::Get().valid();
  while (edits.size() >= 3) {
    const size_t offset = (static_cast<uint8_t>(edits[0]) << 8 | static_cast<uint8_t>(edits[1])) *
                          file.size() / 65536;
    const size_t len = std::min<size_t>(static_cast<uint8_t>(edits[2]), edits.size() - 3);
    for (size_t i = 0; i < len && offset + i < file.size(); ++i) file[offset + i] = edits[3 + i];
    edits.remove_prefix(3 + len);
  }
  if (fix_checksums && file.size() >= sizeof(shm::SegmentHeader)) {
    auto* h = reinterpret_cast<shm::SegmentHeader*>(file.data());
    h->identity_checksum = shm::HeaderIdentityChecksum(*h);
    auto fix_table = [&](const shm::TableDescriptor& t, auto* sample) {
      using Entry = std::remove_pointer_t<decltype(sample)>;
      if (t.entry_size != sizeof(Entry) || t.capacity > 64) return;
      for (uint64_t i = 0; i < t.capacity; ++i) {
        const uint64_t at = t.entries_offset + i * sizeof(Entry);
        if (at % 8 != 0 || at + sizeof(Entry) > file.size()) return;
        auto* e = reinterpret_cast<Entry*>(file.data() + at);
        if (e->checksum != 0) e->checksum = shm::RecordChecksum(*e);
      }
    };
    fix_table(h->claims, static_cast<shm::ClaimEntry*>(nullptr));
    fix_table(h->containers, static_cast<shm::ContainerEntry*>(nullptr));
  }
  return file;
}

void CheckFailure(const Status& s, std::string_view input) {
  const StatusCode c = s.code();
  Check(c == StatusCode::kDataLoss || c == StatusCode::kFailedPrecondition ||
            c == StatusCode::kInvalidArgument || c == StatusCode::kUnavailable ||
            c == StatusCode::kNotFound || c == StatusCode::kDeadlineExceeded,
        "a failure has an unexpected code: " + s.ToString(), input);
}

void AsReader(const std::string& path, std::string_view input) {
  auto seg = shm::Segment::Open(path, Options(shm::Role::kReader));
  if (!seg.ok()) return CheckFailure(seg.status(), input);
  shm::SnapshotOptions options;
  options.timeout = std::chrono::milliseconds(0);
  options.allow_inconsistent = true;
  auto snapshot = (*seg)->ReadSnapshot(options);
  if (!snapshot.ok()) return CheckFailure(snapshot.status(), input);
  shm::VerifySnapshot(*snapshot);
  shm::DumpContext context;
  context.path = path;
  const std::string text = shm::FormatText(*snapshot, context);
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line = std::string_view(text).substr(start, end - start);
    if (!IsLogSafe(line)) {
      Broken("the text dump prints unescaped bytes from the segment: " + LogEscape(line), input);
    }
    start = end + 1;
  }
  rapidjson::Document doc;
  Check(ParseUntrustedJson(shm::FormatJson(*snapshot, context), doc).ok(),
        "the JSON dump is not JSON", input);
  for (const shm::ClaimEntry& c : snapshot->claims) {
    auto found = (*seg)->FindClaim(c.Uid(), std::chrono::milliseconds(0));
    if (!found.ok()) CheckFailure(found.status(), input);
  }
}

void AsWriter(const std::string& path, std::string& file, std::string_view input) {
  std::string boot_id = kBootId;
  if (file.size() >= sizeof(shm::SegmentHeader)) {
    auto* h = reinterpret_cast<shm::SegmentHeader*>(file.data());
    boot_id.assign(h->boot_id, strnlen(h->boot_id, sizeof h->boot_id));
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&h->lock.mutex, &attr);
    pthread_mutexattr_destroy(&attr);
    WriteAll(path, file);
  }
  auto seg = shm::Segment::Open(path, Options(shm::Role::kNriAgent, boot_id));
  if (!seg.ok()) return CheckFailure(seg.status(), input);
  auto snapshot = (*seg)->ReadSnapshot();
  Check(snapshot.ok() && snapshot->consistent, "an attached segment gives no consistent snapshot",
        input);
  auto txn = (*seg)->Begin();
  if (txn.ok()) txn->Commit();
}

}  // namespace
}  // namespace dracpu::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dracpu;
  const std::string_view input = fuzz::AsText(data, size);
  const fuzz::Selected s = fuzz::Select(input);
  std::string file = (s.selector & 1) ? std::string(s.rest) : fuzz::Edited(s.rest, s.selector & 2);
  const std::string path = fuzz::SegmentFixture::Get().path();
  fuzz::WriteAll(path, file);
  fuzz::AsReader(path, input);
  fuzz::AsWriter(path, file, input);
  return 0;
}
