// NriAgent: the nri-agent process's core. Owns the PinningPolicy, the shared-memory attachment,
// the NRI connection (ReconnectingPlugin) and the release watcher, all driven by one EventLoop.
// It is the PluginHandler the adapter calls: it logs every request with `op=<8 hex>` and its
// pod/container/claim keys, records metrics, and forwards to the policy.
//
// Start-up: it tries to attach the segment (role kNriAgent) every `segment_poll`, for at most
// `segment_wait` before connecting to the runtime anyway. Until the segment is attached the
// policy pins shared containers conservatively (the node's allocatable CPUs minus every CPU any
// running container's DRA_CPUSET env names) and refuses exclusive containers (UNAVAILABLE: the
// kubelet retries). When the segment attaches later (or is replaced: IsStale), the agent
// reconnects so that the runtime's fresh Synchronize reconciles every container (its answer
// carries the re-pinning, never an unsolicited update).
//
// Widening: the replies to CreateContainer, UpdateContainer and StopContainer carry the updates
// that move running shared containers to the current pool (the policy's job; safe on every
// runtime). Besides, a watcher thread blocks in Segment::WaitForChange and posts one coalesced
// task to the loop per change; once the segment has been quiet for `coalesce_window` (at most
// `coalesce_max` after the first change) the task records the pool and, when sharedPoolUpdates
// allows unsolicited updates for this runtime, sends the pending widening as one
// UpdateContainers batch (asynchronous: the loop never waits for it; one batch in flight,
// changes meanwhile rerun it after). Heartbeats go into the segment every `heartbeat_interval`.
//
// Thread safety: everything on the loop thread, except healthy()/ready() (any thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/event_loop.h"
#include "common/metrics.h"
#include "common/status.h"
#include "nri-agent/agent/nri_env.h"
#include "nri-agent/nri/plugin.h"
#include "nri-agent/nri/reconnecting_plugin.h"
#include "nri-agent/nri/types.h"
#include "nri-agent/policy/pinning_policy.h"
#include "shm-schema/segment.h"

namespace dracpu::agent {

struct NriAgentOptions {
  std::string shm_path;
  // Opening the segment: role, version and the seams tests set (boot id, PID namespace).
  shm::OpenOptions shm_open;
  std::chrono::milliseconds segment_wait{10000};
  std::chrono::milliseconds segment_poll{200};
  std::chrono::milliseconds heartbeat_interval{1000};
  // Shared-pool changes are pushed (unsolicited, where allowed) once the segment has been quiet
  // this long, and at most coalesce_max after the first change of a burst (docs/nri-agent.md).
  std::chrono::milliseconds coalesce_window{50};
  std::chrono::milliseconds coalesce_max{500};
  // What follows a reply and need not precede it (recording the shared containers it moved, its
  // log line, the gauges, handling a segment change meanwhile) waits this long, or until the
  // next request. Why not at once: writing the reply wakes the runtime's reader, very likely on
  // this CPU (a unix socket's wakeup is synchronous); work right after it keeps the reader off
  // the CPU until it is done (docs/performance.md, "The NRI hot path").
  std::chrono::microseconds after_reply_delay{1000};
  nri::ReconnectingPlugin::Connector connect;
  nri::PluginOptions plugin;
  BackoffPolicy backoff = nri::kReconnectBackoff;
  policy::PolicyOptions policy;
};

class NriAgent : public nri::PluginHandler {
 public:
  // `loop` must run on env.clock. `metrics` may be null; otherwise it must outlive the agent.
  // Nothing happens before Start().
  NriAgent(loop::EventLoop& loop, NriEnv env, NriAgentOptions options, MetricsRegistry* metrics);
  ~NriAgent() override;
  NriAgent(const NriAgent&) = delete;
  NriAgent& operator=(const NriAgent&) = delete;

  // On the loop thread (or before it runs): starts attaching, heartbeats, and the connection.
  void Start();
  // Stops the watcher thread, closes the connection and cancels timers. Idempotent. Call on
  // the loop thread, before destroying the loop.
  void Shutdown();

