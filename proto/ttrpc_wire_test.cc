// Wire identity of our ttrpc.proto with containerd/ttrpc's request.proto (protocols.md §1.4):
// serialized bytes are compared with hand-encoded protobuf, so a wrong field number or type
// fails here rather than against a runtime.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "ttrpc.pb.h"

namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TEST(TtrpcWire, RequestFieldNumbers) {
  ttrpc::Request req;
  req.set_service("S");
  req.set_method("M");
  req.set_payload(std::string("\x01\x00", 2));
  req.set_timeout_nano(2000000000);  // 2 s
  auto* kv = req.add_metadata();
  kv->set_key("k");
  kv->set_value("v");
  // 2e9 as a varint: 0x80 0xa8 0xd6 0xb9 0x07.
  EXPECT_EQ(req.SerializeAsString(),
            Bytes({0x0a, 1,    'S',  0x12, 1,    'M', 0x1a, 2, 0x01, 0x00, 0x20, 0x80,
                   0xa8, 0xd6, 0xb9, 0x07, 0x2a, 6,   0x0a, 1, 'k',  0x12, 1,    'v'}));
}

TEST(TtrpcWire, ResponseWithStatus) {
  ttrpc::Response resp;
  resp.mutable_status()->set_code(12);
  resp.mutable_status()->set_message("m");
  resp.set_payload("p");
  EXPECT_EQ(resp.SerializeAsString(), Bytes({0x0a, 5, 0x08, 12, 0x12, 1, 'm', 0x12, 1, 'p'}));
}

TEST(TtrpcWire, StatusDetailsIsAnyAtField3) {
  // A google.rpc.Status as Go ttrpc sends it for an oversized message: code 8 and one detail
  // (type_url "t", value "v"). We must parse it, details included.
  const std::string wire = Bytes({0x08, 8, 0x12, 1, 'x', 0x1a, 6, 0x0a, 1, 't', 0x12, 1, 'v'});
  ttrpc::Status status;
  ASSERT_TRUE(status.ParseFromString(wire));
  EXPECT_EQ(status.code(), 8);
  EXPECT_EQ(status.message(), "x");
  ASSERT_EQ(status.details_size(), 1);
  EXPECT_EQ(status.details(0).type_url(), "t");
  EXPECT_EQ(status.details(0).value(), "v");
}

TEST(TtrpcWire, StringList) {
  ttrpc::StringList list;
  list.add_list("a");
  list.add_list("b");
  EXPECT_EQ(list.SerializeAsString(), Bytes({0x0a, 1, 'a', 0x0a, 1, 'b'}));
}

}  // namespace
