#include "tests/sim/kubelet/kubelet_simulator.h"

#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <thread>

#include "common/thread_sanitizer.h"
#include "dra_health_v1alpha1.grpc.pb.h"
#include "dra_v1.grpc.pb.h"
#include "dra_v1beta1.grpc.pb.h"
#include "pluginregistration.grpc.pb.h"

// dracpu-sim-kubelet and its tests run gRPC clients (common/thread_sanitizer.h).
DRACPU_TSAN_GRPC_PROGRAM()

namespace dracpu::sim {
namespace {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

constexpr auto kGetInfoDeadline = std::chrono::seconds(1);
constexpr auto kNotifyDeadline = std::chrono::seconds(5);
constexpr auto kDraCallDeadline = std::chrono::seconds(45);

Status FromGrpc(const grpc::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  return Status(static_cast<StatusCode>(s.error_code()), what + ": " + s.error_message());
}

void SetDeadline(grpc::ClientContext& ctx, std::chrono::milliseconds d) {
  ctx.set_deadline(std::chrono::system_clock::now() + d);
}

std::shared_ptr<grpc::Channel> Dial(const std::string& socket) {
  return grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
}

// Sockets in the registry dir (recursing like the kubelet; dot files ignored), sorted.
void FindSockets(const std::string& dir, std::vector<std::string>& out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;
    const std::string path = dir + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) FindSockets(path, out);
    if (S_ISSOCK(st.st_mode)) out.push_back(path);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
}

template <typename Stub, typename Request>
Request BuildRequest(const std::vector<SimClaim>& claims) {
  Request req;
  for (const SimClaim& c : claims) {
    auto* out = req.add_claims();
    out->set_namespace_(c.namespace_name);
    out->set_name(c.name);
    out->set_uid(c.uid);
  }
  return req;
}

// Every requested claim must be answered, and nothing else (the kubelet's rule).
template <typename Map>
Status CheckAnswered(const std::vector<SimClaim>& claims, const Map& answered) {
  std::set<std::string> want;
  for (const SimClaim& c : claims) want.insert(c.uid);
  for (const auto& [uid, unused] : answered) {
    if (!want.count(uid)) return InternalError("driver answered unknown claim " + uid);
  }
  for (const std::string& uid : want) {
    if (!answered.count(uid)) return InternalError("driver skipped claim " + uid);
  }
  return Status::Ok();
}

template <typename Stub, typename Req, typename Resp>
Result<std::map<std::string, SimPrepareResult>> DoPrepare(Stub& stub,
                                                          const std::vector<SimClaim>& claims) {
  Req req = BuildRequest<Stub, Req>(claims);
  Resp resp;
  grpc::ClientContext ctx;
  SetDeadline(ctx, kDraCallDeadline);
  RETURN_IF_ERROR(FromGrpc(stub.NodePrepareResources(&ctx, req, &resp), "NodePrepareResources"));
  RETURN_IF_ERROR(CheckAnswered(claims, resp.claims()));
  std::map<std::string, SimPrepareResult> out;
  for (const auto& [uid, r] : resp.claims()) {
    SimPrepareResult& result = out[uid];
    result.error = r.error();
    for (const auto& d : r.devices()) {
      result.devices.push_back({{d.request_names().begin(), d.request_names().end()},
                                d.pool_name(),
                                d.device_name(),
                                {d.cdi_device_ids().begin(), d.cdi_device_ids().end()}});
    }
  }
  return out;
}

template <typename Stub, typename Req, typename Resp>
Result<std::map<std::string, std::string>> DoUnprepare(Stub& stub,
                                                       const std::vector<SimClaim>& claims) {
  Req req = BuildRequest<Stub, Req>(claims);
  Resp resp;
  grpc::ClientContext ctx;
  SetDeadline(ctx, kDraCallDeadline);
  RETURN_IF_ERROR(
      FromGrpc(stub.NodeUnprepareResources(&ctx, req, &resp), "NodeUnprepareResources"));
  RETURN_IF_ERROR(CheckAnswered(claims, resp.claims()));
  std::map<std::string, std::string> out;
  for (const auto& [uid, r] : resp.claims()) out[uid] = r.error();
  return out;
}

}  // namespace

struct KubeletSimulator::Channels {
  std::shared_ptr<grpc::Channel> registration;
  std::shared_ptr<grpc::Channel> dra;
};

std::string HealthName(int value) {
  switch (value) {
    case v1alpha1::HEALTHY:
      return "Healthy";
    case v1alpha1::UNHEALTHY:
      return "Unhealthy";
    default:
      return "Unknown";
  }
}

KubeletSimulator::KubeletSimulator(std::string registry_dir,
                                   std::vector<std::string> known_versions)
    : registry_dir_(std::move(registry_dir)),
      known_versions_(std::move(known_versions)),
      channels_(std::make_unique<Channels>()) {}

KubeletSimulator::~KubeletSimulator() = default;

