// Operation ids: the `op=<8 hex>` every request log line carries (STYLE.md, "Logging"), so one
// grep follows a request across both agents. Drawn from the injected Random (common/clock.h).
#pragma once

#include <cstdio>
#include <string>

#include "common/clock.h"

namespace dracpu {

inline std::string NewOperationId(Random& random) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(random.Uniform01() * 4294967296.0));
  return buf;
}

}  // namespace dracpu
