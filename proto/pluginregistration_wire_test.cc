// Wire identity of our pluginregistration.proto with the kubelet's: field numbers and types are
// pinned by comparing serialized bytes with hand-encoded protobuf.
#include <gtest/gtest.h>

#include <string>

#include "pluginregistration.grpc.pb.h"
#include "pluginregistration.pb.h"

namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TEST(PluginRegistrationWire, PluginInfoFieldNumbers) {
  pluginregistration::PluginInfo info;
  info.set_type("D");
  info.set_name("n");
  info.set_endpoint("/e");
  info.add_supported_versions("v1");
  // tag = field << 3 | 2 (length-delimited)
  EXPECT_EQ(info.SerializeAsString(),
            Bytes({0x0a, 1, 'D', 0x12, 1, 'n', 0x1a, 2, '/', 'e', 0x22, 2, 'v', '1'}));
}

TEST(PluginRegistrationWire, RegistrationStatusFieldNumbers) {
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  status.set_error("x");
  EXPECT_EQ(status.SerializeAsString(), Bytes({0x08, 1, 0x12, 1, 'x'}));
}

TEST(PluginRegistrationWire, ServiceMethodPaths) {
  const auto* service = pluginregistration::PluginInfo::descriptor()->file()->service(0);
  ASSERT_NE(service, nullptr);
  EXPECT_EQ(service->full_name(), "pluginregistration.Registration");
  EXPECT_EQ(service->method(0)->name(), "GetInfo");
  EXPECT_EQ(service->method(1)->name(), "NotifyRegistrationStatus");
}

}  // namespace
