// layout.h: the whole format of the dracpu shared-memory segment, layout major 1.
//
// The segment is one file on tmpfs, `<dir>/state.v<MAJOR>.shm` (default /run/dracpu), mode 0600,
// made of plain fixed-size structs with no pointers:
//
//   [0, kHeaderBytes)          SegmentHeader (identity, robust mutex, seqlock generation,
//                              agent records, config, shared pool, topology)
//   claims index               uint32_t[index_slots]    (open addressing over claim uids)
//   claims entries             ClaimEntry[capacity]     (dense: [0, claim_count) are used)
//   containers index           uint32_t[index_slots]
//   containers entries         ContainerEntry[capacity] (dense: [0, container_count) are used)
//
// Offsets, capacities and entry sizes are written in the header at creation and checked on attach
// (ComputeTableLayout gives the only valid values). docs/shm-layout.md documents every field, its
// writer and its units.
//
// Rules (STYLE.md "The shared-memory format has one owner"): every offset and size is pinned by a
// static_assert below; a minor version only turns reserved bytes into fields whose all-zero value
// means "absent"; anything else bumps kLayoutMajor (and so the file name). Offsets and enum values
// are never reused: a removed field leaves "// N was used for ..." behind.
//
// Every struct is a multiple of 8 bytes and 8-byte aligned so that readers and writers copy it as
// 64-bit atomic words (see atomic_copy.h); the segment is little-endian (x86-64, arm64).
#pragma once

#include <pthread.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/cpu_set.h"

namespace dracpu::shm {

static_assert(std::endian::native == std::endian::little,
              "the segment format (and the futex on the generation's low word) is little-endian");

inline constexpr uint64_t kMagic = 0x4d48535550434152ULL;  // "RACPUSHM" as bytes, little-endian
inline constexpr uint32_t kLayoutMajor = 1;
inline constexpr uint32_t kLayoutMinor = 0;

inline constexpr uint32_t kHeaderBytes = 16384;
inline constexpr uint32_t kDefaultClaimsCapacity = 4096;
inline constexpr uint32_t kDefaultContainersCapacity = 8192;

// Field widths. Kubernetes limits: UIDs are 36 characters, namespaces and container names are
// DNS labels (63), object names DNS subdomains (253). Strings are NUL-terminated and NUL-padded.
inline constexpr size_t kUidBytes = 64;
inline constexpr size_t kNamespaceBytes = 64;
inline constexpr size_t kNameBytes = 256;
inline constexpr size_t kRequestNameBytes = 64;
inline constexpr size_t kContainerIdBytes = 128;
inline constexpr size_t kContainerNameBytes = 64;
inline constexpr size_t kVersionBytes = 64;
inline constexpr size_t kBootIdBytes = 48;
inline constexpr size_t kNodeNameBytes = 256;
inline constexpr int kMaxRequestsPerClaim = 8;
inline constexpr int kMaxClaimsPerContainer = 8;
inline constexpr int kMaxMemoryNodes = 1024;

// Agent roles; the value is the index into SegmentHeader::agents and the byte of the file that
// the role's F_OFD_SETLK lock covers.
enum class Role : uint32_t {
  kDraAgent = 0,
  kNriAgent = 1,
  kReader = 2,  // never stored; a read-only attach (dracpu-shm)
};
inline constexpr int kAgentRoles = 2;

enum class ClaimState : uint32_t {
  // 0 is never stored in a used entry.
  kReserved = 1,   // CPUs held; the CDI spec is not yet known to be written (Prepare in flight)
  kPrepared = 2,   // CDI spec written and Prepare acknowledged
  kReleasing = 3,  // Unprepare in flight: CDI being removed, CPUs still held
};

enum class ContainerKind : uint32_t {
  // 0 is never stored in a used entry.
  kExclusive = 1,  // pinned to the union of its claims' CPUs
  kShared = 2,     // runs in the shared pool
};

// ClaimEntry::flags bits.
inline constexpr uint32_t kClaimAlignMemory = 1u << 0;  // cpuset.mems = the claim's memory nodes

// A set of NUMA node ids, 0 .. kMaxMemoryNodes-1, as 64-bit words (bit n of word n/64).
struct NodeMask {
  uint64_t words[kMaxMemoryNodes / 64];

