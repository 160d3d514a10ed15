#include "dra-agent/kubelet/sleeping_grpc_timers.h"

#include <dlfcn.h>
#include <grpc/grpc.h>
#include <grpc/support/time.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/thread_sanitizer.h"

// Every program that installs this runs gRPC (common/thread_sanitizer.h).
DRACPU_TSAN_GRPC_PROGRAM()

namespace dracpu::dra {
namespace {

// gRPC 1.51's grpc_timer_vtable (src/core/lib/iomgr/timer.h). A grpc_core::Timestamp is a
// trivially copyable class holding int64 milliseconds after gRPC's process epoch, so by value it
// travels as an int64_t and by pointer as an int64_t*. Timers and closures are only passed on.
struct TimerTable {
  void (*init)(void* timer, int64_t deadline_ms, void* closure);
  void (*cancel)(void* timer);
  int (*check)(int64_t* next_ms);  // a grpc_timer_check_result
  void (*list_init)();
  void (*list_shutdown)();
  void (*consume_kick)();
};

// grpc_timer_check_result's values.
constexpr int kTimersNotChecked = 0;
constexpr int kTimersCheckedAndEmpty = 1;

constexpr int64_t kInfFuture = std::numeric_limits<int64_t>::max();  // Timestamp::InfFuture()
constexpr std::string_view kCoreVersion = "29.0.0";                  // gRPC 1.51.x

// What the replacement table works with: gRPC's own table and helpers, and the deadlines of the
// timers set through it and not yet cancelled or fired.
struct Timers {
  const TimerTable* generic = nullptr;
  int64_t (*timestamp_from_timespec)(gpr_timespec) = nullptr;  // Timestamp::FromTimespecRoundDown
  void (*kick_timer_thread)() = nullptr;                       // grpc_kick_poller

  // Held across the forwarded calls, so a check and a set never interleave: a timer set while
  // gRPC's check runs is either seen by it or remembered after it.
  std::mutex mu;
  std::unordered_map<const void*, int64_t> deadline_of;
  std::set<std::pair<int64_t, const void*>> by_deadline;
  // The time the last check told the timer thread to check again; a timer set earlier than this
  // wakes the thread.
  int64_t next_check = kInfFuture;

