#include "tests/sim/runtime/runtime_sim.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "common/cpu_set.h"
#include "nri-agent/mux/multiplexer.h"
#include "nri-agent/nri/convert.h"
#include "nri-agent/nri/plugin.h"
#include "nri-agent/ttrpc/client.h"
#include "nri-agent/ttrpc/frame.h"
#include "nri-agent/ttrpc/server.h"
#include "tests/sim/runtime/go_reader.h"

namespace dracpu::sim {

namespace api = ::nri::pkg::api::v1alpha1;
using nri::kPluginService;
using nri::kRuntimeService;

bool NriHasUpdateLockInversion(const std::string& version) {
  int major = 0, minor = 0, patch = 0;
  const char* v = version.c_str() + (version.rfind('v', 0) == 0 ? 1 : 0);
  if (std::sscanf(v, "%d.%d.%d", &major, &minor, &patch) != 3) return true;  // before 0.12
  return major == 0 && (minor < 12 || (minor == 12 && patch < 1));
}

int NriMinorVersion(const std::string& version) {
  // "v0.12.1" or "0.12.1"
  size_t i = (!version.empty() && version[0] == 'v') ? 1 : 0;
  if (version.compare(i, 2, "0.") != 0) return -1;
  i += 2;
  int minor = 0;
  bool digits = false;
  while (i < version.size() && version[i] >= '0' && version[i] <= '9') {
    minor = minor * 10 + (version[i++] - '0');
    digits = true;
  }
  return digits ? minor : -1;
}

// One plugin connection: the multiplexer, Go's reader on each logical connection, the runtime's
// ttrpc server (conn 2) and its client (conn 1).
class RuntimeSimulator::Conn {
 public:
  std::unique_ptr<mux::Multiplexer> mux;
  std::unique_ptr<ttrpc::Server> server;
  std::unique_ptr<ttrpc::Client> client;
  GoTtrpcReader replies_reader;   // conn 1: answers to our calls
  GoTtrpcReader requests_reader;  // conn 2: the plugin's calls
  bool server_dead = false;
  PluginState state = PluginState::kRegistering;
  loop::EventLoop::TimerId registration_timer = 0;
};

RuntimeSimulator::RuntimeSimulator(loop::EventLoop& loop, RuntimeOptions options)
    : loop_(loop),
      options_(std::move(options)),
      lock_inversion_(NriHasUpdateLockInversion(options_.nri_version)),
      self_(std::make_shared<RuntimeSimulator*>(this)) {
  if (!options_.cgroup_parent.empty()) {
    Result<CgroupCpusets> cgroups = CgroupCpusets::Open(options_.cgroup_parent);
    if (cgroups.ok()) {
      cgroups_.emplace(std::move(cgroups).value());
    } else {
      affinity_error_ = cgroups.status();
    }
  }
}

RuntimeSimulator::~RuntimeSimulator() {
  if (conn_ && conn_->registration_timer != 0) loop_.CancelTimer(conn_->registration_timer);
  if (listen_watch_ != 0) loop_.Unwatch(listen_watch_);
  if (!socket_path_.empty()) ::unlink(socket_path_.c_str());
}

std::unique_ptr<RuntimeSimulator> RuntimeSimulator::Create(loop::EventLoop& loop,
                                                           RuntimeOptions options) {
  return std::unique_ptr<RuntimeSimulator>(new RuntimeSimulator(loop, std::move(options)));
}

namespace {

// A listening, non-blocking unix socket at `socket_path` (a stale file there is removed first).
Result<UniqueFd> ListenOn(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError("socket path \"" + socket_path + "\" too long");
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  ::unlink(socket_path.c_str());  // a stale socket, as the runtime does
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return ErrnoStatus("socket", errno);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoStatus("bind " + socket_path, errno);
  }
  if (::listen(fd.get(), 8) != 0) return ErrnoStatus("listen " + socket_path, errno);
  return fd;
}

}  // namespace

