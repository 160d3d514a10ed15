#include "nri-agent/agent/nri_agent.h"

#include <glog/logging.h>
#include <pthread.h>

#include <cstdio>
#include <sstream>
#include <utility>

#include "common/claim_env.h"
#include "common/log_escape.h"
#include "common/operation_id.h"

namespace dracpu::agent {
namespace {

int64_t NanosOf(Clock::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// The request keys of STYLE.md: pod, container and the claims its env names. Every value is
// the runtime's (and, through the env, the pod author's): escaped, so none forges a log line.
std::string Keys(const nri::Pod& pod, const nri::Container& c) {
  std::string out = "pod=" + LogEscape(pod.namespace_name, 64) + "/" + LogEscape(pod.name) +
                    " pod_uid=" + LogEscape(pod.uid, 64) + " container=" + LogEscape(c.name) +
                    " id=" + LogEscape(c.id, 128);
  std::string claims;
  for (const std::string& e : c.env) {
    if (e.rfind(kClaimEnvPrefix, 0) != 0) continue;
    const size_t eq = e.find('=');
    if (!claims.empty()) claims += ",";
    claims += e.substr(kClaimEnvPrefix.size(),
                       eq == std::string::npos ? e.npos : eq - kClaimEnvPrefix.size());
  }
  if (!claims.empty()) out += " claim_uid=" + LogEscape(claims);
  return out;
}

std::string UpdatesText(const std::vector<nri::CpusetUpdate>& updates) {
  std::string out = std::to_string(updates.size());
  if (updates.empty()) return out;
  out += " [";
  for (size_t i = 0; i < updates.size() && i < 8; ++i) {
    if (i > 0) out += " ";
    out += LogEscape(updates[i].container_id, 128) + ":" + updates[i].cpuset.cpus;
  }
  if (updates.size() > 8) out += " ...";
  return out + "]";
}

// Runtimes take these codes as a broken plugin (drop it, and the event goes on without it: the
// container would start unpinned). A refusal must fail the operation instead.
Status ForRuntime(const Status& s) {
  const StatusCode c = s.code();
  if (c == StatusCode::kUnavailable || c == StatusCode::kDeadlineExceeded ||
      c == StatusCode::kDataLoss) {
    return FailedPreconditionError(s.ToString());
  }
  return s;
}

// The agent records a reply's moved shared containers after sending it (RecordMovesAfterReply).
policy::PolicyOptions WithMovesAfterReply(policy::PolicyOptions options) {
  options.record_moves_after_reply = true;
  return options;
}

}  // namespace

NriAgent::NriAgent(loop::EventLoop& loop, NriEnv env, NriAgentOptions options,
                   MetricsRegistry* metrics)
    : loop_(loop),
      env_(env),
      options_(std::move(options)),
      policy_(nullptr, WithMovesAfterReply(options_.policy)) {
  if (metrics != nullptr) {
    requests_ = &metrics->AddCounter("dracpu_nri_requests_total",
                                     "NRI requests handled, by method and result code.",
                                     {"method", "code"});
    latency_ = &metrics->AddHistogram("dracpu_nri_request_duration_seconds",
                                      "Time the policy took per NRI request.", {"method"},
                                      LatencyBuckets());
    containers_gauge_ = &metrics->AddGauge("dracpu_nri_containers",
                                           "Containers the nri-agent tracks, by kind.", {"kind"});
    pool_gauge_ = &metrics->AddGauge("dracpu_nri_shared_pool_cpus", "CPUs in the shared pool.");
    pool_updates_ = &metrics->AddCounter(
        "dracpu_nri_shared_pool_updates_total",
        "Unsolicited shared-pool container updates: applied, failed, skipped (gated), error.",
        {"result"});
    for (const char* r : {"applied", "failed", "skipped", "error"}) pool_updates_->Add({r}, 0);
    connected_gauge_ =
        &metrics->AddGauge("dracpu_nri_synchronized", "1 while the runtime has synchronized us.");
    attached_gauge_ = &metrics->AddGauge("dracpu_nri_segment_attached",
                                         "1 while the shared-memory segment is attached.");
    disconnects_ = &metrics->AddCounter("dracpu_nri_disconnects_total",
                                        "Connections to the runtime that ended.");
  }
}

NriAgent::~NriAgent() {
  Shutdown();
  alive_.reset();
}

std::string NriAgent::NewOp() { return NewOperationId(env_.random); }

bool NriAgent::healthy() const {
  const int64_t last = last_tick_ns_.load();
  const int64_t limit =
      3 * std::chrono::duration_cast<std::chrono::nanoseconds>(options_.heartbeat_interval).count();
  return last != 0 && NanosOf(env_.clock.Now()) - last < limit;
}

void NriAgent::Start() {
  started_ = env_.clock.Now();
  last_tick_ns_ = NanosOf(started_);
  Heartbeat();
  TryAttach();
}

void NriAgent::Shutdown() {
  if (shut_down_) return;
  RunAfterReply();
  shut_down_ = true;
  ready_ = false;
  StopWatcher();
  if (attach_timer_ != 0) loop_.CancelTimer(attach_timer_);
  if (heartbeat_timer_ != 0) loop_.CancelTimer(heartbeat_timer_);
  if (pool_timer_ != 0) loop_.CancelTimer(pool_timer_);
  attach_timer_ = heartbeat_timer_ = pool_timer_ = 0;
  plugin_.reset();
}

void NriAgent::Heartbeat() {
  heartbeat_timer_ = 0;
  if (shut_down_) return;
  last_tick_ns_ = NanosOf(env_.clock.Now());
  if (plugin_ != nullptr && plugin_->failed_attempts() != logged_failed_attempts_) {
    // Connections that failed outright (socket missing, runtime down) end in no Disconnected;
    // say so once per distinct error.
    logged_failed_attempts_ = plugin_->failed_attempts();
    const std::string err = plugin_->last_error().ToString();
    if (err != logged_connect_error_) {
      LOG(WARNING) << "cannot connect to the runtime (attempt " << logged_failed_attempts_
                   << ", next in " << plugin_->next_delay().count() << " ms): " << err;
      logged_connect_error_ = err;
    }
  }
  if (segment_ != nullptr) {
    segment_->Heartbeat();
    if (segment_->IsStale()) OnStale();
  }
  heartbeat_timer_ = loop_.AddTimer(options_.heartbeat_interval, [this] { Heartbeat(); });
}

void NriAgent::TryAttach() {
  attach_timer_ = 0;
  if (shut_down_ || segment_ != nullptr) return;
  shm::OpenOptions open = options_.shm_open;
  open.role = shm::Role::kNriAgent;
  open.create_if_missing = false;
  auto seg = shm::Segment::Open(options_.shm_path, open);
  if (seg.ok()) {
    segment_ = std::move(*seg);
    if (segment_->open_recovery()) {
      for (const std::string& a : segment_->open_recovery()->actions) {
        LOG(WARNING) << "shm recovery on attach: " << a;
      }
    }
    policy_.AttachSegment(segment_.get());
    LOG(INFO) << "attached the shared-memory segment " << options_.shm_path << " (node "
              << segment_->identity().node_name << ")";
    if (attached_gauge_ != nullptr) attached_gauge_->Set({}, 1);
    StartWatcher();
    // First connection, or a reconnection so that the runtime's Synchronize reconciles every
    // container with the claims we can now verify.
    if (plugin_ != nullptr) LOG(INFO) << "reconnecting to the runtime to resynchronize";
    Connect();
    return;
  }
  const std::string err = seg.status().ToString();
  if (err != last_attach_error_) {
    LOG(WARNING) << "shared-memory segment not attached yet (retrying every "
                 << options_.segment_poll.count() << " ms): " << err;
    last_attach_error_ = err;
  }
  if (plugin_ == nullptr && env_.clock.Now() - started_ >= options_.segment_wait) {
    LOG(WARNING) << "no shared-memory segment after " << options_.segment_wait.count()
                 << " ms: connecting to the runtime anyway; shared containers get the "
                    "conservative pool and exclusive containers are refused until it attaches";
    Connect();
  }
  attach_timer_ = loop_.AddTimer(options_.segment_poll, [this] { TryAttach(); });
}

void NriAgent::Connect() {
  ready_ = false;
  logged_failed_attempts_ = 0;
  plugin_.reset();
  plugin_ = std::make_unique<nri::ReconnectingPlugin>(loop_, options_.connect, options_.plugin,
                                                      *this, options_.backoff);
  plugin_->Start();
}

void NriAgent::OnStale() {
  LOG(WARNING) << "the shared-memory segment " << options_.shm_path
               << " was replaced (rebuilt by the dra-agent): re-attaching";
  ready_ = false;
  StopWatcher();
  policy_.AttachSegment(nullptr);
  segment_.reset();
  if (attached_gauge_ != nullptr) attached_gauge_->Set({}, 0);
  if (attach_timer_ != 0) loop_.CancelTimer(attach_timer_);
  TryAttach();
}

void NriAgent::StartWatcher() {
  StopWatcher();
  const shm::Segment* seg = segment_.get();
  uint64_t seen = seg->generation();
  std::weak_ptr<bool> alive = alive_;
  watcher_ = std::jthread([this, seg, seen, alive](const std::stop_token& stop) mutable {
    pthread_setname_np(pthread_self(), "shm-watcher");
    // Blocks on the segment's futex until the dra-agent writes; StopWatcher's request wakes it
    // (WaitForChange). The bound only re-arms the wait now and then.
    constexpr auto kWaitBound = std::chrono::seconds(30);
    while (!stop.stop_requested()) {
      auto r = seg->WaitForChange(seen, kWaitBound, nullptr, stop);
      if (!r.ok()) {
        const StatusCode code = r.status().code();
        if (code != StatusCode::kDeadlineExceeded && code != StatusCode::kCancelled) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        continue;
      }
      seen = *r;
      if (!change_posted_.exchange(true)) {
        loop_.Post([this, alive] {
          if (alive.expired()) return;
          change_posted_ = false;
          // Mostly our own commit, made while answering a request: not before the reader ran.
          if (after_reply_timer_ != 0) {
            AfterReply([this] { OnSegmentChanged(); });
          } else {
            OnSegmentChanged();
          }
        });
      }
    }
  });
}

void NriAgent::StopWatcher() {
  watcher_.request_stop();
  if (watcher_.joinable()) watcher_.join();
}

void NriAgent::OnSegmentChanged() {
  if (shut_down_ || segment_ == nullptr) return;
  // The shared-pool record follows at once (dracpu-shm verify, the dump); only pushing waits.
  if (Status s = policy_.RecordSharedPool(); !s.ok()) {
    LOG(WARNING) << "recording the shared pool: " << s.ToString();
  }
  // Coalesce a burst (a Prepare or Unprepare of many claims is several commits per claim): act
  // once the segment has been quiet for coalesce_window, or coalesce_max after the first change.
  const auto now = env_.clock.Now();
  if (pool_timer_ != 0) {
    if (now - first_change_ >= options_.coalesce_max) return;  // due soon anyway
    loop_.CancelTimer(pool_timer_);
  } else {
    first_change_ = now;
  }
  const auto left = options_.coalesce_max - (now - first_change_);
  const auto delay =
      std::min<Clock::Duration>(options_.coalesce_window, std::max<Clock::Duration>(left, {}));
  pool_timer_ = loop_.AddTimer(std::chrono::duration_cast<std::chrono::nanoseconds>(delay), [this] {
    pool_timer_ = 0;
    PushPoolUpdates();
  });
}

void NriAgent::PushPoolUpdates() {
  if (shut_down_ || segment_ == nullptr || plugin_ == nullptr ||
      plugin_->state() != nri::Plugin::State::kSynchronized) {
    return;
  }
  if (update_in_flight_) {
    rerun_after_update_ = true;
    return;
  }
  auto updates = policy_.PendingPoolUpdates();
  LogWarnings("--------");
  UpdateGauges();
  if (!updates.ok()) {
    LOG(WARNING) << "shared pool: " << updates.status().ToString();
    if (pool_updates_ != nullptr) pool_updates_->Add({"error"}, 1);
    return;
  }
  if (updates->empty()) return;
  const std::string pool = (*updates)[0].cpuset.cpus;
  if (!policy_.UnsolicitedUpdatesAllowed()) {
    if (gated_logged_for_ != pool) {
      const auto& rt = policy_.runtime();
      LOG(INFO) << "shared pool is now " << pool << "; " << updates->size()
                << " running shared containers get it in the reply to the next container event "
                   "on the node (CreateContainer, UpdateContainer, StopContainer) "
                   "(sharedPoolUpdates="
                << SharedPoolUpdatesName(options_.policy.shared_pool_updates) << ", runtime "
                << (rt ? rt->runtime_name + " " + rt->runtime_version + " NRI " +
                             (rt->nri_version.empty() ? "<0.12" : rt->nri_version)
                       : "unknown")
                << " is not known safe for unsolicited UpdateContainers)";
      gated_logged_for_ = pool;
      if (pool_updates_ != nullptr)
        pool_updates_->Add({"skipped"}, static_cast<double>(updates->size()));
    }
    return;
  }
  gated_logged_for_.clear();
  RunAfterReply();
  const std::string op = NewOp();
  LOG(INFO) << "op=" << op << " UpdateContainers shared_pool=" << pool
            << " containers=" << UpdatesText(*updates);
  update_in_flight_ = true;
  ++update_batches_;
  policy_.UpdatesSent(*updates);
  std::weak_ptr<bool> alive = alive_;
  std::vector<nri::CpusetUpdate> sent = *updates;
  plugin_->UpdateContainers(
      *updates, [this, alive, op, sent](Result<std::vector<nri::CpusetUpdate>> failed) {
        if (alive.expired()) return;
        update_in_flight_ = false;
        if (!failed.ok()) {
          LOG(WARNING) << "op=" << op << " UpdateContainers failed: " << failed.status().ToString();
          if (pool_updates_ != nullptr)
            pool_updates_->Add({"error"}, static_cast<double>(sent.size()));
          policy_.UpdatesApplied(sent, sent).status().IgnoreError();  // none recorded
        } else {
          Result<size_t> raced = policy_.UpdatesApplied(sent, *failed);
          LOG(INFO) << "op=" << op << " UpdateContainers applied=" << sent.size() - failed->size()
                    << " failed=" << UpdatesText(*failed);
          if (!raced.ok()) {
            LOG(WARNING) << "op=" << op << " recording the update: " << raced.status().ToString();
          } else if (*raced > 0) {
            // Replies moved some of these while the call was in flight; the runtime may have
            // applied the call last: the current pool goes out again at once.
            LOG(INFO) << "op=" << op << " " << *raced
                      << " containers were moved by a reply meanwhile; pushing the pool again";
            rerun_after_update_ = true;
          }
          if (pool_updates_ != nullptr) {
            pool_updates_->Add({"applied"}, static_cast<double>(sent.size() - failed->size()));
            pool_updates_->Add({"failed"}, static_cast<double>(failed->size()));
          }
        }
        if (rerun_after_update_) {
          rerun_after_update_ = false;
          PushPoolUpdates();
        }
      });
}

void NriAgent::LogWarnings(const std::string& op) {
  for (const std::string& w : policy_.TakeWarnings()) LOG(WARNING) << "op=" << op << " " << w;
}

void NriAgent::AfterReply(std::function<void()> task) {
  after_reply_.push_back(std::move(task));
  if (after_reply_timer_ != 0) return;
  std::weak_ptr<bool> alive = alive_;
  after_reply_timer_ = loop_.AddTimer(options_.after_reply_delay, [this, alive] {
    if (alive.expired()) return;
    after_reply_timer_ = 0;
    RunAfterReply();
  });
}

void NriAgent::RunAfterReply() {
  // A task may queue more (a segment change's handling); those run in this pass too.
  while (!after_reply_.empty()) {
    for (const auto& task : std::exchange(after_reply_, {})) task();
  }
  if (after_reply_timer_ != 0) {  // nothing is left for it
    loop_.CancelTimer(after_reply_timer_);
    after_reply_timer_ = 0;
  }
}

void NriAgent::RecordMovesAfterReply(const std::string& op) {
  if (moves_posted_ || !policy_.has_work_after_reply()) return;
  moves_posted_ = true;
  AfterReply([this, op] {
    moves_posted_ = false;
    if (Status s = policy_.RecordAfterReply(); !s.ok()) {
      LOG(WARNING) << "op=" << op << " not recorded in shared memory: " << s.ToString();
    }
  });
}

void NriAgent::UpdateGauges() {
  if (containers_gauge_ == nullptr) return;
  int shared = 0, exclusive = 0;
  for (const auto& [id, t] : policy_.containers()) {
    (t.kind == shm::ContainerKind::kExclusive ? exclusive : shared)++;
  }
  containers_gauge_->Set({"shared"}, shared);
  containers_gauge_->Set({"exclusive"}, exclusive);
  auto pool = policy_.SharedPool();
  if (pool.ok()) pool_gauge_->Set({}, pool->Count());
}

void NriAgent::Observe(const char* method, const Status& status, Clock::TimePoint start) {
  if (requests_ == nullptr) return;
  requests_->Add({method, std::string(StatusCodeName(status.code()))}, 1);
  latency_->Observe({method}, std::chrono::duration<double>(env_.clock.Now() - start).count());
}

Result<nri::EventMask> NriAgent::Configure(const nri::RuntimeInfo& runtime) {
  RunAfterReply();
  const std::string op = NewOp();
  auto mask = policy_.Configure(runtime);
  LOG(INFO) << "op=" << op << " Configure runtime=" << runtime.runtime_name
            << " version=" << runtime.runtime_version
            << " nri_version=" << (runtime.nri_version.empty() ? "<0.12" : runtime.nri_version)
            << " unsolicited_updates=" << (policy_.UnsolicitedUpdatesAllowed() ? "allowed" : "off")
            << " (sharedPoolUpdates=" << SharedPoolUpdatesName(options_.policy.shared_pool_updates)
            << ")";
  return mask;
}

Result<std::vector<nri::CpusetUpdate>> NriAgent::Synchronize(
    const std::vector<nri::Pod>& pods, const std::vector<nri::Container>& containers) {
  RunAfterReply();
  const std::string op = NewOp();
  const auto start = env_.clock.Now();
  auto r = policy_.Synchronize(pods, containers);
  Observe("Synchronize", r.status(), start);
  LogWarnings(op);
  if (!r.ok()) {
    LOG(ERROR) << "op=" << op << " Synchronize pods=" << pods.size()
               << " containers=" << containers.size() << " failed: " << r.status().ToString();
    return ForRuntime(r.status());
  }
  logged_connect_error_.clear();
  LOG(INFO) << "op=" << op << " Synchronize pods=" << pods.size()
            << " containers=" << containers.size() << " updates=" << UpdatesText(*r)
            << (segment_ == nullptr ? " (no shared-memory segment yet: conservative pool)" : "");
  ready_ = segment_ != nullptr;
  if (connected_gauge_ != nullptr) connected_gauge_->Set({}, 1);
  UpdateGauges();
  return r;
}

Result<nri::CreateContainerResult> NriAgent::CreateContainer(const nri::Pod& pod,
                                                             const nri::Container& container) {
  RunAfterReply();
  const std::string op = NewOp();
  const auto start = env_.clock.Now();
  auto r = policy_.CreateContainer(pod, container);
  Observe("CreateContainer", r.status(), start);
  LogWarnings(op);
  if (!r.ok()) {
    LOG(ERROR) << "op=" << op << " CreateContainer " << Keys(pod, container)
               << " refused: " << r.status().ToString();
    return ForRuntime(r.status());
  }
  AfterReply([this, op, keys = Keys(pod, container), cpus = r->adjust.cpus, mems = r->adjust.mems,
              updates = UpdatesText(r->updates)] {
    LOG(INFO) << "op=" << op << " CreateContainer " << keys << " cpus=" << cpus
              << (mems.empty() ? "" : " mems=" + mems) << " updates=" << updates;
    UpdateGauges();
  });
  RecordMovesAfterReply(op);
  return r;
}

Result<std::vector<nri::CpusetUpdate>> NriAgent::UpdateContainer(const nri::Pod& pod,
                                                                 const nri::Container& container,
                                                                 const nri::Cpuset& requested) {
  RunAfterReply();
  const std::string op = NewOp();
  const auto start = env_.clock.Now();
  auto r = policy_.UpdateContainer(pod, container, requested);
  Observe("UpdateContainer", r.status(), start);
  LogWarnings(op);
  RecordMovesAfterReply(op);
  if (r.ok() && !r->empty()) {
    LOG(INFO) << "op=" << op << " UpdateContainer " << Keys(pod, container)
              << " requested=" << LogEscape(requested.cpus)
              << " re-asserted=" << (*r)[0].cpuset.cpus;
  } else if (!r.ok()) {
    LOG(ERROR) << "op=" << op << " UpdateContainer " << Keys(pod, container)
               << " failed: " << r.status().ToString();
    return ForRuntime(r.status());
  } else {
    VLOG(2) << "op=" << op << " UpdateContainer " << Keys(pod, container)
            << " requested=" << requested.cpus << " kept";
  }
  return r;
}

Result<std::vector<nri::CpusetUpdate>> NriAgent::StopContainer(const nri::Pod& pod,
                                                               const nri::Container& container) {
  RunAfterReply();
  const std::string op = NewOp();
  const auto start = env_.clock.Now();
  auto r = policy_.StopContainer(pod, container);
  Observe("StopContainer", r.status(), start);
  LogWarnings(op);
  LOG(INFO) << "op=" << op << " StopContainer " << Keys(pod, container);
  RecordMovesAfterReply(op);
  return r;
}

Status NriAgent::RemoveContainer(const nri::Pod& pod, const nri::Container& container) {
  RunAfterReply();
  const std::string op = NewOp();
  const auto start = env_.clock.Now();
  Status s = policy_.RemoveContainer(pod, container);
  Observe("RemoveContainer", s, start);
  if (s.ok()) {
    LOG(INFO) << "op=" << op << " RemoveContainer " << Keys(pod, container);
  } else {
    LOG(ERROR) << "op=" << op << " RemoveContainer " << Keys(pod, container)
               << " failed: " << s.ToString();
  }
  UpdateGauges();
  return ForRuntime(s);
}

void NriAgent::Disconnected(const Status& reason) {
  ready_ = false;
  update_in_flight_ = false;
  rerun_after_update_ = false;
  if (disconnects_ != nullptr) disconnects_->Add({}, 1);
  if (connected_gauge_ != nullptr) connected_gauge_->Set({}, 0);
  LOG(WARNING) << "op=" << NewOp() << " disconnected from the runtime: " << reason.ToString()
               << " (reconnecting)";
}

}  // namespace dracpu::agent
