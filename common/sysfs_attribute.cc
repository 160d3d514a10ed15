#include "common/sysfs_attribute.h"

#include <charconv>
#include <limits>

#include "common/log_escape.h"

namespace dracpu {
namespace {

std::string_view StripNewline(std::string_view text) { return TrimSysfsPadding(text); }

Status Malformed(std::string_view what, std::string_view text, std::string_view why) {
  return InvalidArgumentError(std::string(what) + ": " + std::string(why) + " in " +
                              LogQuote(text, 40));
}

Result<std::string> ReadAttribute(const FileSystem& fs, const std::string& path) {
  return fs.ReadFile(path, kMaxSysfsAttributeSize);
}

}  // namespace

std::string_view TrimSysfsPadding(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.remove_suffix(1);
  return text;
}

Result<CpuSet> ParseSysfsCpuList(std::string_view text, std::string_view what) {
  return CpuSet::ParseList(TrimSysfsPadding(text), what);
}

Result<CpuSet> ParseSysfsCpuMask(std::string_view text, std::string_view what) {
  return CpuSet::ParseMask(TrimSysfsPadding(text), what);
}

Result<int> ParseSysfsInt(std::string_view text, std::string_view what) {
  const std::string_view body = StripNewline(text);
  if (body.empty()) return Malformed(what, text, "empty file, expected an integer");
  const char* first = body.data();
  const char* last = body.data() + body.size();
  // from_chars rejects a leading '+', spaces and hex prefixes, which the kernel never prints.
  int value = 0;
  const auto [end, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range) return Malformed(what, text, "integer out of range");
  if (ec != std::errc() || end == first) return Malformed(what, text, "not an integer");
  if (end != last) return Malformed(what, text, "junk after the integer");
  return value;
}

Result<std::vector<int>> ParseSysfsIntRow(std::string_view text, std::string_view what) {
  const std::string_view body = StripNewline(text);
  if (body.empty()) return Malformed(what, text, "empty file, expected integers");
  std::vector<int> values;
  size_t pos = 0;
  while (true) {
    size_t end = body.find(' ', pos);
    if (end == std::string_view::npos) end = body.size();
    const std::string_view item = body.substr(pos, end - pos);
    if (item.empty()) return Malformed(what, text, "empty item");
    int value = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || p != item.data() + item.size() || value < 0) {
      return Malformed(what, text, "not a non-negative integer at offset " + std::to_string(pos));
    }
    values.push_back(value);
    if (end == body.size()) break;
    pos = end + 1;
  }
  return values;
}

Result<std::string> ParseSysfsWord(std::string_view text, std::string_view what) {
  const std::string_view body = StripNewline(text);
  if (body.empty()) return Malformed(what, text, "empty file, expected a word");
  for (const char c : body) {
    if (c <= ' ' || c >= 0x7f) return Malformed(what, text, "not a single printable word");
  }
  return std::string(body);
}

Result<int> ReadSysfsInt(const FileSystem& fs, const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadAttribute(fs, path));
  return ParseSysfsInt(text, fs.HostPath(path));
}

Result<CpuSet> ReadSysfsCpuList(const FileSystem& fs, const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadAttribute(fs, path));
  return ParseSysfsCpuList(text, fs.HostPath(path));
}

Result<CpuSet> ReadSysfsCpuMask(const FileSystem& fs, const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadAttribute(fs, path));
  return ParseSysfsCpuMask(text, fs.HostPath(path));
}

Result<std::vector<int>> ReadSysfsIntRow(const FileSystem& fs, const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadAttribute(fs, path));
  return ParseSysfsIntRow(text, fs.HostPath(path));
}

Result<std::string> ReadSysfsWord(const FileSystem& fs, const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadAttribute(fs, path));
  return ParseSysfsWord(text, fs.HostPath(path));
}

Result<CpuSet> ReadSysfsCpuListOrMask(const FileSystem& fs, const std::string& list_path,
                                      const std::string& mask_path) {
  Result<CpuSet> list = ReadSysfsCpuList(fs, list_path);
  if (list.ok() || list.status().code() != StatusCode::kNotFound) return list;
  Result<CpuSet> mask = ReadSysfsCpuMask(fs, mask_path);
  if (mask.ok() || mask.status().code() != StatusCode::kNotFound) return mask;
  return NotFoundError("neither " + fs.HostPath(list_path) + " nor " + fs.HostPath(mask_path) +
                       " exists");
}

}  // namespace dracpu
