// ControlSession: command lines in, reply lines out, in order; against no plugin and against a
// ReconnectingPlugin that pins to CPU 0 and refuses containers with REFUSE in their env.
#include "tests/sim/runtime/control_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "nri-agent/nri/reconnecting_plugin.h"
#include "tests/testing/quiet_plugin_handler.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::sim {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

class PinningHandler : public testing::QuietPluginHandler {
 public:
  Result<nri::EventMask> Configure(const nri::RuntimeInfo&) override {
    return nri::MaskOf(nri::Event::kCreateContainer) | nri::MaskOf(nri::Event::kStopContainer) |
           nri::MaskOf(nri::Event::kRemoveContainer);
  }
  Result<std::vector<nri::CpusetUpdate>> Synchronize(
      const std::vector<nri::Pod>&, const std::vector<nri::Container>& containers) override {
    sync_sizes.push_back(containers.size());
    return std::vector<nri::CpusetUpdate>{};
  }
  Result<nri::CreateContainerResult> CreateContainer(const nri::Pod&,
                                                     const nri::Container& c) override {
    for (const std::string& e : c.env) {
      if (e == "REFUSE=1") return PermissionDeniedError("refused " + c.id);
    }
    return nri::CreateContainerResult{{"0", "0"}, {}};
  }

  std::vector<size_t> sync_sizes;
};

class ControlSessionTest : public ::testing::Test {
 protected:
  ControlSessionTest()
      : loop_(std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value()) {
    char dir[] = "/tmp/dracpu-cs-XXXXXX";
    EXPECT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    socket_ = dir_ + "/nri.sock";
    auto sim = RuntimeSimulator::Listen(*loop_, socket_, {});
    EXPECT_THAT(sim, IsOk());
    sim_ = std::move(sim).value();
    session_ = std::make_unique<ControlSession>(
        *loop_, *sim_, [this](const std::string& r) { replies_.push_back(r); },
        [this] { ++quits_; });
  }
  ~ControlSessionTest() override {
    plugin_.reset();
    session_.reset();
    sim_.reset();
    ::unlink(socket_.c_str());
    ::rmdir(dir_.c_str());
  }
  void StartPlugin() {
    plugin_ = std::make_unique<nri::ReconnectingPlugin>(
        *loop_, [this] { return nri::ConnectNriSocket(socket_); }, nri::PluginOptions{}, handler_,
        BackoffPolicy{1ms, 8ms, 2.0, 0.0});
    plugin_->Start();
  }
  // Sends `line` and runs the loop until its reply (and every earlier one) is out.
  rapidjson::Document Send(const std::string& line) {
    const size_t want = replies_.size() + session_->pending_replies() + 1;
    session_->OnInput(line + "\n");
    for (int i = 0; i < 100000 && replies_.size() < want; ++i) {
      EXPECT_THAT(loop_->RunOnce(100ms), IsOk());
    }
    rapidjson::Document d;
    EXPECT_EQ(replies_.size(), want) << line;
    if (replies_.size() < want) return d;
    d.Parse(replies_.back().c_str());
    EXPECT_FALSE(d.HasParseError()) << replies_.back();
    EXPECT_TRUE(d.IsObject() && d.HasMember("ok") && d["ok"].IsBool()) << replies_.back();
    return d;
  }
  static std::string Error(const rapidjson::Document& d) {
    return d.IsObject() && d.HasMember("error") ? d["error"].GetString() : "";
  }

  std::unique_ptr<loop::EventLoop> loop_;
  std::string dir_, socket_;
  std::unique_ptr<RuntimeSimulator> sim_;
  std::unique_ptr<ControlSession> session_;
  PinningHandler handler_;
  std::unique_ptr<nri::ReconnectingPlugin> plugin_;
  std::vector<std::string> replies_;
  int quits_ = 0;
};

struct BadLine {
  const char* line;
  const char* error;  // a substring of the reply's error
};

