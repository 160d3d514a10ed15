// `dracpu-dra-agent gatherinfo`: discovers the node's CPU topology from a sysfs root and prints
// it (dra-agent/diagnostics/topology_report.h has the key contract).
//
// Flags: --sysfs-root DIR (default "/": reads DIR/sys/...), --format yaml|json|summary (default
// yaml), --no-pcie (skip PCIe roots), --shm-path P (the segment whose owners the node map shows;
// default /run/dracpu/state.v<MAJOR>.shm), --no-map (leave the node map out), --agent URL
// (default http://127.0.0.1:8080) / --no-agent: the running dra-agent's ResourceSlice state
// (refused writes, what the API server keeps, what the published shape leaves out) from
// URL/debug/resourceslices, under the key "agent" (an "error" there when the agent cannot be
// reached; that is not a failure), -h/--help.
// The report ends with the text node map of `dracpu-shm map` (key nodeMap): the owners come
// from the segment when it can be read, else the map says why and marks them unknown.
// Exit codes: 0 printed; 1 discovery failed (the message names the file and the reason); 2 bad
// flags (message + usage on err).
#pragma once

#include <string>
#include <vector>

#include "dra-agent/subcommand.h"

namespace dracpu::dra {

int GatherInfoCommand(const std::vector<std::string>& args, CommandIo io);

}  // namespace dracpu::dra
