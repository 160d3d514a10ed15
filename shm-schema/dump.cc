#include "shm-schema/dump.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <cstring>
#include <ctime>

#include "common/log_escape.h"

namespace dracpu::shm {
namespace {

std::string Time(uint64_t realtime_ns) {
  if (realtime_ns == 0) return "-";
  const time_t t = static_cast<time_t>(realtime_ns / 1'000'000'000ULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

std::string Liveness(const AgentRecord& rec, const AgentLiveness& l) {
  if (!l.attached) return "never attached";
  std::string out = l.live ? "live" : "gone";
  if (l.heartbeat_age_s >= 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, ", heartbeat %.1fs ago", l.heartbeat_age_s);
    out += buf;
  }
  (void)rec;
  return out;
}

bool Published(uint64_t t, uint64_t sum) { return t != 0 || sum != 0; }

}  // namespace

DumpContext ReadDumpContext(const Segment& seg) {
  DumpContext ctx;
  ctx.path = seg.path();
  ctx.now_realtime_ns = RealtimeNs();
  for (int r = 0; r < kAgentRoles; ++r) {
    const Result<AgentStatus> st = seg.GetAgentStatus(static_cast<Role>(r));
    if (!st.ok()) continue;
    AgentLiveness& l = ctx.agents[r];
    l.attached = st->attached;
    l.live = st->live;
    if (st->heartbeat_age) {
      l.heartbeat_age_s = static_cast<double>(st->heartbeat_age->count()) / 1e9;
    }
  }
  return ctx;
}

std::string FormatText(const Snapshot& s, const DumpContext& ctx) {
  std::string out;
  char line[8192];  // escaped names can be four times their field
  std::snprintf(line, sizeof line,
                "segment %s  layout v%u.%u  generation %llu%s\nnode %s  boot %s  created %s\n",
                ctx.path.c_str(), s.identity.major, s.identity.minor,
                static_cast<unsigned long long>(s.generation),
                s.consistent ? "" : "  (INCONSISTENT: torn copy)",
                OrDash(LogEscape(s.identity.node_name)).c_str(),
                OrDash(LogEscape(s.identity.boot_id)).c_str(),
                Time(s.identity.created_time_ns).c_str());
  out += line;
  out += "\nAGENTS\n";
  std::snprintf(line, sizeof line, "  %-10s %-7s %-12s %-22s %-9s %s\n", "ROLE", "PID", "PIDNS",
                "STARTED", "ATTACHES", "STATE");
  out += line;
  for (int r = 0; r < kAgentRoles; ++r) {
    const AgentRecord& a = s.agents[r];
    std::snprintf(line, sizeof line, "  %-10s %-7u %-12llu %-22s %-9llu %s  %s\n",
                  std::string(RoleName(static_cast<Role>(r))).c_str(), a.pid,
                  static_cast<unsigned long long>(a.pid_ns_inode), Time(a.start_time_ns).c_str(),
                  static_cast<unsigned long long>(a.attach_count),
                  Liveness(a, ctx.agents[r]).c_str(),
                  a.Version().empty() ? "" : ("version " + LogEscape(a.Version())).c_str());
    out += line;
  }
  out += "\nCPUS\n";
  const bool topo = Published(s.topology.updated_time_ns, s.topology.checksum);
  const bool pool = Published(s.shared_pool.updated_time_ns, s.shared_pool.checksum);
  auto cpus_line = [&](const char* what, bool have, const CpuSet& set) {
    if (!have) {
      std::snprintf(line, sizeof line, "  %-12s (not published)\n", what);
    } else {
      std::snprintf(line, sizeof line, "  %-12s %-5d %s\n", what, set.Count(),
                    OrDash(set.ToListString()).c_str());
    }
    out += line;
  };
  cpus_line("online", topo, s.topology.online);
  cpus_line("reserved", topo, s.topology.reserved);
  cpus_line("allocatable", topo, s.topology.allocatable);
  CpuSet claimed;
  for (const auto& c : s.claims) claimed |= c.cpus;
  cpus_line("claimed", true, claimed);
  cpus_line("shared pool", pool, s.shared_pool.cpus);

  std::snprintf(line, sizeof line, "\nCLAIMS (%zu of %u)\n", s.claims.size(),
                s.identity.claims_capacity);
  out += line;
  if (!s.claims.empty()) {
    std::snprintf(line, sizeof line, "  %-36s %-40s %-9s %-20s %-6s %-22s %s\n", "UID",
                  "NAMESPACE/NAME", "STATE", "CPUS", "MEMS", "PREPARED", "REQUESTS");
    out += line;
  }
  for (const auto& c : s.claims) {
    std::string requests;
    for (uint32_t i = 0; i < c.request_count && i < kMaxRequestsPerClaim; ++i) {
      if (i) requests += ",";
      requests += c.RequestName(static_cast<int>(i));
    }
    // Names come from the segment, which any damage (or a hostile claim) may have filled with
    // anything: escaped, so the table stays one line per record and the terminal stays sane.
    const std::string nsname = LogEscape(c.Namespace()) + "/" + LogEscape(c.Name());
    std::snprintf(line, sizeof line, "  %-36s %-40s %-9s %-20s %-6s %-22s %s\n",
                  LogEscape(c.Uid()).c_str(), nsname.c_str(),
                  std::string(ClaimStateName(c.State())).c_str(),
                  OrDash(c.cpus.ToListString()).c_str(), OrDash(NodeMaskToList(c.mems)).c_str(),
                  Time(c.prepared_time_ns).c_str(), OrDash(LogEscape(requests)).c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "\nCONTAINERS (%zu of %u)\n", s.containers.size(),
                s.identity.containers_capacity);
  out += line;
  if (!s.containers.empty()) {
    std::snprintf(line, sizeof line, "  %-16s %-44s %-9s %-20s %s\n", "ID", "POD/CONTAINER", "KIND",
                  "CPUS", "CLAIMS");
    out += line;
  }
  for (const auto& c : s.containers) {
    std::string claims;
    for (uint32_t i = 0; i < c.claim_count && i < kMaxClaimsPerContainer; ++i) {
      if (i) claims += ",";
      claims += c.ClaimUid(static_cast<int>(i));
    }
    const std::string who =
        LogEscape(c.PodNamespace()) + "/" + LogEscape(c.PodName()) + "/" + LogEscape(c.Name());
    std::snprintf(line, sizeof line, "  %-16s %-44s %-9s %-20s %s\n",
                  LogEscape(c.Id().substr(0, 16)).c_str(), who.c_str(),
                  std::string(ContainerKindName(c.Kind())).c_str(),
                  OrDash(c.cpus.ToListString()).c_str(), OrDash(LogEscape(claims)).c_str());
    out += line;
  }
  return out;
}

std::string FormatJson(const Snapshot& s, const DumpContext& ctx) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  // The segment may be corrupt: a string that is not printable ASCII is written escaped, as the
  // text dump does, so the output is always valid UTF-8 JSON.
  auto str = [&w](std::string_view v) {
    const std::string escaped = IsLogSafe(v) ? std::string() : LogEscape(v, v.size());
    if (!escaped.empty()) v = escaped;
    w.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
  };
  auto key = [&](const char* k) { w.Key(k); };
  w.StartObject();
  key("path");
  str(ctx.path);
  key("layoutMajor");
  w.Uint(s.identity.major);
  key("layoutMinor");
  w.Uint(s.identity.minor);
  key("generation");
  w.Uint64(s.generation);
  key("consistent");
  w.Bool(s.consistent);
  key("nodeName");
  str(s.identity.node_name);
  key("bootId");
  str(s.identity.boot_id);
  key("createdTimeNs");
  w.Uint64(s.identity.created_time_ns);
  key("agents");
  w.StartArray();
  for (int r = 0; r < kAgentRoles; ++r) {
    const AgentRecord& a = s.agents[r];
    w.StartObject();
    key("role");
    str(RoleName(static_cast<Role>(r)));
    key("attached");
    w.Bool(ctx.agents[r].attached);
    key("live");
    w.Bool(ctx.agents[r].live);
    key("pid");
    w.Uint(a.pid);
    key("pidNamespaceInode");
    w.Uint64(a.pid_ns_inode);
    key("startTimeNs");
    w.Uint64(a.start_time_ns);
    key("heartbeatAgeSeconds");
    w.Double(ctx.agents[r].heartbeat_age_s);
    key("attachCount");
    w.Uint64(a.attach_count);
    key("version");
    str(a.Version());
    w.EndObject();
  }
  w.EndArray();
  const bool topo = Published(s.topology.updated_time_ns, s.topology.checksum);
  const bool pool = Published(s.shared_pool.updated_time_ns, s.shared_pool.checksum);
  key("cpus");
  w.StartObject();
  key("topologyPublished");
  w.Bool(topo);
  key("online");
  str(s.topology.online.ToListString());
  key("reserved");
  str(s.topology.reserved.ToListString());
  key("allocatable");
  str(s.topology.allocatable.ToListString());
  key("sharedPoolPublished");
  w.Bool(pool);
  key("sharedPool");
  str(s.shared_pool.cpus.ToListString());
  w.EndObject();
  key("claims");
  w.StartArray();
  for (const auto& c : s.claims) {
    w.StartObject();
    key("uid");
    str(c.Uid());
    key("namespace");
    str(c.Namespace());
    key("name");
    str(c.Name());
    key("state");
    str(ClaimStateName(c.State()));
    key("cpus");
    str(c.cpus.ToListString());
    key("mems");
    str(NodeMaskToList(c.mems));
    key("preparedTimeNs");
    w.Uint64(c.prepared_time_ns);
    key("requests");
    w.StartArray();
    for (uint32_t i = 0; i < c.request_count && i < kMaxRequestsPerClaim; ++i) {
      str(c.RequestName(static_cast<int>(i)));
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  key("containers");
  w.StartArray();
  for (const auto& c : s.containers) {
    w.StartObject();
    key("id");
    str(c.Id());
    key("podUid");
    str(c.PodUid());
    key("podNamespace");
    str(c.PodNamespace());
    key("podName");
    str(c.PodName());
    key("name");
    str(c.Name());
    key("kind");
    str(ContainerKindName(c.Kind()));
    key("cpus");
    str(c.cpus.ToListString());
    key("mems");
    str(NodeMaskToList(c.mems));
    key("claims");
    w.StartArray();
    for (uint32_t i = 0; i < c.claim_count && i < kMaxClaimsPerContainer; ++i) {
      str(c.ClaimUid(static_cast<int>(i)));
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

}  // namespace dracpu::shm
