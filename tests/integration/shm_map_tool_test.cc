// dracpu-shm map (exec'd as operators run it) on a segment written by both agent roles and a
// sysfs tree of the same node: the text map, colour on a terminal only (NO_COLOR and TERM=dumb
// respected, never through a pipe unless asked), SVG to a file, --watch sleeping on the
// segment's futex (registered as a waiter, no polling) and redrawing on a change, Ctrl-C ending
// it cleanly, and bad flags.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "shm-schema/segment.h"
#include "tests/integration/shm_test_support.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/sysfs_fixture.h"

namespace dracpu::shm {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunTool;
using testing::TempDir;
using testing::TestOptions;
using testing::Uid;

// One socket, 8 cores x 2 threads (CPU c and c + 8 are siblings), one L3, NUMA node 0.
std::unique_ptr<dracpu::testing::SysfsFixture> SixteenCpus() {
  auto f = dracpu::testing::SysfsFixture::Create();
  if (!f.ok()) return nullptr;
  auto& s = **f;
  s.CpuFile("online", "0-15\n").CpuFile("present", "0-15\n").CpuFile("possible", "0-15\n");
  for (int cpu = 0; cpu < 16; ++cpu) {
    const int core = cpu % 8;
    s.Cpu(cpu, {.package = 0,
                .core_id = core,
                .siblings = std::to_string(core) + "," + std::to_string(core + 8),
                .node = 0});
    s.Cache(cpu, 3, {.level = 3, .shared = "0-15", .id = 0});
  }
  s.Node(0, "0-15", "10");
  return std::move(f).value();
}

class ShmMapToolTest : public ::testing::Test {
 protected:
  // CPU 0 reserved, claim 1 on core 2 (with a container), claim 2 on CPU 4, the rest shared.
  void SetUp() override {
    sysfs_ = SixteenCpus();
    ASSERT_NE(sysfs_, nullptr);
    ASSERT_THAT(sysfs_->status(), IsOk());
    Result<std::unique_ptr<Segment>> dra = Segment::Open(path_, TestOptions(Role::kDraAgent));
    ASSERT_THAT(dra, IsOk());
    dra_ = std::move(dra).value();
    Result<std::unique_ptr<Segment>> nri = Segment::Open(path_, TestOptions(Role::kNriAgent));
    ASSERT_THAT(nri, IsOk());
    nri_ = std::move(nri).value();
    {
      Result<WriteTransaction> txn = dra_->Begin();
      ASSERT_THAT(txn, IsOk());
      TopologySummary topo{};
      topo.online = CpuSet::Range(0, 15);
      topo.reserved = CpuSet{0};
      topo.allocatable = CpuSet::Range(1, 15);
      ASSERT_THAT(txn->SetTopology(topo), IsOk());
      ConfigSummary config{};
      config.flags = kConfigStrictCpuReservation;
      ASSERT_THAT(txn->SetConfig(config), IsOk());
      ASSERT_THAT(txn->UpsertClaim(testing::TestClaim(1, CpuSet{2, 10})), IsOk());
      ASSERT_THAT(txn->UpsertClaim(testing::TestClaim(2, CpuSet{4})), IsOk());
    }
    Result<WriteTransaction> txn = nri_->Begin();
    ASSERT_THAT(txn, IsOk());
    ContainerSpec ex;
    ex.id = "0123456789abcdef0123";
    ex.pod_namespace = "team";
    ex.pod_name = "trainer";
    ex.name = "main";
    ex.kind = ContainerKind::kExclusive;
    ex.claim_uids = {Uid(1)};
    ex.cpus = CpuSet{2, 10};
    ASSERT_THAT(txn->UpsertContainer(ex), IsOk());
    ASSERT_THAT(txn->SetSharedPool(CpuSet::Range(1, 15) - CpuSet{2, 4, 10}), IsOk());
  }

