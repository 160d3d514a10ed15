#include "common/aio_fsync.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace dracpu {
namespace {

std::vector<int> OpenFiles(const testing::TempDir& dir, int n) {
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    const int fd = ::open(dir.File("f" + std::to_string(i)).c_str(),
                          O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::write(fd, "x", 1), 1);
    fds.push_back(fd);
  }
  return fds;
}

void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) ::close(fd);
}

// Where the kernel or a seccomp profile refuses AIO, SyncAll says so and the caller syncs; the
// tests below then check only that answer.
bool AioAvailable() {
  testing::TempDir dir("aio-probe");
  const std::vector<int> fds = OpenFiles(dir, 2);
  AioFsync aio;
  std::vector<int> errors;
  const bool ok = aio.SyncAll(fds, errors);
  CloseAll(fds);
  return ok;
}

TEST(AioFsyncTest, SyncsEveryFileOfABatchLargerThanTheRing) {
  if (!AioAvailable()) GTEST_SKIP() << "kernel AIO fsync is refused here";
  testing::TempDir dir("aio-fsync");
  const std::vector<int> fds = OpenFiles(dir, int(AioFsync::kRingSize) + 5);
  AioFsync aio;
  std::vector<int> errors;
  ASSERT_TRUE(aio.SyncAll(fds, errors));
  EXPECT_EQ(errors, std::vector<int>(fds.size(), 0));
  // The context is kept: a second batch on the same object.
  errors.clear();
  ASSERT_TRUE(aio.SyncAll({fds[0], fds[1]}, errors));
  EXPECT_EQ(errors, std::vector<int>(2, 0));
  CloseAll(fds);
}

TEST(AioFsyncTest, ABadDescriptorFailsThatFileOnly) {
  if (!AioAvailable()) GTEST_SKIP() << "kernel AIO fsync is refused here";
  testing::TempDir dir("aio-fsync");
  std::vector<int> fds = OpenFiles(dir, 3);
  const int closed = fds[1];
  ::close(closed);
  AioFsync aio;
  std::vector<int> errors;
  ASSERT_TRUE(aio.SyncAll(fds, errors));
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0], 0);
  EXPECT_EQ(errors[1], EBADF);
  EXPECT_EQ(errors[2], 0);
  ::close(fds[0]);
  ::close(fds[2]);
}

}  // namespace
}  // namespace dracpu
