#include "dra-agent/kubelet/serial_event_engine.h"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/thread_sanitizer.h"

namespace dracpu::dra {

using grpc_event_engine::experimental::EventEngine;

struct SerialEventEngine::State : std::enable_shared_from_this<State> {
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Task {
    EventEngine::Closure* closure = nullptr;  // not owned
    absl::AnyInvocable<void()> fn;            // owned; used when closure is null
  };
  // (deadline, id): deadline order, first come first served among equal deadlines.
  using Key = std::pair<TimePoint, uint64_t>;

  std::mutex mu;
  std::condition_variable cv;
  std::map<Key, Task> tasks;
  std::unordered_map<uint64_t, TimePoint> deadlines;  // id -> deadline, for Cancel
  uint64_t next_id = 1;
  bool stop = false;
  std::thread thread;  // started by the first task: gRPC 1.51's server often never posts one

  EventEngine::TaskHandle Add(EventEngine::Duration when, Task task) {
    const TimePoint deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(when);
    std::lock_guard lock(mu);
    if (!thread.joinable() && !stop) Start();
    const uint64_t id = next_id++;
    auto [it, inserted] = tasks.emplace(Key{deadline, id}, std::move(task));
    deadlines.emplace(id, deadline);
    // Only a new earliest task changes what the thread waits for.
    if (it == tasks.begin()) cv.notify_one();
    return EventEngine::TaskHandle{{static_cast<intptr_t>(id), Tag()}};
  }

  bool Cancel(EventEngine::TaskHandle handle) {
    if (handle.keys[1] != Tag()) return false;
    Task cancelled;
    {
      std::lock_guard lock(mu);
      const uint64_t id = static_cast<uint64_t>(handle.keys[0]);
      auto d = deadlines.find(id);
      if (d == deadlines.end()) return false;  // already started, or never ours
      auto t = tasks.find(Key{d->second, id});
      cancelled = std::move(t->second);
      tasks.erase(t);
      deadlines.erase(d);
    }
    return true;  // `cancelled` (its AnyInvocable) is destroyed here, outside the lock
  }

  // With mu held. The thread holds the state, so it stays valid when ~SerialEventEngine
  // detaches the thread.
  void Start() {
    thread = std::thread([self = shared_from_this()] { self->Loop(); });
    pthread_setname_np(thread.native_handle(), "grpc-engine");
  }

  void Loop() {
    std::unique_lock lock(mu);
    while (!stop) {
      if (tasks.empty()) {
        cv.wait(lock);
        continue;
      }
      auto first = tasks.begin();
      // A copy: wait_until reads its deadline again after waking, by which time a Cancel may
      // have erased the task that held it.
      const std::chrono::steady_clock::time_point deadline = first->first.first;
      if (deadline > std::chrono::steady_clock::now()) {
        cv.wait_until(lock, deadline);
        continue;
      }
      Task task = std::move(first->second);
      deadlines.erase(first->first.second);
      tasks.erase(first);
      lock.unlock();
      if (task.closure != nullptr) {
        task.closure->Run();
      } else {
        task.fn();
        task.fn = nullptr;  // what it holds is released before the next wait
      }
      lock.lock();
    }
  }

  // Handles carry the state's address, so another engine's handle is never taken for ours.
  intptr_t Tag() const { return reinterpret_cast<intptr_t>(this); }
};

namespace {

// Lookups fail (asynchronously, as the contract asks): the dra-agent resolves no names.
class UnimplementedResolver final : public EventEngine::DNSResolver {
 public:
  explicit UnimplementedResolver(std::shared_ptr<SerialEventEngine::State> state)
      : state_(std::move(state)) {}

  LookupTaskHandle LookupHostname(LookupHostnameCallback on_resolve, absl::string_view,
                                  absl::string_view, EventEngine::Duration) override {
    return Fail(std::move(on_resolve));
  }
  LookupTaskHandle LookupSRV(LookupSRVCallback on_resolve, absl::string_view,
                             EventEngine::Duration) override {
    return Fail(std::move(on_resolve));
  }
  LookupTaskHandle LookupTXT(LookupTXTCallback on_resolve, absl::string_view,
                             EventEngine::Duration) override {
    return Fail(std::move(on_resolve));
  }
  bool CancelLookup(LookupTaskHandle) override { return false; }

