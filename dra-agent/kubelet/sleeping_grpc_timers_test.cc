#include "dra-agent/kubelet/sleeping_grpc_timers.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::dra {
namespace {

using namespace std::chrono_literals;

// gRPC's count of its timer thread's timed wakeups (a test-only export of gRPC 1.51).
uint64_t TimerThreadWakeups() {
  static auto* count = reinterpret_cast<uint64_t (*)()>(
      ::dlsym(RTLD_DEFAULT, "_Z39grpc_timer_manager_get_wakeups_testonlyv"));
  return count == nullptr ? 0 : count();
}

// A server whose one service never takes a call (so each call waits for its deadline), and a
// client connected to it over a unix socket.
class SleepingGrpcTimersTest : public ::testing::Test {
 protected:
  // First in the process, before any other gRPC use, as the agent's main does. A client
  // channel's backup poller (a 5 s timer for as long as a channel exists) is off: the agent has
  // no client channel, and the idle test counts what a server leaves pending.
  static void SetUpTestSuite() {
    ::setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "0", 1);
    installed_ = InstallSleepingGrpcTimers();
  }

  void SetUp() override {
    ASSERT_THAT(installed_, IsOk());
    const std::string address = "unix:" + dir_.path() + "/grpc.sock";
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials());
    builder.RegisterAsyncGenericService(&never_answers_);
    server_cq_ = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    channel_ = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    ASSERT_TRUE(channel_->WaitForConnected(std::chrono::system_clock::now() + 30s));
  }

  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    if (server_cq_) {
      server_cq_->Shutdown();
      void* tag;
      bool ok;
      while (server_cq_->Next(&tag, &ok)) {
      }
    }
  }

  static Status installed_;
  testing::TempDir dir_{"dracpu-grpc-timers"};
  grpc::AsyncGenericService never_answers_;
  std::unique_ptr<grpc::ServerCompletionQueue> server_cq_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

Status SleepingGrpcTimersTest::installed_;

// How one call that the server never answers ended.
struct EndedCall {
  std::chrono::milliseconds deadline_after;
  grpc::StatusCode code;
  std::string message;
  bool ended_before_its_deadline;
};

// Starts one call per deadline, all at once, and waits until each has ended. Were a new timer
// not to wake gRPC's timer thread, the calls would wait for ever: the 60 s bound only ends such
// a hang (it is not a measure of anything).
std::vector<EndedCall> CallsEndedByTheirDeadlines(
    const std::shared_ptr<grpc::Channel>& channel,
    const std::vector<std::chrono::milliseconds>& deadlines_after) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  struct Call {
    std::chrono::milliseconds after;
    std::chrono::system_clock::time_point deadline;
    grpc::ClientContext context;
    grpc::ByteBuffer reply;
    grpc::Status status;
    std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader;
  };
  std::vector<std::unique_ptr<Call>> calls;
  for (auto after : deadlines_after) {
    auto call = std::make_unique<Call>();
    call->after = after;
    call->deadline = std::chrono::system_clock::now() + after;
    call->context.set_deadline(call->deadline);
    call->reader = stub.PrepareUnaryCall(&call->context, "/test.Never/Answer", {}, &cq);
    call->reader->StartCall();
    call->reader->Finish(&call->reply, &call->status, call.get());
    calls.push_back(std::move(call));
  }
  std::vector<EndedCall> ended;
  while (ended.size() < calls.size()) {
    void* tag = nullptr;
    bool ok = false;
    if (cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + 60s) !=
        grpc::CompletionQueue::NextStatus::GOT_EVENT) {
      ADD_FAILURE() << "a call's deadline never fired";
      break;
    }
    const auto now = std::chrono::system_clock::now();
    const auto* call = static_cast<const Call*>(tag);
    ended.push_back({call->after, call->status.error_code(), call->status.error_message(),
                     now < call->deadline});
  }
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
  return ended;
}

// Each call's deadline is a timer set while the timer thread sleeps with nothing pending (or
// until a later deadline): each call ends with DEADLINE_EXCEEDED, none before its deadline.
TEST_F(SleepingGrpcTimersTest, EveryCallDeadlineFiresAndNoneEarly) {
  const std::vector<EndedCall> ended =
      CallsEndedByTheirDeadlines(channel_, {300ms, 100ms, 200ms, 700ms});
  ASSERT_EQ(ended.size(), 4u);
  for (const EndedCall& call : ended) {
    EXPECT_EQ(call.code, grpc::StatusCode::DEADLINE_EXCEEDED)
        << call.deadline_after.count() << " ms: " << call.message;
    EXPECT_FALSE(call.ended_before_its_deadline) << call.deadline_after.count() << " ms";
  }
}

// With the client connected and no call in flight, no timer is pending: gRPC's own check would
// wake the thread about once a second per group of timer shards (2.3 times a second here); this
// one lets it sleep.
TEST_F(SleepingGrpcTimersTest, AnIdleServerAndClientLeaveTheTimerThreadAsleep) {
  ASSERT_NE(::dlsym(RTLD_DEFAULT, "_Z39grpc_timer_manager_get_wakeups_testonlyv"), nullptr);
  // A call first, so the connection has done what it does after traffic.
  const std::vector<EndedCall> ended = CallsEndedByTheirDeadlines(channel_, {50ms});
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].code, grpc::StatusCode::DEADLINE_EXCEEDED) << ended[0].message;
  std::this_thread::sleep_for(200ms);  // the call's last timers fire or are cancelled
  const uint64_t before = TimerThreadWakeups();
  std::this_thread::sleep_for(6s);
  EXPECT_EQ(TimerThreadWakeups() - before, 0u);
}

}  // namespace
}  // namespace dracpu::dra