  bool Contains(int node) const {
    return node >= 0 && node < kMaxMemoryNodes && (words[node / 64] >> (node % 64) & 1) != 0;
  }
  void Set(int node) { words[node / 64] |= uint64_t{1} << (node % 64); }
};
static_assert(sizeof(NodeMask) == 128);

// One per agent role. Written by that agent (under the lock, except heartbeat_ns which it stores
// atomically on its own), read by everyone.
struct AgentRecord {
  uint32_t pid;            // 0: the role never attached. PID in the agent's own namespace
  uint32_t role;           // Role value (redundant with the index; a consistency check)
  uint64_t pid_ns_inode;   // inode of the agent's /proc/self/ns/pid
  uint64_t start_time_ns;  // CLOCK_REALTIME ns when the agent attached
  uint64_t heartbeat_ns;   // CLOCK_BOOTTIME ns of the last heartbeat (atomic store)
  uint64_t attach_count;   // times this role attached to this segment (restarts + 1)
  uint8_t reserved0[24];
  char version[kVersionBytes];  // the agent's version string
  uint8_t reserved1[128];

  // The version string up to its NUL or the field's end (a corrupt one need not be
  // terminated); untrusted bytes: escape before printing.
  std::string_view Version() const;
};
static_assert(offsetof(AgentRecord, pid) == 0);
static_assert(offsetof(AgentRecord, role) == 4);
static_assert(offsetof(AgentRecord, pid_ns_inode) == 8);
static_assert(offsetof(AgentRecord, start_time_ns) == 16);
static_assert(offsetof(AgentRecord, heartbeat_ns) == 24);
static_assert(offsetof(AgentRecord, attach_count) == 32);
static_assert(offsetof(AgentRecord, version) == 64);
static_assert(sizeof(AgentRecord) == 256);

// Node-wide configuration the dra-agent runs with (writer: dra-agent).
enum class DeviceMode : uint32_t { kUnset = 0, kGrouped = 1, kIndividual = 2 };
enum class GroupBy : uint32_t { kUnset = 0, kNumaNode = 1, kSocket = 2, kMachine = 3 };
inline constexpr uint32_t kConfigStrictCpuReservation = 1u << 0;
inline constexpr uint32_t kConfigFullPcpusOnly = 1u << 1;
inline constexpr uint32_t kConfigDistributeAcrossNuma = 1u << 2;
inline constexpr uint32_t kConfigAlignByUncoreCache = 1u << 3;
inline constexpr uint32_t kConfigAlignMemory = 1u << 4;

struct ConfigSummary {
  uint32_t device_mode;      // DeviceMode
  uint32_t group_by;         // GroupBy (grouped mode)
  uint32_t flags;            // kConfig* bits
  uint32_t min_shared_cpus;  // the shared-pool floor, CPUs
  uint64_t updated_time_ns;  // CLOCK_REALTIME ns of the last write; 0: never written
  uint8_t reserved[96];
  uint64_t checksum;  // Checksum() of the bytes before it; 0 with updated_time_ns 0 = unset
};
static_assert(offsetof(ConfigSummary, device_mode) == 0);
static_assert(offsetof(ConfigSummary, group_by) == 4);
static_assert(offsetof(ConfigSummary, flags) == 8);
static_assert(offsetof(ConfigSummary, min_shared_cpus) == 12);
static_assert(offsetof(ConfigSummary, updated_time_ns) == 16);
static_assert(offsetof(ConfigSummary, checksum) == 120);
static_assert(sizeof(ConfigSummary) == 128);

// CPUs of the node (writer: dra-agent, from sysfs and its config).
struct TopologySummary {
  CpuSet online;       // /sys/devices/system/cpu/online
  CpuSet reserved;     // reservedCPUs from the config (never granted to a claim)
  CpuSet allocatable;  // online - reserved
  uint32_t numa_nodes;
  uint32_t sockets;
  uint64_t updated_time_ns;  // CLOCK_REALTIME ns; 0: never written
  uint8_t reserved_tail[40];
  uint64_t checksum;
};
static_assert(offsetof(TopologySummary, online) == 0);
static_assert(offsetof(TopologySummary, reserved) == 1024);
static_assert(offsetof(TopologySummary, allocatable) == 2048);
static_assert(offsetof(TopologySummary, numa_nodes) == 3072);
static_assert(offsetof(TopologySummary, sockets) == 3076);
static_assert(offsetof(TopologySummary, updated_time_ns) == 3080);
static_assert(offsetof(TopologySummary, checksum) == 3128);
static_assert(sizeof(TopologySummary) == 3136);

// The CPUs shared (non-claim) containers run on (writer: nri-agent).
struct SharedPoolRecord {
  CpuSet cpus;
  uint64_t updated_time_ns;  // CLOCK_REALTIME ns; 0: never written
  uint8_t reserved[48];
  uint64_t checksum;
};
static_assert(offsetof(SharedPoolRecord, cpus) == 0);
static_assert(offsetof(SharedPoolRecord, updated_time_ns) == 1024);
static_assert(offsetof(SharedPoolRecord, checksum) == 1080);
static_assert(sizeof(SharedPoolRecord) == 1088);

// Where a table lives. Immutable after creation.
struct TableDescriptor {
  uint64_t entries_offset;  // bytes from the segment start
  uint64_t index_offset;    // bytes from the segment start
  uint32_t capacity;        // entries
  uint32_t entry_size;      // bytes, sizeof the entry struct
  uint32_t index_slots;     // power of two >= 2 * capacity
  uint32_t reserved0;
  uint8_t reserved[32];
};
static_assert(offsetof(TableDescriptor, entries_offset) == 0);
static_assert(offsetof(TableDescriptor, index_offset) == 8);
static_assert(offsetof(TableDescriptor, capacity) == 16);
static_assert(offsetof(TableDescriptor, entry_size) == 20);
static_assert(offsetof(TableDescriptor, index_slots) == 24);
static_assert(sizeof(TableDescriptor) == 64);

// A prepared (or being prepared) ResourceClaim (writer: dra-agent).
struct ClaimEntry {
  char uid[kUidBytes];  // ResourceClaim metadata.uid; the key
  char namespace_[kNamespaceBytes];
  char name[kNameBytes];
  uint32_t state;          // ClaimState
  uint32_t request_count;  // used entries of request_names
  uint32_t flags;          // kClaim* bits
  uint32_t reserved0;
  uint64_t prepared_time_ns;  // CLOCK_REALTIME ns when the claim was reserved
  uint8_t reserved1[104];
  char request_names[kMaxRequestsPerClaim][kRequestNameBytes];  // the claim's request names
  CpuSet cpus;                                                  // the CPUs the claim holds
  NodeMask mems;                                                // the NUMA nodes of those CPUs
  uint8_t reserved2[120];
  uint64_t checksum;  // Checksum() of the bytes before it

