// The kubelet plugin-registration service (pluginregistration.Registration), private to
// dra-agent/kubelet/ (it brings the generated code): answers GetInfo for
// as long as the agent lives (newer kubelets call it every ~10 s as a liveness probe) and reports
// NotifyRegistrationStatus to a callback. Thread-safe.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "pluginregistration.grpc.pb.h"

namespace dracpu::dra {

struct RegistrationInfo {
  std::string driver_name;
  std::string endpoint;                         // absolute path of the DRA socket
  std::vector<std::string> supported_versions;  // most preferred first
};

class RegistrationService final : public pluginregistration::Registration::Service {
 public:
  // `on_status(registered, error)` runs on a gRPC thread for every NotifyRegistrationStatus.
  using StatusCallback = std::function<void(bool registered, const std::string& error)>;
  RegistrationService(RegistrationInfo info, StatusCallback on_status)
      : info_(std::move(info)), on_status_(std::move(on_status)) {}

  grpc::Status GetInfo(grpc::ServerContext* context, const pluginregistration::InfoRequest* request,
                       pluginregistration::PluginInfo* response) override;
  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext* context, const pluginregistration::RegistrationStatus* request,
      pluginregistration::RegistrationStatusResponse* response) override;

  // The last status the kubelet reported (false before any).
  bool registered() const;
  int get_info_calls() const;

 private:
  const RegistrationInfo info_;
  const StatusCallback on_status_;
  mutable std::mutex mu_;
  bool registered_ = false;
  int get_info_calls_ = 0;
};

}  // namespace dracpu::dra
