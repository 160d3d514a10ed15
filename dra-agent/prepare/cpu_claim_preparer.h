// CpuClaimPreparer: the dra-agent's NodePrepareResources / NodeUnprepareResources.
//
// Prepare, per claim (each claim is serialized against itself by a striped lock, and different
// calls run concurrently except for the short placement step, which runs inside one
// shared-memory transaction; within a call, the GETs and the disk overlap the placements):
//   1. GET the ResourceClaim (the claims of one call concurrently, up to kConcurrentClaimFetches at
//      a time on helper threads kept between calls: FetchClaimsInOrder, which hands the claims
//      over in order as they arrive), check its uid and that it is allocated; take the results
//      for dra.cpu (none: success with no devices, as the reference).
//   2. Already in shared memory (a repeated Prepare): the same CPUs again; the CDI spec is
//      rewritten if missing.
//   3. Otherwise, in one transaction: free = allocatable - every other claim; for each result,
//      individual mode: the device's CPU; grouped: consumedCapacity["dra.cpu/cpu"] CPUs inside
//      the device's group, chosen by the allocator with the node policy and the claim's
//      overrides, or the claim's explicit cpuConfig.cpuset (validated); results get disjoint
//      CPUs. A grouped result WITHOUT consumedCapacity is the whole device (the scheduler's answer
//      when the cluster has no consumable capacity): every CPU the device publishes, i.e. its
//      capacity (all allocatable CPUs of the NUMA node / socket / machine, minus the shared-pool
//      floor on the first device; whole cores under fullPCPUsOnly). Refused when the shared pool
//      would fall below minSharedCPUs, saying which devices were allocated whole. Recorded
//      kReserved. Claims are placed in the call's order, so the same call places the same way.
//   4. As soon as a claim is placed, its CDI spec and KEP-5304 device metadata files go into the
//      call's one batch of atomic writes (FileSystem::AtomicWrites): their temp files are written
//      and their fsyncs start while the next claims are fetched and placed. After the last claim
//      the batch waits for the fsyncs, renames every file into place and fsyncs each directory
//      once (the CDI directory once per call), while those claims stay locked; a claim whose
//      files fail loses its reservation and its files (nothing half-done).
//   5. Recorded kPrepared (one transaction); devices returned (one per result, all with the
//      claim's CDI id, plus the metadata CDI id of their request).
// Unprepare, the call's claims locked together: per claim, mark kReleasing, remove the device
// metadata and the CDI spec (on failure: back to kPrepared, CPUs stay held, error returned); then
// the directories synced once for the call (FileSystem::SyncDirectories), so no removed spec can
// come back after a crash and have Reconcile re-reserve its CPUs; then the removed claims dropped
// from shared memory in one transaction (if the sync fails they stay kReleasing, CPUs held, and
// the error is returned: a retry or Reconcile finishes them). An unknown claim is success.
// Reconcile (before registering with the kubelet): shared memory and the CDI files are made to
// agree; see Reconcile().
#pragma once

#include <array>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/cpu_topology.h"
#include "common/driver_config.h"
#include "dra-agent/allocator/topology_index.h"
#include "dra-agent/cdi/cdi_store.h"
#include "dra-agent/devices/device_catalog.h"
#include "dra-agent/metrics/dra_metrics.h"
#include "dra-agent/prepare/claim_fetch.h"
#include "dra-agent/prepare/claim_preparer.h"
#include "dra-agent/prepare/device_metadata.h"
#include "dra-agent/prepare/resource_claim.h"
#include "shm-schema/segment.h"

namespace dracpu::dra {

// Returns the CPUs online now (sysfs cpu/online), read at every placement so a CPU that went
// offline after start-up is never granted (the catalog and topology are the start-up view).
using OnlineCpusReader = std::function<Result<CpuSet>()>;

struct PreparerOptions {
  std::string pool_name;  // = the node name
  PlacementPolicy policy;
  int min_shared_cpus = 1;
  bool strict_cpu_reservation = true;
  OnlineCpusReader online_cpus;  // empty: the topology's online set
  // KEP-5304 device metadata (device_metadata.h), written with the CDI spec (in the CdiStore's
  // batch: both must write through one FileSystem) and removed before it; null: none. Not owned.
  DeviceMetadataWriter* metadata = nullptr;
};

class CpuClaimPreparer final : public ClaimPreparer {
 public:
  // All references must outlive the preparer. `fetch` is called from several threads at once
  // (claim_fetch.h). `metrics` may be null; `clock` times the requests for it.
  CpuClaimPreparer(const CpuTopology& topology, const allocator::TopologyIndex& index,
                   const DeviceCatalog& catalog, shm::Segment& segment, CdiStore& cdi,
                   ClaimFetcher fetch, PreparerOptions options, DraMetrics* metrics,
                   const Clock& clock);

