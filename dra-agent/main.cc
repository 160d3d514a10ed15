// dracpu-dra-agent: the DRA half of dracpu. Until the kubelet plugin lands, the executable carries
// diagnostic and test subcommands only; without one it prints usage and exits 2 (it does not
// pretend to run an agent).
#include <iostream>
#include <string>
#include <vector>

#include "dra-agent/allocator/allocate_command.h"
#include "dra-agent/diagnostics/gatherinfo_command.h"
#include "dra-agent/subcommand.h"
#include "dracpu_version.h"

namespace {

using dracpu::dra::Subcommand;

constexpr Subcommand kSubcommands[] = {
    {"version", "print the version and exit",
     [](const std::vector<std::string>&, dracpu::dra::CommandIo io) {
       io.out << "dracpu-dra-agent " << DRACPU_VERSION << "\n";
       return dracpu::dra::kExitOk;
     }},
    {"gatherinfo", "print the CPU topology read from sysfs", dracpu::dra::GatherInfoCommand},
    {"allocate", "choose CPUs for one request (JSON in, JSON out)", dracpu::allocator::RunAllocateCommand},
};

void PrintUsage(std::ostream& os) {
  os << "usage: dracpu-dra-agent <subcommand> [flags]\n\nsubcommands:\n";
  for (const Subcommand& s : kSubcommands) {
    os << "  " << s.name << std::string(14 - std::string(s.name).size(), ' ') << s.summary << "\n";
  }
  os << "\nThe agent itself (kubelet plugin) is not part of this build yet.\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(std::cerr);
    return dracpu::dra::kExitUsage;
  }
  const std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    PrintUsage(std::cout);
    return dracpu::dra::kExitOk;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const Subcommand& s : kSubcommands) {
    if (name == s.name) return s.run(args, {std::cin, std::cout, std::cerr});
  }
  std::cerr << "dracpu-dra-agent: unknown subcommand \"" << name << "\"\n";
  PrintUsage(std::cerr);
  return dracpu::dra::kExitUsage;
}
