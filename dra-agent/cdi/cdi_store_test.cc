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

// A CDI directory others write into too: symlinks with our names (to a file of ours elsewhere
// and to a host file), a FIFO, a huge file, a truncated spec, a spec of another vendor and a
// stray directory. Every good claim is listed, every bad file reported once by name and left
// exactly as it was, and nothing blocks.
TEST_F(CdiStoreTest, HostileDirectoryReportsEachBadFileAndLosesNothing) {
  const std::string dir = root_ + "/var/run/cdi/";
  ASSERT_THAT(store_->Write("good", CpuSet{3}), IsOk());
  std::ofstream(root_ + "/elsewhere.json") << RenderCdiSpec("linked", CpuSet{5});
  ASSERT_EQ(
      ::symlink((root_ + "/elsewhere.json").c_str(), (dir + CdiSpecFileName("linked")).c_str()), 0);
  ASSERT_EQ(::symlink("/etc/hostname", (dir + CdiSpecFileName("host")).c_str()), 0);
  ASSERT_EQ(::mkfifo((dir + CdiSpecFileName("fifo")).c_str(), 0644), 0);
  std::ofstream(dir + CdiSpecFileName("huge")) << std::string(10 << 20, ' ');
  const std::string spec = RenderCdiSpec("torn", CpuSet{6});
  std::ofstream(dir + CdiSpecFileName("torn")) << spec.substr(0, spec.size() / 2);
  std::ofstream(dir + "vendor.com-gpu.json") << "{\"cdiVersion\":\"0.6.0\"}";
  std::filesystem::create_directory(dir + CdiSpecFileName("adir"));

  auto listing = store_->List();
  ASSERT_THAT(listing, IsOk());
  EXPECT_THAT(listing->claims, ElementsAre(Field(&ClaimEnv::claim_uid, "good")));
  std::vector<std::string> problems;
  for (const Status& s : listing->problems) problems.push_back(s.ToString());
  EXPECT_THAT(problems,
              ElementsAre(HasSubstr(CdiSpecFileName("adir") + " is not a regular file"),
                          HasSubstr(CdiSpecFileName("fifo") + " is not a regular file"),
                          HasSubstr(CdiSpecFileName("host") + " is a symbolic link"),
                          HasSubstr(CdiSpecFileName("huge") + " is larger than 65536 bytes"),
                          HasSubstr(CdiSpecFileName("linked") + " is a symbolic link"),
                          HasSubstr("not valid JSON")));
  // Nothing was followed, changed or removed.
  struct stat st;
  ASSERT_EQ(::lstat((dir + CdiSpecFileName("linked")).c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(::lstat((dir + CdiSpecFileName("fifo")).c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(std::filesystem::file_size(dir + CdiSpecFileName("huge")), 10u << 20);
  EXPECT_EQ(std::filesystem::file_size(root_ + "/elsewhere.json"),
            RenderCdiSpec("linked", CpuSet{5}).size());
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
