#include "dra-agent/kubelet/serial_event_engine.h"

#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dracpu::dra {
namespace {

using namespace std::chrono_literals;
using grpc_event_engine::experimental::EventEngine;
using ::testing::ElementsAre;

int ThreadsOfThisProcess() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return -1;
  while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

// Records the order closures ran in; Wait() blocks until `n` have.
class Trace {
 public:
  void Add(const std::string& what) {
    std::lock_guard lock(mu_);
    order_.push_back(what);
    cv_.notify_all();
  }
  std::vector<std::string> Wait(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 10s, [&] { return order_.size() >= n; });
    return order_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> order_;
};

TEST(SerialEventEngine, MakesNoThreadUntilTheFirstTask) {
  // ThreadSanitizer starts its own background thread with the process's first thread: have it
  // exist before counting (make tsan).
  std::thread([] {}).join();
  const int before = ThreadsOfThisProcess();
  auto engine = std::make_shared<SerialEventEngine>();
  EXPECT_EQ(ThreadsOfThisProcess(), before);
  std::promise<bool> on_worker;
  engine->Run([&] { on_worker.set_value(engine->IsWorkerThread()); });
  EXPECT_TRUE(on_worker.get_future().get());
  EXPECT_EQ(ThreadsOfThisProcess(), before + 1);
  EXPECT_FALSE(engine->IsWorkerThread());
}

TEST(SerialEventEngine, RunsInDeadlineOrderAndNeverInline) {
  SerialEventEngine engine;
  Trace trace;
  engine.RunAfter(60ms, [&] { trace.Add("late"); });
  engine.RunAfter(20ms, [&] { trace.Add("early"); });
  engine.Run([&] { trace.Add("now"); });
  EXPECT_THAT(trace.Wait(3), ElementsAre("now", "early", "late"));
}

TEST(SerialEventEngine, ClosuresMayScheduleMoreWorkWhichNeverRunsInline) {
  SerialEventEngine engine;
  Trace trace;
  engine.Run([&] {
    bool ran = false;
    engine.Run([&trace] { trace.Add("inner"); });
    ran = trace.Wait(0).size() > 0;  // the only thread that could run it is this one
    trace.Add(ran ? "inner ran inline" : "outer");
  });
  EXPECT_THAT(trace.Wait(2), ElementsAre("outer", "inner"));
}

TEST(SerialEventEngine, CancelStopsAPendingTimerOnlyOnce) {
  SerialEventEngine engine;
  Trace trace;
  auto owned = std::make_shared<int>(7);
  std::weak_ptr<int> watch = owned;
  EventEngine::TaskHandle h =
      engine.RunAfter(1h, [&, o = std::move(owned)] { trace.Add("cancelled one ran"); });
  EXPECT_TRUE(engine.Cancel(h));
  EXPECT_TRUE(watch.expired());  // an AnyInvocable is destroyed on cancellation
  EXPECT_FALSE(engine.Cancel(h));

  EventEngine::TaskHandle ran = engine.RunAfter(0ms, [&] { trace.Add("ran"); });
  EXPECT_THAT(trace.Wait(1), ElementsAre("ran"));
  EXPECT_FALSE(engine.Cancel(ran));
  EXPECT_FALSE(engine.Cancel(EventEngine::TaskHandle{{1, 12345}}));  // not this engine's
}

// The thread waits for the earliest deadline; cancelling that task and posting another wakes
// it. The wait must not read the cancelled task's deadline afterwards (it did: a use after free
// that ASan caught once in `make asan`). The 100 ms lets the thread reach the wait; were it not
// there yet, the test would pass without checking anything, never fail spuriously.
TEST(SerialEventEngine, CancellingTheTaskItWaitsForThenPostingWakesIt) {
  SerialEventEngine engine;
  Trace trace;
  engine.Run([&] { trace.Add("first"); });
  ASSERT_THAT(trace.Wait(1), ElementsAre("first"));
  EventEngine::TaskHandle later = engine.RunAfter(1h, [&] { trace.Add("cancelled one ran"); });
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(engine.Cancel(later));
  engine.Run([&] { trace.Add("second"); });
  EXPECT_THAT(trace.Wait(2), ElementsAre("first", "second"));
}

TEST(SerialEventEngine, ClosureObjectsStayWithTheirOwner) {
  struct Counted : EventEngine::Closure {
    void Run() override { ran.set_value(); }
    std::promise<void> ran;
  };
  SerialEventEngine engine;
  Counted c;
  engine.Run(&c);
  EXPECT_EQ(c.ran.get_future().wait_for(10s), std::future_status::ready);
  Counted never;
  EXPECT_TRUE(engine.Cancel(engine.RunAfter(1h, &never)));
}

TEST(SerialEventEngine, DestructionDropsPendingTasks) {
  auto owned = std::make_shared<int>(1);
  std::weak_ptr<int> watch = owned;
  {
    SerialEventEngine engine;
    engine.RunAfter(1h, [o = std::move(owned)] {});
  }
  EXPECT_TRUE(watch.expired());
}

TEST(SerialEventEngine, MayBeDestroyedByItsOwnLastClosure) {
  auto engine = std::make_shared<SerialEventEngine>();
  std::promise<void> done;
  std::weak_ptr<SerialEventEngine> watch = engine;
  engine->Run([e = engine, &done]() mutable {
    e.reset();  // the closure's copy is the last one once the test's is gone
    done.set_value();
  });
  engine.reset();
  EXPECT_EQ(done.get_future().wait_for(10s), std::future_status::ready);
  for (int i = 0; i < 1000 && !watch.expired(); ++i) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(watch.expired());
}

TEST(SerialEventEngine, LookupsFailAsUnimplemented) {
  SerialEventEngine engine;
  std::promise<absl::Status> lookup;
  auto resolver = engine.GetDNSResolver({});
  resolver->LookupHostname(
      [&](absl::StatusOr<std::vector<EventEngine::ResolvedAddress>> r) {
        lookup.set_value(r.status());
      },
      "localhost", "80", 1s);
  EXPECT_EQ(lookup.get_future().get().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace dracpu::dra
