// gRPC adapters from the kubelet's DRA plugin API (v1 and v1beta1) to ClaimPreparer. Private to
// dra-agent/kubelet/ (it brings the generated code; the agent sees kubelet_plugin_server.h). They
// only translate messages; all behaviour lives in the preparer. Safe for concurrent calls (gRPC
// runs them on its thread pool; the preparer serializes per claim).
#pragma once

#include <string>
#include <vector>

#include "dra-agent/prepare/claim_preparer.h"
#include "dra_v1.grpc.pb.h"
#include "dra_v1beta1.grpc.pb.h"

namespace dracpu::dra {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

// v1 and v1beta1 have the same messages (v1 adds Device.share_id), so one template serves both;
// `Api` is the version's generated namespace bundled as a traits struct.
template <typename Api>
class DraService final : public Api::Service {
 public:
  explicit DraService(ClaimPreparer& preparer) : preparer_(preparer) {}

  grpc::Status NodePrepareResources(grpc::ServerContext*,
                                    const typename Api::PrepareRequest* request,
                                    typename Api::PrepareResponse* response) override {
    for (auto& [uid, result] : preparer_.Prepare(ToClaimRefs(*request))) {
      auto& out = (*response->mutable_claims())[uid];
      out.set_error(result.error);
      if (!result.error.empty()) continue;
      for (const PreparedDevice& d : result.devices) {
        auto* device = out.add_devices();
        for (const std::string& r : d.request_names) device->add_request_names(r);
        device->set_pool_name(d.pool_name);
        device->set_device_name(d.device_name);
        for (const std::string& id : d.cdi_device_ids) device->add_cdi_device_ids(id);
        if constexpr (requires { device->set_share_id(std::string()); }) {
          if (d.share_id) device->set_share_id(*d.share_id);
        }
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                      const typename Api::UnprepareRequest* request,
                                      typename Api::UnprepareResponse* response) override {
    for (auto& [uid, error] : preparer_.Unprepare(ToClaimRefs(*request))) {
      (*response->mutable_claims())[uid].set_error(error);
    }
    return grpc::Status::OK;
  }

 private:
  template <typename Request>
  static std::vector<ClaimRef> ToClaimRefs(const Request& request) {
    std::vector<ClaimRef> refs;
    refs.reserve(static_cast<size_t>(request.claims_size()));
    for (const auto& c : request.claims()) refs.push_back({c.namespace_(), c.name(), c.uid()});
    return refs;
  }

  ClaimPreparer& preparer_;
};

template <typename Plugin, typename PrepReq, typename PrepResp, typename UnprepReq,
          typename UnprepResp>
struct DraApi {
  using Service = typename Plugin::Service;
  using PrepareRequest = PrepReq;
  using PrepareResponse = PrepResp;
  using UnprepareRequest = UnprepReq;
  using UnprepareResponse = UnprepResp;
};

using DraV1Service =
    DraService<DraApi<drav1::DRAPlugin, drav1::NodePrepareResourcesRequest,
                      drav1::NodePrepareResourcesResponse, drav1::NodeUnprepareResourcesRequest,
                      drav1::NodeUnprepareResourcesResponse>>;
using DraV1beta1Service = DraService<
    DraApi<drav1beta1::DRAPlugin, drav1beta1::NodePrepareResourcesRequest,
           drav1beta1::NodePrepareResourcesResponse, drav1beta1::NodeUnprepareResourcesRequest,
           drav1beta1::NodeUnprepareResourcesResponse>>;

}  // namespace dracpu::dra
