#include "dra-agent/cdi/cdi_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "dra-agent/cdi/cdi_spec.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::SizeIs;

class CdiStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = NewPosixFileSystem(root_).value();
    store_ = std::make_unique<CdiStore>(*fs_, "/var/run/cdi");
    ASSERT_THAT(store_->EnsureDirectory(), IsOk());
  }
  testing::TempDir tmp_{"dracpu-cdi"};
  const std::string root_ = tmp_.path();
  std::unique_ptr<FileSystem> fs_;
  std::unique_ptr<CdiStore> store_;
};

TEST_F(CdiStoreTest, WriteListRemove) {
  ASSERT_THAT(store_->Write("b2", CpuSet{4, 5}), IsOk());
  ASSERT_THAT(store_->Write("a1", CpuSet{1}), IsOk());
  ASSERT_THAT(store_->Write("a1", CpuSet{2}), IsOk());                // replace
  std::ofstream(root_ + "/var/run/cdi/nvidia.com-gpu.json") << "{}";  // another vendor: ignored
  auto listing = store_->List();
  ASSERT_THAT(listing, IsOk());
  EXPECT_THAT(listing->problems, SizeIs(0));
  ASSERT_THAT(listing->claims,
              ElementsAre(Field(&ClaimEnv::claim_uid, "a1"), Field(&ClaimEnv::claim_uid, "b2")));
  EXPECT_EQ(listing->claims[0].cpus.ToListString(), "2");
  struct stat st;
  ASSERT_EQ(::stat((root_ + "/var/run/cdi/" + CdiSpecFileName("a1")).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_THAT(store_->Remove("a1"), IsOk());
  ASSERT_THAT(store_->Remove("a1"), IsOk());  // idempotent
  EXPECT_THAT(store_->List()->claims, SizeIs(1));
}

TEST_F(CdiStoreTest, ReportsCorruptSpecsWithoutLosingGoodOnes) {
  ASSERT_THAT(store_->Write("good", CpuSet{3}), IsOk());
  std::ofstream(root_ + "/var/run/cdi/" + CdiSpecFileName("torn")) << "{\"cdiVersion\": \"0.5";
  std::ofstream(root_ + "/var/run/cdi/" + CdiSpecFileName("renamed"))
      << RenderCdiSpec("other", CpuSet{9});
  auto listing = store_->List();
  ASSERT_THAT(listing, IsOk());
  EXPECT_THAT(listing->claims, ElementsAre(Field(&ClaimEnv::claim_uid, "good")));
  ASSERT_THAT(listing->problems, SizeIs(2));
  EXPECT_THAT(listing->problems[0],
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("does not match claim other")));
  EXPECT_THAT(listing->problems[1],
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not valid JSON")));
}

TEST_F(CdiStoreTest, RefusesBadInput) {
  EXPECT_THAT(store_->Write("../etc", CpuSet{1}), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(store_->Write("ok", CpuSet()),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("no CPUs")));
  EXPECT_THAT(store_->Remove("a/b"), StatusIs(StatusCode::kInvalidArgument));
}

TEST(CdiStore, MissingDirectoryListsNothing) {
  auto fs = NewPosixFileSystem("/tmp").value();
  CdiStore store(*fs, "/dracpu-no-such-dir-for-test");
  auto listing = store.List();
  ASSERT_THAT(listing, IsOk());
  EXPECT_THAT(listing->claims, SizeIs(0));
}

}  // namespace
}  // namespace dracpu::dra
