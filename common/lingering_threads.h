// LingeringThreads: helper threads that outlive their job for a while, so a burst of calls that
// each need helpers does not create (and tear down) threads for every call.
//
// Why: on a virtual machine, a new thread is dear well beyond clone(): glibc hands the thread a
// stack whose pages it gave back (madvise) when the last thread on it ended, so every page the
// new thread touches faults in again, and the exit's unmapping flushes every CPU's TLB. In the
// dra-agent, four GET helpers created per Prepare of several claims doubled the cost of each GET
// (measured: 190 -> 100 us per GET once threads were reused).
//
// Contract: Run hands `job` to an idle thread, or to a new one while fewer than `max_threads`
// exist, or else queues it for the first running thread to finish its job; it returns false only
// when no thread exists or can be made (`max_threads` 0, thread creation refused, or the object
// being destroyed), and then the caller does the job itself. A thread that has had no job for
// `linger` ends, so an idle process keeps none of them (and the wait costs no wakeup before the
// linger ends). The destructor runs the queued jobs, waits for them and ends every thread. Jobs
// must not call back into the same object.
// Thread safety: Run may be called from any number of threads.
#pragma once

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <vector>

namespace dracpu {

class LingeringThreads {
 public:
  LingeringThreads(size_t max_threads, std::chrono::milliseconds linger)
      : max_threads_(max_threads), linger_(linger) {}
  ~LingeringThreads();
  LingeringThreads(const LingeringThreads&) = delete;
  LingeringThreads& operator=(const LingeringThreads&) = delete;

  bool Run(std::function<void()> job);

  // Threads alive now (running a job or lingering), and those of them waiting for a job; for
  // tests.
  size_t threads() const;
  size_t idle_threads() const;

 private:
  struct Worker {
    LingeringThreads* pool;
    pthread_t thread;
    bool ended = false;  // its loop has returned: join it
  };
  static void* Start(void* worker);
  void Loop(Worker* self);
  void JoinEnded(std::unique_lock<std::mutex>& lock);

  const size_t max_threads_;
  const std::chrono::milliseconds linger_;
  mutable std::mutex mu_;
  std::condition_variable job_posted_;
  std::deque<std::function<void()>> jobs_;
  std::list<Worker> workers_;  // stable addresses: each thread holds its own entry
  size_t alive_ = 0;
  size_t idle_ = 0;  // threads waiting for a job
  bool stopping_ = false;
};

}  // namespace dracpu
