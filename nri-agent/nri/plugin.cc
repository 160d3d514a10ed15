#include "nri-agent/nri/plugin.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "nri-agent/mux/ttrpc_peer.h"
#include "nri-agent/nri/convert.h"

namespace dracpu::nri {

namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '+' || c == '-';
}

// Registers `method` on `server`: parses Req, runs fn(req), answers the bytes it returns or its
// error. Not on an Arena: Debian's libprotobuf 3.21 destroys arena-owned map fields with its own
// (non-TSan) layout, which crashes the ThreadSanitizer build (make tsan).
template <typename Req, typename Fn>
void ServeBytes(ttrpc::Server& server, const char* method, Fn fn) {
  server.Register(
      kPluginService, method,
      [method, fn](const ttrpc::CallInfo&, const std::string& payload,
                   const ttrpc::Responder& done) {
        Req request;
        if (!request.ParseFromString(payload)) {
          done(InvalidArgumentError(std::string(method) + ": request of " +
                                    std::to_string(payload.size()) + " bytes does not parse"));
          return;
        }
        done(fn(request));
      });
}

// As ServeBytes, for a handler that fills a generated response: fn(req, &resp).
template <typename Req, typename Resp, typename Fn>
void Serve(ttrpc::Server& server, const char* method, Fn fn) {
  ServeBytes<Req>(server, method, [fn](const Req& request) -> Result<std::string> {
    Resp response;
    RETURN_IF_ERROR(fn(request, &response));
    return response.SerializeAsString();
  });
}

}  // namespace

Status ValidatePluginIdentity(std::string_view name, std::string_view index) {
  if (name.empty()) return InvalidArgumentError("NRI plugin name is empty");
  for (char c : name) {
    if (!IsNameChar(c)) {
      return InvalidArgumentError("NRI plugin name \"" + std::string(name) +
                                  "\": only [a-zA-Z0-9_.+-] allowed");
    }
  }
  if (index.size() != 2 || index[0] < '0' || index[0] > '9' || index[1] < '0' || index[1] > '9') {
    return InvalidArgumentError("NRI plugin index \"" + std::string(index) +
                                "\": must be two digits 00..99");
  }
  return Status::Ok();
}

Result<UniqueFd> ConnectNriSocket(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError("NRI socket path \"" + path + "\": empty or longer than " +
                                std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return ErrnoStatus("socket(AF_UNIX)", errno);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoStatus("connect " + path, errno);
  }
  return fd;
}

Result<UniqueFd> AdoptPluginSocket(std::string_view env_value) {
  int fd = -1;
  const auto [end, ec] = std::from_chars(env_value.data(), env_value.data() + env_value.size(), fd);
  if (ec != std::errc() || end != env_value.data() + env_value.size() || fd < 0) {
    return InvalidArgumentError("NRI_PLUGIN_SOCKET=\"" + std::string(env_value) +
                                "\": not a file descriptor number");
  }
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return ErrnoStatus("NRI_PLUGIN_SOCKET fd " + std::to_string(fd), errno);
  if (!S_ISSOCK(st.st_mode)) {
    return InvalidArgumentError("NRI_PLUGIN_SOCKET fd " + std::to_string(fd) + " is not a socket");
  }
  // Inherited descriptors do not get O_CLOEXEC from us otherwise.
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return UniqueFd(fd);
}

Plugin::Plugin(loop::EventLoop& loop, PluginOptions options, PluginHandler& handler)
    : loop_(loop),
      options_(std::move(options)),
      handler_(handler),
      self_(std::make_shared<Plugin*>(this)) {}

Plugin::~Plugin() = default;

Result<std::unique_ptr<Plugin>> Plugin::Start(loop::EventLoop& loop, UniqueFd trunk,
                                              PluginOptions options, PluginHandler& handler) {
  RETURN_IF_ERROR(ValidatePluginIdentity(options.name, options.index));
  std::unique_ptr<Plugin> plugin(new Plugin(loop, std::move(options), handler));
  Plugin* raw = plugin.get();
  ASSIGN_OR_RETURN(plugin->peer_,
                   mux::TtrpcPeer::ForPlugin(loop, std::move(trunk), [raw](const Status& reason) {
                     raw->OnClosed(reason);
                   }));
  plugin->RegisterHandlers();

  api::RegisterPluginRequest request;
  request.set_plugin_name(plugin->options_.name);
  request.set_plugin_idx(plugin->options_.index);
  request.set_nri_version(plugin->options_.nri_version);
  std::weak_ptr<Plugin*> weak = plugin->self_;
  plugin->peer_->client().Call(kRuntimeService, "RegisterPlugin", request.SerializeAsString(),
                               plugin->options_.register_timeout,
                               [weak](const Result<std::string>& reply) {
                                 std::shared_ptr<Plugin*> self = weak.lock();
                                 if (!self) return;
                                 Plugin* p = *self;
                                 if (!reply.ok()) {
                                   p->Close(reply.status().WithContext("RegisterPlugin"));
                                   return;
                                 }
                                 p->registered_ = true;
                                 if (p->state_ == State::kRegistering)
                                   p->state_ = State::kRegistered;
                               });
  return plugin;
}

