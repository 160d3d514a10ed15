// Parsers and readers for single sysfs attribute files (the "one value per file" convention).
//
// Every sysfs attribute ends with exactly one newline. Recorded trees also carry a trailing NUL
// ("0-7\n\0", tools that saved whole read buffers) or a second newline; the parsers accept any
// run of trailing newlines and NULs, or none, and nothing else around the value (a NUL or
// newline inside the value is garbage). Errors are
// INVALID_ARGUMENT (garbage), NOT_FOUND (missing file), RESOURCE_EXHAUSTED (a file larger than
// kMaxSysfsAttributeSize), each naming the file by its host path and saying why.
//
// Thread safety: stateless functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/cpu_set.h"
#include "common/file_system.h"
#include "common/status.h"

namespace dracpu {

// Larger than any real attribute: a cpulist for 8192 CPUs in the worst interleaving is ~40 KiB.
inline constexpr size_t kMaxSysfsAttributeSize = size_t{64} * 1024;

// `text` without its trailing run of '\n' and '\0' characters.
std::string_view TrimSysfsPadding(std::string_view text);

// CPU sets in the list ("0-3,8") and mask ("000000ff,00000001") formats (CpuSet's strict parsers
// after TrimSysfsPadding). An empty list file is the empty set; an empty mask is an error.
Result<CpuSet> ParseSysfsCpuList(std::string_view text, std::string_view what);
Result<CpuSet> ParseSysfsCpuMask(std::string_view text, std::string_view what);

// A decimal integer such as "36\n" or "-1\n" (int range). `what` names the file in errors.
Result<int> ParseSysfsInt(std::string_view text, std::string_view what);

// A NUMA distance row, "10 21 21\n": decimal non-negative integers separated by single spaces.
Result<std::vector<int>> ParseSysfsIntRow(std::string_view text, std::string_view what);

// A one-word attribute such as smt/control ("on\n"): printable ASCII, no spaces, not empty.
Result<std::string> ParseSysfsWord(std::string_view text, std::string_view what);

// Readers: read `path` through `fs` (at most kMaxSysfsAttributeSize bytes) and parse it.
Result<int> ReadSysfsInt(const FileSystem& fs, const std::string& path);
Result<CpuSet> ReadSysfsCpuList(const FileSystem& fs, const std::string& path);
Result<CpuSet> ReadSysfsCpuMask(const FileSystem& fs, const std::string& path);
Result<std::vector<int>> ReadSysfsIntRow(const FileSystem& fs, const std::string& path);
Result<std::string> ReadSysfsWord(const FileSystem& fs, const std::string& path);

// A CPU set stored as a list file with a mask twin (".../cpulist" + ".../cpumap",
// "shared_cpu_list" + "shared_cpu_map", "thread_siblings_list" + "thread_siblings"): the list
// when it exists, else the mask. Why the list wins: it is what sysfs.json (the plain reading of
// the corpus) follows on every machine where the two disagree (see docs/topology.md).
// NOT_FOUND only when neither file exists.
Result<CpuSet> ReadSysfsCpuListOrMask(const FileSystem& fs, const std::string& list_path,
                                      const std::string& mask_path);

}  // namespace dracpu
