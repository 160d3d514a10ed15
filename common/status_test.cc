#include "common/status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>

#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using ::testing::HasSubstr;

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  RETURN_IF_ERROR(Half(x).status());
  return Status::Ok();
}

TEST(Status, PropagatesThroughMacros) {
  EXPECT_THAT(Quarter(8), IsOkAndHolds(2));
  EXPECT_THAT(Quarter(6), StatusIs(StatusCode::kInvalidArgument, "odd: 3"));
  EXPECT_THAT(CheckEven(2), IsOk());
  EXPECT_THAT(CheckEven(3), StatusIs(StatusCode::kInvalidArgument));
}

TEST(Status, ToStringAndContext) {
  EXPECT_EQ(Status().ToString(), "OK");
  EXPECT_EQ(NotFoundError("x").ToString(), "NOT_FOUND: x");
  EXPECT_EQ(NotFoundError("x").WithContext("reading y").message(), "reading y: x");
  EXPECT_TRUE(Status().WithContext("c").ok());
}

TEST(Status, ErrnoMapping) {
  EXPECT_THAT(ErrnoStatus("open /x", ENOENT),
              StatusIs(StatusCode::kNotFound, HasSubstr("open /x: ")));
  EXPECT_THAT(ErrnoStatus("c", EACCES), StatusIs(StatusCode::kPermissionDenied));
  EXPECT_THAT(ErrnoStatus("c", EEXIST), StatusIs(StatusCode::kAlreadyExists));
  EXPECT_THAT(ErrnoStatus("c", EAGAIN), StatusIs(StatusCode::kUnavailable));
  EXPECT_THAT(ErrnoStatus("c", EIO), StatusIs(StatusCode::kInternal));
}

TEST(Result, HoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_THAT(r, IsOk());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

}  // namespace
}  // namespace dracpu