 private:
  template <typename Callback>
  LookupTaskHandle Fail(Callback callback) {
    state_->Add(EventEngine::Duration::zero(),
                {nullptr, [cb = std::move(callback)]() mutable {
                   cb(absl::UnimplementedError("DNS lookups are not offered by this process"));
                 }});
    return LookupTaskHandle{{0, 0}};
  }

  std::shared_ptr<SerialEventEngine::State> state_;
};

}  // namespace

// gRPC holds its engines in shared_ptrs and drops the last reference on whichever of its threads
// lets go last (often its executor thread, not the one that made the engine). That count is
// changed in gRPC's uninstrumented code, so for ThreadSanitizer what the constructor, and a call
// that does not take `mu`, did to the engine is released here and acquired by the destructor
// (common/thread_sanitizer.h). Calls that take `mu` are ordered by it.
SerialEventEngine::SerialEventEngine() : state_(std::make_shared<State>()) {
  tsan::ReleaseFor(this);
}

SerialEventEngine::~SerialEventEngine() {
  tsan::AcquireFor(this);
  std::map<State::Key, State::Task> dropped;
  std::thread thread;
  {
    std::lock_guard lock(state_->mu);
    state_->stop = true;
    dropped.swap(state_->tasks);
    state_->deadlines.clear();
    thread.swap(state_->thread);
    state_->cv.notify_one();
  }
  // Destroyed by the last closure to let go of it (on the thread itself): the thread ends once
  // that closure returns. `dropped` releases the pending closures' captures outside the lock.
  if (!thread.joinable()) return;
  if (std::this_thread::get_id() == thread.get_id()) {
    thread.detach();
  } else {
    thread.join();
  }
}

void SerialEventEngine::InstallAsDefault() {
  static std::once_flag once;
  std::call_once(once, [] {
    grpc_event_engine::experimental::SetEventEngineFactory(
        [] { return std::make_unique<SerialEventEngine>(); });
  });
}

bool SerialEventEngine::IsWorkerThread() {
  std::lock_guard lock(state_->mu);
  return std::this_thread::get_id() == state_->thread.get_id();
}

std::unique_ptr<EventEngine::DNSResolver> SerialEventEngine::GetDNSResolver(
    const DNSResolver::ResolverOptions&) {
  auto resolver = std::make_unique<UnimplementedResolver>(state_);
  tsan::ReleaseFor(this);  // no `mu` on this path; see the constructor
  return resolver;
}

void SerialEventEngine::Run(Closure* closure) { state_->Add(Duration::zero(), {closure, {}}); }

void SerialEventEngine::Run(absl::AnyInvocable<void()> closure) {
  state_->Add(Duration::zero(), {nullptr, std::move(closure)});
}

EventEngine::TaskHandle SerialEventEngine::RunAfter(Duration when, Closure* closure) {
  return state_->Add(when, {closure, {}});
}

EventEngine::TaskHandle SerialEventEngine::RunAfter(Duration when,
                                                    absl::AnyInvocable<void()> closure) {
  return state_->Add(when, {nullptr, std::move(closure)});
}

bool SerialEventEngine::Cancel(TaskHandle handle) {
  const bool cancelled = state_->Cancel(handle);
  tsan::ReleaseFor(this);  // a foreign handle returns without `mu`; see the constructor
  return cancelled;
}

absl::StatusOr<std::unique_ptr<EventEngine::Listener>> SerialEventEngine::CreateListener(
    Listener::AcceptCallback, absl::AnyInvocable<void(absl::Status)>,
    const grpc_event_engine::experimental::EndpointConfig&,
    std::unique_ptr<grpc_event_engine::experimental::MemoryAllocatorFactory>) {
  return absl::UnimplementedError("listeners are served by gRPC's iomgr in this process");
}

EventEngine::ConnectionHandle SerialEventEngine::Connect(
    OnConnectCallback on_connect, const ResolvedAddress&,
    const grpc_event_engine::experimental::EndpointConfig&,
    grpc_event_engine::experimental::MemoryAllocator, Duration) {
  state_->Add(Duration::zero(), {nullptr, [cb = std::move(on_connect)]() mutable {
                                   cb(absl::UnimplementedError(
                                       "connections are made by gRPC's iomgr in this process"));
                                 }});
  return ConnectionHandle{{0, 0}};
}

bool SerialEventEngine::CancelConnect(ConnectionHandle) { return false; }

}  // namespace dracpu::dra
