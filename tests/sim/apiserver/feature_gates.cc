#include "tests/sim/apiserver/feature_gates.h"

namespace dracpu::sim {
namespace {

// One gate's history: the minor version it appeared in and the minor from which it defaults on
// (0: off in every version we model).
struct GateHistory {
  Gate gate;
  std::string_view name;
  int since;
  int on_since;
};

// From kube_features.go (1.37-era): DRAConsumableCapacity alpha 1.34, beta (on) 1.36;
// DRAPartitionableDevices alpha 1.33, beta 1.36; DRADeviceTaints alpha 1.33, beta 1.36, GA 1.37;
// DRADeviceBindingConditions alpha 1.34, beta 1.36; DRAListTypeAttributes and
// DRANodeAllocatableResources alpha 1.36; DRAPartitionableDevicesType, DRAOptionalNodeOperations
// and DRADeviceCompatibilityGroups alpha 1.37; DRAFractionalCapacityRange beta (on) 1.37;
// DRAResourceClaimDeviceStatus beta (on) since 1.33.
constexpr GateHistory kHistory[kGateCount] = {
    {Gate::kConsumableCapacity, "DRAConsumableCapacity", 34, 36},
    {Gate::kPartitionableDevices, "DRAPartitionableDevices", 33, 36},
    {Gate::kDeviceTaints, "DRADeviceTaints", 33, 36},
    {Gate::kDeviceBindingConditions, "DRADeviceBindingConditions", 34, 36},
    {Gate::kListTypeAttributes, "DRAListTypeAttributes", 36, 0},
    {Gate::kNodeAllocatableResources, "DRANodeAllocatableResources", 36, 0},
    {Gate::kPartitionableDevicesType, "DRAPartitionableDevicesType", 37, 0},
    {Gate::kOptionalNodeOperations, "DRAOptionalNodeOperations", 37, 0},
    {Gate::kDeviceCompatibilityGroups, "DRADeviceCompatibilityGroups", 37, 0},
    {Gate::kFractionalCapacityRange, "DRAFractionalCapacityRange", 37, 37},
    {Gate::kResourceClaimDeviceStatus, "DRAResourceClaimDeviceStatus", 32, 33},
};

}  // namespace

std::string_view GateName(Gate gate) { return kHistory[static_cast<size_t>(gate)].name; }

Result<FeatureGates> FeatureGates::ForVersion(std::string_view version) {
  int minor = 0;
  for (std::string_view v : kKubeVersions) {
    if (v == version) minor = std::stoi(std::string(v.substr(2)));
  }
  if (minor == 0) {
    std::string known;
    for (std::string_view v : kKubeVersions) known += (known.empty() ? "" : ", ") + std::string(v);
    return InvalidArgumentError("Kubernetes version \"" + std::string(version) +
                                "\": the simulator has presets for " + known);
  }
  FeatureGates g;
  g.version_ = std::string(version);
  for (const GateHistory& h : kHistory) {
    const size_t i = static_cast<size_t>(h.gate);
    g.exists_[i] = minor >= h.since;
    g.enabled_[i] = g.exists_[i] && h.on_since != 0 && minor >= h.on_since;
  }
  return g;
}

FeatureGates FeatureGates::Default() { return *ForVersion("1.36"); }

Status FeatureGates::Set(std::string_view assignments) {
  size_t start = 0;
  while (start < assignments.size()) {
    size_t end = assignments.find(',', start);
    if (end == std::string_view::npos) end = assignments.size();
    const std::string_view item = assignments.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (value != "true" && value != "false") {
      return InvalidArgumentError("feature gate \"" + std::string(item) +
                                  "\": want Name=true or Name=false");
    }
    const GateHistory* found = nullptr;
    for (const GateHistory& h : kHistory) {
      if (h.name == name) found = &h;
    }
    if (found == nullptr) {
      return InvalidArgumentError("unknown feature gate \"" + std::string(name) + "\"");
    }
    if (!Exists(found->gate)) {
      return InvalidArgumentError("feature gate " + std::string(name) +
                                  " does not exist in Kubernetes " + version_);
    }
    SetEnabled(found->gate, value == "true");
  }
  return Status::Ok();
}

std::string FeatureGates::ToString() const {
  std::string out;
  for (const GateHistory& h : kHistory) {
    if (!Exists(h.gate)) continue;
    out += (out.empty() ? "" : ",") + std::string(h.name) + (Enabled(h.gate) ? "=true" : "=false");
  }
  return out;
}

}  // namespace dracpu::sim
