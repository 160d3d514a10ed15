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
using ::testing::Not;

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

// A batch: each file is written and durable on its own terms; a refused path, a missing
// directory or a directory in the way fails only its own file, and no temp file stays behind.
TEST_F(PosixFileSystemTest, WritesABatchAtomicallyWithPerFileResults) {
  ASSERT_THAT(fs_->MakeDirectories("/cdi", 0755), IsOk());
  ASSERT_THAT(fs_->MakeDirectories("/cdi/busy.json", 0755), IsOk());  // rename onto it fails
  ASSERT_THAT(fs_->WriteFileAtomically("/cdi/old.json", "old", 0644), IsOk());
  const std::vector<Status> out = fs_->WriteFilesAtomically({{"/cdi/a.json", "A", 0644},
                                                             {"/cdi/../escape.json", "x", 0644},
                                                             {"/missing/b.json", "B", 0644},
                                                             {"/cdi/busy.json", "C", 0644},
                                                             {"/cdi/old.json", "new", 0600}});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_THAT(out[0], IsOk());
  EXPECT_THAT(out[1], StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(out[2], StatusIs(StatusCode::kNotFound, HasSubstr("missing")));
  EXPECT_THAT(out[3], Not(IsOk()));
  EXPECT_THAT(out[3].message(), HasSubstr("rename"));
  EXPECT_THAT(out[4], IsOk());
  EXPECT_THAT(fs_->ReadFile("/cdi/a.json"), IsOkAndHolds(std::string("A")));
  EXPECT_THAT(fs_->ReadFile("/cdi/old.json"), IsOkAndHolds(std::string("new")));
  struct stat st;
  ASSERT_EQ(::stat((root_ + "/cdi/old.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto entries = fs_->ListDirectory("/cdi");
  ASSERT_THAT(entries, IsOk());
  EXPECT_THAT(*entries,
              ElementsAre(Field(&DirEntry::name, "a.json"), Field(&DirEntry::name, "busy.json"),
                          Field(&DirEntry::name, "old.json")));
}

// A batch built one file at a time: nothing is visible before Finish, and a batch dropped
// without Finish leaves the old content and no temp file.
TEST_F(PosixFileSystemTest, ABatchShowsNothingBeforeFinishAndNothingAtAllWhenDropped) {
  ASSERT_THAT(fs_->MakeDirectories("/cdi", 0755), IsOk());
  ASSERT_THAT(fs_->WriteFileAtomically("/cdi/old.json", "old", 0644), IsOk());
  {
    std::unique_ptr<FileSystem::AtomicWrites> batch = fs_->BeginAtomicWrites();
    batch->Add({"/cdi/old.json", "dropped", 0644});
    batch->Add({"/cdi/new.json", "dropped", 0644});
  }
  EXPECT_THAT(fs_->ReadFile("/cdi/old.json"), IsOkAndHolds(std::string("old")));
  EXPECT_THAT(fs_->ListDirectory("/cdi"),
              IsOkAndHolds(ElementsAre(Field(&DirEntry::name, "old.json"))));

  std::unique_ptr<FileSystem::AtomicWrites> batch = fs_->BeginAtomicWrites();
  batch->Add({"/cdi/old.json", "new", 0644});
  batch->Add({"/cdi/new.json", "N", 0644});
  EXPECT_THAT(fs_->ReadFile("/cdi/old.json"), IsOkAndHolds(std::string("old")));
  EXPECT_FALSE(fs_->Exists("/cdi/new.json"));
  const std::vector<Status> out = batch->Finish();
  EXPECT_THAT(out, ElementsAre(IsOk(), IsOk()));
  EXPECT_THAT(fs_->ReadFile("/cdi/old.json"), IsOkAndHolds(std::string("new")));
  EXPECT_THAT(fs_->ReadFile("/cdi/new.json"), IsOkAndHolds(std::string("N")));
  EXPECT_THAT(fs_->ListDirectory("/cdi"), IsOkAndHolds(::testing::SizeIs(2)));
}

// Directory syncs (what Unprepare's removals wait for): every directory at once, a missing one
// skipped; a path that is not a directory, or leaves the root, is an error that names it.
TEST_F(PosixFileSystemTest, SyncsDirectoriesSkippingMissingOnesAndNamingBadOnes) {
  ASSERT_THAT(fs_->MakeDirectories("/var/run/cdi", 0755), IsOk());
  EXPECT_THAT(fs_->SyncDirectories({"/var/run/cdi", "sys", "/var/run/gone"}), IsOk());
  EXPECT_THAT(fs_->SyncDirectories({}), IsOk());
  const Status not_a_directory = fs_->SyncDirectories({"/var/run/cdi", "/sys/devices/online"});
  EXPECT_FALSE(not_a_directory.ok());
  EXPECT_THAT(not_a_directory.message(), HasSubstr(root_ + "/sys/devices/online"));
  EXPECT_THAT(fs_->SyncDirectories({"/var/../etc"}), StatusIs(StatusCode::kInvalidArgument));
}

// A FIFO, a directory or a device where a file is expected (planted in a CDI or config
// directory, say) is refused at once: no read blocks waiting for a writer, none reads forever.
TEST_F(PosixFileSystemTest, SpecialFilesAreRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((root_ + "/fifo").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/zero", (root_ + "/zero").c_str()), 0);
  ASSERT_EQ(::symlink("fifo", (root_ + "/to-fifo").c_str()), 0);
  EXPECT_THAT(fs_->ReadFile("fifo"), StatusIs(StatusCode::kFailedPrecondition,
                                              HasSubstr("is a FIFO, not a regular file")));
  EXPECT_THAT(fs_->ReadFile("to-fifo"), StatusIs(StatusCode::kFailedPrecondition));
  EXPECT_THAT(fs_->ReadFile("zero"),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("is a character device")));
  EXPECT_THAT(fs_->ReadFile("sys"),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("is a directory")));
  // A symlink to a regular file is still read (projected secrets and sysfs are symlinks).
  EXPECT_THAT(fs_->ReadFile("sys/link/online"), IsOkAndHolds(std::string("0-3\n")));
}

TEST(PosixFileSystem, MissingRootIsAnError) {
  EXPECT_THAT(NewPosixFileSystem("/nonexistent/dracpu-root"),
              StatusIs(StatusCode::kNotFound, HasSubstr("/nonexistent/dracpu-root")));
}

}  // namespace
}  // namespace dracpu
