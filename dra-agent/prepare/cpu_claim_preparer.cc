#include "dra-agent/prepare/cpu_claim_preparer.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>

#include "common/kube_names.h"
#include "common/log_escape.h"
#include "dra-agent/allocator/allocator.h"
#include "dra-agent/cdi/cdi_spec.h"

namespace dracpu::dra {
namespace {

// GETs of one call's claims in flight at once: the Kubernetes client keeps 4 connections
// (curl_http_client.cc); more GETs at once would open new ones, each a TLS handshake.
constexpr size_t kConcurrentClaimFetches = 4;
// How long an idle GET helper stays for the next call of several claims (the kubelet prepares a
// burst of pods at once); an idle node keeps none.
constexpr auto kFetchHelperLinger = std::chrono::seconds(5);

// The kubelet's words for the claim, escaped: this goes into answers and logs before anything
// has validated it.
std::string Key(const ClaimRef& ref) {
  return LogEscape(ref.namespace_name, 64) + "/" + LogEscape(ref.name) + " (uid " +
         LogEscape(ref.uid, 64) + ")";
}

// The kubelet's reference, by Kubernetes' own rules, before any of it is used: the uid names
// the CDI spec file, the namespace and name go into the API request path and the device
// metadata directory (<ns>_<name>), so a '/' or ".." must never get that far, on Prepare or on
// Unprepare.
Status ValidateRef(const ClaimRef& ref) {
  RETURN_IF_ERROR(ValidateClaimUid(ref.uid));
  RETURN_IF_ERROR(ValidateDnsLabel(ref.namespace_name, "namespace"));
  return ValidateDnsSubdomain(ref.name, "ResourceClaim name");
}

std::vector<int> NumaNodesOf(const CpuTopology& t, const CpuSet& cpus) {
  std::set<int> nodes;
  for (int cpu : cpus) {
    if (const CpuInfo* info = t.FindCpu(cpu); info != nullptr && info->numa_node >= 0) {
      nodes.insert(info->numa_node);
    }
  }
  return {nodes.begin(), nodes.end()};
}

double SecondsBetween(Clock::TimePoint start, Clock::TimePoint end) {
  return std::chrono::duration<double>(end - start).count();
}

}  // namespace

CpuClaimPreparer::CpuClaimPreparer(const CpuTopology& topology,
                                   const allocator::TopologyIndex& index,
                                   const DeviceCatalog& catalog, shm::Segment& segment,
                                   CdiStore& cdi, ClaimFetcher fetch, PreparerOptions options,
                                   DraMetrics* metrics, const Clock& clock)
    : topology_(topology),
      index_(index),
      catalog_(catalog),
      segment_(segment),
      cdi_(cdi),
      fetch_(std::move(fetch)),
      options_(std::move(options)),
      metrics_(metrics),
      clock_(clock),
      fetch_helpers_(kConcurrentClaimFetches, kFetchHelperLinger) {}

std::string CpuClaimPreparer::ClaimKey(const ClaimRef& ref) const { return Key(ref); }

size_t CpuClaimPreparer::ClaimStripe(const std::string& uid) const {
  return std::hash<std::string>{}(uid) % claim_locks_.size();
}

std::vector<std::unique_lock<std::mutex>> CpuClaimPreparer::LockClaims(
    const std::vector<ClaimRef>& claims) {
  // Stripes are taken once each, in index order, so two calls (or two claims on one stripe)
  // never deadlock.
  std::vector<size_t> stripes;
  stripes.reserve(claims.size());
  for (const ClaimRef& ref : claims) stripes.push_back(ClaimStripe(ref.uid));
  std::sort(stripes.begin(), stripes.end());
  stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(stripes.size());
  for (size_t i : stripes) locks.emplace_back(claim_locks_[i]);
  return locks;
}

std::map<std::string, ClaimPrepareResult> CpuClaimPreparer::Prepare(
    const std::vector<ClaimRef>& claims) {
  const Clock::TimePoint start = clock_.Now();
  // Every claim of the call stays locked until its spec is durable.
  std::vector<std::unique_lock<std::mutex>> locks = LockClaims(claims);

  std::vector<Staged> staged(claims.size());
  std::vector<ClaimRef> to_fetch;
  std::vector<size_t> fetched_claim;  // to_fetch[j] is claims[fetched_claim[j]]
  for (size_t i = 0; i < claims.size(); ++i) {
    if (Status s = ValidateRef(claims[i]); !s.ok()) {
      staged[i].result = {{}, "claim " + Key(claims[i]) + ": " + s.message()};
      continue;
    }
    to_fetch.push_back(claims[i]);
    fetched_claim.push_back(i);
  }
  // Each claim's files start on their way to disk as soon as it is placed, so the disk works
  // while the next claims are placed; they become visible together in Finish.
  OwnedAtomicWrites files(cdi_.BeginWrites(), claims.size());
  FetchClaimsInOrder(fetch_, to_fetch, fetch_helpers_, kConcurrentClaimFetches,
                     [&](size_t j, Result<std::string> json) {
                       const size_t i = fetched_claim[j];
                       staged[i] = Stage(claims[i], std::move(json));
                       if (staged[i].write) AddFiles(claims[i], staged[i], i, files);
                     });
  const std::vector<Status> written = files.Finish();
  Commit(claims, staged, written);
  locks.clear();

  std::map<std::string, ClaimPrepareResult> out;
  // Each claim's latency is the call's: its spec became durable with the others'.
  const double seconds = SecondsBetween(start, clock_.Now());
  for (size_t i = 0; i < claims.size(); ++i) {
    ClaimPrepareResult& r = staged[i].result;
    if (metrics_ != nullptr) {
      metrics_->prepare_claims.Add({r.error.empty() ? DraMetrics::kSuccess : DraMetrics::kError},
                                   1);
      metrics_->prepare_seconds.Observe({}, seconds);
    }
    out[claims[i].uid] = std::move(r);
  }
  return out;
}

std::map<std::string, std::string> CpuClaimPreparer::Unprepare(
    const std::vector<ClaimRef>& claims) {
  const Clock::TimePoint start = clock_.Now();
  std::vector<std::unique_lock<std::mutex>> locks = LockClaims(claims);
  std::vector<std::string> errors(claims.size());
  std::vector<size_t> removed;  // claims whose files are gone
  for (size_t i = 0; i < claims.size(); ++i) {
    errors[i] = StartUnprepare(claims[i]);
    if (errors[i].empty()) removed.push_back(i);
  }
  // The CPUs are freed only once the removals are durable: a spec that came back after a crash
  // would make Reconcile re-reserve them for a claim the kubelet has forgotten. One directory
  // sync for the whole call.
  if (!removed.empty()) {
    const Status synced = SyncRemovals();
    auto txn = synced.ok() ? segment_.Begin() : Result<shm::WriteTransaction>(synced);
    for (size_t i : removed) {
      // On failure the claim stays kReleasing with its CPUs: a retried Unprepare (or Reconcile)
      // finishes it.
      Status s = !synced.ok() ? synced.WithContext("the removal is not durable")
                 : txn.ok()   ? txn->RemoveClaim(claims[i].uid).status()
                              : txn.status();
      if (!s.ok()) {
        errors[i] = "claim " + Key(claims[i]) + ": " + s.message() + " (CPUs stay reserved)";
      }
    }
  }
  locks.clear();

  std::map<std::string, std::string> out;
  // Each claim's latency is the call's: its removal became durable with the others'.
  const double seconds = SecondsBetween(start, clock_.Now());
  for (size_t i = 0; i < claims.size(); ++i) {
    if (metrics_ != nullptr) {
      metrics_->unprepare_claims.Add(
          {errors[i].empty() ? DraMetrics::kSuccess : DraMetrics::kError}, 1);
      metrics_->unprepare_seconds.Observe({}, seconds);
    }
    out[claims[i].uid] = std::move(errors[i]);
  }
  return out;
}

std::vector<PreparedDevice> CpuClaimPreparer::Devices(
    const ResourceClaimView& claim, const std::vector<const AllocationResultView*>& results) const {
  std::vector<PreparedDevice> devices;
  devices.reserve(results.size());
  for (const AllocationResultView* r : results) {
    devices.push_back(
        {{r->base_request}, r->pool, r->device, {CdiDeviceId(claim.uid)}, r->share_id});
  }
  return devices;
}

Result<std::optional<DeviceMetadataWriter::Plan>> CpuClaimPreparer::RenderMetadata(
    const ResourceClaimView& claim, const std::vector<const AllocationResultView*>& results) const {
  if (options_.metadata == nullptr) return std::optional<DeviceMetadataWriter::Plan>();
  std::vector<MetadataDevice> devices;
  for (const AllocationResultView* r : results) {
    MetadataDevice d{r->request, r->pool, r->device, {}};
    if (const CatalogDevice* c = catalog_.Find(r->device); c != nullptr)
      d.attributes = c->attributes;
    if (r->consumed_cpu) {
      ASSIGN_OR_RETURN(const int64_t n, ParseWholeCpuQuantity(*r->consumed_cpu));
      d.attributes["dra.cpu/allocatedNumCPUs"] = n;
    }
    devices.push_back(std::move(d));
  }
  const MetadataClaim mc{claim.uid, claim.namespace_name, claim.name, claim.pod_claim_name};
  return std::optional(options_.metadata->Render(mc, devices));
}

Result<CpuSet> CpuClaimPreparer::Place(const ResourceClaimView& claim,
                                       const std::vector<const AllocationResultView*>& results,
                                       const CpuSet& free, const CpuSet& online, bool& align_memory,
                                       std::vector<std::string>& whole_devices) const {
  CpuSet chosen;
  std::map<std::string, int64_t> consumed;  // per device, over this claim's results
  align_memory = options_.policy.align_memory;
  for (const AllocationResultView* r : results) {
    const std::string what =
        "result for request " + LogEscape(r->request) + " (device " + LogEscape(r->device) + ")";
    if (r->pool != options_.pool_name) {
      return InvalidArgumentError(what + ": pool " + LogEscape(r->pool) +
                                  " is not this node's pool " + options_.pool_name);
    }
    const CatalogDevice* device = catalog_.Find(r->device);
    if (device == nullptr) {
      return InvalidArgumentError(what + ": no such device on this node");
    }
    ASSIGN_OR_RETURN(const RequestConfig config, ConfigForRequest(claim, r->request));
    const PlacementPolicy policy = config.policy.ApplyTo(options_.policy);
    align_memory = align_memory || policy.align_memory;
    CpuSet cpus;
    if (catalog_.options.mode == CpuDeviceMode::kIndividual) {
      cpus = device->cpus;
      if (const CpuSet offline = cpus - online; !offline.Empty()) {
        return UnavailableError(what + ": CPU " + offline.ToListString() + " is offline");
      }
      if (!cpus.IsSubsetOf(free - chosen)) {
        return FailedPreconditionError(what + ": CPU " + cpus.ToListString() +
                                       " is held by another claim (overlapping device assignment)");
      }
    } else {
      int64_t count = 0;
      if (r->consumed_cpu) {
        ASSIGN_OR_RETURN(count, ParseWholeCpuQuantity(*r->consumed_cpu));
      } else {
        // No consumedCapacity: the scheduler allocated the device whole (a cluster without
        // DRAConsumableCapacity). The claim gets every CPU the device publishes: its capacity,
        // which already leaves the shared-pool floor (and, under fullPCPUsOnly, whole cores).
        if (!device->cpu_capacity) {
          return InvalidArgumentError(what + ": no consumedCapacity and no capacity to grant");
        }
        count = *device->cpu_capacity;
        if (policy.full_pcpus_only) count -= count % topology_.MaxThreadsPerCore();
        if (count <= 0) {
          return ResourceExhaustedError(
              what + ": allocated whole (no consumedCapacity), but the device has no whole core " +
              "to grant under fullPCPUsOnly");
        }
        whole_devices.push_back(r->device);
      }
      // The scheduler never gives one claim more than the device publishes; more means the
      // allocation was made against another view of this node (or by hand): refuse it rather
      // than eat into the CPUs the published capacity keeps for the shared-pool floor.
      const int64_t on_device = (consumed[r->device] += count);
      if (device->cpu_capacity && on_device > *device->cpu_capacity) {
        return InvalidArgumentError(
            what + ": " + std::to_string(on_device) + " CPUs" +
            (on_device != count ? " (with the claim's other results on this device)" : "") +
            " is more than the capacity " + std::to_string(*device->cpu_capacity) + " of device " +
            r->device);
      }
      if (policy.full_pcpus_only && count % topology_.MaxThreadsPerCore() != 0) {
        return InvalidArgumentError(
            what + ": " + std::to_string(count) + " CPUs is not a whole number of cores of " +
            std::to_string(topology_.MaxThreadsPerCore()) + " threads (fullPCPUsOnly)");
      }
      if (config.cpuset) {
        cpus = *config.cpuset;
        if (cpus.Count() != count) {
          return InvalidArgumentError(what + ": cpuConfig.cpuset " + cpus.ToListString() + " has " +
                                      std::to_string(cpus.Count()) + " CPUs, the allocation " +
                                      std::to_string(count));
        }
        if (!cpus.IsSubsetOf(device->group_cpus)) {
          return InvalidArgumentError(what + ": cpuConfig.cpuset CPUs " +
                                      (cpus - device->group_cpus).ToListString() +
                                      " are not allocatable CPUs of the device");
        }
        if (const CpuSet offline = cpus - online; !offline.Empty()) {
          return UnavailableError(what + ": cpuConfig.cpuset CPUs " + offline.ToListString() +
                                  " are offline");
        }
        if (!cpus.IsSubsetOf(free - chosen)) {
          return FailedPreconditionError(what + ": cpuConfig.cpuset CPUs " +
                                         (cpus - (free - chosen)).ToListString() +
                                         " are held by another claim");
        }
      } else {
        allocator::AllocationRequest request;
        request.available = device->group_cpus & (free - chosen);
        request.count = static_cast<int>(count);
        auto placed = allocator::Allocate(index_, request, policy);
        if (!placed.ok()) {
          if (!r->consumed_cpu) {
            return placed.status().WithContext(
                what + ": allocated whole (no consumedCapacity), which needs all " +
                std::to_string(count) + " CPUs it publishes; " +
                std::to_string(request.available.Count()) + " of them are free");
          }
          return placed.status().WithContext(what);
        }
        cpus = *placed;
      }
    }
    chosen |= cpus;
  }
  return chosen;
}

CpuClaimPreparer::Staged CpuClaimPreparer::Stage(const ClaimRef& ref, Result<std::string> json) {
  auto fail = [&](const Status& s) {
    Staged out;
    out.result = ClaimPrepareResult{{}, "claim " + Key(ref) + ": " + s.message()};
    return out;
  };
  if (!json.ok()) return fail(json.status().WithContext("reading the ResourceClaim"));
  auto claim = ParseResourceClaim(*json);
  if (!claim.ok()) return fail(claim.status());
  if (claim->uid != ref.uid) {
    return fail(NotFoundError("the API server has uid " + claim->uid +
                              " for this name (the claim was deleted and re-created)"));
  }
  if (!claim->allocated)
    return fail(FailedPreconditionError("not allocated (no status.allocation)"));
  std::vector<const AllocationResultView*> ours;
  for (const AllocationResultView& r : claim->results) {
    if (r.driver == kDriverNameForClaims) ours.push_back(&r);
  }
  if (ours.empty()) return {};
  Staged staged;
  staged.write = true;
  staged.result = {Devices(*claim, ours), ""};
  auto metadata = RenderMetadata(*claim, ours);
  if (!metadata.ok()) return fail(metadata.status().WithContext("device metadata"));
  staged.metadata = std::move(metadata).value();

  // A repeated Prepare: the same CPUs again.
  auto existing = segment_.FindClaim(ref.uid);
  if (!existing.ok()) return fail(existing.status());
  if (existing->has_value() &&
      static_cast<shm::ClaimState>((*existing)->state) != shm::ClaimState::kReleasing) {
    staged.spec = shm::DecodeClaim(**existing);  // the CDI spec is rewritten if missing
    return staged;
  }

  // CPUs that went offline since start-up are neither granted nor counted in the shared pool.
  CpuSet online = topology_.online;
  if (options_.online_cpus) {
    auto now = options_.online_cpus();
    if (!now.ok()) return fail(now.status().WithContext("reading the online CPUs"));
    online = *now & topology_.online;  // a CPU that came online later is not in the catalog yet
  }

  // Place and reserve in one transaction, so concurrent Prepares never overlap.
  shm::ClaimSpec& spec = staged.spec;
  {
    auto txn = segment_.Begin();
    if (!txn.ok()) return fail(txn.status());
    // The node's rule (shm::CpuAdmission) over this agent's view: the catalog's allocatable CPUs,
    // the start-up online CPUs it leaves out (the reserved ones) and the online CPUs read now.
    shm::ReserveOptions reserve;
    reserve.admission = shm::CpuAdmission(
        {catalog_.allocatable, topology_.online - catalog_.allocatable, online,
         options_.strict_cpu_reservation, static_cast<uint32_t>(options_.min_shared_cpus)});
    bool align_memory = false;
    std::vector<std::string> whole;
    auto cpus = Place(*claim, ours, reserve.admission->Grantable(txn->ClaimedCpus(ref.uid)), online,
                      align_memory, whole);
    if (!cpus.ok()) return fail(cpus.status());
    if (!whole.empty()) {
      std::string devices;
      for (const std::string& d : whole) devices += (devices.empty() ? "" : ", ") + d;
      reserve.floor_note = devices +
                           " allocated whole, with no consumedCapacity: the cluster has no "
                           "consumable capacity, so a claim takes all a device publishes";
    }
    spec.uid = ref.uid;
    spec.namespace_ = claim->namespace_name;
    spec.name = claim->name;
    spec.state = shm::ClaimState::kReserved;
    spec.flags = align_memory ? shm::kClaimAlignMemory : 0;
    for (const AllocationResultView* r : ours) {
      if (std::find(spec.request_names.begin(), spec.request_names.end(), r->base_request) ==
          spec.request_names.end()) {
        spec.request_names.push_back(r->base_request);
      }
    }
    spec.cpus = *cpus;
    spec.mems = NumaNodesOf(topology_, *cpus);
    if (Status s = txn->ReserveClaim(spec, reserve); !s.ok()) return fail(s);
    txn->Commit();
  }

  staged.reserved = true;
  return staged;
}

void CpuClaimPreparer::AddFiles(const ClaimRef& ref, const Staged& staged, size_t owner,
                                OwnedAtomicWrites& files) const {
  Result<FileSystem::FileWrite> spec = cdi_.SpecFile(ref.uid, staged.spec.cpus);
  if (!spec.ok()) {
    files.Fail(owner, spec.status());
    return;
  }
  files.Add(owner, *std::move(spec));
  if (staged.metadata) options_.metadata->AddTo(files, owner, *staged.metadata);
}

// Every written claim is recorded kPrepared in one transaction; a claim whose files could not be
// written loses the reservation it made and its files (nothing half-done) and reports the error.
void CpuClaimPreparer::Commit(const std::vector<ClaimRef>& refs, std::vector<Staged>& staged,
                              const std::vector<Status>& written) {
  std::vector<size_t> to_mark;
  for (size_t i = 0; i < staged.size(); ++i) {
    Staged& s = staged[i];
    if (!s.write) continue;
    if (written[i].ok()) {
      if (s.metadata) {
        for (PreparedDevice& d : s.result.devices) {
          if (auto it = s.metadata->cdi_ids.find(d.request_names.front());
              it != s.metadata->cdi_ids.end()) {
            d.cdi_device_ids.push_back(it->second);
          }
        }
      }
      if (s.spec.state != shm::ClaimState::kPrepared) to_mark.push_back(i);
      continue;
    }
    s.result = {{}, "claim " + Key(refs[i]) + ": " + written[i].message()};
    if (s.reserved) {
      RemoveFiles(refs[i]).IgnoreError();  // best effort: the reservation goes anyway
      if (auto txn = segment_.Begin(); txn.ok()) {
        txn->RemoveClaim(refs[i].uid).status().IgnoreError();
      }
    }
  }
  if (to_mark.empty()) return;
  auto txn = segment_.Begin();
  for (size_t i : to_mark) {
    Staged& s = staged[i];
    s.spec.state = shm::ClaimState::kPrepared;
    Status marked = txn.ok() ? txn->UpsertClaim(s.spec) : txn.status();
    if (marked.ok()) {
      if (metrics_ != nullptr) metrics_->claim_allocated_cpus.Observe({}, s.spec.cpus.Count());
      continue;
    }
    s.result = {{}, "claim " + Key(refs[i]) + ": " + marked.message()};
    if (s.reserved) {
      RemoveFiles(refs[i]).IgnoreError();
      if (txn.ok()) txn->RemoveClaim(refs[i].uid).status().IgnoreError();
    }
  }
  if (txn.ok()) txn->Commit();
}

Status CpuClaimPreparer::SyncRemovals() {
  return cdi_.SyncRemovals(options_.metadata != nullptr ? options_.metadata->RemovalDirectories()
                                                        : std::vector<std::string>{});
}

Status CpuClaimPreparer::RemoveFiles(const ClaimRef& ref) {
  if (options_.metadata != nullptr) {
    RETURN_IF_ERROR(options_.metadata->Remove(ref.namespace_name, ref.name, ref.uid));
  }
  return cdi_.Remove(ref.uid);
}

std::string CpuClaimPreparer::StartUnprepare(const ClaimRef& ref) {
  auto fail = [&](const Status& s) { return "claim " + Key(ref) + ": " + s.message(); };
  if (Status s = ValidateRef(ref); !s.ok()) return fail(s);
  auto existing = segment_.FindClaim(ref.uid);
  if (!existing.ok()) return fail(existing.status());
  std::optional<shm::ClaimSpec> spec;
  if (existing->has_value()) {
    spec = shm::DecodeClaim(**existing);
    shm::ClaimSpec releasing = *spec;
    releasing.state = shm::ClaimState::kReleasing;
    auto txn = segment_.Begin();
    if (!txn.ok()) return fail(txn.status());
    if (Status s = txn->UpsertClaim(releasing); !s.ok()) return fail(s);
  }
  // The CPUs are freed only once no CDI spec can hand them to a new container.
  if (Status s = RemoveFiles(ref); !s.ok()) {
    if (spec) {
      if (auto txn = segment_.Begin(); txn.ok()) txn->UpsertClaim(*spec).IgnoreError();
    }
    return fail(s.WithContext("removing the CDI spec and device metadata (CPUs stay reserved)"));
  }
  return "";
}

Result<std::vector<std::string>> CpuClaimPreparer::Reconcile() {
  std::vector<std::string> report;
  ASSIGN_OR_RETURN(CdiStore::Listing listing, cdi_.List());
  for (const Status& problem : listing.problems)
    report.push_back("unusable CDI spec: " + problem.message());
  std::map<std::string, CpuSet> on_disk;
  for (const ClaimEnv& c : listing.claims) on_disk[c.claim_uid] = c.cpus;

  ASSIGN_OR_RETURN(shm::WriteTransaction txn, segment_.Begin());
  // Shared memory first: finish or undo what a crash interrupted.
  std::vector<shm::ClaimSpec> in_memory;
  for (uint32_t i = 0; i < txn.claim_count(); ++i)
    in_memory.push_back(shm::DecodeClaim(txn.claim_at(i)));
  for (const shm::ClaimSpec& c : in_memory) {
    const bool has_spec = on_disk.count(c.uid) > 0;
    if (c.state == shm::ClaimState::kReleasing) {
      if (options_.metadata != nullptr) {
        RETURN_IF_ERROR(options_.metadata->Remove(c.namespace_, c.name, c.uid));
      }
      RETURN_IF_ERROR(cdi_.Remove(c.uid));
      RETURN_IF_ERROR(SyncRemovals());  // before the CPUs go, as in Unprepare
      RETURN_IF_ERROR(txn.RemoveClaim(c.uid).status());
      on_disk.erase(c.uid);
      report.push_back("claim " + c.uid + ": finished an interrupted Unprepare, CPUs " +
                       c.cpus.ToListString() + " released");
    } else if (!has_spec && c.state == shm::ClaimState::kReserved) {
      RETURN_IF_ERROR(txn.RemoveClaim(c.uid).status());
      report.push_back("claim " + c.uid +
                       ": dropped a reservation whose Prepare never finished, CPUs " +
                       c.cpus.ToListString());
    } else if (!has_spec) {
      RETURN_IF_ERROR(cdi_.Write(c.uid, c.cpus));
      report.push_back("claim " + c.uid + ": rewrote its missing CDI spec, CPUs " +
                       c.cpus.ToListString());
    } else if (!(on_disk[c.uid] == c.cpus)) {
      // Both survived but disagree: the CDI spec is what containers were created with.
      report.push_back("claim " + c.uid + ": shared memory had CPUs " + c.cpus.ToListString() +
                       ", its CDI spec " + on_disk[c.uid].ToListString() + "; the spec wins");
      shm::ClaimSpec fixed = c;
      fixed.cpus = on_disk[c.uid];
      fixed.mems = NumaNodesOf(topology_, fixed.cpus);
      RETURN_IF_ERROR(txn.RemoveClaim(c.uid).status());
      if (!(fixed.cpus - catalog_.allocatable).Empty() ||
          txn.ClaimedCpus().Intersects(fixed.cpus)) {
        report.push_back("claim " + c.uid +
                         ": its CDI CPUs conflict; left unreserved for the operator");
        continue;
      }
      RETURN_IF_ERROR(txn.UpsertClaim(fixed));
    }
  }
  // Then the CDI specs shared memory does not know (a lost or rebuilt segment).
  for (const auto& [uid, cpus] : on_disk) {
    if (txn.FindClaim(uid)) continue;
    const CpuSet outside = cpus - catalog_.allocatable;
    const CpuSet taken = cpus & txn.ClaimedCpus();
    if (!outside.Empty() || !taken.Empty()) {
      report.push_back(
          "claim " + uid + ": CDI spec CPUs " + cpus.ToListString() + " not re-reserved (" +
          (!outside.Empty() ? "CPUs " + outside.ToListString() + " are offline or reserved"
                            : "CPUs " + taken.ToListString() + " are held by another claim") +
          "); its spec is left in place for the operator");
      continue;
    }
    shm::ClaimSpec spec;
    spec.uid = uid;
    spec.state = shm::ClaimState::kPrepared;
    spec.cpus = cpus;
    spec.mems = NumaNodesOf(topology_, cpus);
    RETURN_IF_ERROR(txn.UpsertClaim(spec));
    report.push_back("claim " + uid + ": re-reserved CPUs " + cpus.ToListString() +
                     " from its CDI spec");
  }
  txn.Commit();
  return report;
}

}  // namespace dracpu::dra
