// ServerFeatures: what the dra-agent has learned about the API server it talks to: whether the
// server keeps the optional fields of a feature gate (or silently drops them, as a real
// kube-apiserver does for a gate that is off), how it learned that, and the server's version.
// One instance per agent, shared by everything that writes optional fields:
//  * the ResourceSlice publisher probes the gates its slices need (dry-run creates, see
//    dra-agent/slices/slice_features.h) and re-checks every write's answer;
//  * a ResourceClaim status writer asks Kept(kResourceClaimDeviceStatus) before writing
//    status.devices, and records what it learns with Learn().
// A feature nobody has asked about stays kUnknown; callers decide what unknown means for them
// (the publisher never publishes a field whose feature is not known to be kept).
//
//   kube::ServerFeatures features(clock);
//   features.Learn(ServerFeature::kConsumableCapacity, FeatureState::kDropped,
//                  "dry-run create came back without requestPolicy");
//   if (features.Kept(ServerFeature::kConsumableCapacity)) { ... }
//
// Thread safety: all methods are safe for concurrent use.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace dracpu::kube {

enum class ServerFeature : int {
  kConsumableCapacity = 0,         // DRAConsumableCapacity: requestPolicy, allowMultipleAllocations
  kListTypeAttributes = 1,         // DRAListTypeAttributes: ints/bools/strings/versions
  kNodeAllocatableResources = 2,   // DRANodeAllocatableResources: nodeAllocatableResources
  kResourceClaimDeviceStatus = 3,  // DRAResourceClaimDeviceStatus: ResourceClaim status.devices
};
inline constexpr int kServerFeatureCount = 4;

// The upstream feature gate behind the feature ("DRAConsumableCapacity").
std::string_view ServerFeatureGate(ServerFeature feature);

enum class FeatureState {
  kUnknown,  // not learned yet
  kKept,     // the server stores the feature's fields
  kDropped,  // the server removes them (gate off, or an older server without the fields)
};
std::string_view FeatureStateName(FeatureState state);  // "unknown", "kept", "dropped"

struct FeatureFinding {
  FeatureState state = FeatureState::kUnknown;
  std::string evidence;  // how it was learned, for logs and gatherinfo
  Clock::TimePoint learned_at{};
};

class ServerFeatures {
 public:
  // `clock` stamps findings; it must outlive this object.
  explicit ServerFeatures(Clock& clock) : clock_(clock) {}
  ServerFeatures(const ServerFeatures&) = delete;
  ServerFeatures& operator=(const ServerFeatures&) = delete;

  FeatureState State(ServerFeature feature) const;
  bool Kept(ServerFeature feature) const { return State(feature) == FeatureState::kKept; }
  FeatureFinding Finding(ServerFeature feature) const;

  // Records a finding; returns true when the state changed (then generation() moves).
  bool Learn(ServerFeature feature, FeatureState state, std::string evidence);

  // The server's /version gitVersion ("v1.36.0"), "" until known.
  void SetServerVersion(std::string git_version);
  std::string server_version() const;

  // Counts state changes: a caller that rendered something from these findings can tell when
  // it must render again.
  uint64_t generation() const;

 private:
  Clock& clock_;
  mutable std::mutex mu_;
  std::array<FeatureFinding, kServerFeatureCount> findings_;  // guarded by mu_
  std::string server_version_;                                // guarded by mu_
  uint64_t generation_ = 0;                                   // guarded by mu_
};

}  // namespace dracpu::kube
