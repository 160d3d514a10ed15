#include "common/lingering_threads.h"

#include <utility>

namespace dracpu {

LingeringThreads::~LingeringThreads() {
  std::list<Worker> workers;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    job_posted_.notify_all();
    workers = std::move(workers_);  // no worker touches its entry once stopping_ is seen
  }
  for (Worker& w : workers) ::pthread_join(w.thread, nullptr);
}

bool LingeringThreads::Run(std::function<void()> job) {
  std::unique_lock lock(mu_);
  JoinEnded(lock);
  if (stopping_) return false;
  // A queued job has a waiting thread of its own to wake, or the new thread made for it, or
  // else waits for a running thread to end its job (every thread looks at the queue then).
  if (idle_ <= jobs_.size() && alive_ < max_threads_) {
    Worker& w = workers_.emplace_back();
    w.pool = this;
    if (::pthread_create(&w.thread, nullptr, Start, &w) == 0) {
      ++alive_;
      jobs_.push_back(std::move(job));
      return true;
    }
    workers_.pop_back();
  }
  if (alive_ == 0) return false;
  jobs_.push_back(std::move(job));
  job_posted_.notify_one();
  return true;
}

size_t LingeringThreads::idle_threads() const {
  std::lock_guard lock(mu_);
  return idle_;
}

void* LingeringThreads::Start(void* worker) {
  auto* w = static_cast<Worker*>(worker);
  w->pool->Loop(w);
  return nullptr;
}

size_t LingeringThreads::threads() const {
  std::lock_guard lock(mu_);
  return alive_;
}

void LingeringThreads::Loop(Worker* self) {
  std::unique_lock lock(mu_);
  while (true) {
    while (!jobs_.empty()) {
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      job = nullptr;  // its captures go before the lock is taken again
      lock.lock();
    }
    if (stopping_) break;
    ++idle_;
    const bool woken =
        job_posted_.wait_for(lock, linger_, [&] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (!woken) break;  // no job for `linger_`
  }
  --alive_;
  if (!stopping_) self->ended = true;  // joined by the next Run; on stopping, the destructor
}

void LingeringThreads::JoinEnded(std::unique_lock<std::mutex>& lock) {
  std::list<Worker> ended;
  for (auto it = workers_.begin(); it != workers_.end();) {
    auto next = std::next(it);
    if (it->ended) ended.splice(ended.end(), workers_, it);
    it = next;
  }
  if (ended.empty()) return;
  lock.unlock();
  for (Worker& w : ended) ::pthread_join(w.thread, nullptr);
  lock.lock();
}

}  // namespace dracpu
