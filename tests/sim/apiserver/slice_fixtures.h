// Test helpers: ResourceSlices shaped like dracpu's (reference-driver.md §2.3), as JSON text.
#pragma once

#include <cstdio>
#include <string>

namespace dracpu::sim::testing {

// A grouped-mode device (numa node `index`) with the standard, dra.cpu and legacy attributes and
// consumable capacity with a requestPolicy.
inline std::string GroupedDevice(int index, int cpus) {
  char name[32];
  std::snprintf(name, sizeof(name), "cpudevnuma%03d", index);
  const std::string n = std::to_string(cpus);
  const std::string i = std::to_string(index);
  return std::string("{\"name\":\"") + name +
         "\",\"attributes\":{\"resource.kubernetes.io/numaNode\":{\"int\":" + i +
         "},\"dra.cpu/socketID\":{\"int\":0},\"dra.cpu/smtEnabled\":{\"bool\":true},"
         "\"dra.cpu/numCPUs\":{\"int\":" +
         n + "},\"dra.cpu/numaNodeID\":{\"int\":" + i + "},\"dra.net/numaNode\":{\"int\":" + i +
         "}},\"capacity\":{\"dra.cpu/cpu\":{\"value\":\"" + n +
         "\",\"requestPolicy\":{\"default\":\"1\",\"validRange\":{\"min\":\"1\",\"max\":\"" + n +
         "\",\"step\":\"1\"}}}},\"allowMultipleAllocations\":true}";
}

// An individual-mode device.
inline std::string IndividualDevice(int index) {
  char name[32];
  std::snprintf(name, sizeof(name), "cpudev%03d", index);
  return std::string("{\"name\":\"") + name +
         "\",\"attributes\":{\"resource.kubernetes.io/numaNode\":{\"int\":0},"
         "\"dra.cpu/cpuID\":{\"int\":" +
         std::to_string(index) + "},\"dra.cpu/coreType\":{\"string\":\"standard\"}}}";
}

// A slice for `node` with `devices` (a JSON array body, without brackets). Named when `name` is
// set, else with generateName.
inline std::string Slice(const std::string& node, const std::string& devices,
                         const std::string& name = "", const std::string& driver = "dra.cpu",
                         int generation = 1, int count = 1) {
  const std::string metadata = name.empty()
                                   ? "{\"generateName\":\"00000-" + driver + "-" + node + "-\"}"
                                   : "{\"name\":\"" + name + "\"}";
  return "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":" +
         metadata + ",\"spec\":{\"driver\":\"" + driver + "\",\"nodeName\":\"" + node +
         "\",\"pool\":{\"name\":\"" + node + "\",\"generation\":" + std::to_string(generation) +
         ",\"resourceSliceCount\":" + std::to_string(count) + "},\"devices\":[" + devices + "]}}";
}

inline std::string IndividualDevices(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? "," : "") + IndividualDevice(i);
  return out;
}

}  // namespace dracpu::sim::testing
