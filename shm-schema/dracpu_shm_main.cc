// dracpu-shm: shows and checks the dracpu shared-memory segment without taking its lock.
//
//   dracpu-shm dump [--json] [--watch [--count N]] [--path P]
//   dracpu-shm verify [--path P]
//
// Exit codes: 0 success (verify: every invariant holds); 1 verify found violations, or the
// segment is unreadable/corrupt; 2 usage error or the segment file does not exist.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "shm-schema/dump.h"
#include "shm-schema/segment.h"
#include "shm-schema/verify.h"

namespace dracpu::shm {
namespace {

constexpr std::string_view kUsage =
    "usage: dracpu-shm dump [--json] [--watch [--count N]] [--path P]\n"
    "       dracpu-shm verify [--path P]\n"
    "\n"
    "Reads the dracpu shared-memory segment through a read-only mapping (never locks it).\n"
    "  dump     agents and their liveness, CPUs (allocatable, reserved, shared pool), claims,\n"
    "           containers; --json for machine use; --watch re-prints on every change\n"
    "           (--count N: stop after N prints)\n"
    "  verify   checks the segment's invariants; exit 0 when all hold, 1 listing violations\n"
    "  --path   segment file (default /run/dracpu/state.v<MAJOR>.shm)\n"
    "Exit codes: 0 ok, 1 violations or unreadable segment, 2 usage error or no segment file.\n";

int Usage(const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "dracpu-shm: %s\n", error.c_str());
  std::fputs(std::string(kUsage).c_str(), stderr);
  return 2;
}

struct Args {
  std::string command;
  std::string path = DefaultSegmentPath();
  bool json = false;
  bool watch = false;
  long count = -1;
};

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

DumpContext Context(const Segment& seg) {
  DumpContext ctx;
  ctx.path = seg.path();
  ctx.now_realtime_ns = RealtimeNs();
  for (int r = 0; r < kAgentRoles; ++r) {
    const Result<AgentStatus> st = seg.GetAgentStatus(static_cast<Role>(r));
    if (!st.ok()) continue;
    AgentLiveness& l = ctx.agents[r];
    l.attached = st->attached;
    l.live = st->live;
    if (st->heartbeat_age)
      l.heartbeat_age_s = static_cast<double>(st->heartbeat_age->count()) / 1e9;
  }
  return ctx;
}

int Dump(const Args& args) {
  OpenOptions opts;
  opts.role = Role::kReader;
  Result<std::unique_ptr<Segment>> seg = Segment::Open(args.path, opts);
  if (!seg.ok()) return OpenFailure(seg.status(), args.path);
  SnapshotOptions so;
  so.allow_inconsistent = true;
  Snapshot snap;
  for (long printed = 0;;) {
    const Status st = (*seg)->ReadSnapshotInto(snap, so);
    if (!st.ok()) return OpenFailure(st, args.path);
    const DumpContext ctx = Context(**seg);
    const std::string text = args.json ? FormatJson(snap, ctx) : FormatText(snap, ctx);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    if (!args.watch || (args.count > 0 && ++printed >= args.count)) return 0;
    if (!args.json) std::fputs("----\n", stdout);
    // Re-print on a change, or every 2 s so liveness and heartbeat ages stay current.
    (void)(*seg)->WaitForChange(snap.generation, std::chrono::seconds(2));
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

int Main(int argc, char** argv) {
  if (argc < 2) return Usage("missing command");
  Args args;
  args.command = argv[1];
  if (args.command == "--help" || args.command == "-h" || args.command == "help") {
    std::fputs(std::string(kUsage).c_str(), stdout);
    return 0;
  }
  if (args.command != "dump" && args.command != "verify") {
    return Usage("unknown command \"" + args.command + "\"");
  }
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
    } else if (a == "--watch" && args.command == "dump") {
      args.watch = true;
    } else if (a == "--count" && args.command == "dump") {
      if (i + 1 >= argc) return Usage("--count needs a value");
      char* end = nullptr;
      args.count = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || args.count <= 0) return Usage("--count needs a positive integer");
    } else {
      return Usage("unknown flag \"" + std::string(a) + "\" for " + args.command);
    }
  }
  if (args.count > 0 && !args.watch) return Usage("--count needs --watch");
  return args.command == "dump" ? Dump(args) : Verify(args);
}

}  // namespace
}  // namespace dracpu::shm

int main(int argc, char** argv) { return dracpu::shm::Main(argc, argv); }
