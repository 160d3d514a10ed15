// LoopThread: an EventLoop on real time, run on a thread of its own, for tests of things that
// serve on a loop (HttpServer) while the test thread is their client. Call() runs a function on
// the loop thread and waits for it: create and destroy what lives on the loop through it.
#pragma once

#include <cstdlib>
#include <future>
#include <memory>
#include <thread>
#include <type_traits>

#include "common/event_loop.h"
#include "tests/testing/real_clock.h"

namespace dracpu::testing {

class LoopThread {
 public:
  LoopThread() : loop_(Create()), thread_([this] { loop_->Run().IgnoreError(); }) {}
  ~LoopThread() { Stop(); }
  LoopThread(const LoopThread&) = delete;
  LoopThread& operator=(const LoopThread&) = delete;

  loop::EventLoop& loop() { return *loop_; }

  // Runs `fn` on the loop thread and returns what it returns.
  template <typename F>
  std::invoke_result_t<F> Call(F fn) {
    std::packaged_task<std::invoke_result_t<F>()> task(std::move(fn));
    auto result = task.get_future();
    loop_->Post([&task] { task(); });
    return result.get();
  }

  // Ends the loop and joins its thread; what lives on the loop may then be used from here.
  void Stop() {
    if (!thread_.joinable()) return;
    loop_->Stop();
    thread_.join();
  }

 private:
  static std::unique_ptr<loop::EventLoop> Create() {
    auto loop = loop::EventLoop::Create(RealClock());
    if (!loop.ok()) std::abort();
    return std::move(loop).value();
  }

  std::unique_ptr<loop::EventLoop> loop_;
  std::thread thread_;
};

}  // namespace dracpu::testing