Result<std::unique_ptr<RuntimeSimulator>> RuntimeSimulator::Listen(loop::EventLoop& loop,
                                                                   const std::string& socket_path,
                                                                   RuntimeOptions options) {
  ASSIGN_OR_RETURN(UniqueFd fd, ListenOn(socket_path));
  std::unique_ptr<RuntimeSimulator> sim = Create(loop, std::move(options));
  sim->socket_path_ = socket_path;
  sim->listen_fd_ = std::move(fd);
  RETURN_IF_ERROR(sim->WatchListener());
  return sim;
}

Status RuntimeSimulator::WatchListener() {
  ASSIGN_OR_RETURN(listen_watch_,
                   loop_.Watch(listen_fd_.get(), EPOLLIN, [this](uint32_t) { OnAccept(); }));
  return Status::Ok();
}

Status RuntimeSimulator::Relisten() {
  if (socket_path_.empty()) return FailedPreconditionError("simulator has no socket to re-create");
  if (listen_watch_ != 0) loop_.Unwatch(listen_watch_);
  listen_watch_ = 0;
  listen_fd_ = UniqueFd();
  ::unlink(socket_path_.c_str());
  ASSIGN_OR_RETURN(listen_fd_, ListenOn(socket_path_));
  return WatchListener();
}

void RuntimeSimulator::OnAccept() {
  UniqueFd conn(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn) return;                     // EAGAIN or a connection that went away
  Adopt(std::move(conn)).IgnoreError();  // a refused second plugin is closed; nothing to report
}

RuntimeSimulator::PluginState RuntimeSimulator::plugin_state() const {
  return conn_ ? conn_->state : PluginState::kNone;
}

bool RuntimeSimulator::runtime_server_dead() const { return conn_ && conn_->server_dead; }

