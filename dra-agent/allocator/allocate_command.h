// `dracpu-dra-agent allocate`: one allocation from a JSON document, for acceptance tests and
// for trying the allocator by hand.
//
//   dracpu-dra-agent allocate [--input FILE] [--topologies FILE]
//
// Input (stdin unless --input), one JSON object:
//   {"topology": {"cpus": [{"cpu": 0, "core": 0, "socket": 0, "numa": 0, "l3": 0,
//                           "coreType": "standard"}, ...]},
//    "available": [0, 1, 2, 3],
//    "request": 2,
//    "options": {"full-pcpus-only": "true"},
//    "numaAffinity": [0],
//    "reserved": [0]}
// Fields:
//  * topology (required): {"cpus": [...]} records; or a name, resolved in --topologies FILE; or
//    {"sysfsRoot": "DIR"}, discovered from DIR/sys/devices/system/cpu.
//  * available (required): CPU ids as an array or a list string ("0-3").
//  * request (required): the number of CPUs.
//  * options: kubelet option names with string (or boolean) values (allocator_options.h).
//  * numaAffinity: a topology-manager hint, NUMA node ids.
//  * reserved: CPUs never chosen (array or list string).
//  * sharedPool: limits the candidates (array or list string).
//  * cpuGroupSize: the distribute-cpus-across-numa group size.
//  * containers: per-container counts summing to request, allocated in order from one pool.
// Other fields of the case files (name, source, api, expected*, ...) are ignored, except that
// resize cases (currentlyAllocated, mustKeep, or an api "...ForResize") are rejected.
//
// Output on stdout, one JSON object:
//   exit 0: {"cpus": [...], "metrics": {"numaSpan", "socketSpan", "l3Span", "coresTouched",
//            "partialCores"}} (+ "containers": [[...], ...] when several containers were given)
//   exit 1: {"error": "..."}  the request is understood but cannot be met
//   exit 2: {"error": "..."}  malformed flags or input; the message names the field (also on
//            stderr)
#pragma once

#include <string>
#include <vector>

#include "dra-agent/subcommand.h"

namespace dracpu::allocator {

int RunAllocateCommand(const std::vector<std::string>& args, dra::CommandIo io);

}  // namespace dracpu::allocator
