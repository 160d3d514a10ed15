#include "common/flag_parser.h"

#include <charconv>
#include <cstddef>

#include "common/driver_config.h"

namespace dracpu {

void FlagParser::String(std::string name, std::string* target, std::string help) {
  flags_[std::move(name)] = {"VALUE",
                             [target](std::string_view v) {
                               *target = std::string(v);
                               return Status::Ok();
                             },
                             std::move(help)};
}

void FlagParser::Bool(std::string name, bool* target, std::string help) {
  flags_[std::move(name)] = {"",
                             [target](std::string_view v) {
                               ASSIGN_OR_RETURN(*target, ParseBool(v));
                               return Status::Ok();
                             },
                             std::move(help)};
}

void FlagParser::Int(std::string name, int* target, std::string help) {
  flags_[std::move(name)] = {
      "N",
      [target](std::string_view v) {
        int n = 0;
        const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (v.empty() || ec != std::errc() || p != v.data() + v.size()) {
          return InvalidArgumentError("\"" + std::string(v) + "\" is not a whole number");
        }
        *target = n;
        return Status::Ok();
      },
      std::move(help)};
}

void FlagParser::Custom(std::string name, std::string value_name,
                        std::function<Status(std::string_view)> set, std::string help) {
  flags_[std::move(name)] = {std::move(value_name), std::move(set), std::move(help)};
}

Result<std::vector<std::string>> FlagParser::Parse(const std::vector<std::string>& args) {
  std::vector<std::string> positionals;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positionals.insert(positionals.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                         args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      positionals.insert(positionals.end(), args.begin() + static_cast<std::ptrdiff_t>(i),
                         args.end());
      break;
    }
    std::string_view body(arg);
    body.remove_prefix(body.substr(0, 2) == "--" ? 2 : 1);
    const size_t eq = body.find('=');
    const std::string_view name = body.substr(0, eq);
    auto it = flags_.find(name);
    if (it == flags_.end()) {
      return InvalidArgumentError("unknown flag " + arg.substr(0, arg.find('=')));
    }
    Flag& flag = it->second;
    std::string value;
    if (eq != std::string_view::npos) {
      value = std::string(body.substr(eq + 1));
    } else if (flag.value_name.empty()) {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return InvalidArgumentError("flag --" + std::string(name) + " needs a value");
    }
    if (Status s = flag.set(value); !s.ok()) {
      return InvalidArgumentError("flag --" + std::string(name) + "=" + value + ": " + s.message());
    }
    flag.set_explicitly = true;
  }
  return positionals;
}

bool FlagParser::WasSet(std::string_view name) const {
  auto it = flags_.find(name);
  return it != flags_.end() && it->second.set_explicitly;
}

std::string FlagParser::Usage() const {
  std::string out;
  for (const auto& [name, flag] : flags_) {
    std::string left = "  --" + name + (flag.value_name.empty() ? "" : " " + flag.value_name);
    if (left.size() < 30) left.resize(30, ' ');
    out += left + " " + flag.help + "\n";
  }
  return out;
}

}  // namespace dracpu
