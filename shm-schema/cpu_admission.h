// CpuAdmission: the one rule that says which CPUs a claim may take and what the shared pool is.
//
// Every part that needs either answer asks this type, so they cannot drift apart: the dra-agent's
// Prepare (through WriteTransaction::ReserveClaim), the nri-agent's shared pool, `dracpu-shm
// verify` (CheckGranted for every claim, ComputeSharedPool for the pool), `dracpu-shm map`
// (ComputeSharedPool), and the dra-agent's metrics.
//
//   shared pool = (allocatable, plus the reserved CPUs unless strictCPUReservation)
//                 ∩ online now − every claim's CPUs
//   a claim may take `cpus` when they are held by no other claim, allocatable, online now, and
//   the shared pool left after it keeps at least floor() = max(minSharedCPUs, 1) CPUs; a claim
//   granted stays valid while the first two hold (CheckGranted).
//
// `allocatable` is the start-up view (online at start-up minus reserved) and keeps its value when
// CPUs go offline; `online` is the set online now. A claim that already holds a CPU that went
// offline keeps it; a new claim never gets one, and an offline CPU never counts toward the floor.
// Pure value type; thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/cpu_set.h"
#include "common/status.h"
#include "shm-schema/layout.h"

namespace dracpu::shm {

class CpuAdmission {
 public:
  struct Inputs {
    CpuSet allocatable;  // online at start-up minus reserved
    CpuSet reserved;     // joins the shared pool unless strict_cpu_reservation
    CpuSet online;       // online now; empty: not known (no online step)
    bool strict_cpu_reservation = true;
    uint32_t min_shared_cpus = 1;
  };

  explicit CpuAdmission(const Inputs& inputs) : in_(inputs) {}
  // The rule the segment's records describe (the dra-agent publishes both at start-up and
  // rewrites topology.online on hotplug).
  static CpuAdmission FromRecords(const TopologySummary& topology, const ConfigSummary& config);

  const Inputs& inputs() const { return in_; }
  // The least number of CPUs the shared pool keeps: minSharedCPUs, and never empty.
  uint32_t floor() const;

  // The shared pool while the CPUs `claimed` (or the claims `claims`) are held.
  CpuSet SharedPool(const CpuSet& claimed) const;
  CpuSet SharedPool(std::span<const ClaimEntry> claims) const;
  // The CPUs a new claim may be given while `claimed` are held: allocatable, online, unclaimed
  // (the floor is checked on the chosen CPUs by Admit).
  CpuSet Grantable(const CpuSet& claimed) const;

  // Whether a claim may take `cpus` while `claims` are held; an entry whose uid is `self` is not
  // counted (a claim being released that is prepared again). Checked in this order:
  //   INVALID_ARGUMENT    no CPUs;
  //   FAILED_PRECONDITION a CPU is held by another claim (naming it), or is not allocatable;
  //   UNAVAILABLE         a CPU is offline;
  //   RESOURCE_EXHAUSTED  the shared pool left would be below floor(); `floor_note`, when not
  //                       empty, is appended to that message (e.g. why the claim is this large).
  // Messages name the CPUs and the other claim, not the claim being admitted: the caller does.
  Status Admit(const CpuSet& cpus, std::span<const ClaimEntry> claims, std::string_view self = {},
               std::string_view floor_note = {}) const;
  // Admit's overlap step alone (FAILED_PRECONDITION naming the claim that holds a CPU of `cpus`),
  // for a segment whose topology is not published yet.
  static Status CheckNotHeld(const CpuSet& cpus, std::span<const ClaimEntry> claims,
                             std::string_view self = {});
  // The part of Admit a claim already granted must still satisfy, whatever happened since: held
  // by no other claim in `claims` (except `self`) and allocatable (FAILED_PRECONDITION as Admit
  // words it). Online and the floor are not checked: a CPU may go offline under a claim, and a
  // hotplug may leave the pool below the floor without revoking anything. `dracpu-shm verify`
  // checks every claim with this.
  Status CheckGranted(const CpuSet& cpus, std::span<const ClaimEntry> claims,
                      std::string_view self = {}) const;

 private:
  Inputs in_;
};

// The shared pool the segment's records imply: FromRecords(topology, config).SharedPool(claims).
CpuSet ComputeSharedPool(const TopologySummary& topology, const ConfigSummary& config,
                         std::span<const ClaimEntry> claims);

}  // namespace dracpu::shm