  // With mu held.
  void Remember(const void* timer, int64_t deadline) {
    Forget(timer);  // a timer struct is reused after it fired
    deadline_of.emplace(timer, deadline);
    by_deadline.emplace(deadline, timer);
  }
  void Forget(const void* timer) {
    auto it = deadline_of.find(timer);
    if (it == deadline_of.end()) return;
    by_deadline.erase({it->second, timer});
    deadline_of.erase(it);
  }
  // Forgets every timer due by `now` (gRPC's check at `now` has fired them).
  void ForgetDueBy(int64_t now) {
    while (!by_deadline.empty() && by_deadline.begin()->first <= now) {
      deadline_of.erase(by_deadline.begin()->second);
      by_deadline.erase(by_deadline.begin());
    }
  }
  int64_t Earliest() const { return by_deadline.empty() ? kInfFuture : by_deadline.begin()->first; }
  // The time the thread is told to check again: the earlier of what gRPC asked and our next
  // deadline; remembered as next_check.
  int64_t ScheduleNextCheck(int64_t asked) {
    next_check = std::min(asked, Earliest());
    return next_check;
  }
  // gRPC's clock, as its timer check reads it (rounded down, so never ahead of the check's).
  int64_t Now() const { return timestamp_from_timespec(gpr_now(GPR_CLOCK_MONOTONIC)); }
};

Timers& State() {
  static Timers* timers = new Timers;  // outlives gRPC's threads at exit
  return *timers;
}

void Init(void* timer, int64_t deadline_ms, void* closure) {
  Timers& t = State();
  bool wake = false;
  {
    std::lock_guard lock(t.mu);
    t.Remember(timer, deadline_ms);
    t.generic->init(timer, deadline_ms, closure);
    if (deadline_ms < t.next_check) {
      t.next_check = deadline_ms;
      wake = true;
    }
  }
  // After the lock: the woken thread's check takes it.
  if (wake) t.kick_timer_thread();
}

void Cancel(void* timer) {
  Timers& t = State();
  std::lock_guard lock(t.mu);
  t.Forget(timer);
  t.generic->cancel(timer);
}

int Check(int64_t* next_ms) {
  Timers& t = State();
  std::lock_guard lock(t.mu);
  const int64_t asked = next_ms ? *next_ms : kInfFuture;
  // Read before gRPC's check reads its own clock: every deadline up to here is fired by it.
  const int64_t now = t.Now();
  if (t.Earliest() > now) {
    const int64_t next = t.ScheduleNextCheck(asked);
    if (next_ms) *next_ms = next;
    return kTimersCheckedAndEmpty;
  }
  const int result = t.generic->check(next_ms);
  if (result == kTimersNotChecked) {
    // Another caller was checking (cannot happen while every check holds mu); as gRPC's own.
    return result;
  }
  t.ForgetDueBy(now);
  // gRPC's own answer is its next window move (at most a second away); ours is the next deadline.
  const int64_t next = t.ScheduleNextCheck(asked);
  if (next_ms) *next_ms = next;
  return result;
}

void ListInit() { State().generic->list_init(); }

void ListShutdown() {
  Timers& t = State();
  std::lock_guard lock(t.mu);
  t.generic->list_shutdown();  // cancels every pending timer
  t.deadline_of.clear();
  t.by_deadline.clear();
  t.next_check = kInfFuture;
}

void ConsumeKick() { State().generic->consume_kick(); }

TimerTable sleeping_table = {Init, Cancel, Check, ListInit, ListShutdown, ConsumeKick};

template <typename T>
Status LookUp(const char* symbol, T& out) {
  void* found = ::dlsym(RTLD_DEFAULT, symbol);
  if (found == nullptr) {
    return FailedPreconditionError(std::string("gRPC does not export ") + symbol);
  }
  out = reinterpret_cast<T>(found);
  return Status::Ok();
}

Status Install() {
  const std::string_view version = grpc_version_string();
  if (version != kCoreVersion) {
    return FailedPreconditionError("gRPC core " + std::string(version) +
                                   " is not the one whose timer table this knows (" +
                                   std::string(kCoreVersion) + ", gRPC 1.51)");
  }
  if (grpc_is_initialized() != 0) {
    return FailedPreconditionError(
        "gRPC was already in use: timers set before the install would be unknown to it");
  }
  Timers& t = State();
  void (*set_timer_table)(TimerTable*) = nullptr;
  void (*set_timer_threading)(bool) = nullptr;
  RETURN_IF_ERROR(LookUp("grpc_generic_timer_vtable", t.generic));
  RETURN_IF_ERROR(LookUp("_ZN9grpc_core9Timestamp21FromTimespecRoundDownE12gpr_timespec",
                         t.timestamp_from_timespec));
  RETURN_IF_ERROR(LookUp("_Z16grpc_kick_pollerv", t.kick_timer_thread));
  RETURN_IF_ERROR(LookUp("_Z19grpc_set_timer_implP17grpc_timer_vtable", set_timer_table));
  RETURN_IF_ERROR(LookUp("_Z32grpc_timer_manager_set_threadingb", set_timer_threading));
  // gRPC picks its platform's timer table when first initialised (replacing one set earlier),
  // and its timer threads read the table on every check: swap it while they are stopped.
  grpc_init();
  set_timer_threading(false);
  set_timer_table(&sleeping_table);
  set_timer_threading(true);
  return Status::Ok();
}

}  // namespace

Status InstallSleepingGrpcTimers() {
  static const Status installed = Install();
  return installed;
}

}  // namespace dracpu::dra
