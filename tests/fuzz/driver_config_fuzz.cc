// Fuzz target driver_config: the node-wide config file (the Helm chart's ConfigMap) through
// ParseDriverConfig. Contracts: a refusal leaves the config untouched and is INVALID_ARGUMENT
// whose every line names the file and a line ("<source>:<n>: ..."); an accepted config, printed
// with DriverConfigToYaml, parses back to the same config.
#include "common/driver_config.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dracpu;
  using fuzz::Check;
  const std::string_view input = fuzz::AsText(data, size);
  constexpr std::string_view kSource = "/etc/dracpu/config.yaml";
  DriverConfig config;
  const std::string defaults = DriverConfigToYaml(config);
  Status parsed = ParseDriverConfig(input, kSource, config);
  if (!parsed.ok()) {
    Check(parsed.code() == StatusCode::kInvalidArgument, "a refusal is not INVALID_ARGUMENT",
          input);
    Check(DriverConfigToYaml(config) == defaults, "a refused file changed the config", input);
    const std::string& message = parsed.message();
    for (size_t start = 0; start < message.size();) {
      size_t end = message.find('\n', start);
      if (end == std::string::npos) end = message.size();
      Check(message.compare(start, kSource.size() + 1, std::string(kSource) + ":") == 0,
            "a problem line does not name the file", input);
      start = end + 1;
    }
    return 0;
  }
  const std::string printed = DriverConfigToYaml(config);
  DriverConfig again;
  Status reparsed = ParseDriverConfig(printed, "printed", again);
  Check(reparsed.ok() && DriverConfigToYaml(again) == printed,
        "the printed config does not parse back to itself", input);
  return 0;
}
