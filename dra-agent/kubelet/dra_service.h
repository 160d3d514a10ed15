// gRPC adapters from the kubelet's DRA plugin API (v1 and v1beta1) to ClaimPreparer. They only
// translate messages; all behaviour lives in the preparer. Safe for concurrent calls (gRPC runs
// them on its thread pool; the preparer serializes per claim).
#pragma once

#include "dra-agent/prepare/claim_preparer.h"
#include "dra_v1.grpc.pb.h"
#include "dra_v1beta1.grpc.pb.h"

namespace dracpu::dra {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

class DraV1Service final : public drav1::DRAPlugin::Service {
 public:
  explicit DraV1Service(ClaimPreparer& preparer) : preparer_(preparer) {}
  grpc::Status NodePrepareResources(grpc::ServerContext* context,
                                    const drav1::NodePrepareResourcesRequest* request,
                                    drav1::NodePrepareResourcesResponse* response) override;
  grpc::Status NodeUnprepareResources(grpc::ServerContext* context,
                                      const drav1::NodeUnprepareResourcesRequest* request,
                                      drav1::NodeUnprepareResourcesResponse* response) override;

 private:
  ClaimPreparer& preparer_;
};

class DraV1beta1Service final : public drav1beta1::DRAPlugin::Service {
 public:
  explicit DraV1beta1Service(ClaimPreparer& preparer) : preparer_(preparer) {}
  grpc::Status NodePrepareResources(grpc::ServerContext* context,
                                    const drav1beta1::NodePrepareResourcesRequest* request,
                                    drav1beta1::NodePrepareResourcesResponse* response) override;
  grpc::Status NodeUnprepareResources(grpc::ServerContext* context,
                                      const drav1beta1::NodeUnprepareResourcesRequest* request,
                                      drav1beta1::NodeUnprepareResourcesResponse* response) override;

 private:
  ClaimPreparer& preparer_;
};

}  // namespace dracpu::dra
