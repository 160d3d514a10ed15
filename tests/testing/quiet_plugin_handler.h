// QuietPluginHandler: an nri::PluginHandler for tests and benchmarks that answers every event
// with "nothing to change" and subscribes to container creation, update, stop and removal.
// Tests derive from it and override only the events they examine.
#pragma once

#include <vector>

#include "nri-agent/nri/types.h"

namespace dracpu::testing {

class QuietPluginHandler : public nri::PluginHandler {
 public:
  Result<nri::EventMask> Configure(const nri::RuntimeInfo&) override {
    return nri::MaskOf(nri::Event::kCreateContainer) | nri::MaskOf(nri::Event::kUpdateContainer) |
           nri::MaskOf(nri::Event::kStopContainer) | nri::MaskOf(nri::Event::kRemoveContainer);
  }
  Result<std::vector<nri::CpusetUpdate>> Synchronize(const std::vector<nri::Pod>&,
                                                     const std::vector<nri::Container>&) override {
    return std::vector<nri::CpusetUpdate>{};
  }
  Result<nri::CreateContainerResult> CreateContainer(const nri::Pod&,
                                                     const nri::Container&) override {
    return nri::CreateContainerResult{};
  }
  Result<std::vector<nri::CpusetUpdate>> UpdateContainer(const nri::Pod&, const nri::Container&,
                                                         const nri::Cpuset&) override {
    return std::vector<nri::CpusetUpdate>{};
  }
  Result<std::vector<nri::CpusetUpdate>> StopContainer(const nri::Pod&,
                                                       const nri::Container&) override {
    return std::vector<nri::CpusetUpdate>{};
  }
  Status RemoveContainer(const nri::Pod&, const nri::Container&) override { return Status::Ok(); }
  void Disconnected(const Status&) override {}
};

}  // namespace dracpu::testing