  std::map<std::string, ClaimPrepareResult> Prepare(const std::vector<ClaimRef>& claims) override;
  std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims) override;

  // Makes shared memory and the CDI files agree after a restart or a crash:
  //  * a CDI spec whose claim is missing from shared memory is re-reserved (kPrepared), unless
  //    its CPUs are offline, reserved or held by another claim: then it is left on disk, not
  //    reserved, and reported (never a double grant);
  //  * a kPrepared claim whose CDI spec is missing gets it rewritten;
  //  * a kReserved claim without a CDI spec (Prepare died before acknowledging) is dropped;
  //  * a kReleasing claim (Unprepare died) is finished: spec removed, claim dropped.
  // Returns one line per action or problem, for the caller to log.
  Result<std::vector<std::string>> Reconcile();

  // The CPUs of one claim, for tests and diagnostics.
  std::string ClaimKey(const ClaimRef& ref) const;

 private:
  // A claim through steps 1-3: `result` is final unless `write` (its spec still has to be
  // written: `spec`, reserved by this call when `reserved`).
  struct Staged {
    ClaimPrepareResult result;
    bool write = false;
    bool reserved = false;
    shm::ClaimSpec spec;
    std::optional<DeviceMetadataWriter::Plan> metadata;  // written with the spec
  };
  // The claim's stripe is held; `json` is its FetchClaimsInOrder result.
  Staged Stage(const ClaimRef& ref, Result<std::string> json);
  // Step 4's start for one staged claim: its CDI spec and device metadata added to the call's
  // batch as `owner`.
  void AddFiles(const ClaimRef& ref, const Staged& staged, size_t owner,
                OwnedAtomicWrites& files) const;
  // Steps 4-5 once the batch is finished: `written` per claim of `refs`.
  void Commit(const std::vector<ClaimRef>& refs, std::vector<Staged>& staged,
              const std::vector<Status>& written);
  // Unprepare's first half for one claim, whose stripe is held: marks it kReleasing and removes
  // its files. "" when they are gone (the caller frees the CPUs once that is durable); otherwise
  // the error, and the claim is back to kPrepared with its CPUs held.
  std::string StartUnprepare(const ClaimRef& ref);
  // `whole_devices` gets the devices allocated whole (results without consumedCapacity).
  Result<CpuSet> Place(const ResourceClaimView& claim,
                       const std::vector<const AllocationResultView*>& results, const CpuSet& free,
                       const CpuSet& online, bool& align_memory,
                       std::vector<std::string>& whole_devices) const;
  std::vector<PreparedDevice> Devices(
      const ResourceClaimView& claim,
      const std::vector<const AllocationResultView*>& results) const;
  // The KEP-5304 files of the claim, rendered (none without a metadata writer).
  Result<std::optional<DeviceMetadataWriter::Plan>> RenderMetadata(
      const ResourceClaimView& claim,
      const std::vector<const AllocationResultView*>& results) const;
  // Removes the claim's device metadata, then its CDI spec.
  Status RemoveFiles(const ClaimRef& ref);
  // Makes RemoveFiles' removals so far durable (every directory they touch, synced at once).
  Status SyncRemovals();
  size_t ClaimStripe(const std::string& uid) const;
  // The stripes of every claim of a call, held until the result is dropped.
  std::vector<std::unique_lock<std::mutex>> LockClaims(const std::vector<ClaimRef>& claims);

  const CpuTopology& topology_;
  const allocator::TopologyIndex& index_;
  const DeviceCatalog& catalog_;
  shm::Segment& segment_;
  CdiStore& cdi_;
  const ClaimFetcher fetch_;
  const PreparerOptions options_;
  DraMetrics* const metrics_;  // may be null
  const Clock& clock_;
  std::array<std::mutex, 64> claim_locks_;
  // The GETs of a call of several claims run here (FetchClaimsInOrder); kept a few seconds after
  // a call, so a burst of such calls does not make threads for each. Declared last: ended first,
  // after waiting for any GET in progress.
  LingeringThreads fetch_helpers_;
};

}  // namespace dracpu::dra
