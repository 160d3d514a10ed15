#include "common/clock.h"

#include <condition_variable>

namespace dracpu {

bool SystemClock::SleepFor(Duration d, std::stop_token cancel) {
  // Nothing ever notifies `cv` but the stop request, which condition_variable_any wires to it.
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock<std::mutex> lock(mu);
  cv.wait_for(lock, cancel, d, [] { return false; });
  return !cancel.stop_requested();
}

double DefaultRandom::Uniform01() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine_);
}

}  // namespace dracpu
