// dracpu-shm: shows and checks the dracpu shared-memory segment without taking its lock.
//
//   dracpu-shm dump [--json] [--watch [--count N]] [--path P]
//   dracpu-shm map [--format text|svg] [--view auto|threads|cores] [--sysfs-root DIR]
//                  [--width N] [--color auto|always|never] [--ascii] [--output FILE]
//                  [--watch [--count N]] [--path P]
//   dracpu-shm verify [--path P]
//
// This file is the only one that reads the environment (NO_COLOR, TERM) and the terminal (isatty,
// its width); the renderers receive plain options.
//
// Exit codes: 0 success (verify: every invariant holds); 1 verify found violations, or the
// segment is unreadable/corrupt; 2 usage error or the segment file does not exist.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/topology_discovery.h"
#include "dracpu_version.h"
#include "shm-schema/dump.h"
#include "shm-schema/map_svg.h"
#include "shm-schema/map_text.h"
#include "shm-schema/node_map.h"
#include "shm-schema/segment.h"
#include "shm-schema/verify.h"

namespace dracpu::shm {
namespace {

constexpr std::string_view kUsage =
    "usage: dracpu-shm dump [--json] [--watch [--count N]] [--path P]\n"
    "       dracpu-shm map [--format text|svg] [--view auto|threads|cores] [--sysfs-root DIR]\n"
    "                      [--width N] [--color auto|always|never] [--ascii] [--output FILE]\n"
    "                      [--watch [--count N]] [--path P]\n"
    "       dracpu-shm verify [--path P]\n"
    "       dracpu-shm --version\n"
    "\n"
    "Reads the dracpu shared-memory segment through a read-only mapping (never locks it).\n"
    "  dump     agents and their liveness, CPUs (allocatable, reserved, shared pool), claims,\n"
    "           containers; --json for machine use; --watch re-prints on every change\n"
    "           (--count N: stop after N prints)\n"
    "  map      the node as boxes (socket > NUMA node > L3 > core > thread), every CPU marked\n"
    "           with its owner (claim and pod/container, shared pool, reserved, isolated,\n"
    "           offline) and a legend. The topology is read from --sysfs-root (default /, as\n"
    "           the dra-agent's), the owners from the segment.\n"
    "           --format svg: a standalone SVG document; --view threads: every CPU, cores: one\n"
    "           glyph per core and CPU counts per group (auto: threads up to 256 CPUs);\n"
    "           --width: columns (default: the terminal's, else 80); --color auto (default)\n"
    "           colours a terminal unless NO_COLOR is set or TERM=dumb; --ascii: + - | boxes;\n"
    "           --output FILE: written atomically (each redraw with --watch); --watch redraws\n"
    "           on every change of the segment (--count N: stop after N drawings)\n"
    "  verify   checks the segment's invariants; exit 0 when all hold, 1 listing violations\n"
    "  --path   segment file (default /run/dracpu/state.v<MAJOR>.shm)\n"
    "Exit codes: 0 ok, 1 violations or unreadable segment or topology, 2 usage error or no\n"
    "segment file.\n";

int Usage(const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "dracpu-shm: %s\n", error.c_str());
  std::fputs(std::string(kUsage).c_str(), stderr);
  return 2;
}

enum class MapFormat { kText, kSvg };
enum class ColorMode { kAuto, kAlways, kNever };

struct Args {
  std::string command;
  std::string path = DefaultSegmentPath();
  bool json = false;
  bool watch = false;
  int64_t count = -1;
  // map
  MapFormat format = MapFormat::kText;
  MapView view = MapView::kAuto;
  std::string sysfs_root = "/";
  int width = 0;  // 0: the terminal's, else 80
  ColorMode color = ColorMode::kAuto;
  bool ascii = false;
  std::string output;
};

// Set by SIGINT/SIGTERM during --watch; the wait returns and the tool exits 0.
std::atomic<bool> g_stop{false};

void OnStopSignal(int) { g_stop.store(true); }

// Without SA_RESTART, so a futex wait returns EINTR and sees g_stop.
void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int OpenFailure(const Status& st, const std::string& path) {
  if (st.code() == StatusCode::kNotFound) {
    std::fprintf(stderr,
                 "dracpu-shm: no segment at %s (is the dra-agent running on this node? "
                 "use --path for another location)\n",
                 path.c_str());
    return 2;
  }
  std::fprintf(stderr, "dracpu-shm: cannot read segment: %s\n", st.ToString().c_str());
  return 1;
}

int Dump(const Args& args) {
  OpenOptions opts;
  opts.role = Role::kReader;
  opts.reader_waits = args.watch;
  Result<std::unique_ptr<Segment>> seg = Segment::Open(args.path, opts);
  if (!seg.ok()) return OpenFailure(seg.status(), args.path);
  SnapshotOptions so;
  so.allow_inconsistent = true;
  Snapshot snap;
  for (int64_t printed = 0;;) {
    const Status st = (*seg)->ReadSnapshotInto(snap, so);
    if (!st.ok()) return OpenFailure(st, args.path);
    const DumpContext ctx = ReadDumpContext(**seg);
    const std::string text = args.json ? FormatJson(snap, ctx) : FormatText(snap, ctx);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    if (!args.watch || (args.count > 0 && ++printed >= args.count)) return 0;
    if (!args.json) std::fputs("----\n", stdout);
    // Re-print on a change, or every 2 s so liveness and heartbeat ages stay current.
    (void)(*seg)->WaitForChange(snap.generation, std::chrono::seconds(2));
  }
}

// The drawing `map` prints, for the terminal (or file) it goes to.
struct MapOutput {
  bool tty = false;
  TextMapOptions text;
};

MapOutput MapOutputFor(const Args& args) {
  MapOutput o;
  o.tty = args.output.empty() && ::isatty(STDOUT_FILENO) == 1;
  o.text.width = args.width;
  if (o.text.width == 0) {
    struct winsize ws {};
    o.text.width =
        o.tty && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  }
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  const bool env_allows = (no_color == nullptr || no_color[0] == '\0') &&
                          !(term != nullptr && std::string_view(term) == "dumb");
  o.text.color =
      args.color == ColorMode::kAlways || (args.color == ColorMode::kAuto && o.tty && env_allows);
  o.text.ascii = args.ascii;
  o.text.view = args.view;
  return o;
}

// Writes `text` to `path` atomically (a temp file beside it, then rename).
bool WriteAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "dracpu-shm: cannot write %s: %s\n", tmp.c_str(), std::strerror(errno));
    return false;
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "dracpu-shm: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool SameLiveness(const DumpContext& a, const DumpContext& b) {
  for (int r = 0; r < kAgentRoles; ++r) {
    if (a.agents[r].live != b.agents[r].live || a.agents[r].attached != b.agents[r].attached) {
      return false;
    }
  }
  return true;
}

