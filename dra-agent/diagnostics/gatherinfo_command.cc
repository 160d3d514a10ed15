#include "dra-agent/diagnostics/gatherinfo_command.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <optional>
#include <ostream>

#include "common/file_system.h"
#include "common/topology_discovery.h"
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

constexpr char kUsage[] =
    "usage: dracpu-dra-agent gatherinfo [--sysfs-root DIR] [--format yaml|json|summary] "
    "[--no-pcie] [--shm-path P] [--no-map] [--agent URL | --no-agent]\n"
    "  --sysfs-root DIR  read DIR/sys/... (default /)\n"
    "  --format F        yaml (default), json, or summary (a short table for people)\n"
    "  --no-pcie         do not read PCIe root complexes\n"
    "  --shm-path P      the segment whose CPU owners the node map shows\n"
    "                    (default /run/dracpu/state.v<MAJOR>.shm)\n"
    "  --no-map          leave the node map (dracpu-shm map) out of the report\n"
    "  --agent URL       also show the running dra-agent's ResourceSlice state (what the API\n"
    "                    server refused, what it keeps) from URL/debug/resourceslices\n"
    "                    (default http://127.0.0.1:8080, the agent's --bind-address)\n"
    "  --no-agent        do not ask the agent\n";

constexpr char kDefaultAgent[] = "http://127.0.0.1:8080";

struct Flags {
  std::string sysfs_root = "/";
  Format format = Format::kYaml;
  bool pcie = true;
  bool map = true;
  std::string shm_path = shm::DefaultSegmentPath();
  bool help = false;
  std::string agent_url = kDefaultAgent;  // "" = do not ask
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
  const std::string agent = flags.agent_url.empty() ? "" : AgentSection(flags.agent_url);
  switch (flags.format) {
    case Format::kJson: {
      if (agent.empty()) {
        io.out << RenderTopologyJson(*topo, header);
        break;
      }
      rapidjson::Document report;
      report.Parse(RenderTopologyJson(*topo, header).c_str());
      rapidjson::Document section(&report.GetAllocator());
      section.Parse(agent.c_str());
      report.AddMember("agent", rapidjson::Value(section, report.GetAllocator()),
                       report.GetAllocator());
      rapidjson::StringBuffer b;
      rapidjson::Writer<rapidjson::StringBuffer> w(b);
      report.Accept(w);
      io.out << b.GetString() << "\n";
      break;
    }
    case Format::kSummary:
      io.out << RenderTopologySummary(*topo, header);
      if (!agent.empty()) io.out << AgentSummary(agent);
      break;
    case Format::kYaml: {
      Result<std::string> yaml = RenderTopologyYaml(*topo, header);
      if (!yaml.ok()) {
        io.err << "gatherinfo: " << yaml.status().ToString() << "\n";
        return kExitFailed;
      }
      io.out << *yaml;
      // JSON is YAML flow syntax: the agent's state as one more top-level key.
      if (!agent.empty())
        io.out << (yaml->back() == '\n' ? "" : "\n") << "agent: " << agent << "\n";
      break;
    }
  }
  io.out.flush();
  return io.out ? kExitOk : kExitFailed;
}

}  // namespace dracpu::dra
