#include "shm-schema/node_map.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <utility>

#include "shm-schema/records.h"

namespace dracpu::shm {
namespace {

constexpr std::string_view kClaimGlyphs = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

bool Published(uint64_t time_ns, uint64_t checksum) { return time_ns != 0 || checksum != 0; }

// The three box levels under the node, outermost first.
enum Level { kSocketLevel = 0, kNumaLevel = 1, kL3Level = 2, kLevels = 3 };

int KeyOf(const CpuInfo& cpu, int level) {
  switch (level) {
    case kSocketLevel:
      return cpu.package;
    case kNumaLevel:
      return cpu.numa_node;
    default:
      return cpu.l3;
  }
}

std::string LevelName(int level, int key) {
  static constexpr const char* kNames[] = {"socket", "NUMA node", "L3"};
  static constexpr const char* kNone[] = {"no socket", "no NUMA node", "no L3"};
  if (key < 0) return kNone[level];
  return std::string(kNames[level]) + " " + std::to_string(key);
}

const CpuSet* GroupCpus(const CpuTopology& topo, int level, int key) {
  if (level == kNumaLevel) {
    for (const auto& n : topo.numa_nodes) {
      if (n.id == key) return &n.cpus;
    }
    return nullptr;
  }
  const std::vector<CpuGroup>& groups = level == kSocketLevel ? topo.packages : topo.l3_caches;
  for (const auto& g : groups) {
    if (g.id == key) return &g.cpus;
  }
  return nullptr;
}

// Per-CPU owners, and the legend they make.
class OwnerTable {
 public:
  OwnerTable(const CpuTopology& topo, const Snapshot* snap, ClaimGlyphs& glyphs, NodeMap& map)
      : topo_(topo), snap_(snap), map_(map) {
    if (snap_ != nullptr) {
      AddClaims(glyphs);
      if (Published(snap_->topology.updated_time_ns, snap_->topology.checksum)) {
        reserved_ = snap_->topology.reserved;
        strict_ = (snap_->config.flags & kConfigStrictCpuReservation) != 0;
      }
      if (Published(snap_->shared_pool.updated_time_ns, snap_->shared_pool.checksum)) {
        pool_ = snap_->shared_pool.cpus;
      } else if (Published(snap_->topology.updated_time_ns, snap_->topology.checksum)) {
        pool_ = ComputeSharedPool(snap_->topology, snap_->config, snap_->claims);
        map_.notes.emplace_back(
            "the nri-agent has not published a shared pool yet: the map shows the pool the "
            "claims imply");
      }
    }
  }

  // The owner index of `cpu` (adding its legend row on first use).
  int OwnerOf(int cpu) {
    int claim = -1;
    int holders = 0;
    for (size_t i = 0; i < claim_cpus_.size(); ++i) {
      if (claim_cpus_[i].Contains(cpu)) {
        claim = static_cast<int>(i);
        ++holders;
      }
    }
    int owner;
    if (holders > 1 || (holders == 1 && pool_.Contains(cpu))) {
      owner = Other(CpuUse::kConflict);
    } else if (holders == 1) {
      owner = claim;
    } else if (!topo_.online.Contains(cpu)) {
      owner = Other(CpuUse::kOffline);
    } else if (snap_ == nullptr) {
      owner = Other(CpuUse::kUnknown);
    } else if (reserved_.Contains(cpu)) {
      owner = Other(CpuUse::kReserved);
    } else if (pool_.Contains(cpu)) {
      owner = Other(CpuUse::kShared);
    } else if (topo_.isolated.Contains(cpu)) {
      owner = Other(CpuUse::kIsolated);
    } else {
      owner = Other(CpuUse::kUnassigned);
    }
    map_.owners[static_cast<size_t>(owner)].cpus.Set(cpu);
    return owner;
  }

  // Every CPU a claim holds.
  CpuSet Claimed() const {
    CpuSet all;
    for (const auto& c : claim_cpus_) all |= c;
    return all;
  }