TEST_F(ControlSessionTest, BadLinesAreRefusedAndTheSessionGoesOn) {
  const BadLine cases[] = {
      {"{not json", "line 1: not JSON"},
      {"[1,2]", "line 2: not a JSON object"},
      {R"({"id":"c1"})", "line 3: \"op\" is missing"},
      {R"({"op":7})", "line 4: \"op\" must be a string"},
      {R"({"op":"fly"})", "line 5: unknown op \"fly\""},
      {R"({"op":"create","container":{"id":"c1"}})", "line 6: \"pod\" must be an object"},
      {R"({"op":"create","pod":{"id":1},"container":{"id":"c1"}})", "\"pod.id\" must be a string"},
      {R"({"op":"create","pod":{"id":"p"},"container":{"name":"x"}})",
       "\"container.id\" is missing"},
      {R"({"op":"create","pod":{"id":"p"},"container":{"id":"c","env":"A=1"}})",
       "\"container.env\" must be an array"},
      {R"({"op":"create","pod":{"id":"p"},"container":{"id":"c","pid":-1}})",
       "\"container.pid\" must be a non-negative integer"},
      {R"({"op":"update","id":"c1"})", "update needs \"cpus\" or \"mems\""},
      {R"({"op":"stop"})", "\"id\" is missing"},
      {R"({"op":"wait_plugin","timeout_ms":"soon"})", "\"timeout_ms\" must be"},
  };
  for (const BadLine& c : cases) {
    rapidjson::Document d = Send(c.line);
    EXPECT_FALSE(d["ok"].GetBool()) << c.line;
    EXPECT_THAT(Error(d), HasSubstr(c.error)) << c.line;
  }
  rapidjson::Document list = Send(R"({"op":"list"})");
  EXPECT_TRUE(list["ok"].GetBool());
  EXPECT_STREQ(list["plugin"].GetString(), "none");
  EXPECT_EQ(quits_, 0);
}

TEST_F(ControlSessionTest, BlankLinesGetNoReply) {
  session_->OnInput("\n  \n");
  EXPECT_EQ(session_->pending_replies(), 0u);
  EXPECT_TRUE(replies_.empty());
}

TEST_F(ControlSessionTest, CreateWithoutAPluginRunsUnpinned) {
  rapidjson::Document d = Send(
      R"({"op":"create","pod":{"id":"sb1","name":"web","uid":"u1","namespace":"default"},)"
      R"("container":{"id":"c1","name":"app","env":["DRA_CPUSET_x=2-3"],"pid":0,"cpus":"0-7"}})");
  EXPECT_TRUE(d["ok"].GetBool()) << Error(d);
  EXPECT_STREQ(d["cpus"].GetString(), "0-7");
  EXPECT_STREQ(d["mems"].GetString(), "");
  rapidjson::Document list = Send(R"({"op":"list"})");
  ASSERT_EQ(list["containers"].Size(), 1u);
  const auto& c = list["containers"][0];
  EXPECT_STREQ(c["id"].GetString(), "c1");
  EXPECT_STREQ(c["pod"].GetString(), "sb1");
  EXPECT_STREQ(c["name"].GetString(), "app");
  EXPECT_STREQ(c["state"].GetString(), "running");
  EXPECT_STREQ(c["cpus"].GetString(), "0-7");
  EXPECT_EQ(c["pid"].GetUint(), 0u);

  rapidjson::Document again = Send(R"({"op":"create","pod":{"id":"sb1"},"container":{"id":"c1"}})");
  EXPECT_FALSE(again["ok"].GetBool());
  EXPECT_THAT(Error(again), HasSubstr("c1"));
  EXPECT_TRUE(Send(R"({"op":"update","id":"c1","cpus":"1"})")["ok"].GetBool());
  EXPECT_TRUE(Send(R"({"op":"stop","id":"c1"})")["ok"].GetBool());
  EXPECT_STREQ(Send(R"({"op":"list"})")["containers"][0]["state"].GetString(), "stopped");
  EXPECT_TRUE(Send(R"({"op":"remove","id":"c1"})")["ok"].GetBool());
  rapidjson::Document gone = Send(R"({"op":"remove","id":"c1"})");
  EXPECT_FALSE(gone["ok"].GetBool());
  EXPECT_THAT(Error(gone), HasSubstr("c1"));
}

