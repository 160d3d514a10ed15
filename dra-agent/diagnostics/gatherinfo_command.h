// `dracpu-dra-agent gatherinfo`: discovers the node's CPU topology from a sysfs root, finds the
// running dra-agent and its effective configuration, and reports both
// (dra-agent/diagnostics/topology_report.h has the key contract; docs/operations.md the use).
//
// Flags: --stdout | --output-dir DIR (the reference's; together they are a usage error),
// --format yaml|json|summary (default yaml), --sysfs-root DIR and --proc-root DIR (default
// CommandIo::host_root, else "/"), --no-pcie, --shm-path P (the segment whose owners the node
// map shows; default /run/dracpu/state.v<MAJOR>.shm), --no-map (leave the node map out),
// --agent URL (default http://127.0.0.1:8080) / --no-agent: the running dra-agent's
// ResourceSlice state (refused writes, what the API server keeps, what the published shape
// leaves out) from URL/debug/resourceslices, under the key "agent" (an "error" there when the
// agent cannot be reached; that is not a failure), -h/--help.
// The report ends with the text node map of `dracpu-shm map` (key nodeMap): the owners come
// from the segment when it can be read, else the map says why and marks them unknown.
// Exit codes: 0 reported; 1 discovery or the write failed (the message names the file and the
// reason); 2 bad flags (message + usage).
// No running agent is not an error: the report then has no driverConfig, and err says so.
#pragma once

#include <string>
#include <vector>

#include "dra-agent/subcommand.h"

namespace dracpu::dra {

// Prints the report unless --output-dir is given.
int GatherInfoCommand(const std::vector<std::string>& args, CommandIo io);

// The same under the reference's binary name `dracpu-gatherinfo` (main dispatches on argv[0]):
// without --stdout or --output-dir it writes a temporary file dracpu-gatherinfo-*.<format> and
// prints its path, as the reference does.
int LegacyGatherInfoCommand(const std::vector<std::string>& args, CommandIo io);

}  // namespace dracpu::dra
