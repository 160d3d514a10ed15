#include "common/backoff.h"

#include <algorithm>
#include <cmath>

namespace dracpu {

double Backoff::Base() const {
  const double initial = static_cast<double>(policy_.initial.count());
  const double cap = static_cast<double>(policy_.max.count());
  // Stop growing the exponent once the cap is reached so large attempt counts cannot overflow.
  return std::min(cap, initial * std::pow(policy_.multiplier, std::min(attempt_, 62)));
}

std::chrono::milliseconds Backoff::Peek() const {
  return std::chrono::milliseconds(static_cast<int64_t>(Base()));
}

std::chrono::milliseconds Backoff::Next() {
  double delay = Base();
  if (random_ != nullptr)
    delay *= 1.0 - std::clamp(policy_.jitter, 0.0, 1.0) * random_->Uniform01();
  ++attempt_;
  return std::chrono::milliseconds(static_cast<int64_t>(delay));
}

}  // namespace dracpu
