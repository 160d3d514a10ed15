// Test helpers for the node map (included only by tests; never linked into a daemon): a snapshot
// of a node as the agents would leave it, built in memory over any topology, and a reader of
// the text map's glyph cells.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/cpu_topology.h"
#include "common/file_system.h"
#include "common/topology_discovery.h"
#include "shm-schema/node_map.h"
#include "shm-schema/records.h"
#include "shm-schema/segment.h"
#include "tests/testing/sysfs_fixture.h"

namespace dracpu::shm::testing {

struct TestClaimSpec {
  std::string uid;
  std::string name;
  CpuSet cpus;
  std::string pod;  // "" : no container yet
  ClaimState state = ClaimState::kPrepared;
};

// The snapshot of a node with `topo`'s online CPUs, `reserved` (strict reservation), `claims`
// and the shared pool the agents would publish (allocatable minus the claims). Claims are
// prepared in the order given.
inline Snapshot NodeSnapshot(const CpuTopology& topo, const CpuSet& reserved,
                             const std::vector<TestClaimSpec>& claims) {
  Snapshot s;
  s.generation = 42;
  s.identity.node_name = "node-a";
  s.identity.claims_capacity = 64;
  s.identity.containers_capacity = 64;
  s.topology.online = topo.online;
  s.topology.reserved = reserved;
  s.topology.allocatable = topo.online - reserved;
  s.topology.updated_time_ns = 1;
  s.config.flags = kConfigStrictCpuReservation;
  s.config.updated_time_ns = 1;
  uint64_t t = 100;
  for (const auto& c : claims) {
    ClaimSpec spec;
    spec.uid = c.uid;
    spec.namespace_ = "team";
    spec.name = c.name;
    spec.state = c.state;
    spec.prepared_time_ns = t++;
    spec.request_names = {"cpus"};
    spec.cpus = c.cpus;
    Result<ClaimEntry> e = EncodeClaim(spec);
    if (e.ok()) s.claims.push_back(*e);
    if (c.pod.empty()) continue;
    ContainerSpec k;
    k.id = "ctr-" + c.uid;
    k.pod_namespace = "team";
    k.pod_name = c.pod;
    k.name = "main";
    k.kind = ContainerKind::kExclusive;
    k.claim_uids = {c.uid};
    k.cpus = c.cpus;
    Result<ContainerEntry> ke = EncodeContainer(k);
    if (ke.ok()) s.containers.push_back(*ke);
  }
  s.shared_pool.cpus = ComputeSharedPool(s.topology, s.config, s.claims);
  s.shared_pool.updated_time_ns = 1;
  return s;
}

// Every glyph cell of a threads-view text map (plain, no colour): for each row made only of
// core ids, the row under it holds one glyph per thread. Returns glyph -> count.
inline std::map<char, int> ThreadGlyphCounts(const std::string& text) {
  std::vector<std::string> rows;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    std::string line = text.substr(pos, end - pos);
    // Drop the box-drawing characters (3-byte UTF-8 sequences starting with 0xE2, or '|').
    std::string plain;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '|') {
        plain += ' ';
      } else if (static_cast<unsigned char>(line[i]) == 0xE2 && i + 2 < line.size()) {
        plain += ' ';
        i += 2;
      } else {
        plain += line[i];
      }
    }
    rows.push_back(plain);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  std::map<char, int> counts;
  for (size_t r = 0; r + 1 < rows.size(); ++r) {
    const std::string& ids = rows[r];
    bool digits = false;
    bool only = true;
    for (char c : ids) {
      if (c >= '0' && c <= '9') {
        digits = true;
      } else if (c != ' ') {
        only = false;
      }
    }
    if (!digits || !only) continue;
    for (char c : rows[r + 1]) {
      if (c != ' ') ++counts[c];
    }
    ++r;
  }
  return counts;
}

// The topology of corpus machine `machine` (extracted into a temp dir that is gone on return).
inline Result<CpuTopology> CorpusTopology(const std::string& shared, const std::string& machine) {
  Result<std::unique_ptr<dracpu::testing::TempDir>> dir =
      dracpu::testing::ExtractCorpusMachine(shared, machine);
  if (!dir.ok()) return dir.status();
  Result<std::unique_ptr<FileSystem>> fs = NewPosixFileSystem((*dir)->path());
  if (!fs.ok()) return fs.status();
  return DiscoverTopology(**fs);
}

// The widest line of `text`, in columns (UTF-8 code points).
inline int MaxColumns(const std::string& text) {
  int widest = 0;
  int cols = 0;
  for (char c : text) {
    if (c == '\n') {
      widest = std::max(widest, cols);
      cols = 0;
    } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++cols;
    }
  }
  return std::max(widest, cols);
}

inline int Lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace dracpu::shm::testing