  // Any thread. healthy: the loop thread ran its heartbeat timer within 3 intervals.
  // ready: the segment is attached and the runtime synchronized us.
  bool healthy() const;
  bool ready() const { return ready_.load(); }

  const policy::PinningPolicy& policy() const { return policy_; }
  bool segment_attached() const { return segment_ != nullptr; }
  const nri::ReconnectingPlugin* plugin() const { return plugin_.get(); }
  // Batches of unsolicited updates sent so far (tests).
  int update_batches() const { return update_batches_; }

  // --- nri::PluginHandler (called by the adapter on the loop thread)
  Result<nri::EventMask> Configure(const nri::RuntimeInfo& runtime) override;
  Result<std::vector<nri::CpusetUpdate>> Synchronize(
      const std::vector<nri::Pod>& pods, const std::vector<nri::Container>& containers) override;
  Result<nri::CreateContainerResult> CreateContainer(const nri::Pod& pod,
                                                     const nri::Container& container) override;
  Result<std::vector<nri::CpusetUpdate>> UpdateContainer(const nri::Pod& pod,
                                                         const nri::Container& container,
                                                         const nri::Cpuset& requested) override;
  Result<std::vector<nri::CpusetUpdate>> StopContainer(const nri::Pod& pod,
                                                       const nri::Container& container) override;
  Status RemoveContainer(const nri::Pod& pod, const nri::Container& container) override;
  void Disconnected(const Status& reason) override;

 private:
  std::string NewOp();
  void TryAttach();
  void Connect();  // (re)creates the ReconnectingPlugin
  void StartWatcher();
  void StopWatcher();
  void OnSegmentChanged();
  void PushPoolUpdates();
  void OnStale();
  void Heartbeat();
  void LogWarnings(const std::string& op);
  // Queues `task` to run after_reply_delay from now (the first queued task sets the time), or
  // at the start of the next request or Shutdown, whichever is first; tasks run in order.
  void AfterReply(std::function<void()> task);
  void RunAfterReply();
  // Queues policy_.RecordAfterReply() (AfterReply), once.
  void RecordMovesAfterReply(const std::string& op);
  void UpdateGauges();
  void Observe(const char* method, const Status& status, Clock::TimePoint start);

  loop::EventLoop& loop_;
  const NriEnv env_;
  NriAgentOptions options_;
  policy::PinningPolicy policy_;
  std::unique_ptr<shm::Segment> segment_;
  std::unique_ptr<nri::ReconnectingPlugin> plugin_;
  std::jthread watcher_;
  std::atomic<bool> change_posted_{false};
  bool moves_posted_ = false;
  std::vector<std::function<void()>> after_reply_;
  loop::EventLoop::TimerId after_reply_timer_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  Clock::TimePoint started_;
  std::string last_attach_error_;
  loop::EventLoop::TimerId attach_timer_ = 0;
  loop::EventLoop::TimerId heartbeat_timer_ = 0;
  loop::EventLoop::TimerId pool_timer_ = 0;
  Clock::TimePoint first_change_;
  bool update_in_flight_ = false;
  bool rerun_after_update_ = false;
  int update_batches_ = 0;
  std::string gated_logged_for_;
  int logged_failed_attempts_ = 0;
  std::string logged_connect_error_;  // the pool last reported as not pushed
  bool shut_down_ = false;
  std::atomic<bool> ready_{false};
  std::atomic<int64_t> last_tick_ns_{0};

  Metric* requests_ = nullptr;
  Metric* latency_ = nullptr;
  Metric* containers_gauge_ = nullptr;
  Metric* pool_gauge_ = nullptr;
  Metric* pool_updates_ = nullptr;
  Metric* connected_gauge_ = nullptr;
  Metric* attached_gauge_ = nullptr;
  Metric* disconnects_ = nullptr;
};

}  // namespace dracpu::agent
