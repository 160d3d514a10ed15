#include "dra-agent/diagnostics/gatherinfo_command.h"

#include <optional>
#include <ostream>

#include "common/file_system.h"
#include "common/topology_discovery.h"
#include "dra-agent/diagnostics/topology_report.h"
#include "dracpu_version.h"
#include "shm-schema/dump.h"
#include "shm-schema/map_text.h"
#include "shm-schema/node_map.h"
#include "shm-schema/segment.h"

namespace dracpu::dra {
namespace {

enum class Format { kYaml, kJson, kSummary };

constexpr char kUsage[] =
    "usage: dracpu-dra-agent gatherinfo [--sysfs-root DIR] [--format yaml|json|summary] "
    "[--no-pcie] [--shm-path P] [--no-map]\n"
    "  --sysfs-root DIR  read DIR/sys/... (default /)\n"
    "  --format F        yaml (default), json, or summary (a short table for people)\n"
    "  --no-pcie         do not read PCIe root complexes\n"
    "  --shm-path P      the segment whose CPU owners the node map shows\n"
    "                    (default /run/dracpu/state.v<MAJOR>.shm)\n"
    "  --no-map          leave the node map (dracpu-shm map) out of the report\n";

struct Flags {
  std::string sysfs_root = "/";
  Format format = Format::kYaml;
  bool pcie = true;
  bool map = true;
  std::string shm_path = shm::DefaultSegmentPath();
  bool help = false;
};

// Accepts "--flag value" and "--flag=value". Returns false with a message on bad input.
bool ParseFlags(const std::vector<std::string>& args, Flags& flags, std::string& error) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool has_value = false;
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto take_value = [&]() {
      if (has_value) return true;
      if (i + 1 >= args.size()) {
        error = arg + " needs a value";
        return false;
      }
      value = args[++i];
      return true;
    };
    if (arg == "-h" || arg == "--help") {
      flags.help = true;
    } else if (arg == "--sysfs-root") {
      if (!take_value()) return false;
      if (value.empty()) {
        error = "--sysfs-root must not be empty";
        return false;
      }
      flags.sysfs_root = value;
    } else if (arg == "--format") {
      if (!take_value()) return false;
      if (value == "yaml") {
        flags.format = Format::kYaml;
      } else if (value == "json") {
        flags.format = Format::kJson;
      } else if (value == "summary" || value == "text") {
        flags.format = Format::kSummary;
      } else {
        error = "--format must be yaml, json or summary, not \"" + value + "\"";
        return false;
      }
    } else if (arg == "--no-pcie" && !has_value) {
      flags.pcie = false;
    } else if (arg == "--no-map" && !has_value) {
      flags.map = false;
    } else if (arg == "--shm-path") {
      if (!take_value()) return false;
      if (value.empty()) {
        error = "--shm-path must not be empty";
        return false;
      }
      flags.shm_path = value;
    } else {
      error = "unknown argument \"" + args[i] + "\"";
      return false;
    }
  }
  return true;
}

// The text node map over `topo`, with the owners the segment at `path` records (a note says why
// they are unknown when it cannot be read).
std::string NodeMapText(const CpuTopology& topo, const std::string& path) {
  shm::OpenOptions opts;
  opts.role = shm::Role::kReader;
  Result<std::unique_ptr<shm::Segment>> seg = shm::Segment::Open(path, opts);
  std::optional<shm::Snapshot> snap;
  std::string why;
  if (seg.ok()) {
    shm::SnapshotOptions so;
    so.allow_inconsistent = true;
    Result<shm::Snapshot> s = (*seg)->ReadSnapshot(so);
    if (s.ok()) {
      snap = std::move(s).value();
    } else {
      why = s.status().ToString();
    }
  } else {
    why = seg.status().code() == StatusCode::kNotFound ? "no segment at " + path
                                                       : seg.status().ToString();
  }
  shm::DumpContext ctx;
  if (snap) ctx = shm::ReadDumpContext(**seg);
  shm::NodeMap map = shm::BuildNodeMap(topo, snap ? &*snap : nullptr, snap ? &ctx : nullptr);
  if (!why.empty()) map.notes.push_back(why + " (--shm-path)");
  return shm::RenderMapText(map, {});
}

}  // namespace

int GatherInfoCommand(const std::vector<std::string>& args, CommandIo io) {
  Flags flags;
  std::string error;
  if (!ParseFlags(args, flags, error)) {
    io.err << "gatherinfo: " << error << "\n" << kUsage;
    return kExitUsage;
  }
  if (flags.help) {
    io.out << kUsage;
    return kExitOk;
  }
  Result<std::unique_ptr<FileSystem>> fs = NewPosixFileSystem(flags.sysfs_root);
  if (!fs.ok()) {
    io.err << "gatherinfo: " << fs.status().ToString() << "\n";
    return kExitFailed;
  }
  DiscoveryOptions options;
  options.pcie_roots = flags.pcie;
  Result<CpuTopology> topo = DiscoverTopology(**fs, options);
  if (!topo.ok()) {
    io.err << "gatherinfo: " << topo.status().ToString() << "\n";
    return kExitFailed;
  }
  ReportHeader header{std::string("dracpu-dra-agent ") + DRACPU_VERSION, flags.sysfs_root, ""};
  if (flags.map) header.node_map = NodeMapText(*topo, flags.shm_path);
  switch (flags.format) {
    case Format::kJson:
      io.out << RenderTopologyJson(*topo, header);
      break;
    case Format::kSummary:
      io.out << RenderTopologySummary(*topo, header);
      break;
    case Format::kYaml: {
      Result<std::string> yaml = RenderTopologyYaml(*topo, header);
      if (!yaml.ok()) {
        io.err << "gatherinfo: " << yaml.status().ToString() << "\n";
        return kExitFailed;
      }
      io.out << *yaml;
      break;
    }
  }
  io.out.flush();
  return io.out ? kExitOk : kExitFailed;
}

}  // namespace dracpu::dra