Status RuntimeSimulator::Adopt(UniqueFd fd) {
  if (conn_) return FailedPreconditionError("simulator serves one plugin at a time");
  auto conn = std::make_unique<Conn>();
  Conn* c = conn.get();
  std::weak_ptr<RuntimeSimulator*> weak = self_;
  ASSIGN_OR_RETURN(conn->mux,
                   mux::Multiplexer::Create(loop_, std::move(fd),
                                            [this](const Status& reason) { ClosePlugin(reason); }));
  conn->server = std::make_unique<ttrpc::Server>(conn->mux->Sink(mux::kRuntimeServiceConn));
  conn->client = std::make_unique<ttrpc::Client>(conn->mux->Sink(mux::kPluginServiceConn), loop_);
  conn->mux->Open(mux::kPluginServiceConn, [c](std::string_view frame) -> Status {
    std::vector<std::string> messages;
    // ENOMEM on the replies: the runtime's client fails and the plugin is dropped.
    RETURN_IF_ERROR(c->replies_reader.PushFrame(frame, &messages));
    for (const std::string& m : messages) RETURN_IF_ERROR(c->client->OnBytes(m));
    return Status::Ok();
  });
  conn->mux->Open(mux::kRuntimeServiceConn, [c](std::string_view frame) -> Status {
    if (c->server_dead) return Status::Ok();
    std::vector<std::string> messages;
    if (!c->requests_reader.PushFrame(frame, &messages).ok()) {
      // Go's server goroutine for this plugin exits; nobody notices and the socket stays open.
      c->server_dead = true;
      c->server->OnClosed();
      return Status::Ok();
    }
    for (const std::string& m : messages) RETURN_IF_ERROR(c->server->OnBytes(m));
    return Status::Ok();
  });

  conn->server->Register(
      kRuntimeService, "RegisterPlugin",
      [this, c](const ttrpc::CallInfo&, std::string payload, ttrpc::Responder done) {
        api::RegisterPluginRequest req;
        if (!req.ParseFromString(payload)) {
          done(InvalidArgumentError("RegisterPlugin does not parse"));
          return;
        }
        if (Status valid = nri::ValidatePluginIdentity(req.plugin_name(), req.plugin_idx());
            !valid.ok()) {
          done(valid);
          ClosePlugin(valid.WithContext("registration"));
          return;
        }
        if (c->registration_timer != 0) loop_.CancelTimer(c->registration_timer);
        c->registration_timer = 0;
        plugin_id_ = req.plugin_idx() + "-" + req.plugin_name();
        api::ConfigureRequest configure;
        configure.set_runtime_name(options_.runtime_name);
        configure.set_runtime_version(options_.runtime_version);
        configure.set_registration_timeout(options_.registration_timeout.count());
        configure.set_request_timeout(options_.request_timeout.count());
        if (NriMinorVersion(options_.nri_version) >= 12)
          configure.set_nri_version(options_.nri_version);
        if (!options_.configure_before_register_reply) done(std::string());
        const bool reply_later = options_.configure_before_register_reply;
        CallPlugin("Configure", configure.SerializeAsString(), options_.request_timeout,
                   [this, done, reply_later](Result<std::string> reply) {
                     if (reply_later) done(std::string());
                     if (!conn_) return;
                     api::ConfigureResponse resp;
                     if (!reply.ok() || !resp.ParseFromString(*reply)) {
                       ClosePlugin(reply.ok() ? DataLossError("Configure answer does not parse")
                                              : reply.status().WithContext("Configure"));
                       return;
                     }
                     const nri::EventMask valid =
                         NriMinorVersion(options_.nri_version) <= 9 ? 0x7FF : 0x3FFF;
                     if ((resp.events() & ~valid) != 0) {
                       ClosePlugin(InvalidArgumentError("invalid plugin events " +
                                                        std::to_string(resp.events())));
                       return;
                     }
                     events_ = resp.events() == 0 ? valid : resp.events();
                     StartSynchronize();
                   });
      });

  conn->server->Register(
      kRuntimeService, "UpdateContainers",
      [this](const ttrpc::CallInfo&, std::string payload, ttrpc::Responder done) {
        api::UpdateContainersRequest req;
        if (!req.ParseFromString(payload)) {
          done(InvalidArgumentError("UpdateContainers does not parse"));
          return;
        }
        if (!lock_inversion_) return done(ApplyUnsolicited(req));
        // containerd before NRI v0.12.1: the adaptation's updateContainers takes the adaptation
        // lock, then (in updateFromPlugin) the runtime's NRI lock, the reverse of an event's
        // order. Waits for the adaptation lock first, then queues for the NRI lock (the
        // operation queue) while holding it.
        auto take = [this, req, done]() {
          adaptation_lock_ = LockHolder::kUnsolicited;
          Enqueue([this, req, done](std::function<void()> finished) {
            done(ApplyUnsolicited(req));
            ReleaseAdaptationLock();
            finished();
          });
        };
        if (adaptation_lock_ == LockHolder::kNone) {
          take();
        } else {
          adaptation_waiters_.push_back(take);
        }
      });

  conn_ = std::move(conn);
  c->registration_timer = loop_.AddTimer(options_.registration_timeout, [weak]() {
    std::shared_ptr<RuntimeSimulator*> self = weak.lock();
    if (!self) return;
    (*self)->conn_->registration_timer = 0;
    (*self)->ClosePlugin(DeadlineExceededError("plugin registration timed out"));
  });
  return Status::Ok();
}

void RuntimeSimulator::ClosePlugin(const Status& reason) {
  if (!conn_) return;
  std::shared_ptr<Conn> dead(conn_.release());
  if (dead->registration_timer != 0) loop_.CancelTimer(dead->registration_timer);
  last_drop_ = reason.ok() ? UnavailableError("closed") : reason;
  plugin_id_.clear();
  events_ = 0;
  remove_via_state_change_ = false;
  // Pending calls to the plugin fail now; the objects go away once off this call stack.
  dead->server->OnClosed();
  dead->client->OnClosed(last_drop_);
  dead->mux->Close(last_drop_);  // re-enters ClosePlugin, which sees no conn_ and returns
  loop_.Post([dead]() {});
}

void RuntimeSimulator::DropPlugin(const Status& reason) { ClosePlugin(reason); }

