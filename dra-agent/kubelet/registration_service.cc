#include "dra-agent/kubelet/registration_service.h"

namespace dracpu::dra {

grpc::Status RegistrationService::GetInfo(grpc::ServerContext*,
                                          const pluginregistration::InfoRequest*,
                                          pluginregistration::PluginInfo* response) {
  response->set_type("DRAPlugin");
  response->set_name(info_.driver_name);
  response->set_endpoint(info_.endpoint);
  for (const std::string& v : info_.supported_versions) response->add_supported_versions(v);
  std::lock_guard lock(mu_);
  ++get_info_calls_;
  return grpc::Status::OK;
}

grpc::Status RegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext*, const pluginregistration::RegistrationStatus* request,
    pluginregistration::RegistrationStatusResponse*) {
  {
    std::lock_guard lock(mu_);
    registered_ = request->plugin_registered();
  }
  if (on_status_) on_status_(request->plugin_registered(), request->error());
  return grpc::Status::OK;
}

bool RegistrationService::registered() const {
  std::lock_guard lock(mu_);
  return registered_;
}

int RegistrationService::get_info_calls() const {
  std::lock_guard lock(mu_);
  return get_info_calls_;
}

}  // namespace dracpu::dra