  std::string_view Uid() const;
  std::string_view Namespace() const;
  std::string_view Name() const;
  std::string_view RequestName(int i) const;
  ClaimState State() const { return static_cast<ClaimState>(state); }
};
static_assert(offsetof(ClaimEntry, uid) == 0);
static_assert(offsetof(ClaimEntry, namespace_) == 64);
static_assert(offsetof(ClaimEntry, name) == 128);
static_assert(offsetof(ClaimEntry, state) == 384);
static_assert(offsetof(ClaimEntry, request_count) == 388);
static_assert(offsetof(ClaimEntry, flags) == 392);
static_assert(offsetof(ClaimEntry, prepared_time_ns) == 400);
static_assert(offsetof(ClaimEntry, request_names) == 512);
static_assert(offsetof(ClaimEntry, cpus) == 1024);
static_assert(offsetof(ClaimEntry, mems) == 2048);
static_assert(offsetof(ClaimEntry, checksum) == 2296);
static_assert(sizeof(ClaimEntry) == 2304);

// A container the nri-agent placed (writer: nri-agent).
struct ContainerEntry {
  char container_id[kContainerIdBytes];  // runtime container id; the key
  char pod_uid[kUidBytes];
  char pod_namespace[kNamespaceBytes];
  char pod_name[kNameBytes];
  char container_name[kContainerNameBytes];
  uint32_t kind;             // ContainerKind
  uint32_t claim_count;      // used entries of claim_uids (0 for shared containers)
  uint64_t updated_time_ns;  // CLOCK_REALTIME ns of the last placement
  uint8_t reserved0[48];
  char claim_uids[kMaxClaimsPerContainer][kUidBytes];  // claims the container consumes
  CpuSet cpus;                                         // cpuset.cpus applied to the container
  NodeMask mems;                                       // cpuset.mems applied; all zero: not set
  uint8_t reserved1[248];
  uint64_t checksum;

