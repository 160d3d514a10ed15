// dracpu-sim-kubelet: the kubelet simulator as a command for scripts and `make demo`.
//
//   dracpu-sim-kubelet --registry-dir DIR [--versions v1.DRAPlugin,v1beta1.DRAPlugin]
//                      [--driver dra.cpu] [--timeout-ms 10000] COMMAND [ARGS]
// Commands (each registers first, as the kubelet would):
//   register                      print the registration as JSON
//   prepare NS/NAME/UID ...       NodePrepareResources; JSON {uid: {devices, error}}
//   unprepare NS/NAME/UID ...     NodeUnprepareResources; JSON {uid: error}
//   health N                      the first N health-stream updates as JSON
//   session                       read such commands (and "probe") from stdin, one JSON line each
// Exit: 0 success, 1 the driver refused or failed a claim, 2 usage error, 3 transport failure.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/sim/kubelet/kubelet_simulator.h"

namespace {

using dracpu::Result;
using dracpu::Status;
using namespace dracpu::sim;
using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Str(Writer& w, const std::string& s) {
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
}

void StrArray(Writer& w, const std::vector<std::string>& v) {
  w.StartArray();
  for (const auto& s : v) Str(w, s);
  w.EndArray();
}

std::string ErrorJson(const Status& s) {
  rapidjson::StringBuffer b;
  Writer w(b);
  w.StartObject();
  w.Key("error");
  Str(w, s.ToString());
  w.EndObject();
  return b.GetString();
}

Result<std::vector<SimClaim>> ParseClaims(const std::vector<std::string>& args) {
  std::vector<SimClaim> claims;
  for (const std::string& a : args) {
    const size_t s1 = a.find('/');
    const size_t s2 = s1 == std::string::npos ? s1 : a.find('/', s1 + 1);
    if (s2 == std::string::npos || a.find('/', s2 + 1) != std::string::npos) {
      return dracpu::InvalidArgumentError("claim \"" + a + "\" is not NAMESPACE/NAME/UID");
    }
    claims.push_back({a.substr(0, s1), a.substr(s1 + 1, s2 - s1 - 1), a.substr(s2 + 1)});
  }
  if (claims.empty()) return dracpu::InvalidArgumentError("no claims given");
  return claims;
}

// Runs one command; prints one JSON document line. Returns the exit code.
int Run(KubeletSimulator& sim, const std::vector<std::string>& cmd, std::ostream& out) {
  if (cmd.empty()) {
    out << ErrorJson(dracpu::InvalidArgumentError("empty command")) << "\n";
    return 2;
  }
  const std::string& verb = cmd[0];
  const std::vector<std::string> args(cmd.begin() + 1, cmd.end());
  rapidjson::StringBuffer b;
  Writer w(b);
  int code = 0;
  if (verb == "probe") {
    Status s = sim.ProbeRegistration();
    if (!s.ok()) {
      out << ErrorJson(s) << "\n";
      return 3;
    }
    w.StartObject();
    w.Key("probe");
    Str(w, "ok");
    w.EndObject();
  } else if (verb == "prepare" || verb == "unprepare") {
    auto claims = ParseClaims(args);
    if (!claims.ok()) {
      out << ErrorJson(claims.status()) << "\n";
      return 2;
    }
    w.StartObject();
    if (verb == "prepare") {
      auto r = sim.Prepare(*claims);
      if (!r.ok()) {
        out << ErrorJson(r.status()) << "\n";
        return 3;
      }
      for (const auto& [uid, result] : *r) {
        w.Key(uid.c_str());
        w.StartObject();
        w.Key("devices");
        w.StartArray();
        for (const SimDevice& d : result.devices) {
          w.StartObject();
          w.Key("requestNames");
          StrArray(w, d.request_names);
          w.Key("poolName");
          Str(w, d.pool_name);
          w.Key("deviceName");
          Str(w, d.device_name);
          w.Key("cdiDeviceIds");
          StrArray(w, d.cdi_device_ids);
          w.EndObject();
        }
        w.EndArray();
        w.Key("error");
        Str(w, result.error);
        w.EndObject();
        if (!result.error.empty()) code = 1;
      }
    } else {
      auto r = sim.Unprepare(*claims);
      if (!r.ok()) {
        out << ErrorJson(r.status()) << "\n";
        return 3;
      }
      for (const auto& [uid, error] : *r) {
        w.Key(uid.c_str());
        Str(w, error);
        if (!error.empty()) code = 1;
      }
    }
    w.EndObject();
  } else if (verb == "health") {
    int n = args.empty() ? 1 : std::atoi(args[0].c_str());
    if (n < 1) {
      out << ErrorJson(dracpu::InvalidArgumentError("health takes a positive count")) << "\n";
      return 2;
    }
    auto r = sim.WatchHealth(n, std::chrono::seconds(60));
    if (!r.ok()) {
      out << ErrorJson(r.status()) << "\n";
      return 3;
    }
    w.StartArray();
    for (const auto& update : *r) {
      w.StartArray();
      for (const SimDeviceHealth& d : update) {
        w.StartObject();
        w.Key("pool");
        Str(w, d.pool_name);
        w.Key("device");
        Str(w, d.device_name);
        w.Key("health");
        Str(w, d.health);
        w.Key("message");
        Str(w, d.message);
        w.Key("timeoutSeconds");
        w.Int64(d.timeout_seconds);
        w.EndObject();
      }
      w.EndArray();
    }
    w.EndArray();
  } else {
    out << ErrorJson(dracpu::InvalidArgumentError("unknown command \"" + verb + "\"")) << "\n";
    return 2;
  }
  out << b.GetString() << "\n";
  return code;
}

int Usage() {
  std::cerr << "usage: dracpu-sim-kubelet --registry-dir DIR [--versions LIST] [--driver NAME]\n"
               "                          [--timeout-ms N] "
               "register|prepare|unprepare|health|session ...\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string registry_dir, driver = "dra.cpu", versions = "v1.DRAPlugin,v1beta1.DRAPlugin";
  int timeout_ms = 10000;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) != 0) break;
    if (i + 1 >= argc) return Usage();
    const std::string v = argv[++i];
    if (a == "--registry-dir")
      registry_dir = v;
    else if (a == "--driver")
      driver = v;
    else if (a == "--versions")
      versions = v;
    else if (a == "--timeout-ms")
      timeout_ms = std::atoi(v.c_str());
    else
      return Usage();
  }
  if (registry_dir.empty() || i >= argc || timeout_ms <= 0) return Usage();
  std::vector<std::string> known;
  std::stringstream vs(versions);
  for (std::string v; std::getline(vs, v, ',');) known.push_back(v);
  KubeletSimulator sim(registry_dir, known);
  auto reg = sim.Register(driver, std::chrono::milliseconds(timeout_ms));
  if (!reg.ok()) {
    std::cout << ErrorJson(reg.status()) << "\n";
    return reg.status().code() == dracpu::StatusCode::kInvalidArgument ? 1 : 3;
  }
  const std::string command = argv[i];
  if (command == "register") {
    rapidjson::StringBuffer b;
    Writer w(b);
    w.StartObject();
    w.Key("name");
    Str(w, reg->name);
    w.Key("endpoint");
    Str(w, reg->endpoint);
    w.Key("supportedVersions");
    StrArray(w, reg->supported_versions);
    w.Key("chosen");
    Str(w, reg->chosen == DraApiVersion::kV1 ? "v1.DRAPlugin" : "v1beta1.DRAPlugin");
    w.EndObject();
    std::cout << b.GetString() << "\n";
    return 0;
  }
  if (command == "session") {
    int last = 0;
    for (std::string line; std::getline(std::cin, line);) {
      std::istringstream words(line);
      std::vector<std::string> cmd;
      for (std::string w; words >> w;) cmd.push_back(w);
      if (cmd.empty()) continue;
      if (cmd[0] == "quit") break;
      last = Run(sim, cmd, std::cout);
      std::cout.flush();
    }
    return last;
  }
  return Run(sim, std::vector<std::string>(argv + i, argv + argc), std::cout);
}
