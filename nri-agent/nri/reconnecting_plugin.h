// ReconnectingPlugin: keeps one NRI Plugin connected for the life of the agent. When the
// connection ends (runtime restart, plugin dropped for a timeout, refused registration, socket
// missing) it connects again, forever, with capped exponential backoff; the backoff resets once
// a connection got as far as a completed Synchronize. Each new connection re-registers, and the
// runtime's Synchronize gives the handler the full state again.
//
// The handler sees every Disconnected(reason) of every connection; it must not destroy this
// object from inside a handler call.
//
// Thread safety: none; use from the loop thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "common/backoff.h"
#include "common/event_loop.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "nri-agent/nri/plugin.h"
#include "nri-agent/nri/types.h"

namespace dracpu::nri {

// Reconnects start at 100 ms and double up to 10 s, without jitter: one agent per runtime, so
// there is no herd to spread.
inline constexpr BackoffPolicy kReconnectBackoff{std::chrono::milliseconds(100),
                                                 std::chrono::milliseconds(10000), 2.0, 0.0};

class ReconnectingPlugin {
 public:
  // Opens a new connection to the runtime (e.g. ConnectNriSocket(path) bound in main).
  using Connector = std::function<Result<UniqueFd>()>;

  // `handler` must outlive this object. Nothing happens before Start().
  ReconnectingPlugin(loop::EventLoop& loop, Connector connect, PluginOptions options,
                     PluginHandler& handler, BackoffPolicy backoff = kReconnectBackoff);
  ~ReconnectingPlugin();
  ReconnectingPlugin(const ReconnectingPlugin&) = delete;
  ReconnectingPlugin& operator=(const ReconnectingPlugin&) = delete;

  // Connects now (and again after every loss).
  void Start();

  // Forwards to the current connection; FAILED_PRECONDITION (from the loop, not inside this
  // call) while there is none.
  void UpdateContainers(const std::vector<CpusetUpdate>& updates, Plugin::UpdateCallback done);

  // The current connection's state; kClosed while waiting to reconnect.
  Plugin::State state() const;
  int connections() const { return connections_; }          // successful connects so far
  int failed_attempts() const { return failed_attempts_; }  // connects that failed outright
  const Status& last_error() const { return last_error_; }
  std::chrono::milliseconds next_delay() const { return backoff_.Peek(); }

 private:
  class Forwarder;
  void Attempt();
  void ScheduleRetry(const Status& reason);

  loop::EventLoop& loop_;
  Connector connect_;
  PluginOptions options_;
  PluginHandler& handler_;
  Backoff backoff_;
  std::unique_ptr<Forwarder> forwarder_;
  std::unique_ptr<Plugin> plugin_;
  loop::EventLoop::TimerId retry_timer_ = 0;
  int connections_ = 0;
  int failed_attempts_ = 0;
  Status last_error_;
  std::shared_ptr<ReconnectingPlugin*> self_;
};

}  // namespace dracpu::nri