Result<PluginRegistration> KubeletSimulator::TryRegister(const std::string& socket,
                                                         const std::string& driver) {
  auto channel = Dial(socket);
  auto stub = pluginregistration::Registration::NewStub(channel);
  pluginregistration::PluginInfo info;
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx, kGetInfoDeadline);
    RETURN_IF_ERROR(FromGrpc(stub->GetInfo(&ctx, pluginregistration::InfoRequest(), &info),
                             "GetInfo on " + socket));
  }
  PluginRegistration reg;
  reg.registration_socket = socket;
  reg.type = info.type();
  reg.name = info.name();
  reg.endpoint = info.endpoint().empty() ? socket : info.endpoint();
  reg.supported_versions.assign(info.supported_versions().begin(), info.supported_versions().end());
  if (reg.name != driver) return NotFoundError("socket " + socket + " belongs to " + reg.name);
  // Validate like the kubelet: the first version in the plugin's list that this kubelet knows.
  Status verdict = Status::Ok();
  if (reg.type != "DRAPlugin") {
    verdict = InvalidArgumentError("plugin type \"" + reg.type + "\" is not DRAPlugin");
  } else {
    auto known = std::find_if(
        reg.supported_versions.begin(), reg.supported_versions.end(), [&](const std::string& v) {
          return std::count(known_versions_.begin(), known_versions_.end(), v) > 0;
        });
    if (known == reg.supported_versions.end()) {
      verdict = InvalidArgumentError("none of the plugin's versions is supported by this kubelet");
    } else {
      reg.chosen = *known == "v1beta1.DRAPlugin" ? DraApiVersion::kV1beta1 : DraApiVersion::kV1;
    }
  }
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(verdict.ok());
  status.set_error(verdict.ok() ? "" : verdict.message());
  pluginregistration::RegistrationStatusResponse unused;
  grpc::ClientContext ctx;
  SetDeadline(ctx, kNotifyDeadline);
  RETURN_IF_ERROR(FromGrpc(stub->NotifyRegistrationStatus(&ctx, status, &unused),
                           "NotifyRegistrationStatus on " + socket));
  RETURN_IF_ERROR(verdict);
  channels_->registration = channel;
  channels_->dra = Dial(reg.endpoint);
  return reg;
}

Result<PluginRegistration> KubeletSimulator::Register(const std::string& driver,
                                                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Status last = NotFoundError("no registration socket for " + driver + " in " + registry_dir_);
  while (true) {
    std::vector<std::string> sockets;
    FindSockets(registry_dir_, sockets);
    for (const std::string& socket : sockets) {
      auto reg = TryRegister(socket, driver);
      if (reg.ok()) {
        registration_ = *reg;
        registered_ = true;
        return reg;
      }
      last = reg.status();
      if (last.code() == StatusCode::kInvalidArgument) return last;  // refused: final
    }
    if (std::chrono::steady_clock::now() >= deadline) return last;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(20));  // the kubelet's watcher would wake us
  }
}

Status KubeletSimulator::ProbeRegistration() {
  if (!registered_) return FailedPreconditionError("no plugin registered");
  auto stub = pluginregistration::Registration::NewStub(channels_->registration);
  grpc::ClientContext ctx;
  SetDeadline(ctx, std::chrono::seconds(10));
  pluginregistration::PluginInfo info;
  return FromGrpc(stub->GetInfo(&ctx, pluginregistration::InfoRequest(), &info), "GetInfo probe");
}

Result<std::map<std::string, SimPrepareResult>> KubeletSimulator::Prepare(
    const std::vector<SimClaim>& claims) {
  if (!registered_) return FailedPreconditionError("no plugin registered");
  if (Version() == DraApiVersion::kV1) {
    auto stub = drav1::DRAPlugin::NewStub(channels_->dra);
    return DoPrepare<drav1::DRAPlugin::Stub, drav1::NodePrepareResourcesRequest,
                     drav1::NodePrepareResourcesResponse>(*stub, claims);
  }
  auto stub = drav1beta1::DRAPlugin::NewStub(channels_->dra);
  return DoPrepare<drav1beta1::DRAPlugin::Stub, drav1beta1::NodePrepareResourcesRequest,
                   drav1beta1::NodePrepareResourcesResponse>(*stub, claims);
}

Result<std::map<std::string, std::string>> KubeletSimulator::Unprepare(
    const std::vector<SimClaim>& claims) {
  if (!registered_) return FailedPreconditionError("no plugin registered");
  if (Version() == DraApiVersion::kV1) {
    auto stub = drav1::DRAPlugin::NewStub(channels_->dra);
    return DoUnprepare<drav1::DRAPlugin::Stub, drav1::NodeUnprepareResourcesRequest,
                       drav1::NodeUnprepareResourcesResponse>(*stub, claims);
  }
  auto stub = drav1beta1::DRAPlugin::NewStub(channels_->dra);
  return DoUnprepare<drav1beta1::DRAPlugin::Stub, drav1beta1::NodeUnprepareResourcesRequest,
                     drav1beta1::NodeUnprepareResourcesResponse>(*stub, claims);
}

Result<std::vector<std::vector<SimDeviceHealth>>> KubeletSimulator::WatchHealth(
    int count, std::chrono::milliseconds timeout) {
  if (!registered_) return FailedPreconditionError("no plugin registered");
  auto stub = v1alpha1::DRAResourceHealth::NewStub(channels_->dra);
  grpc::ClientContext ctx;
  SetDeadline(ctx, timeout);
  auto reader = stub->NodeWatchResources(&ctx, v1alpha1::NodeWatchResourcesRequest());
  std::vector<std::vector<SimDeviceHealth>> updates;
  v1alpha1::NodeWatchResourcesResponse resp;
  while (static_cast<int>(updates.size()) < count && reader->Read(&resp)) {
    std::vector<SimDeviceHealth> list;
    for (const auto& d : resp.devices()) {
      list.push_back({d.device().pool_name(), d.device().device_name(), HealthName(d.health()),
                      d.message(), d.health_check_timeout_seconds()});
    }
    updates.push_back(std::move(list));
  }
  const bool got_all = static_cast<int>(updates.size()) == count;
  if (got_all) ctx.TryCancel();
  const grpc::Status end = reader->Finish();
  if (got_all) return updates;
  if (!end.ok()) return FromGrpc(end, "NodeWatchResources");
  return UnavailableError("health stream ended after " + std::to_string(updates.size()) +
                          " updates");
}

}  // namespace dracpu::sim
