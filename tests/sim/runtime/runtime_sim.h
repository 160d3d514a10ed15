// RuntimeSimulator: the runtime side of NRI as containerd's Go code behaves, for tests and the
// demo (protocols.md §2-§4). Transport core only so far (see docs/nri-transport.md, Status).
//
// It serves a unix socket (or adopts a connected fd), speaks ttrpc over the multiplexer,
// and reads what the plugin sends through GoTtrpcReader, so a framing a real runtime would choke
// on fails here too: ENOMEM on connection 1 (the plugin's replies) drops the plugin, on
// connection 2 (the plugin's requests) the runtime's server for it stops silently while the
// socket stays open. Registration must arrive within `registration_timeout` (5 s) and every call
// to the plugin must be answered within `request_timeout` (2 s, one budget for a whole chunked
// Synchronize); missing either drops the plugin and the event goes on without it, as do a
// closed connection and a protocol error. A plugin's error status fails the operation instead.
//
// Order, as containerd: RegisterPlugin -> Configure (sent before the RegisterPlugin reply, the
// harder order for a plugin) -> Synchronize (chunked with `more` when over 4 MiB) -> events, one
// operation at a time. RemoveContainer goes as the dedicated RPC when nri_version >= 0.12 and
// falls back to StateChange on UNIMPLEMENTED; older versions always use StateChange.
//
// Locks, as containerd 1.7.24 / 2.1.9 take them (real-runtimes.md): every operation holds the
// runtime's NRI lock while it runs (the operation queue), and the adaptation lock while it calls
// the plugin; updates carried by the plugin's reply are applied after the adaptation lock is
// released, still under the NRI lock. A plugin-initiated UpdateContainers takes the adaptation
// lock first and then queues for the NRI lock. On a runtime whose NRI predates v0.12.1
// (containerd/nri#301; the default here, which reports no NRI version, as containerd <= 2.1)
// that is an AB/BA inversion: when an operation queued behind it starts and asks for the
// adaptation lock, both wait forever (deadlock() says so; no operation completes again, the
// plugin's disconnection included). With NRI >= v0.12.1 unsolicited updates are applied at once.
//
// One plugin at a time. Thread safety: none; everything runs on the given EventLoop.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/event_loop.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "nri-agent/nri/types.h"
#include "tests/sim/runtime/cgroup_cpusets.h"

namespace nri::pkg::api::v1alpha1 {
class UpdateContainersRequest;
}  // namespace nri::pkg::api::v1alpha1

namespace dracpu::sim {

struct RuntimeOptions {
  std::string runtime_name = "containerd";
  std::string runtime_version = "2.1.0";
  std::string nri_version = "v0.8.0";
  std::chrono::milliseconds registration_timeout{5000};
  std::chrono::milliseconds request_timeout{2000};
  bool configure_before_register_reply = true;
  // Also apply every cpuset the runtime applies to the container's process (pid > 0) with
  // sched_setaffinity, so tests and the demo show real pinning. cpuset.mems is not applied.
  bool apply_affinity = false;
  // Also (or instead) put each container's process in a cgroup cpuset of its own under this
  // directory (see cgroup_cpusets.h; needs root). Empty: no cgroups.
  std::string cgroup_parent;
};

struct SimContainer {
  nri::Pod pod;
  nri::Container container;  // container.cpuset is what the runtime applied
};

class RuntimeSimulator {
 public:
  enum class PluginState { kNone, kRegistering, kSynchronizing, kReady };
  using Done = std::function<void(const Status&)>;

  // Listens on `socket_path` (removed first if stale; < 108 bytes).
  static Result<std::unique_ptr<RuntimeSimulator>> Listen(loop::EventLoop& loop,
                                                          const std::string& socket_path,
                                                          RuntimeOptions options);
  // No socket: connections come through Adopt().
  static std::unique_ptr<RuntimeSimulator> Create(loop::EventLoop& loop, RuntimeOptions options);
  ~RuntimeSimulator();

  // Serves `conn` as a newly accepted plugin connection. FAILED_PRECONDITION while another
  // plugin is connected (the connection is closed).
  Status Adopt(UniqueFd conn);

  // State present before or besides the plugin (sent to it in Synchronize).
  void AddRunning(const nri::Pod& pod, const nri::Container& container);

  // Operations, queued and run one at a time like the runtime's event lock. `done` gets OK,
  // the plugin's error (the operation did not happen), or NOT_FOUND for an unknown container.
  void CreateContainer(const nri::Pod& pod, const nri::Container& container, Done done);
  void UpdateContainer(const std::string& id, const nri::Cpuset& requested, Done done);
  void StopContainer(const std::string& id, Done done);
  void RemoveContainer(const std::string& id, Done done);

