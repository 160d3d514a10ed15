#include "common/local_time_zone.h"

#include <cstdlib>

namespace dracpu {

void PinLocalTimeZone() { ::setenv("TZ", ":/etc/localtime", /*overwrite=*/0); }

}  // namespace dracpu
