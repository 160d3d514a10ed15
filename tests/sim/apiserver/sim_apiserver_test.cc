// dracpu-sim-apiserver as a process: flags, URL on stdout, generated TLS, token, kubeconfig
// output, seeded nodes, the /_sim admin API, and SIGTERM.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "dra-agent/kube/curl_http_client.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kube/resources.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/sim_test_util.h"
#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using ::dracpu::testing::FakeClock;
using ::dracpu::testing::FixedRandom;

using ::testing::HasSubstr;

class SimProcess {
 public:
  ~SimProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ != nullptr) ::fclose(out_);
  }
  // Starts the binary and reads the URL line (blocking read; the child prints it once ready).
  bool Start(const std::vector<std::string>& args) {
    const char* build = std::getenv("DRACPU_BUILD_DIR");
    if (build == nullptr) return false;
    const std::string binary = std::string(build) + "/tests/sim/apiserver/dracpu-sim-apiserver";
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(binary.c_str()));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = ::fdopen(fds[0], "r");
    char line[256] = {0};
    if (out_ == nullptr || ::fgets(line, sizeof(line), out_) == nullptr) return false;
    url_ = line;
    while (!url_.empty() && url_.back() == '\n') url_.pop_back();
    return true;
  }
  // SIGTERM, then the exit status.
  int Terminate() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  const std::string& url() const { return url_; }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  std::string url_;
};

TEST(SimApiServerProcessTest, ServesHttpsWithTokenAndWritesAKubeconfig) {
  sim::testing::TempDir dir;
  SimProcess sim;
  ASSERT_TRUE(sim.Start({"--port", "0", "--generate-tls", dir.path(), "--token", "tok",
                         "--kubeconfig-out", dir.path() + "/kubeconfig", "--node", "n1=uid-1",
                         "--bookmark-interval-ms", "500"}));
  ASSERT_EQ(sim.url().rfind("https://127.0.0.1:", 0), 0u) << sim.url();

  auto fs = NewPosixFileSystem("/");
  ASSERT_THAT(fs, IsOk());
  Result<kube::ClusterConfig> config = kube::LoadKubeconfig(**fs, dir.path() + "/kubeconfig");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->server, sim.url());
  auto http = kube::NewCurlHttpClient(config->tls);
  ASSERT_THAT(http, IsOk());
  testing::FakeClock clock;
  testing::FixedRandom random(0.0);
  kube::ClientOptions options;
  options.max_attempts = 1;
  auto client = kube::KubeClient::Create(*config, *std::move(http), **fs, clock, random, options);
  ASSERT_THAT(client, IsOk());

  Result<kube::JsonObject> node = (*client)->Get(kube::NodePath("n1"));
  ASSERT_THAT(node, IsOk());
  EXPECT_EQ(node->Uid(), "uid-1");

  // The admin API: inject a fault, see it, read the request log.
  Result<kube::JsonObject> fault = kube::JsonObject::Parse(
      R"({"method":"GET","pathPrefix":"/version","action":"status","code":503,"reason":"ServiceUnavailable","count":1})");
  ASSERT_THAT(fault, IsOk());
  ASSERT_THAT((*client)->Create("/_sim/faults", *fault), IsOk());
  EXPECT_THAT((*client)->Get(kube::kVersionPath),
              StatusIs(StatusCode::kUnavailable, HasSubstr("503 ServiceUnavailable")));
  EXPECT_THAT((*client)->Get(kube::kVersionPath), IsOk());
  Result<kube::JsonObject> log = (*client)->Get("/_sim/requests");
  ASSERT_THAT(log, IsOk());
  ASSERT_TRUE(log->doc().IsArray());
  EXPECT_GE(log->doc().Size(), 3u);

  EXPECT_EQ(sim.Terminate(), 0);
}

TEST(SimApiServerProcessTest, RefusesBadFlags) {
  const char* build = std::getenv("DRACPU_BUILD_DIR");
  ASSERT_NE(build, nullptr);
  for (const char* args : {"--bogus", "--port", "--port 70000", "--port x1"}) {
    const std::string cmd = std::string(build) + "/tests/sim/apiserver/dracpu-sim-apiserver " +
                            args + " >/dev/null 2>&1";
    const int rc = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(rc)) << args;
    EXPECT_EQ(WEXITSTATUS(rc), 2) << args;
  }
}

}  // namespace
}  // namespace dracpu
