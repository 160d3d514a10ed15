// Test doubles for the time and randomness seams of common/clock.h. Test-only (header-only, never
// included by library code).
#pragma once

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace dracpu::testing {

// Virtual time: SleepFor records the duration and advances Now() instead of waiting (optionally
// yielding `real_sleep` of real time, so loops that sleep between network retries cannot spin).
class FakeClock final : public Clock {
 public:
  explicit FakeClock(std::chrono::milliseconds real_sleep = std::chrono::milliseconds(0))
      : real_sleep_(real_sleep) {}
  TimePoint Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  bool SleepFor(Duration d, std::stop_token cancel) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      sleeps_.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(d));
      now_ += d;
    }
    if (real_sleep_.count() > 0) std::this_thread::sleep_for(real_sleep_);
    return !cancel.stop_requested();
  }
  void Advance(Duration d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }
  std::vector<std::chrono::milliseconds> sleeps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sleeps_;
  }

 private:
  const std::chrono::milliseconds real_sleep_;
  mutable std::mutex mu_;
  TimePoint now_{std::chrono::hours(1)};
  std::vector<std::chrono::milliseconds> sleeps_;
};

// Always returns the same value in [0, 1).
class FixedRandom final : public Random {
 public:
  explicit FixedRandom(double value) : value_(value) {}
  double Uniform01() override { return value_; }

 private:
  const double value_;
};

}  // namespace dracpu::testing