void RuntimeSimulator::CallPlugin(const std::string& method, std::string payload,
                                  std::chrono::milliseconds timeout,
                                  std::function<void(Result<std::string>)> done) {
  if (!conn_) {
    loop_.AddTimer(std::chrono::nanoseconds(0), [done]() { done(UnavailableError("no plugin")); });
    return;
  }
  std::weak_ptr<RuntimeSimulator*> weak = self_;
  auto sent = std::make_shared<std::chrono::steady_clock::time_point>();
  conn_->client->Call(kPluginService, method, std::move(payload), timeout,
                      [weak, method, done, sent](Result<std::string> reply) {
                        std::shared_ptr<RuntimeSimulator*> self = weak.lock();
                        if (!self) return;
                        (*self)->last_call_time_ = std::chrono::steady_clock::now() - *sent;
                        // Fatal for the plugin (§4.3): deadline, closed, broken stream.
                        const StatusCode code = reply.status().code();
                        if (code == StatusCode::kDeadlineExceeded ||
                            code == StatusCode::kUnavailable || code == StatusCode::kDataLoss) {
                          (*self)->ClosePlugin(reply.status().WithContext(method));
                        }
                        done(std::move(reply));
                      });
  // Call has written the request to the socket (the answer comes on a later loop iteration).
  *sent = std::chrono::steady_clock::now();
}

std::string RuntimeSimulator::ApplyUnsolicited(const api::UpdateContainersRequest& req) {
  api::UpdateContainersResponse resp;
  ++unsolicited_calls_;
  for (const auto& u : req.update()) {
    if (containers_.count(u.container_id()) == 0) {
      *resp.add_failed() = u;  // an unknown container cannot be updated
      continue;
    }
    ++unsolicited_updates_;
    ApplyUpdate(nri::FromProto(u));
  }
  return resp.SerializeAsString();
}

void RuntimeSimulator::CallPluginInEvent(const std::string& method, std::string payload,
                                         std::chrono::milliseconds timeout,
                                         std::function<void(Result<std::string>)> done) {
  if (adaptation_lock_ == LockHolder::kUnsolicited) {
    // This event holds the NRI lock (it is the running operation) and needs the adaptation
    // lock, which an unsolicited UpdateContainers holds while it waits for the NRI lock: the
    // AB/BA deadlock of containerd 1.7.24 and 2.1.9 (real-runtimes.md). Nothing moves again,
    // whatever the plugin does; every later operation queues forever.
    deadlock_ = "goroutine 1 [sync.Mutex.Lock]: nri.(*local)." + method +
                " holds the NRI lock, waits for the adaptation lock\n"
                "goroutine 2 [sync.Mutex.Lock]: adaptation.(*Adaptation).updateContainers holds "
                "the adaptation lock, waits for the NRI lock (nri.(*local).updateFromPlugin)\n";
    return;
  }
  adaptation_lock_ = LockHolder::kEvent;
  std::weak_ptr<RuntimeSimulator*> weak = self_;
  CallPlugin(method, std::move(payload), timeout, [weak, done](Result<std::string> reply) {
    std::shared_ptr<RuntimeSimulator*> self = weak.lock();
    if (!self) return;
    (*self)->ReleaseAdaptationLock();
    done(std::move(reply));
  });
}

void RuntimeSimulator::ReleaseAdaptationLock() {
  adaptation_lock_ = LockHolder::kNone;
  if (adaptation_waiters_.empty()) return;
  auto next = std::move(adaptation_waiters_.front());
  adaptation_waiters_.pop_front();
  next();
}

