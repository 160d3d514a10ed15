// Clock and Random: the time and randomness seams (the Kubernetes client's backoff and token
// refresh, the slice publisher, the topology watcher, the agent's loops). SystemClock and
// DefaultRandom are the real ones; tests inject tests/testing/fake_clock.h, which records sleeps
// and advances virtual time, so backoff logic is tested without waiting.
//
// Thread safety: implementations are safe for concurrent use.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <stop_token>

namespace dracpu {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  // Monotonic time.
  virtual TimePoint Now() const = 0;
  // Sleeps for `d`, returning early (false) once a stop is requested on `cancel`; true after a
  // full sleep. A default-constructed token never stops.
  virtual bool SleepFor(Duration d, std::stop_token cancel) = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  // Blocks in the kernel (a futex) until the deadline or the stop request: no polling, so an
  // idle agent does not wake up while it sleeps.
  bool SleepFor(Duration d, std::stop_token cancel) override;
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

}  // namespace dracpu