TEST_F(ControlSessionTest, WaitPluginTimesOutAndRepliesStayInOrder) {
  // The list is answered at once but written only after the earlier wait_plugin's reply.
  session_->OnInput(R"({"op":"wait_plugin","timeout_ms":30})"
                    "\n"
                    R"({"op":"list"})"
                    "\n");
  EXPECT_TRUE(replies_.empty());
  EXPECT_EQ(session_->pending_replies(), 2u);
  for (int i = 0; i < 1000 && replies_.size() < 2; ++i) ASSERT_THAT(loop_->RunOnce(100ms), IsOk());
  ASSERT_EQ(replies_.size(), 2u);
  EXPECT_THAT(replies_[0], HasSubstr("wait_plugin: no plugin ready (state none)"));
  EXPECT_THAT(replies_[1], HasSubstr(R"("plugin":"none")"));
}

TEST_F(ControlSessionTest, QuitRepliesThenQuits) {
  rapidjson::Document d = Send(R"({"op":"quit"})");
  EXPECT_TRUE(d["ok"].GetBool());
  EXPECT_EQ(quits_, 1);
}

TEST_F(ControlSessionTest, EndOfInputQuitsOnceRepliesAreOut) {
  session_->OnInput(R"({"op":"wait_plugin","timeout_ms":20})"
                    "\n"
                    R"({"op":"list"})");
  session_->Finish();  // the unterminated last line still counts
  EXPECT_EQ(quits_, 0);
  for (int i = 0; i < 1000 && quits_ == 0; ++i) ASSERT_THAT(loop_->RunOnce(100ms), IsOk());
  EXPECT_EQ(quits_, 1);
  EXPECT_EQ(replies_.size(), 2u);
}

TEST_F(ControlSessionTest, PluginPinsRefusesAndComesBackAfterARestart) {
  StartPlugin();
  rapidjson::Document ready = Send(R"({"op":"wait_plugin","timeout_ms":5000})");
  ASSERT_TRUE(ready["ok"].GetBool()) << Error(ready);
  rapidjson::Document c1 = Send(R"({"op":"create","pod":{"id":"sb1"},"container":{"id":"c1"}})");
  ASSERT_TRUE(c1["ok"].GetBool()) << Error(c1);
  EXPECT_STREQ(c1["cpus"].GetString(), "0");
  EXPECT_STREQ(c1["mems"].GetString(), "0");
  rapidjson::Document refused =
      Send(R"({"op":"create","pod":{"id":"sb1"},"container":{"id":"c2","env":["REFUSE=1"]}})");
  EXPECT_FALSE(refused["ok"].GetBool());
  EXPECT_THAT(Error(refused), HasSubstr("refused c2"));

  rapidjson::Document restart = Send(R"({"op":"restart"})");
  ASSERT_TRUE(restart["ok"].GetBool()) << Error(restart);
  ready = Send(R"({"op":"wait_plugin","timeout_ms":5000})");
  ASSERT_TRUE(ready["ok"].GetBool()) << Error(ready);
  ASSERT_EQ(handler_.sync_sizes.size(), 2u);
  EXPECT_EQ(handler_.sync_sizes[1], 1u);  // c1 kept through the restart
  rapidjson::Document list = Send(R"({"op":"list"})");
  EXPECT_STREQ(list["plugin"].GetString(), "ready");
  ASSERT_EQ(list["containers"].Size(), 1u);
  EXPECT_STREQ(list["containers"][0]["state"].GetString(), "running");

  EXPECT_TRUE(Send(R"({"op":"drop_plugin"})")["ok"].GetBool());
  EXPECT_NE(sim_->plugin_state(), RuntimeSimulator::PluginState::kReady);
  ready = Send(R"({"op":"wait_plugin","timeout_ms":5000})");
  EXPECT_TRUE(ready["ok"].GetBool()) << Error(ready);
}

}  // namespace
}  // namespace dracpu::sim
