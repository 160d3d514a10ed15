#include "dra-agent/kube/server_features.h"

namespace dracpu::kube {

std::string_view ServerFeatureGate(ServerFeature feature) {
  switch (feature) {
    case ServerFeature::kConsumableCapacity:
      return "DRAConsumableCapacity";
    case ServerFeature::kListTypeAttributes:
      return "DRAListTypeAttributes";
    case ServerFeature::kNodeAllocatableResources:
      return "DRANodeAllocatableResources";
    case ServerFeature::kResourceClaimDeviceStatus:
      return "DRAResourceClaimDeviceStatus";
  }
  return "?";
}

std::string_view FeatureStateName(FeatureState state) {
  switch (state) {
    case FeatureState::kUnknown:
      return "unknown";
    case FeatureState::kKept:
      return "kept";
    case FeatureState::kDropped:
      return "dropped";
  }
  return "?";
}

FeatureState ServerFeatures::State(ServerFeature feature) const {
  std::lock_guard<std::mutex> lock(mu_);
  return findings_[static_cast<int>(feature)].state;
}

FeatureFinding ServerFeatures::Finding(ServerFeature feature) const {
  std::lock_guard<std::mutex> lock(mu_);
  return findings_[static_cast<int>(feature)];
}

bool ServerFeatures::Learn(ServerFeature feature, FeatureState state, std::string evidence) {
  std::lock_guard<std::mutex> lock(mu_);
  FeatureFinding& f = findings_[static_cast<int>(feature)];
  const bool changed = f.state != state;
  f.state = state;
  f.evidence = std::move(evidence);
  f.learned_at = clock_.Now();
  if (changed) ++generation_;
  return changed;
}

void ServerFeatures::SetServerVersion(std::string git_version) {
  std::lock_guard<std::mutex> lock(mu_);
  server_version_ = std::move(git_version);
}

std::string ServerFeatures::server_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_version_;
}

uint64_t ServerFeatures::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

}  // namespace dracpu::kube
