#include "dra-agent/kubelet/health_service.h"

namespace dracpu::dra {

void HealthStreamer::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void HealthStreamer::Notify() {
  {
    std::lock_guard lock(mu_);
    ++notified_;
  }
  cv_.notify_all();
}

}  // namespace dracpu::dra