int Map(const Args& args) {
  OpenOptions opts;
  opts.role = Role::kReader;
  opts.reader_waits = args.watch;
  Result<std::unique_ptr<Segment>> seg = Segment::Open(args.path, opts);
  if (!seg.ok()) return OpenFailure(seg.status(), args.path);
  Result<std::unique_ptr<FileSystem>> fs = NewPosixFileSystem(args.sysfs_root);
  if (!fs.ok()) {
    std::fprintf(stderr, "dracpu-shm: --sysfs-root %s: %s\n", args.sysfs_root.c_str(),
                 fs.status().ToString().c_str());
    return 1;
  }
  if (args.watch) InstallStopHandlers();
  DiscoveryOptions discovery;
  discovery.pcie_roots = false;
  SnapshotOptions so;
  so.allow_inconsistent = true;
  Snapshot snap;
  ClaimGlyphs glyphs;
  for (int64_t drawn = 0;;) {
    const Status st = (*seg)->ReadSnapshotInto(snap, so);
    if (!st.ok()) return OpenFailure(st, args.path);
    // Discovered at every drawing: CPUs go on- and offline.
    Result<CpuTopology> topo = DiscoverTopology(**fs, discovery);
    if (!topo.ok()) {
      std::fprintf(stderr, "dracpu-shm: topology of --sysfs-root %s: %s\n", args.sysfs_root.c_str(),
                   topo.status().ToString().c_str());
      return 1;
    }
    const DumpContext ctx = ReadDumpContext(**seg);
    const NodeMap map = BuildNodeMap(*topo, &snap, &ctx, &glyphs);
    const MapOutput out = MapOutputFor(args);
    const std::string drawing =
        args.format == MapFormat::kSvg ? RenderMapSvg(map, {}) : RenderMapText(map, out.text);
    if (!args.output.empty()) {
      if (!WriteAtomically(args.output, drawing)) return 1;
    } else {
      // A terminal is redrawn in place; a pipe or file gets the drawings one after another.
      if (args.watch && out.tty) std::fputs("\x1b[H\x1b[2J", stdout);
      std::fputs(drawing.c_str(), stdout);
      if (args.watch && !out.tty && args.format == MapFormat::kText) std::fputs("----\n", stdout);
      std::fflush(stdout);
    }
    if (!args.watch || (args.count > 0 && ++drawn >= args.count)) return 0;
    // Sleep until a writer commits. Every 2 s, also redraw when an agent came or went (no
    // generation change) and reopen when the dra-agent replaced the segment file.
    for (;;) {
      const Result<uint64_t> changed =
          (*seg)->WaitForChange(snap.generation, std::chrono::seconds(2), &g_stop);
      if (g_stop.load()) return 0;
      if (changed.ok()) break;
      if (changed.status().code() != StatusCode::kDeadlineExceeded) {
        return OpenFailure(changed.status(), args.path);
      }
      if ((*seg)->IsStale()) {
        Result<std::unique_ptr<Segment>> again = Segment::Open(args.path, opts);
        if (!again.ok()) return OpenFailure(again.status(), args.path);
        seg = std::move(again);
        break;
      }
      if (!SameLiveness(ctx, ReadDumpContext(**seg))) break;
    }
  }
}

