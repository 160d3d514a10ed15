#include "tests/sim/runtime/scenario.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "nri-agent/nri/plugin.h"
#include "nri-agent/nri/reconnecting_plugin.h"
#include "tests/testing/quiet_plugin_handler.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::sim {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr char kScenario[] = R"(
runtime: {name: cri-o, version: "1.34.0", nri_version: v0.10.0}
pods:
  - {id: sb1, name: web, uid: u1, namespace: default}
containers:
  - {id: shared, pod: sb1, name: app, env: ["A=1"], cpus: "0-7"}
steps:
  - wait_plugin: {}
  - create: {id: excl, pod: sb1, name: x, env: ["PIN=6-7"]}
  - expect_cpus: {excl: "6-7", shared: "0-5"}
  - create: {id: forged, pod: sb1, name: f, env: ["FORGED=1"]}
    expect_error: "not prepared"
  - expect_absent: [forged]
  - update: {id: excl, cpus: "0-7"}
  - expect_cpus: {excl: "6-7"}
  - stop: {id: excl}
  - remove: {id: excl}
  - expect_absent: [excl]
  - drop_plugin: {}
  - wait_plugin: {}
  - create: {id: again, pod: sb1, name: y, env: ["PIN=1"]}
  - expect_cpus: {again: "1"}
)";

// Pins to PIN=..., refuses FORGED=..., shrinks "shared" to 0-5 on a pinned creation, and
// re-asserts the current cpuset on UpdateContainer.
class ScenarioHandler : public testing::QuietPluginHandler {
 public:
  Result<nri::EventMask> Configure(const nri::RuntimeInfo&) override { return 0x688; }
  Result<nri::CreateContainerResult> CreateContainer(const nri::Pod&,
                                                     const nri::Container& c) override {
    nri::CreateContainerResult r;
    for (const std::string& e : c.env) {
      if (e.rfind("FORGED=", 0) == 0) return PermissionDeniedError("claim not prepared");
      if (e.rfind("PIN=", 0) == 0) {
        r.adjust.cpus = e.substr(4);
        if (c.id != "shared") r.updates.push_back({"shared", {"0-5", ""}, true});
      }
    }
    return r;
  }
  Result<std::vector<nri::CpusetUpdate>> UpdateContainer(const nri::Pod&, const nri::Container& c,
                                                         const nri::Cpuset&) override {
    return std::vector<nri::CpusetUpdate>{{c.id, c.cpuset, false}};
  }
  void Disconnected(const Status&) override { ++disconnects; }
  int disconnects = 0;
};

TEST(Scenario, ParsesTheDocumentedFormat) {
  auto s = ParseScenario(kScenario);
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->runtime.runtime_name, "cri-o");
  EXPECT_EQ(s->runtime.nri_version, "v0.10.0");
  ASSERT_EQ(s->containers.size(), 1u);
  EXPECT_EQ(s->containers[0].cpuset.cpus, "0-7");
  ASSERT_EQ(s->steps.size(), 14u);
  EXPECT_EQ(s->steps[3].expect_error, "not prepared");
  EXPECT_EQ(s->steps[1].container.env, std::vector<std::string>{"PIN=6-7"});
}

TEST(Scenario, RejectsMistakesTable) {
  const std::pair<const char*, const char*> cases[] = {
      {"stepz: []", "unknown key \"stepz\""},
      {"runtime: {nam: x}", "unknown key \"nam\""},
      {"pods: [{id: a}]\nsteps: [{create: {id: c, pod: b}}]", "unknown pod \"b\""},
      {"steps: [{explode: {}}]", "unknown action"},
      {"steps: [{wait_plugin: {}, drop_plugin: {}}]", "more than one action"},
      {"steps: [{wait_plugin: {}, expect_error: x}]", "expect_error only"},
      {"pods: [{id: a}]\ncontainers: [{pod: a}]", "without id"},
      {"steps: [", "scenario:"},  // YAML syntax error
  };
  for (const auto& [yaml, message] : cases) {
    EXPECT_THAT(ParseScenario(yaml), StatusIs(StatusCode::kInvalidArgument, HasSubstr(message)))
        << yaml;
  }
}

class ScenarioRunTest : public ::testing::Test {
 protected:
  ScenarioRunTest()
      : loop_(std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value()) {
    char dir[] = "/tmp/dracpu-sc-XXXXXX";
    EXPECT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    socket_ = dir_ + "/nri.sock";
  }
  ~ScenarioRunTest() override {
    plugin_.reset();
    sim_.reset();
    ::unlink(socket_.c_str());
    ::rmdir(dir_.c_str());
  }
  Status Run(const std::string& yaml) {
    auto scenario = ParseScenario(yaml);
    if (!scenario.ok()) return scenario.status();
    auto sim = RuntimeSimulator::Listen(*loop_, socket_, scenario->runtime);
    if (!sim.ok()) return sim.status();
    sim_ = std::move(sim).value();
    SeedScenario(*scenario, *sim_);
    plugin_ = std::make_unique<nri::ReconnectingPlugin>(
        *loop_, [this] { return nri::ConnectNriSocket(socket_); }, nri::PluginOptions{}, handler_,
        BackoffPolicy{1ms, 10ms, 2.0, 0.0});
    plugin_->Start();
    return RunScenario(*scenario, *loop_, *sim_, 10s);
  }

  std::unique_ptr<loop::EventLoop> loop_;
  std::string dir_, socket_;
  ScenarioHandler handler_;
  std::unique_ptr<RuntimeSimulator> sim_;
  std::unique_ptr<nri::ReconnectingPlugin> plugin_;
};

TEST_F(ScenarioRunTest, DocumentedScenarioPasses) {
  EXPECT_THAT(Run(kScenario), IsOk());
  EXPECT_EQ(handler_.disconnects, 1);  // the drop_plugin step
}

TEST_F(ScenarioRunTest, FailedExpectationNamesTheStep) {
  EXPECT_THAT(
      Run(R"(
pods: [{id: sb, uid: u}]
steps:
  - wait_plugin: {}
  - create: {id: c, pod: sb, env: ["PIN=3"]}
  - expect_cpus: {c: "4"}
)"),
      StatusIs(StatusCode::kFailedPrecondition,
               HasSubstr("step 2 (expect_cpus): container c has cpus \"3\", expected \"4\"")));
}

TEST_F(ScenarioRunTest, UnexpectedSuccessAndWrongErrorFail) {
  EXPECT_THAT(Run(R"(
pods: [{id: sb}]
steps:
  - wait_plugin: {}
  - create: {id: c, pod: sb, env: ["PIN=1"]}
    expect_error: "refused"
)"),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("succeeded, expected an error")));
}

}  // namespace
}  // namespace dracpu::sim