void RuntimeSimulator::StartSynchronize() {
  conn_->state = PluginState::kSynchronizing;
  std::vector<api::PodSandbox> pods;
  std::set<std::string> seen;
  std::vector<api::Container> containers;
  for (const auto& [id, c] : containers_) {
    if (seen.insert(c.pod.id).second) nri::ToProto(c.pod, &pods.emplace_back());
    nri::ToProto(c.container, &containers.emplace_back());
  }
  // Go first sends everything at once; over 4 MiB its client refuses locally and it re-splits.
  // The plugin sees only what gets sent, so the split is computed up front here.
  std::vector<api::SynchronizeRequest> chunks;
  for (size_t n = 1;; n *= 2) {
    chunks.assign(n, api::SynchronizeRequest());
    for (size_t i = 0; i < pods.size(); ++i) *chunks[i * n / pods.size()].add_pods() = pods[i];
    for (size_t i = 0; i < containers.size(); ++i) {
      *chunks[i * n / containers.size()].add_containers() = containers[i];
    }
    bool fits = true;
    // Room for the ttrpc envelope (service, method, timeout).
    for (const auto& c : chunks) fits = fits && c.ByteSizeLong() + 128 <= ttrpc::kMaxMessageSize;
    if (fits || n > containers.size() + pods.size()) break;
  }
  for (size_t i = 0; i + 1 < chunks.size(); ++i) chunks[i].set_more(true);
  sync_chunks_ = static_cast<int>(chunks.size());

  const auto deadline = std::chrono::steady_clock::now() + options_.request_timeout;
  auto send = std::make_shared<std::function<void(size_t)>>();
  auto chunk_list = std::make_shared<std::vector<api::SynchronizeRequest>>(std::move(chunks));
  *send = [this, send, chunk_list, deadline](size_t i) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    CallPlugin(
        "Synchronize", (*chunk_list)[i].SerializeAsString(),
        std::max(left, std::chrono::milliseconds(1)),
        [this, send, chunk_list, i](Result<std::string> reply) {
          if (!conn_) return;
          api::SynchronizeResponse resp;
          if (!reply.ok() || !resp.ParseFromString(*reply)) {
            ClosePlugin(reply.ok() ? DataLossError("Synchronize answer does not parse")
                                   : reply.status().WithContext("Synchronize"));
            return;
          }
          if (i + 1 < chunk_list->size()) {
            if (!resp.more() || resp.update_size() != 0) {
              ClosePlugin(FailedPreconditionError("plugin does not handle split sync requests"));
              return;
            }
            (*send)(i + 1);
            return;
          }
          for (const auto& u : resp.update()) ApplyUpdate(nri::FromProto(u));
          conn_->state = PluginState::kReady;
          *send = nullptr;  // break the self-reference
        });
  };
  (*send)(0);
}

bool RuntimeSimulator::Subscribed(nri::Event e) const {
  return conn_ && conn_->state == PluginState::kReady && (events_ & nri::MaskOf(e)) != 0;
}

void RuntimeSimulator::ApplyUpdate(const nri::CpusetUpdate& update) {
  auto it = containers_.find(update.container_id);
  if (it == containers_.end()) return;
  if (!update.cpuset.cpus.empty()) it->second.container.cpuset.cpus = update.cpuset.cpus;
  if (!update.cpuset.mems.empty()) it->second.container.cpuset.mems = update.cpuset.mems;
  if (!update.cpuset.cpus.empty()) ApplyAffinity(it->second.container);
}

void RuntimeSimulator::ApplyReplyUpdate(const nri::CpusetUpdate& update) {
  if (containers_.count(update.container_id) != 0) ++reply_updates_;
  ApplyUpdate(update);
}

void RuntimeSimulator::ApplyAffinity(const nri::Container& container) {
  if (container.pid == 0 || container.cpuset.cpus.empty()) return;
  if (cgroups_) {
    const Status s = cgroups_->Apply(container.id, static_cast<int>(container.pid),
                                     container.cpuset.cpus, container.cpuset.mems);
    if (s.ok()) {
      ++affinity_applied_;
    } else {
      affinity_error_ = s;
    }
  }
  if (!options_.apply_affinity) return;
  Result<CpuSet> cpus = CpuSet::ParseList(container.cpuset.cpus, "container " + container.id);
  if (!cpus.ok()) {
    affinity_error_ = cpus.status();
    return;
  }
  cpu_set_t* mask = CPU_ALLOC(CpuSet::kMaxCpus);
  const size_t size = CPU_ALLOC_SIZE(CpuSet::kMaxCpus);
  CPU_ZERO_S(size, mask);
  for (int cpu : cpus->ToVector()) CPU_SET_S(cpu, size, mask);
  if (::sched_setaffinity(static_cast<pid_t>(container.pid), size, mask) == 0) {
    ++affinity_applied_;
  } else {
    affinity_error_ = ErrnoStatus("sched_setaffinity pid " + std::to_string(container.pid), errno);
  }
  CPU_FREE(mask);
}

