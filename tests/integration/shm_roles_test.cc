// Role locks and PID namespaces across real processes: a second dra-agent or nri-agent is
// refused while the first lives and accepted once it is SIGKILLed; a live peer in another PID
// namespace is refused; the segment file is mode 0600.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm-schema/segment.h"
#include "tests/integration/shm_test_support.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::shm {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::TestOptions;

// Forks a process that opens `role` and holds it until killed; returns once it is attached.
pid_t HoldRole(const std::string& path, OpenOptions options) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    Result<std::unique_ptr<Segment>> seg = Segment::Open(path, options);
    const char ok = seg.ok() ? 'y' : 'n';
    if (::write(ready[1], &ok, 1) != 1) ::_exit(2);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char ok = 0;
  const bool attached = ::read(ready[0], &ok, 1) == 1 && ok == 'y';
  ::close(ready[0]);
  if (!attached) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return -1;
  }
  return pid;
}

void Kill(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

class ShmRolesTest : public ::testing::TestWithParam<Role> {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Segment>> create = Segment::Open(path_, TestOptions(Role::kDraAgent));
    ASSERT_THAT(create, IsOk());
  }
  TempDir dir_;
  std::string path_ = dir_.File(SegmentFileName());
};

TEST_P(ShmRolesTest, SecondProcessOfARoleIsRefusedUntilTheFirstDies) {
  const Role role = GetParam();
  const pid_t first = HoldRole(path_, TestOptions(role));
  ASSERT_GT(first, 0);
  EXPECT_THAT(
      Segment::Open(path_, TestOptions(role)),
      StatusIs(StatusCode::kFailedPrecondition,
               HasSubstr("another " + std::string(RoleName(role)) + " holds the role lock")));
  Result<std::unique_ptr<Segment>> reader = Segment::Open(path_, TestOptions(Role::kReader));
  ASSERT_THAT(reader, IsOk());
  EXPECT_THAT((*reader)->RoleLive(role), IsOkAndHolds(true));
  Kill(first);  // the kernel drops the OFD lock with the process
  EXPECT_THAT((*reader)->RoleLive(role), IsOkAndHolds(false));
  Result<std::unique_ptr<Segment>> second = Segment::Open(path_, TestOptions(role));
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ((*second)->ReadSnapshot()->agents[static_cast<int>(role)].attach_count,
            role == Role::kDraAgent ? 3u : 2u);
}

INSTANTIATE_TEST_SUITE_P(Roles, ShmRolesTest, ::testing::Values(Role::kDraAgent, Role::kNriAgent),
                         [](const ::testing::TestParamInfo<Role>& info) {
                           return info.param == Role::kDraAgent ? "DraAgent" : "NriAgent";
                         });

TEST(ShmPidNamespaceTest, LivePeerInAnotherNamespaceIsRefused) {
  TempDir dir;
  const std::string path = dir.File(SegmentFileName());
  OpenOptions dra = TestOptions(Role::kDraAgent);
  dra.pid_namespace_inode = [] { return Result<uint64_t>(uint64_t{111}); };
  const pid_t peer = HoldRole(path, dra);
  ASSERT_GT(peer, 0);
  OpenOptions nri = TestOptions(Role::kNriAgent);
  nri.pid_namespace_inode = [] { return Result<uint64_t>(uint64_t{222}); };
  EXPECT_THAT(Segment::Open(path, nri),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("is live in PID namespace 111 but this nri-agent is in PID "
                                 "namespace 222")));
  nri.pid_namespace_inode = [] { return Result<uint64_t>(uint64_t{111}); };
  {
    Result<std::unique_ptr<Segment>> same_ns = Segment::Open(path, nri);
    EXPECT_THAT(same_ns, IsOk());
  }
  Kill(peer);
  nri.pid_namespace_inode = [] { return Result<uint64_t>(uint64_t{222}); };
  EXPECT_THAT(Segment::Open(path, nri), IsOk());  // a dead peer's record does not block
}

TEST(ShmFileModeTest, SegmentIsMode0600WhateverTheUmask) {
  TempDir dir;
  const std::string path = dir.File(SegmentFileName());
  const mode_t old = ::umask(0);
  Result<std::unique_ptr<Segment>> seg = Segment::Open(path, TestOptions(Role::kDraAgent));
  ::umask(old);
  ASSERT_THAT(seg, IsOk());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), (*seg)->identity().segment_size);
}

}  // namespace
}  // namespace dracpu::shm
