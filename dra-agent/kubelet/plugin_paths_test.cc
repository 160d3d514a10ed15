#include "dra-agent/kubelet/plugin_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "common/unique_fd.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::dra {
namespace {

using ::testing::HasSubstr;

// A unix socket bound at `path`; listening when `listen` (a live endpoint), else stale-like.
UniqueFd BoundSocket(const std::string& path, bool listen) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  if (listen) {
    EXPECT_EQ(::listen(fd.get(), 1), 0);
  }
  return fd;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

class PrepareSocketPathTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"dracpu-sock"};
  const std::string path_ = dir_.File("plugins/dra.cpu/dra.sock");
  void SetUp() override { ASSERT_THAT(PrepareSocketPath(path_), IsOk()); }  // makes the dirs
};

TEST_F(PrepareSocketPathTest, StaleSocketOfOursIsRemoved) {
  { UniqueFd closed = BoundSocket(path_, /*listen=*/false); }  // an earlier run crashed
  ASSERT_TRUE(Exists(path_));
  EXPECT_THAT(PrepareSocketPath(path_), IsOk());
  EXPECT_FALSE(Exists(path_));
}

TEST_F(PrepareSocketPathTest, LiveSocketIsNotTakenOver) {
  UniqueFd live = BoundSocket(path_, /*listen=*/true);
  EXPECT_THAT(PrepareSocketPath(path_),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("is in use")));
  EXPECT_TRUE(Exists(path_));
}

TEST_F(PrepareSocketPathTest, SocketOfAnotherUserIsLeftAlone) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the socket to another user";
  { UniqueFd closed = BoundSocket(path_, /*listen=*/false); }
  ASSERT_EQ(::lchown(path_.c_str(), 4242, 4242), 0);
  EXPECT_THAT(PrepareSocketPath(path_),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("owned by uid 4242")));
  EXPECT_TRUE(Exists(path_));
}

TEST_F(PrepareSocketPathTest, NonSocketIsLeftAlone) {
  std::ofstream(path_) << "not a socket";
  EXPECT_THAT(PrepareSocketPath(path_),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("is not a socket")));
  EXPECT_TRUE(Exists(path_));
}

TEST(PluginPaths, OverlongRootIsRefusedWithItsLength) {
  EXPECT_THAT(MakePluginPaths("/" + std::string(100, 'k')),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("unix sockets allow at most 107")));
  EXPECT_THAT(MakePluginPaths("relative"), StatusIs(StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace dracpu::dra