void RuntimeSimulator::ReleaseCgroup(const std::string& container_id) {
  if (!cgroups_) return;
  if (Status s = cgroups_->Release(container_id); !s.ok()) affinity_error_ = s;
}

void RuntimeSimulator::AddRunning(const nri::Pod& pod, const nri::Container& container) {
  SimContainer c{pod, container};
  c.container.pod_sandbox_id = pod.id;
  c.container.state = nri::ContainerState::kRunning;
  ApplyAffinity(c.container);
  containers_[container.id] = std::move(c);
}

void RuntimeSimulator::Enqueue(std::function<void(std::function<void()>)> op) {
  ops_.push_back(std::move(op));
  if (!op_running_) RunNext();
}

void RuntimeSimulator::RunNext() {
  if (ops_.empty()) {
    op_running_ = false;
    return;
  }
  op_running_ = true;
  auto op = std::move(ops_.front());
  ops_.pop_front();
  std::weak_ptr<RuntimeSimulator*> weak = self_;
  op([weak]() {
    std::shared_ptr<RuntimeSimulator*> self = weak.lock();
    if (self) (*self)->RunNext();
  });
}

void RuntimeSimulator::CreateContainer(const nri::Pod& pod, const nri::Container& container,
                                       Done done) {
  Enqueue([this, pod, container, done](std::function<void()> finished) {
    if (containers_.count(container.id) != 0) {
      done(AlreadyExistsError("container " + container.id));
      return finished();
    }
    SimContainer created{pod, container};
    created.container.pod_sandbox_id = pod.id;
    created.container.state = nri::ContainerState::kCreated;
    auto admit = [this, done, finished](SimContainer c) {
      c.container.state = nri::ContainerState::kRunning;
      ApplyAffinity(c.container);
      containers_[c.container.id] = std::move(c);
      done(Status::Ok());
      finished();
    };
    if (!Subscribed(nri::Event::kCreateContainer)) return admit(std::move(created));
    api::CreateContainerRequest req;
    nri::ToProto(pod, req.mutable_pod());
    nri::ToProto(created.container, req.mutable_container());
    CallPluginInEvent("CreateContainer", req.SerializeAsString(), options_.request_timeout,
                      [this, created, done, finished, admit](Result<std::string> reply) mutable {
                        if (!reply.ok()) {
                          if (!conn_) return admit(std::move(created));  // plugin dropped: unpinned
                          done(reply.status());
                          return finished();
                        }
                        api::CreateContainerResponse resp;
                        if (!resp.ParseFromString(*reply)) {
                          done(DataLossError("CreateContainer answer does not parse"));
                          return finished();
                        }
                        for (const auto& u : resp.update()) {
                          if (u.container_id() == created.container.id) {
                            done(InvalidArgumentError("plugin asked update of " + u.container_id() +
                                                      " during creation"));
                            return finished();
                          }
                        }
                        const nri::Cpuset adjust =
                            nri::CpusetFromProto(resp.adjust().linux().resources());
                        if (!adjust.cpus.empty()) created.container.cpuset.cpus = adjust.cpus;
                        if (!adjust.mems.empty()) created.container.cpuset.mems = adjust.mems;
                        for (const auto& u : resp.update()) ApplyReplyUpdate(nri::FromProto(u));
                        admit(std::move(created));
                      });
  });
}

