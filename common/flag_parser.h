// FlagParser: the agents' command lines. Go-flag compatible spellings, since users copy them from
// the reference driver's manifests: "--name=value", "--name value", "-name value", booleans as
// "--flag" or "--flag=true|false", and glog's "-v=N" / "--v N".
//
// Every flag remembers whether it was set explicitly, so callers can apply the precedence
// "defaults < config file < explicit flags". Parsing errors name the flag and the value.
// Thread safety: none needed (used once, in main).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dracpu {

class FlagParser {
 public:
  // Registers flags. `target` must outlive Parse and holds the default on entry.
  void String(std::string name, std::string* target, std::string help);
  void Bool(std::string name, bool* target, std::string help);
  void Int(std::string name, int* target, std::string help);
  // A flag whose value is checked by `set` (e.g. an enum or a cpulist); set returns the error.
  void Custom(std::string name, std::string value_name, std::function<Status(std::string_view)> set,
              std::string help);

  // Parses argv (without the program name). Arguments after "--", and the first argument that
  // does not start with '-', end the flags; they are returned as positionals.
  Result<std::vector<std::string>> Parse(const std::vector<std::string>& args);

  bool WasSet(std::string_view name) const;
  // "  --name VALUE   help" lines, sorted by name.
  std::string Usage() const;

 private:
  struct Flag {
    std::string value_name;  // "" for booleans
    std::function<Status(std::string_view)> set;
    std::string help;
    bool set_explicitly = false;
  };
  std::map<std::string, Flag, std::less<>> flags_;
};

}  // namespace dracpu
