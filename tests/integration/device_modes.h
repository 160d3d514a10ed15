// Every device mode the dra-agent publishes, by its config name, for tests that go over all of
// them (the slices corpus tests).
#pragma once

#include "common/driver_config.h"

namespace dracpu::testing {

struct DeviceModeCase {
  const char* name;
  CpuDeviceMode mode;
  GroupBy group_by;
};

inline constexpr DeviceModeCase kAllDeviceModes[] = {
    {"numanode", CpuDeviceMode::kGrouped, GroupBy::kNumaNode},
    {"socket", CpuDeviceMode::kGrouped, GroupBy::kSocket},
    {"machine", CpuDeviceMode::kGrouped, GroupBy::kMachine},
    {"individual", CpuDeviceMode::kIndividual, GroupBy::kNumaNode}};

}  // namespace dracpu::testing