void RuntimeSimulator::UpdateContainer(const std::string& id, const nri::Cpuset& requested,
                                       Done done) {
  Enqueue([this, id, requested, done](std::function<void()> finished) {
    auto it = containers_.find(id);
    if (it == containers_.end()) {
      done(NotFoundError("container " + id));
      return finished();
    }
    auto apply = [this, id, done, finished](nri::Cpuset cpuset) {
      ApplyUpdate(nri::CpusetUpdate{id, cpuset, false});
      done(Status::Ok());
      finished();
    };
    if (!Subscribed(nri::Event::kUpdateContainer)) return apply(requested);
    api::UpdateContainerRequest req;
    nri::ToProto(it->second.pod, req.mutable_pod());
    nri::ToProto(it->second.container, req.mutable_container());
    nri::ToProto(requested, req.mutable_linux_resources());
    CallPluginInEvent("UpdateContainer", req.SerializeAsString(), options_.request_timeout,
                      [this, id, requested, done, finished, apply](Result<std::string> reply) {
                        if (!reply.ok()) {
                          if (!conn_) return apply(requested);
                          done(reply.status());
                          return finished();
                        }
                        api::UpdateContainerResponse resp;
                        if (!resp.ParseFromString(*reply)) {
                          done(DataLossError("UpdateContainer answer does not parse"));
                          return finished();
                        }
                        nri::Cpuset merged = requested;
                        for (const auto& u : resp.update()) {
                          const nri::CpusetUpdate update = nri::FromProto(u);
                          if (update.container_id != id) {
                            ApplyReplyUpdate(update);
                            continue;
                          }
                          // The plugin's values win over the request's (merged into the pending
                          // update).
                          if (!update.cpuset.cpus.empty()) merged.cpus = update.cpuset.cpus;
                          if (!update.cpuset.mems.empty()) merged.mems = update.cpuset.mems;
                        }
                        apply(merged);
                      });
  });
}

void RuntimeSimulator::StopContainer(const std::string& id, Done done) {
  Enqueue([this, id, done](std::function<void()> finished) {
    auto it = containers_.find(id);
    if (it == containers_.end()) {
      done(NotFoundError("container " + id));
      return finished();
    }
    it->second.container.state = nri::ContainerState::kStopped;
    if (!Subscribed(nri::Event::kStopContainer)) {
      done(Status::Ok());
      return finished();
    }
    api::StopContainerRequest req;
    nri::ToProto(it->second.pod, req.mutable_pod());
    nri::ToProto(it->second.container, req.mutable_container());
    CallPluginInEvent("StopContainer", req.SerializeAsString(), options_.request_timeout,
                      [this, done, finished](Result<std::string> reply) {
                        api::StopContainerResponse resp;
                        if (reply.ok() && resp.ParseFromString(*reply)) {
                          for (const auto& u : resp.update()) ApplyReplyUpdate(nri::FromProto(u));
                        }
                        // A stop happens whatever the plugin says; its error is reported.
                        done(reply.ok() || !conn_ ? Status::Ok() : reply.status());
                        finished();
                      });
  });
}

void RuntimeSimulator::RemoveContainer(const std::string& id, Done done) {
  Enqueue([this, id, done](std::function<void()> finished) {
    auto it = containers_.find(id);
    if (it == containers_.end()) {
      done(NotFoundError("container " + id));
      return finished();
    }
    const SimContainer removed = it->second;
    containers_.erase(it);
    ReleaseCgroup(id);
    if (!Subscribed(nri::Event::kRemoveContainer)) {
      done(Status::Ok());
      return finished();
    }
    auto via_state_change = [this, removed, done, finished]() {
      api::StateChangeEvent ev;
      ev.set_event(api::REMOVE_CONTAINER);
      nri::ToProto(removed.pod, ev.mutable_pod());
      nri::ToProto(removed.container, ev.mutable_container());
      CallPluginInEvent("StateChange", ev.SerializeAsString(), options_.request_timeout,
                        [this, done, finished](Result<std::string> reply) {
                          done(reply.ok() || !conn_ ? Status::Ok() : reply.status());
                          finished();
                        });
    };
    if (NriMinorVersion(options_.nri_version) < 12 || remove_via_state_change_) {
      return via_state_change();
    }
    api::RemoveContainerRequest req;
    nri::ToProto(removed.pod, req.mutable_pod());
    nri::ToProto(removed.container, req.mutable_container());
    CallPluginInEvent("RemoveContainer", req.SerializeAsString(), options_.request_timeout,
                      [this, done, finished, via_state_change](Result<std::string> reply) {
                        if (reply.status().code() == StatusCode::kUnimplemented && conn_) {
                          remove_via_state_change_ = true;  // and for every later event
                          return via_state_change();
                        }
                        done(reply.ok() || !conn_ ? Status::Ok() : reply.status());
                        finished();
                      });
  });
}

}  // namespace dracpu::sim
