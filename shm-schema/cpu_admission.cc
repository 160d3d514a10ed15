#include "shm-schema/cpu_admission.h"

#include <algorithm>

namespace dracpu::shm {

CpuAdmission CpuAdmission::FromRecords(const TopologySummary& topology,
                                       const ConfigSummary& config) {
  return CpuAdmission({topology.allocatable, topology.reserved, topology.online,
                       (config.flags & kConfigStrictCpuReservation) != 0, config.min_shared_cpus});
}

uint32_t CpuAdmission::floor() const { return std::max<uint32_t>(in_.min_shared_cpus, 1); }

CpuSet CpuAdmission::SharedPool(const CpuSet& claimed) const {
  CpuSet pool = in_.allocatable;
  if (!in_.strict_cpu_reservation) pool |= in_.reserved;
  if (!in_.online.Empty()) pool &= in_.online;
  return pool - claimed;
}

CpuSet CpuAdmission::SharedPool(std::span<const ClaimEntry> claims) const {
  CpuSet claimed;
  for (const ClaimEntry& c : claims) claimed |= c.cpus;
  return SharedPool(claimed);
}

CpuSet CpuAdmission::Grantable(const CpuSet& claimed) const {
  CpuSet free = in_.allocatable;
  if (!in_.online.Empty()) free &= in_.online;
  return free - claimed;
}

Status CpuAdmission::CheckNotHeld(const CpuSet& cpus, std::span<const ClaimEntry> claims,
                                  std::string_view self) {
  for (const ClaimEntry& other : claims) {
    if (!self.empty() && other.Uid() == self) continue;
    if (other.cpus.Intersects(cpus)) {
      return FailedPreconditionError("CPUs " + (other.cpus & cpus).ToListString() +
                                     " are held by claim " + std::string(other.Uid()) + " (" +
                                     std::string(other.Namespace()) + "/" +
                                     std::string(other.Name()) + ")");
    }
  }
  return Status::Ok();
}

Status CpuAdmission::CheckGranted(const CpuSet& cpus, std::span<const ClaimEntry> claims,
                                  std::string_view self) const {
  RETURN_IF_ERROR(CheckNotHeld(cpus, claims, self));
  if (!cpus.IsSubsetOf(in_.allocatable)) {
    return FailedPreconditionError("CPUs " + (cpus - in_.allocatable).ToListString() +
                                   " are not allocatable");
  }
  return Status::Ok();
}

Status CpuAdmission::Admit(const CpuSet& cpus, std::span<const ClaimEntry> claims,
                           std::string_view self, std::string_view floor_note) const {
  if (cpus.Empty()) return InvalidArgumentError("no CPUs");
  RETURN_IF_ERROR(CheckGranted(cpus, claims, self));
  CpuSet claimed;
  for (const ClaimEntry& other : claims) {
    if (self.empty() || other.Uid() != self) claimed |= other.cpus;
  }
  if (!in_.online.Empty() && !cpus.IsSubsetOf(in_.online)) {
    return UnavailableError("CPUs " + (cpus - in_.online).ToListString() + " are offline");
  }
  const int left = SharedPool(claimed | cpus).Count();
  if (left < static_cast<int>(floor())) {
    std::string message = "granting CPUs " + cpus.ToListString() + " would leave " +
                          std::to_string(left) + " CPUs in the shared pool, below minSharedCPUs " +
                          std::to_string(floor());
    if (!floor_note.empty()) message += " (" + std::string(floor_note) + ")";
    return ResourceExhaustedError(message);
  }
  return Status::Ok();
}

CpuSet ComputeSharedPool(const TopologySummary& topology, const ConfigSummary& config,
                         std::span<const ClaimEntry> claims) {
  return CpuAdmission::FromRecords(topology, config).SharedPool(claims);
}

}  // namespace dracpu::shm
