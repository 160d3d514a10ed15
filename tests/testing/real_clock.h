// The system clock and randomness for tests and tools that want real time (transport tests,
// simulators, benchmarks) where a component takes a Clock& or a Random&. Test-only: the daemons
// build theirs in main().
#pragma once

#include "common/clock.h"

namespace dracpu::testing {

inline Clock& RealClock() {
  static SystemClock clock;
  return clock;
}

inline Random& RealRandom() {
  static DefaultRandom random;
  return random;
}

}  // namespace dracpu::testing