int Verify(const Args& args) {
  OpenOptions opts;
  opts.role = Role::kReader;
  Result<std::unique_ptr<Segment>> seg = Segment::Open(args.path, opts);
  if (!seg.ok()) {
    if (seg.status().code() == StatusCode::kNotFound) return OpenFailure(seg.status(), args.path);
    std::printf("FAIL %s\n  %s\n", args.path.c_str(), seg.status().ToString().c_str());
    return 1;
  }
  SnapshotOptions so;
  so.allow_inconsistent = true;
  Result<Snapshot> snap = (*seg)->ReadSnapshot(so);
  if (!snap.ok()) return OpenFailure(snap.status(), args.path);
  const VerifyResult r = VerifySnapshot(*snap);
  for (const auto& n : r.notes) std::printf("note: %s\n", n.c_str());
  if (r.violations.empty()) {
    std::printf("OK %s: generation %llu, %zu claims, %zu containers, every invariant holds\n",
                args.path.c_str(), static_cast<unsigned long long>(snap->generation),
                snap->claims.size(), snap->containers.size());
    return 0;
  }
  std::printf("FAIL %s: %zu violations\n", args.path.c_str(), r.violations.size());
  for (const auto& v : r.violations) std::printf("  %s\n", v.c_str());
  return 1;
}

// The value of a flag given as "--flag value" or "--flag=value"; error set when it is missing.
bool FlagValue(int argc, char** argv, int& i, std::string_view name, std::string& value,
               std::string& error) {
  const std::string_view a = argv[i];
  if (a == name) {
    if (i + 1 >= argc) {
      error = std::string(name) + " needs a value";
      return true;
    }
    value = argv[++i];
    return true;
  }
  if (a.size() > name.size() && a.starts_with(name) && a[name.size()] == '=') {
    value = std::string(a.substr(name.size() + 1));
    return true;
  }
  return false;
}

