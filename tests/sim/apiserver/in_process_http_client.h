// InProcessHttpClient: a kube::HttpClient that hands each request straight to a SimState, with
// no sockets and no threads: the same answers as SimApiServer (faults, auth, the request log,
// every endpoint but watches), at a fraction of the cost. For tests that make thousands of API
// calls (the corpus-wide slice test). Test-only.
#pragma once

#include <memory>
#include <string>

#include "dra-agent/kube/http_client.h"
#include "dra-agent/kube/kube_client.h"
#include "tests/sim/apiserver/sim_state.h"

namespace dracpu::sim {

class InProcessHttpClient final : public kube::HttpClient {
 public:
  explicit InProcessHttpClient(std::shared_ptr<SimState> state) : state_(std::move(state)) {}

  kube::HttpResponse Send(const kube::HttpRequest& request) override {
    kube::HttpResponse out;
    // "http://sim/<path>?<query>": everything after the authority is the target.
    const size_t scheme = request.url.find("://");
    const size_t slash = request.url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    const std::string target = slash == std::string::npos ? "/" : request.url.substr(slash);
    if (SimState::IsWatch(target)) {
      out.transport_error = kube::TransportError::kOther;
      out.error_message = "watches are not served in process";
      return out;
    }
    SimRequest r{request.method, target, "", request.body};
    for (const auto& [name, value] : request.headers) {
      if (name == "Authorization") r.authorization = value;
    }
    std::optional<Fault> fault = state_->TakeFault(r.method, r.target);
    SimResponse response;
    if (fault && fault->action == FaultAction::kDropConnection) {
      out.transport_error = kube::TransportError::kIo;
      out.error_message = "connection dropped (injected)";
      return out;
    }
    if (fault && fault->action == FaultAction::kStatus) {
      response.status = fault->status;
      response.body =
          SimState::StatusJson(fault->status, fault->reason, "injected fault: " + fault->reason);
      response.retry_after = fault->retry_after;
    } else if (std::optional<SimResponse> denied = state_->CheckAuth(r)) {
      response = *denied;
    } else {
      response = state_->Handle(r);
    }
    RecordedRequest record;
    record.method = r.method;
    const size_t q = target.find('?');
    record.path = target.substr(0, q);
    record.query = q == std::string::npos ? "" : target.substr(q + 1);
    record.authorization = r.authorization;
    record.body = r.body;
    record.status = response.status;
    state_->Record(std::move(record));
    out.status = response.status;
    out.body = std::move(response.body);
    out.retry_after = response.retry_after;
    return out;
  }

 private:
  std::shared_ptr<SimState> state_;
};

// A KubeClient on `state` in process ("http://sim", one attempt per request: a test sees each
// answer as the server gave it). `fs`, `clock` and `random` must outlive the client.
inline Result<std::unique_ptr<kube::KubeClient>> NewInProcessKubeClient(
    std::shared_ptr<SimState> state, const FileSystem& fs, Clock& clock, Random& random) {
  kube::ClusterConfig config;
  config.server = "http://sim";
  kube::ClientOptions options;
  options.max_attempts = 1;
  return kube::KubeClient::Create(config, std::make_unique<InProcessHttpClient>(std::move(state)),
                                  fs, clock, random, options);
}

}  // namespace dracpu::sim
