#include "dra-agent/diagnostics/gatherinfo_command.h"

#include <fcntl.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <filesystem>
#include <optional>
#include <ostream>
#include <system_error>
#include <utility>

#include "common/file_system.h"
#include "common/sysfs_overlay.h"
#include "common/topology_discovery.h"
#include "common/unique_fd.h"
#include "dra-agent/agent/kubelet_cpu_manager.h"
#include "dra-agent/diagnostics/running_agent.h"
#include "dra-agent/diagnostics/topology_report.h"
#include "dra-agent/kube/curl_http_client.h"
#include "dracpu_version.h"
#include "shm-schema/dump.h"
#include "shm-schema/map_text.h"
#include "shm-schema/node_map.h"
#include "shm-schema/segment.h"

namespace dracpu::dra {
namespace {

enum class Format { kYaml, kJson, kSummary };
enum class Output { kDefault, kStdout, kDirectory };

constexpr char kUsage[] =
    "usage: dracpu-dra-agent gatherinfo [--stdout | --output-dir DIR] [--format "
    "yaml|json|summary]\n"
    "                                   [--sysfs-root DIR] [--proc-root DIR] [--no-pcie]\n"
    "                                   [--shm-path P] [--no-map] [--agent URL | --no-agent]\n"
    "  --stdout          print the report (the default, except as dracpu-gatherinfo)\n"
    "  --output-dir DIR  write it to DIR/dracpu-gatherinfo-YYYYMMDD-HHMMSS-<pid>.<format>\n"
    "                    (mode 0600, never over an existing file) and print the path\n"
    "  --format F        yaml (default), json, or summary (a short table for people)\n"
    "  --sysfs-root DIR  read DIR/sys/... (default $HOST_ROOT, else /); the running agent's\n"
    "                    sysfsOverlay applies only without this flag\n"
    "  --proc-root DIR   find the running dracpu-dra-agent under DIR/proc (default $HOST_ROOT,\n"
    "                    else /) and report its effective configuration as driverConfig\n"
    "  --no-pcie         do not read PCIe root complexes\n"
    "  --shm-path P      the segment whose CPU owners the node map shows\n"
    "                    (default /run/dracpu/state.v<MAJOR>.shm)\n"
    "  --no-map          leave the node map (dracpu-shm map) out of the report\n"
    "  --agent URL       also show the running dra-agent's ResourceSlice state (what the API\n"
    "                    server refused, what it keeps) from URL/debug/resourceslices\n"
    "                    (default http://127.0.0.1:8080, the agent's --bind-address)\n"
    "  --no-agent        do not ask the agent\n"
    "As dracpu-gatherinfo (the reference driver's name) it writes a temporary file by default.\n";

constexpr char kDefaultAgent[] = "http://127.0.0.1:8080";

struct Flags {
  std::string sysfs_root;
  bool sysfs_root_set = false;
  std::string proc_root;
  Format format = Format::kYaml;
  Output output = Output::kDefault;
  std::string output_dir;
  bool pcie = true;
  bool map = true;
  std::string shm_path = shm::DefaultSegmentPath();
  bool help = false;
  std::string agent_url = kDefaultAgent;  // "" = do not ask
};

// Accepts "--flag value" and "--flag=value" (and one leading dash, as Go flags do). Returns false
// with a message on bad input.
bool ParseFlags(const std::vector<std::string>& args, Flags& flags, std::string& error) {
  bool stdout_set = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg.rfind('-', 0) == 0 && arg.rfind("--", 0) != 0 && arg.size() > 2) arg = "-" + arg;
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
    auto non_empty = [&]() {
      if (!take_value()) return false;
      if (value.empty()) error = arg + " must not be empty";
      return !value.empty();
    };
    if (arg == "-h" || arg == "--help") {
      flags.help = true;
    } else if (arg == "--sysfs-root") {
      if (!non_empty()) return false;
      flags.sysfs_root = value;
      flags.sysfs_root_set = true;
    } else if (arg == "--proc-root") {
      if (!non_empty()) return false;
      flags.proc_root = value;
    } else if (arg == "--output-dir") {
      if (!non_empty()) return false;
      flags.output_dir = value;
    } else if (arg == "--stdout") {
      if (has_value && value != "true") {
        error = "--stdout takes no value";
        return false;
      }
      stdout_set = true;
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
    } else if (arg == "--agent") {
      if (!take_value()) return false;
      if (value.empty()) {
        error = "--agent must not be empty (use --no-agent)";
        return false;
      }
      flags.agent_url = value;
    } else if (arg == "--no-agent" && !has_value) {
      flags.agent_url.clear();
    } else {
      error = "unknown argument \"" + args[i] + "\"";
      return false;
    }
  }
  if (stdout_set && !flags.output_dir.empty()) {
    error = "--stdout and --output-dir cannot be used together";
    return false;
  }
  if (stdout_set) flags.output = Output::kStdout;
  if (!flags.output_dir.empty()) flags.output = Output::kDirectory;
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

// The agent's /debug/resourceslices as a JSON object {"url", "resourceSlices": {...}}, or
// {"url", "error"} when it cannot be had: gatherinfo reports, it does not fail on that.
std::string AgentSection(const std::string& url) {
  rapidjson::Document out(rapidjson::kObjectType);
  auto& a = out.GetAllocator();
  out.AddMember("url", rapidjson::Value(url.c_str(), a), a);
  std::string error;
  auto http = kube::NewCurlHttpClient({});
  if (!http.ok()) {
    error = http.status().message();
  } else {
    kube::HttpRequest request;
    request.url = url + "/debug/resourceslices";
    request.timeout = std::chrono::seconds(2);
    const kube::HttpResponse r = (*http)->Send(request);
    rapidjson::Document body;
    if (r.transport_error != kube::TransportError::kNone) {
      error = "not reachable: " + r.error_message;
    } else if (r.status != 200) {
      error = "HTTP " + std::to_string(r.status) + " (not a dracpu-dra-agent of this version?)";
    } else if (body.Parse(r.body.c_str()).HasParseError() || !body.IsObject() ||
               !body.HasMember("published")) {
      error = "the answer is not the agent's ResourceSlice state";
    } else {
      out.AddMember("resourceSlices", rapidjson::Value(body, a), a);
    }
  }
  if (!error.empty()) out.AddMember("error", rapidjson::Value(error.c_str(), a), a);
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  out.Accept(w);
  return b.GetString();
}

// A few lines for people: what the cluster does with this node's slices.
std::string AgentSummary(const std::string& section_json) {
  rapidjson::Document d;
  d.Parse(section_json.c_str());
  std::string out = "\nResourceSlices (dra-agent at " + std::string(d["url"].GetString()) + ")\n";
  if (d.HasMember("error")) return out + "  " + d["error"].GetString() + "\n";
  const rapidjson::Value& s = d["resourceSlices"];
  auto text = [](const rapidjson::Value& v, const char* k) {
    return v.HasMember(k) && v[k].IsString() ? std::string(v[k].GetString()) : std::string();
  };
  out += std::string("  published: ") + (s["published"].GetBool() ? "yes" : "no") +
         (s.HasMember("slices") ? ", " + std::to_string(s["slices"].GetInt()) + " slice(s)" : "") +
         (s["rejected"].GetBool() ? ", REFUSED by the API server" : "") + "\n";
  if (s.HasMember("errors")) {
    for (const auto& e : s["errors"].GetArray()) {
      out += "  error: " + text(e, "code") + " " + text(e, "reason") + ": " +
             (text(e, "field").empty() ? "" : text(e, "field") + ": ") + text(e, "message") + " (" +
             std::to_string(e["count"].GetUint64()) + "x)\n";
    }
  }
  if (s.HasMember("shapeNotes")) {
    for (const auto& n : s["shapeNotes"].GetArray())
      out += "  note: " + std::string(n.GetString()) + "\n";
  }
  if (s.HasMember("server")) {
    const rapidjson::Value& server = s["server"];
    out += "  server: " +
           (text(server, "version").empty() ? "version unknown" : text(server, "version"));
    for (const auto& f : server["features"].GetObject()) {
      out += std::string(", ") + f.name.GetString() + " " + text(f.value, "state");
    }
    out += "\n";
  }
  return out;
}

const char* Extension(Format f) {
  switch (f) {
    case Format::kJson:
      return "json";
    case Format::kSummary:
      return "txt";
    case Format::kYaml:
      break;
  }
  return "yaml";
}

// Creates the report file: in `dir` with the reference's timestamped name (O_EXCL, 0600; `dir`
// made 0755), or a temporary file in `temp_dir` when `dir` is empty. Sets `path`.
Result<UniqueFd> CreateReportFile(const std::string& dir, const std::string& temp_dir,
                                  Format format, std::string& path) {
  const std::string ext = Extension(format);
  if (dir.empty()) {
    path = (temp_dir.empty() ? std::string("/tmp") : temp_dir) + "/dracpu-gatherinfo-XXXXXX." + ext;
    UniqueFd fd(::mkstemps(path.data(), static_cast<int>(ext.size() + 1)));
    if (!fd) return ErrnoStatus("create " + path, errno);
    return fd;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InternalError("create " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0755);
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  path = dir + "/dracpu-gatherinfo-" + stamp + "-" + std::to_string(::getpid()) + "." + ext;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) {
    if (errno == EEXIST) return AlreadyExistsError("output file already exists: " + path);
    return ErrnoStatus("create " + path, errno);
  }
  return fd;
}

Status WriteReport(const std::string& text, const std::string& dir, const std::string& temp_dir,
                   Format format, std::string& path) {
  ASSIGN_OR_RETURN(UniqueFd fd, CreateReportFile(dir, temp_dir, format, path));
  std::string_view rest = text;
  Status written;
  while (!rest.empty() && written.ok()) {
    const ssize_t n = ::write(fd.get(), rest.data(), rest.size());
    if (n < 0 && errno != EINTR) written = ErrnoStatus("write " + path, errno);
    if (n > 0) rest.remove_prefix(static_cast<size_t>(n));
  }
  if (written.ok() && ::fsync(fd.get()) != 0) written = ErrnoStatus("fsync " + path, errno);
  fd.Reset();
  if (!written.ok()) ::unlink(path.c_str());  // no half report left behind
  return written;
}

int Run(const std::vector<std::string>& args, CommandIo io, bool file_by_default) {
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
  const std::string host_root = io.host_root.empty() ? "/" : io.host_root;
  if (flags.sysfs_root.empty()) flags.sysfs_root = host_root;
  if (flags.proc_root.empty()) flags.proc_root = host_root;

  ReportHeader header{"dracpu-dra-agent", DRACPU_VERSION, flags.sysfs_root, std::nullopt, {}, ""};
  std::string overlay_path;
  std::unique_ptr<FileSystem> proc_fs;
  if (auto fs = NewPosixFileSystem(flags.proc_root); fs.ok()) {
    proc_fs = std::move(fs).value();
    auto agent = FindRunningAgent(*proc_fs, ::getpid());
    if (agent.ok()) {
      header.driver = DriverSection{agent->pid, EffectiveConfigFields(agent->config)};
      for (const std::string& w : agent->warnings) {
        io.err << "gatherinfo: dracpu-dra-agent pid " << agent->pid << ": " << w << "\n";
      }
      if (!flags.sysfs_root_set) overlay_path = agent->overlay_path;
    } else {
      io.err << "gatherinfo: " << agent.status().message() << ": no driverConfig in the report\n";
    }
    // The kubelet root the agent uses, in its mount namespace (else the default, on this root).
    const std::string kubelet_root =
        agent.ok() ? "proc/" + std::to_string(agent->pid) + "/root" + agent->config.kubelet_root_dir
                   : "var/lib/kubelet";
    const auto state = ReadKubeletCpuManagerState(*proc_fs, kubelet_root);
    header.kubelet_cpu_manager = {
        {"stateFile", proc_fs->HostPath(kubelet_root + "/" + kCpuManagerStateFile)},
        {"found", state.ok()},
        {"policyName", state.ok() ? state->policy : std::string()},
        {"conflict", KubeletCpuManagerConflict(state)}};
    if (!state.ok() && state.status().code() != StatusCode::kNotFound) {
      io.err << "gatherinfo: " << state.status().message() << "\n";
    }
  } else {
    io.err << "gatherinfo: --proc-root: " << fs.status().message() << "\n";
  }

  Result<std::unique_ptr<FileSystem>> fs = NewPosixFileSystem(flags.sysfs_root);
  if (fs.ok() && !overlay_path.empty()) {
    fs = WithSysfsOverlay(std::move(fs).value(), *proc_fs, overlay_path);
  }
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
  std::string report;
  if (flags.map) header.node_map = NodeMapText(*topo, flags.shm_path);
  const std::string agent = flags.agent_url.empty() ? "" : AgentSection(flags.agent_url);
  switch (flags.format) {
    case Format::kJson: {
      if (agent.empty()) {
        report = RenderTopologyJson(*topo, header);
        break;
      }
      rapidjson::Document doc;
      doc.Parse(RenderTopologyJson(*topo, header).c_str());
      rapidjson::Document section(&doc.GetAllocator());
      section.Parse(agent.c_str());
      doc.AddMember("agent", rapidjson::Value(section, doc.GetAllocator()), doc.GetAllocator());
      rapidjson::StringBuffer b;
      rapidjson::Writer<rapidjson::StringBuffer> w(b);
      doc.Accept(w);
      report = std::string(b.GetString()) + "\n";
      break;
    }
    case Format::kSummary:
      report = RenderTopologySummary(*topo, header);
      if (!agent.empty()) report += AgentSummary(agent);
      break;
    case Format::kYaml: {
      Result<std::string> yaml = RenderTopologyYaml(*topo, header);
      if (!yaml.ok()) {
        io.err << "gatherinfo: " << yaml.status().ToString() << "\n";
        return kExitFailed;
      }
      report = std::move(yaml).value();
      // JSON is YAML flow syntax: the agent's state as one more top-level key.
      if (!agent.empty()) {
        report += std::string(report.back() == '\n' ? "" : "\n") + "agent: " + agent + "\n";
      }
      break;
    }
  }
  if (flags.output == Output::kStdout || (flags.output == Output::kDefault && !file_by_default)) {
    io.out << report;
    io.out.flush();
    return io.out ? kExitOk : kExitFailed;
  }
  std::string path;
  if (Status s = WriteReport(report, flags.output_dir, io.temp_dir, flags.format, path); !s.ok()) {
    io.err << "gatherinfo: " << s.message() << "\n";
    return kExitFailed;
  }
  io.err << "gatherinfo: report written to " << path << "\n";
  return kExitOk;
}

}  // namespace

int GatherInfoCommand(const std::vector<std::string>& args, CommandIo io) {
  return Run(args, std::move(io), /*file_by_default=*/false);
}

int LegacyGatherInfoCommand(const std::vector<std::string>& args, CommandIo io) {
  return Run(args, std::move(io), /*file_by_default=*/true);
}

}  // namespace dracpu::dra
