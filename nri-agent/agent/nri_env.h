// NriEnv: the seams the nri-agent's parts receive instead of making their own. main() builds
// the real ones (SystemClock, DefaultRandom, the filesystems rooted at / and at --sysfs-root
// with the sysfsOverlay, the NRI socket connector in NriAgentOptions::connect); tests pass
// fakes (tests/testing/fake_clock.h), so the agent's timers run on virtual time.
// Not owned: everything must outlive the parts it is given to.
#pragma once

#include "common/clock.h"

namespace dracpu::agent {

struct NriEnv {
  // The event loop's clock too (EventLoop::Create): segment polling and the start-up wait,
  // heartbeats and healthy(), the shared-pool coalescing window, request latencies.
  Clock& clock;
  Random& random;  // operation ids (op=<8 hex>)
};

}  // namespace dracpu::agent
