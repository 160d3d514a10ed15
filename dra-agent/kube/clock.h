// Clock and Random: the time and randomness seams of the Kubernetes client (backoff, token
// refresh). SystemClock/DefaultRandom are the real ones; tests inject fakes that record sleeps
// and advance virtual time, so backoff logic is tested without waiting.
//
// These belong in common/ once it grows a clock (the style guide lists common/clock); they live
// here until then so the client does not depend on an unmerged module.
//
// Thread safety: implementations are safe for concurrent use.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>

namespace dracpu::kube {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  // Monotonic time.
  virtual TimePoint Now() const = 0;
  // Sleeps for `d`, returning early (false) when `*cancel` becomes true; true after a full sleep.
  virtual bool SleepFor(Duration d, const std::atomic<bool>* cancel) = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  // Polls `cancel` every 20 ms: cheap, and bounds shutdown latency.
  bool SleepFor(Duration d, const std::atomic<bool>* cancel) override;
};

class Random {
 public:
  virtual ~Random() = default;
  // Uniform in [0, 1).
  virtual double Uniform01() = 0;
};

class DefaultRandom final : public Random {
 public:
  DefaultRandom() : engine_(std::random_device{}()) {}
  double Uniform01() override;

 private:
  std::mutex mu_;
  std::mt19937_64 engine_;
};

}  // namespace dracpu::kube