  // Drops legend rows of claims that hold no CPU and puts the other rows in CpuUse order,
  // renumbering every thread's owner.
  void Finish() {
    std::vector<int> order;
    for (size_t i = 0; i < map_.owners.size(); ++i) {
      if (map_.owners[i].use == CpuUse::kClaim || !map_.owners[i].cpus.Empty()) {
        order.push_back(static_cast<int>(i));
      }
    }
    std::stable_sort(order.begin(), order.end(), [this](int a, int b) {
      return static_cast<int>(map_.owners[static_cast<size_t>(a)].use) <
             static_cast<int>(map_.owners[static_cast<size_t>(b)].use);
    });
    std::vector<int> renumber(map_.owners.size(), -1);
    std::vector<MapOwner> owners;
    for (int old : order) {
      renumber[static_cast<size_t>(old)] = static_cast<int>(owners.size());
      owners.push_back(std::move(map_.owners[static_cast<size_t>(old)]));
    }
    map_.owners = std::move(owners);
    auto fix = [&renumber](MapThread& t) { t.owner = renumber[static_cast<size_t>(t.owner)]; };
    for (auto& t : map_.outside) fix(t);
    std::vector<MapBox*> stack;
    for (auto& s : map_.sockets) stack.push_back(&s);
    while (!stack.empty()) {
      MapBox* b = stack.back();
      stack.pop_back();
      for (auto& c : b->cores) {
        for (auto& t : c.threads) fix(t);
      }
      std::map<int, int> counts;
      for (const auto& [o, n] : b->owner_cpus) counts[renumber[static_cast<size_t>(o)]] += n;
      b->owner_cpus = std::move(counts);
      for (auto& child : b->children) stack.push_back(&child);
    }
  }

 private:
  void AddClaims(ClaimGlyphs& glyphs) {
    std::vector<const ClaimEntry*> claims;
    for (const auto& c : snap_->claims) claims.push_back(&c);
    std::sort(claims.begin(), claims.end(), [](const ClaimEntry* a, const ClaimEntry* b) {
      if (a->prepared_time_ns != b->prepared_time_ns) {
        return a->prepared_time_ns < b->prepared_time_ns;
      }
      return a->Uid() < b->Uid();
    });
    std::vector<std::string> uids;
    uids.reserve(claims.size());
    for (const ClaimEntry* c : claims) uids.emplace_back(c->Uid());
    const std::vector<char> assigned = glyphs.Assign(uids);
    // Legend order: glyph order, overflow claims last (by preparation).
    std::vector<size_t> order(claims.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto rank = [&assigned](size_t i) {
      const size_t pos = kClaimGlyphs.find(assigned[i]);
      return pos == std::string_view::npos ? kClaimGlyphs.size() : pos;
    };
    std::stable_sort(order.begin(), order.end(),
                     [&rank](size_t a, size_t b) { return rank(a) < rank(b); });
    for (size_t i : order) {
      const ClaimEntry& c = *claims[i];
      MapOwner o;
      o.use = CpuUse::kClaim;
      o.glyph = assigned[i];
      o.color = static_cast<int>(rank(i));
      o.label = "claim " + std::string(c.Namespace()) + "/" + std::string(c.Name());
      o.detail = ClaimDetail(c);
      o.cpus = c.cpus;  // all of them, also those drawn as conflicts
      map_.owners.push_back(std::move(o));
      claim_cpus_.push_back(c.cpus);
    }
  }

  std::string ClaimDetail(const ClaimEntry& c) const {
    std::string state = c.State() == ClaimState::kReserved ? "being prepared"
                                                           : std::string(ClaimStateName(c.State()));
    std::vector<std::string> users;
    for (const auto& k : snap_->containers) {
      for (uint32_t i = 0; i < k.claim_count && i < kMaxClaimsPerContainer; ++i) {
        if (k.ClaimUid(static_cast<int>(i)) == c.Uid()) {
          users.push_back(std::string(k.PodNamespace()) + "/" + std::string(k.PodName()) + "/" +
                          std::string(k.Name()));
          break;
        }
      }
    }
    std::string who;
    if (users.empty()) {
      who = "no container yet";
    } else {
      who = "pod " + users[0];
      for (size_t i = 1; i < users.size() && i < 3; ++i) who += ", " + users[i];
      if (users.size() > 3) who += " +" + std::to_string(users.size() - 3) + " more";
    }
    return state + " · " + who;
  }

  int Other(CpuUse use) {
    const int slot = static_cast<int>(use);
    if (static_cast<size_t>(slot) >= others_.size()) others_.resize(slot + 1, -1);
    if (others_[static_cast<size_t>(slot)] >= 0) return others_[static_cast<size_t>(slot)];
    MapOwner o;
    o.use = use;
    switch (use) {
      case CpuUse::kConflict:
        o.glyph = '!';
        o.label = "conflict";
        o.detail = "in two claims, or in a claim and the shared pool: run dracpu-shm verify";
        break;
      case CpuUse::kReserved:
        o.glyph = '=';
        o.label = "reserved";
        o.detail = strict_ ? "reservedCPUs: never claimed, not in the shared pool (strict)"
                           : "reservedCPUs: never claimed; shared containers run on them";
        break;
      case CpuUse::kShared:
        o.glyph = '.';
        o.label = "shared pool";
        o.detail = SharedDetail();
        break;
      case CpuUse::kIsolated:
        o.glyph = '~';
        o.label = "isolated";
        o.detail = "kernel isolcpus; in no claim and not in the shared pool";
        break;
      case CpuUse::kUnassigned:
        o.glyph = '_';
        o.label = "unassigned";
        o.detail = "online, in no claim and not in the shared pool";
        break;
      case CpuUse::kOffline:
        o.glyph = '-';
        o.label = "offline";
        o.detail = "not online";
        break;
      case CpuUse::kUnknown:
      case CpuUse::kClaim:
        o.glyph = '?';
        o.label = "unknown";
        o.detail = "no segment: owner unknown";
        break;
    }
    map_.owners.push_back(std::move(o));
    others_[static_cast<size_t>(slot)] = static_cast<int>(map_.owners.size() - 1);
    return others_[static_cast<size_t>(slot)];
  }

  std::string SharedDetail() const {
    int shared = 0;
    for (const auto& k : snap_->containers) {
      if (k.Kind() == ContainerKind::kShared) ++shared;
    }
    return std::to_string(shared) + (shared == 1 ? " shared container" : " shared containers");
  }

  const CpuTopology& topo_;
  const Snapshot* snap_;
  NodeMap& map_;
  std::vector<CpuSet> claim_cpus_;  // parallel to the claim rows at the start of map_.owners
  CpuSet reserved_;
  CpuSet pool_;
  bool strict_ = false;
  std::vector<int> others_;  // CpuUse -> owner index, -1 until used
};

class BoxBuilder {
 public:
  BoxBuilder(const CpuTopology& topo, OwnerTable& owners) : topo_(topo), owners_(owners) {
    for (int level = 0; level < kLevels; ++level) {
      single_core_[level] = SingleCoreGroups(level);
      skip_[level] = single_core_[level] || (level != kSocketLevel && !AnyCpuHas(level));
    }
  }

