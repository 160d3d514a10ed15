// Capped exponential backoff with jitter, for retrying 429/5xx/connection failures and for
// re-establishing watches. The n-th delay (n from 0) is base = min(max, initial * multiplier^n),
// then jittered down into [base * (1 - jitter), base]: jitter spreads the retries of many nodes
// after an API outage, and the cap is never exceeded.
//
// Thread safety: one Backoff per retry loop; not safe for concurrent use.
#pragma once

#include <chrono>

#include "common/clock.h"

namespace dracpu::kube {

struct BackoffPolicy {
  std::chrono::milliseconds initial{250};
  std::chrono::milliseconds max{30000};
  double multiplier = 2.0;
  double jitter = 0.5;  // fraction in [0, 1]
};

class Backoff {
 public:
  Backoff(BackoffPolicy policy, Random& random) : policy_(policy), random_(random) {}

  // The next delay; advances the attempt count.
  std::chrono::milliseconds Next();
  // Back to the initial delay (after a success).
  void Reset() { attempt_ = 0; }
  int attempt() const { return attempt_; }

 private:
  BackoffPolicy policy_;
  Random& random_;
  int attempt_ = 0;
};

}  // namespace dracpu::kube