void Plugin::RegisterHandlers() {
  ttrpc::Server& server = peer_->server();

  Serve<api::ConfigureRequest, api::ConfigureResponse>(
      server, "Configure", [this](const api::ConfigureRequest& req, api::ConfigureResponse* resp) {
        runtime_ = FromProto(req);
        ASSIGN_OR_RETURN(const EventMask events, handler_.Configure(runtime_));
        // 0 would subscribe to everything, bits above 0x7FF make NRI <= 0.9 runtimes drop us.
        if (events == 0 || (events & ~kEventsValidOnOldRuntimes) != 0) {
          return FailedPreconditionError("event mask " + std::to_string(events) +
                                         " is empty or outside 0x7FF");
        }
        resp->set_events(events);
        if (state_ != State::kSynchronized) state_ = State::kConfigured;
        return Status::Ok();
      });

  Serve<api::SynchronizeRequest, api::SynchronizeResponse>(
      server, "Synchronize",
      [this](const api::SynchronizeRequest& req, api::SynchronizeResponse* resp) {
        for (const auto& pod : req.pods()) sync_pods_.push_back(FromProto(pod));
        for (const auto& c : req.containers()) sync_containers_.push_back(FromProto(c));
        if (req.more()) {
          // Every chunk but the last is acknowledged with more = true and no updates, or the
          // runtime decides we cannot handle split syncs.
          resp->set_more(true);
          return Status::Ok();
        }
        std::vector<Pod> pods = std::move(sync_pods_);
        std::vector<Container> containers = std::move(sync_containers_);
        sync_pods_.clear();
        sync_containers_.clear();
        ASSIGN_OR_RETURN(const std::vector<CpusetUpdate> updates,
                         handler_.Synchronize(pods, containers));
        for (const CpusetUpdate& u : updates) ToProto(u, resp->add_update());
        state_ = State::kSynchronized;
        return Status::Ok();
      });

  // The three replies that carry updates (hundreds after a pool change) are encoded directly.
  ServeBytes<api::CreateContainerRequest>(
      server, "CreateContainer",
      [this](const api::CreateContainerRequest& req) -> Result<std::string> {
        const Container container = FromProto(req.container());
        ASSIGN_OR_RETURN(const CreateContainerResult result,
                         handler_.CreateContainer(FromProto(req.pod()), container));
        for (const CpusetUpdate& u : result.updates) {
          // The runtime fails the creation for this ("asked update of X during creation").
          if (u.container_id == container.id) {
            return InternalError("CreateContainer " + container.id +
                                 ": policy asked to update the container being created");
          }
        }
        return SerializeCreateContainerResponse(result);
      });

  ServeBytes<api::UpdateContainerRequest>(
      server, "UpdateContainer",
      [this](const api::UpdateContainerRequest& req) -> Result<std::string> {
        ASSIGN_OR_RETURN(const std::vector<CpusetUpdate> updates,
                         handler_.UpdateContainer(FromProto(req.pod()), FromProto(req.container()),
                                                  CpusetFromProto(req.linux_resources())));
        return SerializeUpdatesResponse(updates);
      });

  ServeBytes<api::StopContainerRequest>(
      server, "StopContainer", [this](const api::StopContainerRequest& req) -> Result<std::string> {
        ASSIGN_OR_RETURN(const std::vector<CpusetUpdate> updates,
                         handler_.StopContainer(FromProto(req.pod()), FromProto(req.container())));
        return SerializeUpdatesResponse(updates);
      });

  Serve<api::RemoveContainerRequest, api::RemoveContainerResponse>(
      server, "RemoveContainer",
      [this](const api::RemoveContainerRequest& req, api::RemoveContainerResponse*) {
        return handler_.RemoveContainer(FromProto(req.pod()), FromProto(req.container()));
      });

  Serve<api::StateChangeEvent, api::Empty>(
      server, "StateChange", [this](const api::StateChangeEvent& ev, api::Empty*) {
        // Runtimes before NRI 0.12 report removal only this way; other state changes carry
        // nothing the policy needs (we do not subscribe to them, but a runtime may still send).
        if (ev.event() == api::REMOVE_CONTAINER) {
          return handler_.RemoveContainer(FromProto(ev.pod()), FromProto(ev.container()));
        }
        return Status::Ok();
      });

  // Current runtimes never send it; the connection closing is what tells us to stop.
  Serve<api::Empty, api::Empty>(server, "Shutdown",
                                [](const api::Empty&, api::Empty*) { return Status::Ok(); });
}

void Plugin::UpdateContainers(const std::vector<CpusetUpdate>& updates, UpdateCallback done) {
  std::weak_ptr<Plugin*> weak = self_;
  if (!registered_ || state_ == State::kClosed) {
    const Status status = FailedPreconditionError(
        state_ == State::kClosed ? "UpdateContainers: NRI connection closed"
                                 : "UpdateContainers: not registered with the runtime yet");
    loop_.AddTimer(std::chrono::nanoseconds(0), [weak, done = std::move(done), status]() {
      if (weak.lock()) done(status);
    });
    return;
  }
  api::UpdateContainersRequest request;
  for (const CpusetUpdate& u : updates) ToProto(u, request.add_update());
  peer_->client().Call(kRuntimeService, "UpdateContainers", request.SerializeAsString(),
                       options_.update_timeout,
                       [done = std::move(done)](Result<std::string> reply) {
                         if (!reply.ok()) {
                           done(reply.status().WithContext("UpdateContainers"));
                           return;
                         }
                         api::UpdateContainersResponse response;
                         if (!response.ParseFromString(*reply)) {
                           done(DataLossError("UpdateContainers: answer does not parse"));
                           return;
                         }
                         std::vector<CpusetUpdate> failed;
                         for (const auto& f : response.failed()) failed.push_back(FromProto(f));
                         done(std::move(failed));
                       });
}

void Plugin::Close(const Status& reason) { peer_->Close(reason); }

void Plugin::OnClosed(const Status& reason) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  sync_pods_.clear();
  sync_containers_.clear();
  handler_.Disconnected(reason);
}

}  // namespace dracpu::nri