  // Whether `level` is left out because each of its groups holds one core.
  bool single_core(int level) const { return single_core_[level]; }

  std::vector<MapBox> Sockets() {
    MapBox root;
    Fill(root, topo_.online, kSocketLevel);
    // Several sockets: the root is only their parent. One socket: it is the root's first title.
    if (root.title.empty() && !root.children.empty()) return std::move(root.children);
    std::vector<MapBox> one;
    one.push_back(std::move(root));
    return one;
  }

 private:
  // True when every group of `level` holds at most one core (and there is more than one core):
  // such a level adds a box around every core and says nothing.
  bool SingleCoreGroups(int level) const {
    if (level == kSocketLevel || topo_.cores.size() < 2) return false;
    std::map<int, int> cores_per_group;
    for (const auto& core : topo_.cores) {
      const CpuInfo* info = topo_.FindCpu(core.id);
      if (info == nullptr) continue;
      const int key = KeyOf(*info, level);
      if (key < 0) return false;
      if (++cores_per_group[key] > 1) return false;
    }
    return !cores_per_group.empty();
  }

  // Whether any CPU is in a group of `level` (no NUMA node or no L3 anywhere: skip the level).
  bool AnyCpuHas(int level) const {
    for (const auto& cpu : topo_.cpus) {
      if (KeyOf(cpu, level) >= 0) return true;
    }
    return false;
  }

  // Splits `box` (holding `cpus`) by `level` and below.
  void Fill(MapBox& box, const CpuSet& cpus, int level) {
    box.cpus = cpus;
    while (level < kLevels) {
      if (skip_[level]) {
        ++level;
        continue;
      }
      std::map<int, CpuSet> groups;
      for (int cpu : cpus) {
        const CpuInfo* info = topo_.FindCpu(cpu);
        groups[info != nullptr ? KeyOf(*info, level) : -1].Set(cpu);
      }
      if (groups.size() == 1) {
        box.title.push_back(GroupTitle(level, groups.begin()->first, cpus));
        ++level;
        continue;
      }
      // Known groups in id order, then the CPUs in none.
      std::vector<std::pair<int, CpuSet>> ordered(groups.begin(), groups.end());
      std::stable_partition(ordered.begin(), ordered.end(),
                            [](const auto& g) { return g.first >= 0; });
      for (auto& [key, set] : ordered) {
        MapBox child;
        child.title.push_back(GroupTitle(level, key, set));
        Fill(child, set, level + 1);
        box.core_count += child.core_count;
        for (const auto& [o, n] : child.owner_cpus) box.owner_cpus[o] += n;
        box.children.push_back(std::move(child));
      }
      return;
    }
    for (const auto& core : topo_.cores) {
      if (!cpus.Contains(core.id)) continue;
      MapCore mc;
      mc.id = core.id;
      mc.type = core.type;
      for (int cpu : core.cpus) {
        const int owner = owners_.OwnerOf(cpu);
        mc.threads.push_back({cpu, owner});
        ++box.owner_cpus[owner];
      }
      box.cores.push_back(std::move(mc));
      ++box.core_count;
    }
  }

