#include "tests/fuzz/sysfs_parsers_fuzz.h"

#include <string>
#include <string_view>

#include "common/cpu_set.h"
#include "common/sysfs_attribute.h"
#include "tests/fuzz/fuzz_check.h"

namespace dracpu::fuzz {
namespace {

template <typename T>
void CheckError(const Result<T>& result, std::string_view input) {
  if (result.ok()) return;
  if (result.status().message().find("fuzz-input") == std::string::npos) {
    Broken("error message does not name the input", input);
  }
}

void CheckSet(const Result<CpuSet>& set, std::string_view input) {
  CheckError(set, input);
  if (!set.ok()) return;
  Result<CpuSet> again = CpuSet::ParseList(set->ToListString());
  if (!again.ok() || !(*again == *set)) Broken("list does not round-trip", input);
  Result<CpuSet> mask = CpuSet::ParseMask(set->ToMaskString());
  if (!mask.ok() || !(*mask == *set)) Broken("mask does not round-trip", input);
}

}  // namespace

void FuzzSysfsParsers(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckSet(CpuSet::ParseList(input, "fuzz-input"), input);
  CheckSet(CpuSet::ParseMask(input, "fuzz-input"), input);
  CheckSet(ParseSysfsCpuList(input, "fuzz-input"), input);
  CheckSet(ParseSysfsCpuMask(input, "fuzz-input"), input);
  CheckError(ParseSysfsInt(input, "fuzz-input"), input);
  CheckError(ParseSysfsIntRow(input, "fuzz-input"), input);
  Result<std::string> word = ParseSysfsWord(input, "fuzz-input");
  CheckError(word, input);
  if (word.ok() && (word->empty() || word->find(' ') != std::string::npos)) {
    Broken("word is empty or has a space", input);
  }
  const std::string_view trimmed = TrimSysfsPadding(input);
  if (trimmed.size() > input.size() || input.substr(0, trimmed.size()) != trimmed) {
    Broken("TrimSysfsPadding is not a prefix", input);
  }
}

}  // namespace dracpu::fuzz
