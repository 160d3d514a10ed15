#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/file_system.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace dracpu {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;

class PosixFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(root_ + "/sys/devices");
    std::ofstream(root_ + "/sys/devices/online") << "0-3\n";
    ::symlink("devices", (root_ + "/sys/link").c_str());
    auto fs = NewPosixFileSystem(root_);
    ASSERT_THAT(fs, IsOk());
    fs_ = std::move(fs).value();
  }
  testing::TempDir tmp_{"dracpu-fs"};
  const std::string root_ = tmp_.path();
  std::unique_ptr<FileSystem> fs_;
};

TEST_F(PosixFileSystemTest, ReadsRelativeToRoot) {
  EXPECT_THAT(fs_->ReadFile("/sys/devices/online"), IsOkAndHolds(std::string("0-3\n")));
  EXPECT_THAT(fs_->ReadFile("sys/devices/online"), IsOkAndHolds(std::string("0-3\n")));
  EXPECT_THAT(fs_->ReadFile("/sys/missing"),
              StatusIs(StatusCode::kNotFound, HasSubstr(root_ + "/sys/missing")));
  EXPECT_THAT(fs_->ReadFile("/sys/../etc/passwd"), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(fs_->ReadFile("/sys/devices/online", 2), StatusIs(StatusCode::kResourceExhausted));
}

TEST_F(PosixFileSystemTest, ListsSortedWithTypes) {
  auto entries = fs_->ListDirectory("/sys");
  ASSERT_THAT(entries, IsOk());
  EXPECT_THAT(*entries,
              ElementsAre(Field(&DirEntry::name, "devices"), Field(&DirEntry::name, "link")));
  EXPECT_EQ((*entries)[0].type, DirEntry::Type::kDirectory);
  EXPECT_EQ((*entries)[1].type, DirEntry::Type::kSymlink);
  EXPECT_THAT(fs_->ReadLink("/sys/link"), IsOkAndHolds(std::string("devices")));
  EXPECT_TRUE(fs_->IsDirectory("/sys/link"));
  EXPECT_TRUE(fs_->Exists("/sys/devices/online"));
  EXPECT_FALSE(fs_->Exists("/nope"));
}

TEST_F(PosixFileSystemTest, WritesAtomicallyWithMode) {
  ASSERT_THAT(fs_->MakeDirectories("/var/run/cdi", 0750), IsOk());
  ASSERT_THAT(fs_->MakeDirectories("/var/run/cdi", 0750), IsOk());
  ASSERT_THAT(fs_->WriteFileAtomically("/var/run/cdi/a.json", "{}", 0600), IsOk());
  EXPECT_THAT(fs_->ReadFile("/var/run/cdi/a.json"), IsOkAndHolds(std::string("{}")));
  struct stat st;
  ASSERT_EQ(::stat((root_ + "/var/run/cdi/a.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto entries = fs_->ListDirectory("/var/run/cdi");
  ASSERT_THAT(entries, IsOk());
  EXPECT_EQ(entries->size(), 1u);  // no temp file left behind
  EXPECT_THAT(fs_->RemoveFile("/var/run/cdi/a.json"), IsOk());
  EXPECT_THAT(fs_->RemoveFile("/var/run/cdi/a.json"), StatusIs(StatusCode::kNotFound));
}

TEST(PosixFileSystem, MissingRootIsAnError) {
  EXPECT_THAT(NewPosixFileSystem("/nonexistent/dracpu-root"),
              StatusIs(StatusCode::kNotFound, HasSubstr("/nonexistent/dracpu-root")));
}

}  // namespace
}  // namespace dracpu
