#include "dra-agent/kube/backoff.h"

#include <algorithm>
#include <cmath>

namespace dracpu::kube {

std::chrono::milliseconds Backoff::Next() {
  const double initial = static_cast<double>(policy_.initial.count());
  const double cap = static_cast<double>(policy_.max.count());
  // Stop growing the exponent once the cap is reached so large attempt counts cannot overflow.
  const double base = std::min(cap, initial * std::pow(policy_.multiplier, std::min(attempt_, 62)));
  const double jitter = std::clamp(policy_.jitter, 0.0, 1.0);
  const double delay = base * (1.0 - jitter * random_.Uniform01());
  ++attempt_;
  return std::chrono::milliseconds(static_cast<int64_t>(delay));
}

}  // namespace dracpu::kube
