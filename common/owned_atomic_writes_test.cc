#include "common/owned_atomic_writes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/file_system.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace dracpu {
namespace {

using ::testing::HasSubstr;

// Owner 0 has two good files, owner 1 one good and one refused path, owner 2 failed before its
// files were added, owner 3 nothing at all.
TEST(OwnedAtomicWrites, EachOwnerGetsItsFirstErrorOrOk) {
  testing::TempDir dir("owned-writes");
  auto fs = NewPosixFileSystem(dir.path()).value();
  ASSERT_THAT(fs->MakeDirectories("d", 0755), IsOk());
  OwnedAtomicWrites writes(fs->BeginAtomicWrites(), 4);
  writes.Add(0, {"d/a0", "a0", 0644});
  writes.Add(1, {"d/b0", "b0", 0644});
  writes.Add(1, {"missing/b1", "b1", 0644});
  writes.Fail(2, InvalidArgumentError("claim 2: refused"));
  writes.Add(0, {"d/a1", "a1", 0644});
  const std::vector<Status> out = writes.Finish();
  ASSERT_EQ(out.size(), 4u);
  EXPECT_THAT(out[0], IsOk());
  EXPECT_THAT(out[1], StatusIs(StatusCode::kNotFound, HasSubstr("missing/b1")));
  EXPECT_THAT(out[2], StatusIs(StatusCode::kInvalidArgument, HasSubstr("claim 2")));
  EXPECT_THAT(out[3], IsOk());
  EXPECT_THAT(fs->ReadFile("d/a0"), IsOkAndHolds(std::string("a0")));
  EXPECT_THAT(fs->ReadFile("d/a1"), IsOkAndHolds(std::string("a1")));
  EXPECT_THAT(fs->ReadFile("d/b0"), IsOkAndHolds(std::string("b0")));  // each file on its own
}

}  // namespace
}  // namespace dracpu
