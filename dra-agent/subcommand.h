// A dracpu-dra-agent subcommand ("gatherinfo", "allocate", ...): a function of its arguments and
// standard streams that returns the process exit code. Only main.cc reads argv and builds these.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace dracpu::dra {

struct CommandIo {
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
  // From main's environment: $HOST_ROOT (the host's / as mounted in the container; "" = /) and
  // $TMPDIR ("" = /tmp).
  std::string host_root = "";
  std::string temp_dir = "";
};

// Exit codes shared by the subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the request was understood but cannot be met
inline constexpr int kExitUsage = 2;   // malformed flags or input

using SubcommandFn = int (*)(const std::vector<std::string>& args, CommandIo io);

struct Subcommand {
  const char* name;
  const char* summary;
  SubcommandFn run;
};

}  // namespace dracpu::dra