  std::string GroupTitle(int level, int key, const CpuSet& here) const {
    std::string title = LevelName(level, key);
    const CpuSet* all = key >= 0 ? GroupCpus(topo_, level, key) : nullptr;
    if (all != nullptr && !all->IsSubsetOf(here)) title += " (part)";
    return title;
  }

  const CpuTopology& topo_;
  OwnerTable& owners_;
  bool skip_[kLevels] = {};
  bool single_core_[kLevels] = {};
};

std::string AgentsLine(const Snapshot& snap, const DumpContext& ctx) {
  std::string out;
  for (int r = 0; r < kAgentRoles; ++r) {
    const AgentLiveness& l = ctx.agents[r];
    if (!out.empty()) out += " · ";
    out += std::string(RoleName(static_cast<Role>(r))) + " ";
    if (!l.attached && snap.agents[r].pid == 0) {
      out += "never attached";
      continue;
    }
    out += l.live ? "live" : "gone";
    // A live agent beats every second; say its age only when it is late.
    if (l.heartbeat_age_s >= 10) {
      char buf[48];
      std::snprintf(buf, sizeof buf, " (heartbeat %.0f s ago)", l.heartbeat_age_s);
      out += buf;
    }
  }
  return out;
}

}  // namespace

std::vector<char> ClaimGlyphs::Assign(const std::vector<std::string>& uids) {
  std::map<std::string, char> next;
  for (const auto& uid : uids) {
    auto it = by_uid_.find(uid);
    if (it != by_uid_.end() && it->second != kOverflow) next[uid] = it->second;
  }
  std::string used;
  for (const auto& [uid, g] : next) used += g;
  std::vector<char> out;
  for (const auto& uid : uids) {
    auto it = next.find(uid);
    if (it == next.end()) {
      char g = kOverflow;
      for (char c : kClaimGlyphs) {
        if (used.find(c) == std::string::npos) {
          g = c;
          used += c;
          break;
        }
      }
      it = next.emplace(uid, g).first;
    }
    out.push_back(it->second);
  }
  by_uid_ = std::move(next);
  return out;
}

NodeMap BuildNodeMap(const CpuTopology& topology, const Snapshot* snapshot,
                     const DumpContext* context, ClaimGlyphs* glyphs) {
  NodeMap map;
  map.online_cpus = topology.online.Count();
  map.max_threads_per_core = topology.MaxThreadsPerCore();
  ClaimGlyphs fresh;
  OwnerTable owners(topology, snapshot, glyphs != nullptr ? *glyphs : fresh, map);
  if (snapshot != nullptr) {
    map.have_segment = true;
    map.generation = snapshot->generation;
    map.node_name = snapshot->identity.node_name;
    if (context != nullptr) map.agents = AgentsLine(*snapshot, *context);
    if (!snapshot->consistent) {
      map.notes.emplace_back(
          "INCONSISTENT copy: a writer died mid-write and nobody has locked since; owners may "
          "be torn");
    }
    const TopologySummary& t = snapshot->topology;
    if (!Published(t.updated_time_ns, t.checksum)) {
      map.notes.emplace_back("the dra-agent has not published the node's CPUs in the segment yet");
    } else if (!(t.online == topology.online)) {
      map.notes.emplace_back("the segment's online CPUs (" + t.online.ToListString() +
                             ") differ from the sysfs topology's (" +
                             topology.online.ToListString() +
                             "): is --sysfs-root the one the dra-agent reads, or did CPUs go "
                             "on/offline since?");
    }
  } else {
    map.notes.emplace_back("no segment: CPU owners are unknown");
  }

  BoxBuilder boxes(topology, owners);
  map.sockets = boxes.Sockets();
  if (boxes.single_core(kL3Level)) {
    map.notes.emplace_back("every L3 cache serves a single core: the map draws no L3 boxes");
  }
  if (boxes.single_core(kNumaLevel)) {
    map.notes.emplace_back("every NUMA node holds a single core: the map draws no NUMA boxes");
  }

  // CPUs outside the boxes: present but offline, held by a claim while not online, or online in
  // the segment only.
  CpuSet outside = topology.present.Empty() ? topology.offline : topology.present;
  outside -= topology.online;
  outside |= owners.Claimed() - topology.online;
  if (snapshot != nullptr) outside |= snapshot->topology.online - topology.online;
  for (int cpu : outside) map.outside.push_back({cpu, owners.OwnerOf(cpu)});

  owners.Finish();
  int conflicts = 0;
  for (const auto& o : map.owners) {
    if (o.use == CpuUse::kConflict) conflicts = o.cpus.Count();
  }
  if (conflicts > 0) {
    map.notes.emplace_back(std::to_string(conflicts) +
                           " CPU(s) have two owners (marked !): run dracpu-shm verify");
  }
  return map;
}

}  // namespace dracpu::shm
