// The kube-apiserver feature gates that change what a ResourceSlice may carry, per Kubernetes
// version (pkg/features/kube_features.go, read at its 1.37-era state; see
// ../shared/spec/resourceslice-validation.md "Gates"). A gate is absent in versions before its
// field existed: the field is then unknown to the decoder (dropped with a Warning, or 400 under
// fieldValidation=Strict); a gate that exists but is off makes the server drop its fields silently
// (dropDisabledFields) unless the stored object already uses them.
//
//   auto gates = FeatureGates::ForVersion("1.36");          // the 1.36 defaults
//   RETURN_IF_ERROR(gates->Set("DRAListTypeAttributes=true"));
//   gates->Enabled(Gate::kListTypeAttributes);
//
// Thread safety: a plain value.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dracpu::sim {

enum class Gate {
  kConsumableCapacity,        // DRAConsumableCapacity: requestPolicy, allowMultipleAllocations
  kPartitionableDevices,      // DRAPartitionableDevices: sharedCounters, consumesCounters,
                              //   perDeviceNodeSelection, per-device nodeName/nodeSelector/allNodes
  kDeviceTaints,              // DRADeviceTaints: devices[].taints
  kDeviceBindingConditions,   // DRADeviceBindingConditions: bindsToNode, binding(Failure)Conditions
  kListTypeAttributes,        // DRAListTypeAttributes: attribute ints/bools/strings/versions
  kNodeAllocatableResources,  // DRANodeAllocatableResources: devices[].nodeAllocatableResources
  kPartitionableDevicesType,  // DRAPartitionableDevicesType: spec.partitionTypeAttribute
  kOptionalNodeOperations,    // DRAOptionalNodeOperations: spec.skipNodeOperations
  kDeviceCompatibilityGroups,  // DRADeviceCompatibilityGroups:
                               // consumesCounters[].compatibilityGroups
  kFractionalCapacityRange,    // DRAFractionalCapacityRange: milli-precision requestPolicy ranges
  kResourceClaimDeviceStatus,  // DRAResourceClaimDeviceStatus (claims only; listed for /version
                               //   and for the agents that ask about it)
};
inline constexpr size_t kGateCount = 11;

// Upstream's name ("DRAConsumableCapacity").
std::string_view GateName(Gate gate);

// The versions the simulator has presets for.
inline constexpr std::array<std::string_view, 4> kKubeVersions = {"1.34", "1.35", "1.36", "1.37"};

class FeatureGates {
 public:
  // The defaults of Kubernetes `version` ("1.34" ... "1.37"); INVALID_ARGUMENT for another.
  static Result<FeatureGates> ForVersion(std::string_view version);
  // The defaults of the version the simulator serves unless told otherwise: 1.36.
  static FeatureGates Default();

  // "Name=true,Other=false" (kube-apiserver --feature-gates syntax). INVALID_ARGUMENT naming the
  // gate for an unknown name, a bad value, or a gate this version does not have.
  Status Set(std::string_view assignments);
  void SetEnabled(Gate gate, bool on) { enabled_[static_cast<size_t>(gate)] = on; }

  bool Enabled(Gate gate) const { return enabled_[static_cast<size_t>(gate)]; }
  // Whether the gate (and so its fields) exists in this version at all.
  bool Exists(Gate gate) const { return exists_[static_cast<size_t>(gate)]; }

  const std::string& version() const { return version_; }  // "1.36"
  // "DRAConsumableCapacity=true,..." for every gate this version has, for logs.
  std::string ToString() const;

 private:
  std::string version_;
  std::array<bool, kGateCount> enabled_{};
  std::array<bool, kGateCount> exists_{};
};

}  // namespace dracpu::sim