  // Closes the plugin connection as a runtime restart would.
  void DropPlugin(const Status& reason);
  // Closes the listening socket, removes its file and listens again at the same path (what a
  // restarted runtime does); a plugin reconnects and gets a Synchronize with the containers kept
  // here. Does not touch a connected plugin (call DropPlugin first). FAILED_PRECONDITION without
  // a socket (Create), or the socket/bind/listen error.
  Status Relisten();

  PluginState plugin_state() const;
  const std::string& plugin_id() const { return plugin_id_; }  // "00-dra.cpu"
  nri::EventMask plugin_events() const { return events_; }
  // Why the last plugin was dropped (OK while none was).
  const Status& last_drop() const { return last_drop_; }
  bool runtime_server_dead() const;                 // conn 2 hit ENOMEM
  int sync_chunks() const { return sync_chunks_; }  // requests of the last Synchronize
  // Container updates applied so far: carried by replies to events (CreateContainer,
  // UpdateContainer for other containers, StopContainer), and unsolicited (UpdateContainers
  // calls and the updates in them). Synchronize's answer is not counted.
  int reply_updates() const { return reply_updates_; }
  int unsolicited_calls() const { return unsolicited_calls_; }
  int unsolicited_updates() const { return unsolicited_updates_; }
  // The wall time of the last call to the plugin from its request written to the socket (framed
  // and sent) to its reply's arrival (not yet decoded): what the plugin and the connection cost,
  // for benchmarks.
  std::chrono::nanoseconds last_call_time() const { return last_call_time_; }
  // Empty, or a goroutine-dump-like description of the deadlock the runtime is in.
  const std::string& deadlock() const { return deadlock_; }
  const std::map<std::string, SimContainer>& containers() const { return containers_; }
  // With apply_affinity / cgroup_parent: how many sched_setaffinity calls and cgroup moves
  // succeeded, and the last failure.
  int affinity_applied() const { return affinity_applied_; }
  const Status& affinity_error() const { return affinity_error_; }

 private:
  class Conn;
  RuntimeSimulator(loop::EventLoop& loop, RuntimeOptions options);
  void OnAccept();
  Status WatchListener();
  void Enqueue(std::function<void(std::function<void()> finished)> op);
  void RunNext();
  void OnRegistered(const std::string& id);
  void StartSynchronize();
  bool Subscribed(nri::Event e) const;
  // Calls the plugin; fatal transport errors drop it and complete with `fatal_as`.
  void CallPlugin(const std::string& method, std::string payload, std::chrono::milliseconds timeout,
                  std::function<void(Result<std::string>)> done);
  // The plugin call of an operation, under the adaptation lock (or the deadlock, see above).
  void CallPluginInEvent(const std::string& method, std::string payload,
                         std::chrono::milliseconds timeout,
                         std::function<void(Result<std::string>)> done);
  void ReleaseAdaptationLock();
  // Applies an UpdateContainers request; the serialized answer.
  std::string ApplyUnsolicited(const ::nri::pkg::api::v1alpha1::UpdateContainersRequest& req);
  void ApplyUpdate(const nri::CpusetUpdate& update);
  void ApplyReplyUpdate(const nri::CpusetUpdate& update);
  void ApplyAffinity(const nri::Container& container);
  void ReleaseCgroup(const std::string& container_id);
  void ClosePlugin(const Status& reason);

  loop::EventLoop& loop_;
  RuntimeOptions options_;
  UniqueFd listen_fd_;
  loop::EventLoop::WatchId listen_watch_ = 0;
  std::string socket_path_;
  std::unique_ptr<Conn> conn_;
  std::string plugin_id_;
  nri::EventMask events_ = 0;
  bool remove_via_state_change_ = false;
  Status last_drop_;
  int sync_chunks_ = 0;
  int affinity_applied_ = 0;
  Status affinity_error_;
  std::optional<CgroupCpusets> cgroups_;
  std::map<std::string, SimContainer> containers_;
  std::deque<std::function<void(std::function<void()>)>> ops_;
  bool op_running_ = false;
  enum class LockHolder { kNone, kEvent, kUnsolicited };
  const bool lock_inversion_;
  LockHolder adaptation_lock_ = LockHolder::kNone;
  std::deque<std::function<void()>> adaptation_waiters_;  // unsolicited calls waiting for it
  std::string deadlock_;
  int reply_updates_ = 0;
  int unsolicited_calls_ = 0;
  std::chrono::nanoseconds last_call_time_{0};
  int unsolicited_updates_ = 0;
  std::shared_ptr<RuntimeSimulator*> self_;
};

// "v0.12.1" -> 12 (the minor; NRI is 0.x); -1 when it does not parse.
int NriMinorVersion(const std::string& version);
// Whether a runtime with this NRI version (empty or unparsable: before 0.12) has the
// UpdateContainers lock inversion fixed by containerd/nri#301 in v0.12.1.
bool NriHasUpdateLockInversion(const std::string& version);

}  // namespace dracpu::sim