  std::vector<std::string> MapArgs(std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {"map", "--path", path_, "--sysfs-root", sysfs_->root()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  // The header's waiters word, as writers see it.
  uint32_t Waiters() const {
    Result<ShmFile> f = ShmFile::Open(path_, false);
    if (!f.ok() || !f->Map(kHeaderBytes).ok()) return ~0u;
    return std::atomic_ref<uint32_t>(static_cast<SegmentHeader*>(f->data())->waiters).load();
  }

  TempDir dir_;
  std::string path_ = dir_.File(SegmentFileName());
  std::unique_ptr<dracpu::testing::SysfsFixture> sysfs_;
  std::unique_ptr<Segment> dra_;
  std::unique_ptr<Segment> nri_;
};

TEST_F(ShmMapToolTest, DrawsEveryCpuWithItsOwner) {
  const testing::ToolResult r = RunTool(MapArgs());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("\x1b[")));  // a pipe: plain text
  EXPECT_THAT(r.out, HasSubstr("node node-a · 16 CPUs online · generation"));
  EXPECT_THAT(r.out, HasSubstr("dra-agent live · nri-agent live"));
  EXPECT_THAT(r.out, HasSubstr("┌─ socket 0 · NUMA node 0 · L3 0 ─"));
  EXPECT_THAT(r.out, HasSubstr("│ 0  1  2  3  4  5  6  7          │"));
  EXPECT_THAT(r.out, HasSubstr("│ =. .. AA .. B. .. .. ..         │"));
  EXPECT_THAT(r.out,
              HasSubstr("A  claim ns/claim-1  2 CPUs: 2,10  prepared · pod team/trainer/main"));
  EXPECT_THAT(r.out, HasSubstr("B  claim ns/claim-2  1 CPU: 4  prepared · no container yet"));
  EXPECT_THAT(r.out, HasSubstr("=  reserved  1 CPU: 0"));
  EXPECT_THAT(r.out, HasSubstr(".  shared pool  12 CPUs: 1,3,5-9,11-15"));
}

// Runs the tool on a pseudo-terminal with `env` added; returns what the terminal showed.
std::string RunOnTerminal(const std::vector<std::string>& args,
                          const std::vector<std::string>& env) {
  int master = -1;
  struct winsize ws {};
  ws.ws_col = 100;
  ws.ws_row = 40;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
  if (pid < 0) return "forkpty failed";
  if (pid == 0) {
    ::unsetenv("NO_COLOR");
    ::setenv("TERM", "xterm", 1);
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    const std::string tool = testing::ToolPath();
    std::vector<char*> argv = {const_cast<char*>(tool.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(tool.c_str(), argv.data());
    ::_exit(127);
  }
  testing::ChildGuard guard(pid);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child closed the terminal
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(master);
  guard.Wait();
  return out;
}

TEST_F(ShmMapToolTest, ColourOnATerminalUnlessNoColorOrDumb) {
  const std::string tty = RunOnTerminal(MapArgs(), {});
  EXPECT_THAT(tty, HasSubstr("\x1b[97;44mA"));  // claim 1's glyph on its background
  EXPECT_THAT(tty, HasSubstr("socket 0"));
  EXPECT_THAT(RunOnTerminal(MapArgs(), {"NO_COLOR=1"}), Not(HasSubstr("\x1b[")));
  EXPECT_THAT(RunOnTerminal(MapArgs(), {"TERM=dumb"}), Not(HasSubstr("\x1b[")));
  // An empty NO_COLOR does not count (no-color.org).
  EXPECT_THAT(RunOnTerminal(MapArgs(), {"NO_COLOR="}), HasSubstr("\x1b["));
  EXPECT_THAT(RunOnTerminal(MapArgs({"--color", "never"}), {}), Not(HasSubstr("\x1b[")));
  EXPECT_THAT(RunTool(MapArgs({"--color=always"})).out, HasSubstr("\x1b[97;44mA"));
}

TEST_F(ShmMapToolTest, SvgToAFile) {
  const std::string svg = dir_.File("node.svg");
  const testing::ToolResult r = RunTool(MapArgs({"--format", "svg", "--output", svg}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(text.str(), HasSubstr("<title>CPU 10: claim ns/claim-1</title>"));
  EXPECT_THAT(text.str(), HasSubstr("</svg>\n"));
}

// Starts dracpu-shm with `args`, its stdout on a pipe; returns the pid and the pipe's read end.
std::pair<pid_t, int> SpawnTool(const std::vector<std::string>& args) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {-1, -1};
  const std::string tool = testing::ToolPath();
  std::vector<char*> argv = {const_cast<char*>(tool.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::execv(tool.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  return {pid, out[0]};
}

TEST_F(ShmMapToolTest, WatchSleepsOnTheFutexAndRedrawsOnAChange) {
  const auto [pid, out] = SpawnTool(MapArgs({"--watch", "--count", "2"}));
  ASSERT_GT(pid, 0);
  testing::ChildGuard guard(pid);
  std::string text;
  char buf[4096];
  bool wrote = false;
  for (;;) {
    const ssize_t n = ::read(out, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (!wrote && text.find("(each cell") != std::string::npos) {
      // The tool counts itself among the segment's waiters: writers wake it, it does not poll.
      for (int i = 0; i < 500 && Waiters() != 1; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      EXPECT_EQ(Waiters(), 1u);
      Result<WriteTransaction> txn = dra_->Begin();
      ASSERT_THAT(txn, IsOk());
      ASSERT_THAT(txn->UpsertClaim(testing::TestClaim(3, CpuSet{9})), IsOk());
      txn->Commit();
      wrote = true;
    }
  }
  ::close(out);
  const int status = guard.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_TRUE(wrote) << text;
  const size_t first = text.find("----\n");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_THAT(text.substr(0, first), Not(HasSubstr("claim ns/claim-3")));
  EXPECT_THAT(text.substr(first), HasSubstr("C  claim ns/claim-3  1 CPU: 9"));
  // Claims keep their glyphs across redraws.
  EXPECT_THAT(text.substr(first), HasSubstr("A  claim ns/claim-1"));
  EXPECT_EQ(Waiters(), 0u);
}

TEST_F(ShmMapToolTest, InterruptEndsTheWatchCleanly) {
  const auto [pid, out] = SpawnTool(MapArgs({"--watch"}));
  ASSERT_GT(pid, 0);
  testing::ChildGuard guard(pid);
  std::string text;
  char buf[4096];
  while (text.find("(each cell") == std::string::npos) {
    const ssize_t n = ::read(out, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  for (int i = 0; i < 500 && Waiters() != 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGINT);
  const int status = guard.Wait();
  ::close(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(Waiters(), 0u);  // it unregistered on the way out
}

TEST_F(ShmMapToolTest, MissingSysfsRootIsNamed) {
  const testing::ToolResult r =
      RunTool({"map", "--path", path_, "--sysfs-root", dir_.File("nowhere")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--sysfs-root " + dir_.File("nowhere")));
}

}  // namespace
}  // namespace dracpu::shm
