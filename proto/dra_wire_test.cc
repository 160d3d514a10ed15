// Wire identity of our DRA v1/v1beta1 and health protos with the kubelet's: field numbers, types,
// map encoding, explicit presence of share_id, and the gRPC method paths the kubelet dials.
#include <gtest/gtest.h>

#include <string>

#include "dra_health_v1.grpc.pb.h"
#include "dra_health_v1alpha1.grpc.pb.h"
#include "dra_v1.grpc.pb.h"
#include "dra_v1beta1.grpc.pb.h"

namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TEST(DraWire, ClaimFieldNumbers) {
  k8s::io::kubelet::pkg::apis::dra::v1::Claim claim;
  claim.set_namespace_("n");
  claim.set_uid("u");
  claim.set_name("c");
  EXPECT_EQ(claim.SerializeAsString(), Bytes({0x0a, 1, 'n', 0x12, 1, 'u', 0x1a, 1, 'c'}));
}

TEST(DraWire, DeviceFieldNumbersAndShareIdPresence) {
  k8s::io::kubelet::pkg::apis::dra::v1::Device d;
  d.add_request_names("r");
  d.set_pool_name("p");
  d.set_device_name("d");
  d.add_cdi_device_ids("i");
  EXPECT_EQ(d.SerializeAsString(), Bytes({0x0a, 1, 'r', 0x12, 1, 'p', 0x1a, 1, 'd', 0x22, 1, 'i'}));
  d.set_share_id("");  // explicit presence: an empty share id is still sent
  EXPECT_EQ(d.SerializeAsString().substr(12), Bytes({0x2a, 0}));
}

TEST(DraWire, ResponseMapIsKeyedByUid) {
  k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesResponse resp;
  (*resp.mutable_claims())["u"].set_error("e");
  // field 1, length 8: map entry {key(1)="u", value(2)={error(1)="e"}}
  EXPECT_EQ(resp.SerializeAsString(), Bytes({0x0a, 8, 0x0a, 1, 'u', 0x12, 3, 0x0a, 1, 'e'}));
}

TEST(DraWire, ServicePaths) {
  EXPECT_EQ(k8s::io::kubelet::pkg::apis::dra::v1::DRAPlugin::service_full_name(),
            std::string("k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"));
  EXPECT_EQ(k8s::io::kubelet::pkg::apis::dra::v1beta1::DRAPlugin::service_full_name(),
            std::string("k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"));
  EXPECT_EQ(v1alpha1::DRAResourceHealth::service_full_name(),
            std::string("v1alpha1.DRAResourceHealth"));
  EXPECT_EQ(v1::DRAResourceHealth::service_full_name(), std::string("v1.DRAResourceHealth"));
}

TEST(DraWire, HealthFieldNumbers) {
  v1alpha1::DeviceHealth h;
  h.mutable_device()->set_pool_name("p");
  h.mutable_device()->set_device_name("d");
  h.set_health(v1alpha1::HEALTHY);
  h.set_last_updated_time(2);
  h.set_health_check_timeout_seconds(3);
  h.set_message("m");
  EXPECT_EQ(h.SerializeAsString(),
            Bytes({0x0a, 6, 0x0a, 1, 'p', 0x12, 1, 'd', 0x10, 1, 0x18, 2, 0x20, 3, 0x2a, 1, 'm'}));
}

}  // namespace
