#include "common/concurrent_fsync.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace dracpu {
namespace {

class ConcurrentFsyncTest : public ::testing::TestWithParam<ConcurrentFsync::Way> {
 protected:
  std::vector<int> OpenFiles(int n) {
    std::vector<int> fds;
    for (int i = 0; i < n; ++i) {
      const int fd = ::open(dir_.File("f" + std::to_string(i)).c_str(),
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      EXPECT_GE(fd, 0);
      EXPECT_EQ(::write(fd, "x", 1), 1);
      fds.push_back(fd);
      open_.push_back(fd);
    }
    return fds;
  }
  void TearDown() override {
    for (int fd : open_) ::close(fd);
  }

  testing::TempDir dir_{"concurrent-fsync"};
  std::vector<int> open_;
};

TEST_P(ConcurrentFsyncTest, SyncsEveryFileOfABatchLargerThanTheRing) {
  ConcurrentFsync fsync(GetParam());
  const std::vector<int> fds = OpenFiles(static_cast<int>(ConcurrentFsync::kAioRingSize) + 5);
  EXPECT_EQ(fsync.SyncAll(fds), std::vector<int>(fds.size(), 0));
  // A second batch on the same object (the AIO context is kept), then one of a single file.
  EXPECT_EQ(fsync.SyncAll({fds[0], fds[1]}), std::vector<int>(2, 0));
  EXPECT_EQ(fsync.SyncAll({fds[2]}), std::vector<int>(1, 0));
  EXPECT_TRUE(fsync.SyncAll({}).empty());
}

TEST_P(ConcurrentFsyncTest, ABadDescriptorFailsThatFileOnly) {
  ConcurrentFsync fsync(GetParam());
  std::vector<int> fds = OpenFiles(4);
  const int closed = fds[1];
  ::close(closed);
  open_.erase(open_.begin() + 1);
  fds[3] = -1;
  EXPECT_EQ(fsync.SyncAll(fds), (std::vector<int>{0, EBADF, 0, EBADF}));
  // The batch after a refused descriptor is whole again.
  EXPECT_EQ(fsync.SyncAll({fds[0], fds[2]}), std::vector<int>(2, 0));
}

TEST_P(ConcurrentFsyncTest, ConcurrentCallersAllGetTheirAnswers) {
  // Where one caller holds the AIO ring, the others take the threads: both ways at once.
  ConcurrentFsync fsync(GetParam());
  const std::vector<int> fds = OpenFiles(8);
  std::vector<std::vector<int>> results(4);
  std::vector<std::thread> callers;
  callers.reserve(results.size());
  for (auto& r : results) callers.emplace_back([&] { r = fsync.SyncAll(fds); });
  for (auto& t : callers) t.join();
  for (const auto& r : results) EXPECT_EQ(r, std::vector<int>(fds.size(), 0));
}

// A batch started one file at a time answers per Start, in order; Wait may be asked again.
TEST_P(ConcurrentFsyncTest, ABatchStartedFileByFileAnswersInOrder) {
  ConcurrentFsync fsync(GetParam());
  std::vector<int> fds = OpenFiles(static_cast<int>(ConcurrentFsync::kAioRingSize) + 3);
  fds[4] = -1;
  ConcurrentFsync::Batch batch = fsync.Begin();
  for (int fd : fds) batch.Start(fd);
  std::vector<int> expected(fds.size(), 0);
  expected[4] = EBADF;
  EXPECT_EQ(batch.Wait(), expected);
  EXPECT_EQ(batch.Wait(), expected);
  // Batches at once, more than the AIO contexts kept: the extra ones take threads.
  std::vector<ConcurrentFsync::Batch> open;
  for (size_t k = 0; k < ConcurrentFsync::kMaxAioContexts + 2; ++k) {
    open.push_back(fsync.Begin());
    open.back().Start(fds[0]);
  }
  for (ConcurrentFsync::Batch& b : open) EXPECT_EQ(b.Wait(), std::vector<int>{0});
}

// A batch that is never waited for ends its fsyncs in its destructor.
TEST_P(ConcurrentFsyncTest, ABatchDroppedWithoutWaitEndsItsFsyncs) {
  ConcurrentFsync fsync(GetParam());
  const std::vector<int> fds = OpenFiles(6);
  {
    ConcurrentFsync::Batch batch = fsync.Begin();
    for (int fd : fds) batch.Start(fd);
  }
  EXPECT_EQ(fsync.SyncAll(fds), std::vector<int>(fds.size(), 0));
}

INSTANTIATE_TEST_SUITE_P(Ways, ConcurrentFsyncTest,
                         ::testing::Values(ConcurrentFsync::Way::kAio,
                                           ConcurrentFsync::Way::kThreads),
                         [](const auto& info) {
                           return info.param == ConcurrentFsync::Way::kAio ? "Aio" : "Threads";
                         });

}  // namespace
}  // namespace dracpu
