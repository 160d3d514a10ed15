// Capped exponential backoff with optional jitter: the one retry schedule of the project (the
// Kubernetes client's 429/5xx/connection retries, watch re-establishment, slice publishing, the
// nri-agent's reconnects to the runtime). The n-th delay (n from 0) is
// base = min(max, initial * multiplier^n), then jittered down into [base * (1 - jitter), base]:
// jitter spreads the retries of many nodes after an outage, and the cap is never exceeded.
// Without a Random (or with jitter 0) the schedule is exact.
//
// Thread safety: one Backoff per retry loop; not safe for concurrent use.
#pragma once

#include <chrono>

#include "common/clock.h"

namespace dracpu {

struct BackoffPolicy {
  std::chrono::milliseconds initial{250};
  std::chrono::milliseconds max{30000};
  double multiplier = 2.0;
  double jitter = 0.5;  // fraction in [0, 1]; ignored without a Random
};

class Backoff {
 public:
  // `random` (may be null: no jitter) must outlive this object.
  Backoff(BackoffPolicy policy, Random* random) : policy_(policy), random_(random) {}
  Backoff(BackoffPolicy policy, Random& random) : Backoff(policy, &random) {}

  // The next delay; advances the attempt count.
  std::chrono::milliseconds Next();
  // Back to the initial delay (after a success).
  void Reset() { attempt_ = 0; }
  int attempt() const { return attempt_; }
  // The delay Next() would return without jitter.
  std::chrono::milliseconds Peek() const;

 private:
  double Base() const;

  BackoffPolicy policy_;
  Random* random_;
  int attempt_ = 0;
};

}  // namespace dracpu