  std::string_view Id() const;
  std::string_view PodUid() const;
  std::string_view PodNamespace() const;
  std::string_view PodName() const;
  std::string_view Name() const;
  std::string_view ClaimUid(int i) const;
  ContainerKind Kind() const { return static_cast<ContainerKind>(kind); }
};
static_assert(offsetof(ContainerEntry, container_id) == 0);
static_assert(offsetof(ContainerEntry, pod_uid) == 128);
static_assert(offsetof(ContainerEntry, pod_namespace) == 192);
static_assert(offsetof(ContainerEntry, pod_name) == 256);
static_assert(offsetof(ContainerEntry, container_name) == 512);
static_assert(offsetof(ContainerEntry, kind) == 576);
static_assert(offsetof(ContainerEntry, claim_count) == 580);
static_assert(offsetof(ContainerEntry, updated_time_ns) == 584);
static_assert(offsetof(ContainerEntry, claim_uids) == 640);
static_assert(offsetof(ContainerEntry, cpus) == 1152);
static_assert(offsetof(ContainerEntry, mems) == 2176);
static_assert(offsetof(ContainerEntry, checksum) == 2552);
static_assert(sizeof(ContainerEntry) == 2560);

// Before a writer overwrites a used entry in place (an update, or a remove moving the last entry
// into the hole) it saves the entry here under the same odd generation. If it dies mid-overwrite,
// recovery restores the saved version instead of dropping the damaged entry, so an update or a
// remove is never half-applied and a claim is never lost to a torn overwrite. Writer: whoever
// holds the mutex; readers ignore it.
struct UndoRecord {
  uint32_t table;       // 0: empty, 1: claims, 2: containers
  uint32_t position;    // index of the entry being overwritten
  uint64_t generation;  // the odd generation of the write that saved it; stored last
  uint8_t reserved[48];
  uint64_t entry_words[sizeof(ContainerEntry) / 8];  // the saved ClaimEntry or ContainerEntry
};
static_assert(offsetof(UndoRecord, table) == 0);
static_assert(offsetof(UndoRecord, position) == 4);
static_assert(offsetof(UndoRecord, generation) == 8);
static_assert(offsetof(UndoRecord, entry_words) == 64);
static_assert(sizeof(ContainerEntry) >= sizeof(ClaimEntry));
static_assert(sizeof(UndoRecord) == 2624);
inline constexpr uint32_t kUndoClaims = 1;
inline constexpr uint32_t kUndoContainers = 2;

// The robust, process-shared mutex, padded to a cache line of its own.
union MutexSlot {
  pthread_mutex_t mutex;
  uint8_t bytes[64];
};
static_assert(sizeof(pthread_mutex_t) <= 64);
static_assert(sizeof(MutexSlot) == 64);

struct SegmentHeader {
  // --- identity: written once at creation (only minor may later be raised, by a newer writer),
  // covered by identity_checksum (which takes minor as 0).
  uint64_t magic;         // kMagic
  uint32_t major;         // kLayoutMajor of the creator
  uint32_t minor;         // highest kLayoutMinor that has written this segment
  uint64_t segment_size;  // bytes; equals the file size
  uint32_t header_size;   // kHeaderBytes
  uint32_t reserved0;
  TableDescriptor claims;
  TableDescriptor containers;
  char boot_id[kBootIdBytes];      // /proc/sys/kernel/random/boot_id at creation
  char node_name[kNodeNameBytes];  // Kubernetes node name
  uint64_t created_time_ns;        // CLOCK_REALTIME ns
  uint8_t reserved1[544];
  uint64_t identity_checksum;  // HashWords of bytes [0, offsetof(identity_checksum)), minor as 0

