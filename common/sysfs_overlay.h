// SysfsOverlay: a YAML map of absolute /sys paths to file contents, read over a real sysfs tree
// (the reference driver's `sysfsOverlay` / `--sysfs-overlay`), for synthetic or incomplete
// topologies such as kind on a laptop or Docker Desktop.
//
// File format (the reference's): one flat YAML mapping, each key a clean absolute path beneath
// /sys/ and each value a scalar, the file's content:
//   /sys/devices/system/cpu/online: "0-3\n"
//   /sys/devices/system/cpu/cpu0/node0: ""
// Refused, every problem reported at once with its line: a key not beneath /sys/ or not clean
// ("//", ".", "..", trailing "/"), a duplicate key, a list or mapping value, a path that is both
// a file and a directory of another key, two nodeN entries in one cpuN directory.
//
// Read semantics of the overlaid FileSystem (NewOverlayFileSystem):
//  * an overlaid file reads its content; an overlaid directory lists the union of its overlay and
//    base entries; everything else reads through to the base;
//  * as the reference: a nodeN entry in cpuN/ hides the base's nodeM entries of that CPU, and
//    ReadLink on an overlaid path is INVALID_ARGUMENT (overlay entries are files, not links);
//  * ours, so that an overlay describes one machine rather than a mix with the host's files the
//    reference never reads: when the overlay sets anything beneath sys/devices/system/node/ or
//    beneath a CPU's cache/ directory, it replaces that directory (the base's entries there are
//    hidden); when it sets a CPU's topology/core_id or physical_package_id, the base's sibling
//    lists of that CPU (core_cpus*, thread_siblings*) are hidden, so discovery groups cores by
//    core_id as the reference does (docs/topology.md).
// Writes go to the base unchanged. Thread safety: the overlay is immutable; safe for concurrent
// use when the base is.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/status.h"

namespace dracpu {

struct SysfsOverlay {
  // Root-relative paths ("sys/devices/system/cpu/online") to contents.
  std::map<std::string, std::string> files;
};

// Parses the YAML text of an overlay file; `source` names it in messages. An empty document is an
// empty overlay. INVALID_ARGUMENT listing every problem, one per line: "<source>:<line>: ...".
Result<SysfsOverlay> ParseSysfsOverlay(std::string_view yaml_text, std::string_view source);

// `base` read through `overlay` (semantics above). An empty overlay returns `base` itself.
std::unique_ptr<FileSystem> NewOverlayFileSystem(std::unique_ptr<FileSystem> base,
                                                 SysfsOverlay overlay);

// `sysfs` overlaid with the overlay file at `overlay_path`, read through `files` (at most
// kMaxSysfsOverlaySize bytes); `sysfs` itself when `overlay_path` is empty. The file's read or
// parse error names it.
inline constexpr size_t kMaxSysfsOverlaySize = 16 << 20;
Result<std::unique_ptr<FileSystem>> WithSysfsOverlay(std::unique_ptr<FileSystem> sysfs,
                                                     const FileSystem& files,
                                                     const std::string& overlay_path);

}  // namespace dracpu