// Parses one of map's own flags at argv[i]. False when argv[i] is not one of them; true with
// `error` set when it is, but its value is bad.
bool MapFlag(int argc, char** argv, int& i, Args& args, std::string& error) {
  std::string v;
  if (std::string_view(argv[i]) == "--ascii") {
    args.ascii = true;
  } else if (FlagValue(argc, argv, i, "--format", v, error)) {
    if (v == "text") {
      args.format = MapFormat::kText;
    } else if (v == "svg") {
      args.format = MapFormat::kSvg;
    } else if (error.empty()) {
      error = "--format must be text or svg, not \"" + v + "\"";
    }
  } else if (FlagValue(argc, argv, i, "--view", v, error)) {
    if (v == "auto") {
      args.view = MapView::kAuto;
    } else if (v == "threads") {
      args.view = MapView::kThreads;
    } else if (v == "cores") {
      args.view = MapView::kCores;
    } else if (error.empty()) {
      error = "--view must be auto, threads or cores, not \"" + v + "\"";
    }
  } else if (FlagValue(argc, argv, i, "--color", v, error)) {
    if (v == "auto") {
      args.color = ColorMode::kAuto;
    } else if (v == "always") {
      args.color = ColorMode::kAlways;
    } else if (v == "never") {
      args.color = ColorMode::kNever;
    } else if (error.empty()) {
      error = "--color must be auto, always or never, not \"" + v + "\"";
    }
  } else if (FlagValue(argc, argv, i, "--width", v, error)) {
    char* end = nullptr;
    const int64_t w = std::strtoll(v.c_str(), &end, 10);
    if (error.empty() && (v.empty() || *end != '\0' || w < 40 || w > 1000)) {
      error = "--width must be a number of columns from 40 to 1000, not \"" + v + "\"";
    }
    args.width = static_cast<int>(w);
  } else if (FlagValue(argc, argv, i, "--sysfs-root", v, error)) {
    if (error.empty() && v.empty()) error = "--sysfs-root is empty";
    args.sysfs_root = v;
  } else if (FlagValue(argc, argv, i, "--output", v, error)) {
    if (error.empty() && v.empty()) error = "--output is empty";
    args.output = v;
  } else {
    return false;
  }
  return true;
}

int Main(int argc, char** argv) {
  if (argc < 2) return Usage("missing command");
  Args args;
  args.command = argv[1];
  if (args.command == "--help" || args.command == "-h" || args.command == "help") {
    std::fputs(std::string(kUsage).c_str(), stdout);
    return 0;
  }
  if (args.command == "--version" || args.command == "version") {
    std::fputs("dracpu-shm " DRACPU_VERSION "\n", stdout);
    return 0;
  }
  if (args.command != "dump" && args.command != "verify" && args.command != "map") {
    return Usage("unknown command \"" + args.command + "\"");
  }
  std::string error;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--path" || a.starts_with("--path=")) {
      if (a == "--path") {
        if (i + 1 >= argc) return Usage("--path needs a value");
        args.path = argv[++i];
      } else {
        args.path = std::string(a.substr(7));
      }
      if (args.path.empty()) return Usage("--path is empty");
    } else if (a == "--json" && args.command == "dump") {
      args.json = true;
    } else if (a == "--watch" && args.command != "verify") {
      args.watch = true;
    } else if (args.command == "map" && MapFlag(argc, argv, i, args, error)) {
      if (!error.empty()) return Usage(error);
    } else if (a == "--count" && args.command != "verify") {
      if (i + 1 >= argc) return Usage("--count needs a value");
      char* end = nullptr;
      args.count = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || args.count <= 0) return Usage("--count needs a positive integer");
    } else {
      return Usage("unknown flag \"" + std::string(a) + "\" for " + args.command);
    }
  }
  if (args.count > 0 && !args.watch) return Usage("--count needs --watch");
  if (args.command == "map") return Map(args);
  return args.command == "dump" ? Dump(args) : Verify(args);
}

}  // namespace
}  // namespace dracpu::shm

int main(int argc, char** argv) { return dracpu::shm::Main(argc, argv); }
