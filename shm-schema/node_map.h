// NodeMap: the layout model behind `dracpu-shm map` and gatherinfo's map. It nests the node's
// CPUs as boxes, socket -> NUMA node -> L3 group -> core -> thread, and gives every CPU its
// owner: a claim (with the pods/containers that use it), the shared pool, reserved, isolated,
// offline, or nothing. The text and SVG renderers (map_text.h, map_svg.h) only draw it.
//
// Where the structure comes from: the CpuTopology that topology discovery reads from a sysfs root
// (the same discovery the dra-agent runs), because the segment records only CPU sets (online,
// reserved, allocatable) and counts, not which CPU sits in which core, cache or node. Ownership
// comes only from the segment snapshot. When the two disagree (the tool read another sysfs root
// than the dra-agent, or a CPU changed state since), BuildNodeMap says so in `notes` and still
// draws every CPU it knows of: CPUs online in the segment but absent from the topology, and
// offline CPUs, are listed in `outside` with their owner.
//
// Nesting rules (real machines break every naive one; ../shared/sysfs-corpus):
//  * A box is the intersection of its level's group with its parent box: a NUMA node that spans
//    two sockets shows in both (its title says "part"), an L3 shared by two NUMA nodes (Intel
//    SNC) shows in each of them. CPUs in no NUMA node / no L3 get a "no NUMA node" / "no L3" box,
//    unless no CPU of the node has one (then the level is skipped everywhere).
//  * A level whose groups all hold a single core (L3 per core on POWER7) is skipped and named in
//    the parent's title ("L3 per core").
//  * A box with exactly one child covering all of its CPUs merges with it: one box titled
//    "socket 0 · NUMA node 0 · L3 0" instead of three nested ones.
//  * A core belongs to the innermost box holding its lowest CPU; cores are the SMT sibling sets
//    of the topology, sorted by id (their lowest CPU).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/cpu_set.h"
#include "common/cpu_topology.h"
#include "shm-schema/dump.h"
#include "shm-schema/segment.h"

namespace dracpu::shm {

// What a CPU is used for, in the map's priority order: a CPU in a claim is drawn as that claim
// even when it is also reserved or offline; a CPU in two claims, or in a claim and the shared
// pool, is a conflict (dracpu-shm verify reports the same as a violation).
enum class CpuUse {
  kClaim = 0,
  kConflict = 1,
  kReserved = 2,    // reservedCPUs (with strictCPUReservation off they also run shared containers)
  kShared = 3,      // the shared pool the nri-agent published (or the one the claims imply)
  kIsolated = 4,    // kernel isolcpus, in no claim, not reserved and not in the shared pool
  kUnassigned = 5,  // online, in no claim and not in the shared pool (e.g. not allocatable)
  kOffline = 6,
  kUnknown = 7,  // no segment: ownership unknown
};

// One row of the legend. Claims come first, in glyph order, then the other uses present.
struct MapOwner {
  CpuUse use = CpuUse::kUnknown;
  char glyph = '?';
  int color = 0;       // claims: index into the renderer's claim palette (glyph order); else 0
  std::string label;   // "claim demo/numa0-claim", "shared pool", "reserved", ...
  std::string detail;  // claims: "prepared · pod demo/pod-a/app-a"; others: what it means here
  CpuSet cpus;         // the CPUs drawn with this owner; a claim's are all its CPUs (conflicts too)
};

struct MapThread {
  int cpu = -1;
  int owner = -1;  // index into NodeMap::owners
};

struct MapCore {
  int id = -1;  // the core's lowest CPU
  CoreType type = CoreType::kStandard;
  std::vector<MapThread> threads;  // ascending CPU id
};

struct MapBox {
  std::vector<std::string> title;  // merged level names: {"socket 0", "NUMA node 0", "L3 0"}
  CpuSet cpus;
  int core_count = 0;             // cores whose lowest CPU is in this box (all levels below)
  std::vector<MapBox> children;   // empty for a leaf box
  std::vector<MapCore> cores;     // leaf boxes only
  std::map<int, int> owner_cpus;  // owner index -> CPUs of this box drawn with it
};

struct NodeMap {
  // Header facts.
  std::string node_name;
  bool have_segment = false;
  uint64_t generation = 0;
  std::string agents;  // "dra-agent live · nri-agent gone (heartbeat 41 s ago)"
  int online_cpus = 0;
  int max_threads_per_core = 1;

  std::vector<MapBox> sockets;
  std::vector<MapOwner> owners;
  // CPUs drawn outside the boxes: offline CPUs that are present, CPUs a claim holds that are not
  // online, CPUs online in the segment but absent from the topology. Ascending.
  std::vector<MapThread> outside;
  // Disagreements and hints, one sentence each (not errors: the map is still drawn).
  std::vector<std::string> notes;
};

// Stable claim glyphs across redraws (`map --watch`): a claim keeps its glyph while it exists;
// new claims take the lowest free glyph. 36 glyphs (A-Z, 0-9); claims beyond share '*'.
class ClaimGlyphs {
 public:
  static constexpr char kOverflow = '*';
  // Assigns glyphs to `uids` (the current claims, in the order new ones should be served) and
  // forgets claims that are gone. Returns the glyph of each uid, in the same order.
  std::vector<char> Assign(const std::vector<std::string>& uids);

 private:
  std::map<std::string, char> by_uid_;
};

// Builds the model. `snapshot` and `context` may be null (no segment: every online CPU is
// kUnknown, offline and isolated CPUs still shown). `glyphs` may be null (fresh assignment,
// claims in order of preparation).
NodeMap BuildNodeMap(const CpuTopology& topology, const Snapshot* snapshot,
                     const DumpContext* context, ClaimGlyphs* glyphs = nullptr);

}  // namespace dracpu::shm