  // --- synchronization
  MutexSlot lock;       // robust, process-shared; writers hold it for a transaction
  uint64_t generation;  // seqlock: odd while a write is in progress; futex on its low 32 bits
  uint32_t waiters;     // processes in WaitForChange (writers skip FUTEX_WAKE when 0)
  uint32_t reserved2;
  uint32_t claim_count;      // used claims entries, [0, claim_count)
  uint32_t container_count;  // used containers entries
  uint8_t reserved3[40];

  // --- mutable records
  AgentRecord agents[kAgentRoles];  // indexed by Role
  ConfigSummary config;             // writer: dra-agent
  SharedPoolRecord shared_pool;     // writer: nri-agent
  uint8_t reserved4[192];
  TopologySummary topology;  // writer: dra-agent
  UndoRecord undo;           // writer: the mutex holder
  uint8_t reserved5[7552];
};
static_assert(offsetof(SegmentHeader, magic) == 0);
static_assert(offsetof(SegmentHeader, major) == 8);
static_assert(offsetof(SegmentHeader, minor) == 12);
static_assert(offsetof(SegmentHeader, segment_size) == 16);
static_assert(offsetof(SegmentHeader, header_size) == 24);
static_assert(offsetof(SegmentHeader, claims) == 32);
static_assert(offsetof(SegmentHeader, containers) == 96);
static_assert(offsetof(SegmentHeader, boot_id) == 160);
static_assert(offsetof(SegmentHeader, node_name) == 208);
static_assert(offsetof(SegmentHeader, created_time_ns) == 464);
static_assert(offsetof(SegmentHeader, identity_checksum) == 1016);
static_assert(offsetof(SegmentHeader, lock) == 1024);
static_assert(offsetof(SegmentHeader, generation) == 1088);
static_assert(offsetof(SegmentHeader, waiters) == 1096);
static_assert(offsetof(SegmentHeader, claim_count) == 1104);
static_assert(offsetof(SegmentHeader, container_count) == 1108);
static_assert(offsetof(SegmentHeader, agents) == 1152);
static_assert(offsetof(SegmentHeader, config) == 1664);
static_assert(offsetof(SegmentHeader, shared_pool) == 1792);
static_assert(offsetof(SegmentHeader, topology) == 3072);
static_assert(offsetof(SegmentHeader, undo) == 6208);
static_assert(sizeof(SegmentHeader) == kHeaderBytes);

static_assert(std::is_standard_layout_v<SegmentHeader>);
static_assert(std::is_trivially_copyable_v<SegmentHeader>);
static_assert(std::is_trivially_copyable_v<AgentRecord>);
static_assert(std::is_trivially_copyable_v<ConfigSummary>);
static_assert(std::is_trivially_copyable_v<TopologySummary>);
static_assert(std::is_trivially_copyable_v<SharedPoolRecord>);
static_assert(std::is_trivially_copyable_v<ClaimEntry>);
static_assert(std::is_trivially_copyable_v<ContainerEntry>);
static_assert(std::is_standard_layout_v<ClaimEntry>);
static_assert(std::is_standard_layout_v<ContainerEntry>);
static_assert(alignof(ClaimEntry) == 8 && alignof(ContainerEntry) == 8);

// The offsets and sizes a segment with these capacities must have. Attach compares the header
// with this; creation writes it.
struct TableLayout {
  TableDescriptor claims;
  TableDescriptor containers;
  uint64_t segment_size;
};
TableLayout ComputeTableLayout(uint32_t claims_capacity, uint32_t containers_capacity);

// The file name for a layout major: "state.v<major>.shm".
std::string SegmentFileName(uint32_t major = kLayoutMajor);

}  // namespace dracpu::shm
