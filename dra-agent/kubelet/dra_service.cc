#include "dra-agent/kubelet/dra_service.h"

namespace dracpu::dra {
namespace {

// v1 and v1beta1 messages have the same shape (v1 adds Device.share_id), so one template serves
// both versions.
template <typename Request>
std::vector<ClaimRef> ToClaimRefs(const Request& request) {
  std::vector<ClaimRef> refs;
  refs.reserve(static_cast<size_t>(request.claims_size()));
  for (const auto& c : request.claims()) refs.push_back({c.namespace_(), c.name(), c.uid()});
  return refs;
}

template <typename Request, typename Response>
grpc::Status Prepare(ClaimPreparer& preparer, const Request& request, Response* response) {
  for (auto& [uid, result] : preparer.Prepare(ToClaimRefs(request))) {
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

template <typename Request, typename Response>
grpc::Status Unprepare(ClaimPreparer& preparer, const Request& request, Response* response) {
  for (auto& [uid, error] : preparer.Unprepare(ToClaimRefs(request))) {
    (*response->mutable_claims())[uid].set_error(error);
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status DraV1Service::NodePrepareResources(grpc::ServerContext*,
                                                const drav1::NodePrepareResourcesRequest* request,
                                                drav1::NodePrepareResourcesResponse* response) {
  return Prepare(preparer_, *request, response);
}
grpc::Status DraV1Service::NodeUnprepareResources(
    grpc::ServerContext*, const drav1::NodeUnprepareResourcesRequest* request,
    drav1::NodeUnprepareResourcesResponse* response) {
  return Unprepare(preparer_, *request, response);
}
grpc::Status DraV1beta1Service::NodePrepareResources(
    grpc::ServerContext*, const drav1beta1::NodePrepareResourcesRequest* request,
    drav1beta1::NodePrepareResourcesResponse* response) {
  return Prepare(preparer_, *request, response);
}
grpc::Status DraV1beta1Service::NodeUnprepareResources(
    grpc::ServerContext*, const drav1beta1::NodeUnprepareResourcesRequest* request,
    drav1beta1::NodeUnprepareResourcesResponse* response) {
  return Unprepare(preparer_, *request, response);
}

}  // namespace dracpu::dra
