// `dracpu-dra-agent gatherinfo`: discovers the node's CPU topology from a sysfs root and prints
// it (dra-agent/diagnostics/topology_report.h has the key contract).
//
// Flags: --sysfs-root DIR (default "/": reads DIR/sys/...), --format yaml|json|summary (default
// yaml), --no-pcie (skip PCIe roots), -h/--help. Exit codes: 0 printed; 1 discovery failed (the
// message names the file and the reason); 2 bad flags (message + usage on err).
#pragma once

#include <string>
#include <vector>

#include "dra-agent/subcommand.h"

namespace dracpu::dra {

int GatherInfoCommand(const std::vector<std::string>& args, CommandIo io);

}  // namespace dracpu::dra
