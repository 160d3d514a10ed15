#include "nri-agent/ttrpc/envelope.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace dracpu::ttrpc {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(Envelope, RequestRoundTrip) {
  Request in{"svc", "M", std::string("\0p", 2), 1234, {{"k", "1"}, {"k", "2"}}};
  auto out = DecodeRequest(EncodeRequest(in));
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->service, "svc");
  EXPECT_EQ(out->method, "M");
  EXPECT_EQ(out->payload, std::string("\0p", 2));
  EXPECT_EQ(out->timeout_nano, 1234);
  EXPECT_THAT(out->metadata, ElementsAre(Pair("k", "1"), Pair("k", "2")));
}

struct ResponseCase {
  Response in;
  Status want_status;
  std::string want_payload;
};

TEST(Envelope, ResponseRoundTripTable) {
  const ResponseCase cases[] = {
      {{Status(), "pay"}, Status(), "pay"},
      {{Status(), ""}, Status(), ""},
      {{UnimplementedError("method X"), ""}, UnimplementedError("method X"), ""},
      // An error drops the payload: only OK answers carry one.
      {{ResourceExhaustedError("big"), "ignored"}, ResourceExhaustedError("big"), ""},
  };
  for (const ResponseCase& c : cases) {
    auto out = DecodeResponse(EncodeResponse(c.in));
    ASSERT_THAT(out, IsOk());
    EXPECT_EQ(out->status, c.want_status);
    EXPECT_EQ(out->payload, c.want_payload);
  }
}

TEST(Envelope, OutOfRangeCodeBecomesUnknown) {
  // Response{status{code: 99, message: "m"}}
  const std::string wire = {0x0a, 5, 0x08, 99, 0x12, 1, 'm'};
  auto out = DecodeResponse(wire);
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(out->status, StatusIs(StatusCode::kUnknown, "m"));
}

TEST(Envelope, GarbageDoesNotParse) {
  const std::string garbage = {0x0a, 0x7f, 'x'};  // length 127, 1 byte present
  EXPECT_THAT(DecodeRequest(garbage), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(DecodeResponse(garbage), StatusIs(StatusCode::kDataLoss));
}

}  // namespace
}  // namespace dracpu::ttrpc
