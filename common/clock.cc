#include "common/clock.h"

#include <algorithm>
#include <thread>

namespace dracpu {

bool SystemClock::SleepFor(Duration d, const std::atomic<bool>* cancel) {
  const TimePoint end = Now() + d;
  while (true) {
    if (cancel != nullptr && cancel->load()) return false;
    const TimePoint now = Now();
    if (now >= end) return true;
    std::this_thread::sleep_for(std::min<Duration>(end - now, std::chrono::milliseconds(20)));
  }
}

double DefaultRandom::Uniform01() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine_);
}

}  // namespace dracpu
