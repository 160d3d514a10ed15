// Test support for the ResourceSlice publisher against the in-process apiserver simulator:
// a simulator on 127.0.0.1 (port 0, restartable on the same port), a KubeClient with strict
// field validation, and readers of what the simulator stores. Test-only.
#pragma once

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "dra-agent/kube/curl_http_client.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/slices/slice_publisher.h"
#include "tests/sim/apiserver/sim_apiserver.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::dra::pubtest {

inline constexpr char kNode[] = "node-1";
inline constexpr char kNodeUid[] = "uid-node-1";

// One stored slice, parsed.
struct StoredSlice {
  std::string name;
  int64_t generation = 0;
  int64_t count = 0;
  std::string owner_uid;
  std::vector<std::string> device_names;
  std::map<std::string, std::string> cpu_capacity;  // device -> capacity value
  std::string json;
};

class SimEnv {
 public:
  // Starts the simulator, serving `gates` (a Kubernetes version's defaults); `clock` is the
  // client's (and usually the publisher's) clock.
  void Start(Clock& clock, const sim::FeatureGates& gates = sim::FeatureGates::Default()) {
    auto fs = NewPosixFileSystem("/");
    ASSERT_THAT(fs, IsOk());
    fs_ = *std::move(fs);
    sim::SimState::Options state_options;
    state_options.gates = gates;
    state_ = std::make_shared<sim::SimState>(state_options);
    state_->AddNode(kNode, kNodeUid);
    StartServer(0);
    kube::ClusterConfig config;
    config.server = server_->url();
    auto http = kube::NewCurlHttpClient(config.tls);
    ASSERT_THAT(http, IsOk());
    kube::ClientOptions options;
    options.max_attempts = 2;
    options.request_timeout = std::chrono::milliseconds(5000);
    options.backoff = {std::chrono::milliseconds(10), std::chrono::milliseconds(50), 2.0, 0.5};
    options.strict_field_validation = true;
    auto client = kube::KubeClient::Create(config, *std::move(http), *fs_, clock, random_, options);
    ASSERT_THAT(client, IsOk());
    client_ = *std::move(client);
  }

  void StartServer(uint16_t port) {
    sim::SimServerOptions options;
    options.port = port;
    options.bookmark_interval = std::chrono::milliseconds(200);
    auto server = sim::SimApiServer::Start(options, state_);
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
  }
  // Takes the API down (open watches break) and brings it back on the same port.
  void StopServer() { server_->Stop(); }
  void RestartServer() {
    const uint16_t port = server_->port();
    server_.reset();
    StartServer(port);
  }

  // The node's slices as stored, sorted by name.
  std::vector<StoredSlice> Slices(const std::string& node = kNode) const {
    std::vector<StoredSlice> out;
    for (const std::string& text : state_->ResourceSlices()) {
      rapidjson::Document d;
      d.Parse(text.c_str());
      if (d.HasParseError() || d["spec"]["nodeName"].GetString() != node) continue;
      StoredSlice s;
      s.json = text;
      s.name = d["metadata"]["name"].GetString();
      s.generation = d["spec"]["pool"]["generation"].GetInt64();
      s.count = d["spec"]["pool"]["resourceSliceCount"].GetInt64();
      const auto& meta = d["metadata"];
      if (meta.HasMember("ownerReferences") && meta["ownerReferences"].Size() == 1) {
        const auto& o = meta["ownerReferences"][0];
        if (std::string(o["kind"].GetString()) == "Node" &&
            std::string(o["name"].GetString()) == kNode && o["controller"].GetBool()) {
          s.owner_uid = o["uid"].GetString();
        }
      }
      if (d["spec"].HasMember("devices")) {
        for (const auto& dev : d["spec"]["devices"].GetArray()) {
          const std::string name = dev["name"].GetString();
          s.device_names.push_back(name);
          if (dev.HasMember("capacity") && dev["capacity"].HasMember("dra.cpu/cpu")) {
            s.cpu_capacity[name] = dev["capacity"]["dra.cpu/cpu"]["value"].GetString();
          }
        }
      }
      out.push_back(std::move(s));
    }
    return out;
  }

  sim::SimState& state() { return *state_; }
  kube::KubeClient& client() { return *client_; }

 private:
  std::unique_ptr<FileSystem> fs_;
  DefaultRandom random_;
  std::shared_ptr<sim::SimState> state_;
  std::unique_ptr<sim::SimApiServer> server_;
  std::unique_ptr<kube::KubeClient> client_;
};

}  // namespace dracpu::dra::pubtest
