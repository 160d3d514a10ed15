// KubeletLikeContainer: a running container with what the kubelet gives one (a dozen service
// env vars, ten annotations), so the NRI benchmarks encode and decode realistic messages.
#pragma once

#include <string>

#include "nri-agent/nri/types.h"

namespace dracpu::bench {

inline nri::Container KubeletLikeContainer(const std::string& id, const std::string& sandbox_id,
                                           int i, const nri::Cpuset& cpuset) {
  nri::Container c;
  c.id = id;
  c.pod_sandbox_id = sandbox_id;
  c.name = "container-" + std::to_string(i);
  c.state = nri::ContainerState::kRunning;
  for (int e = 0; e < 12; ++e) {
    c.env.push_back("KUBERNETES_SERVICE_VAR_" + std::to_string(e) + "=10.96.0." +
                    std::to_string(e));
  }
  for (int a = 0; a < 10; ++a) {
    c.annotations["io.kubernetes.annotation-" + std::to_string(a)] = "value-" + std::to_string(a);
  }
  c.cpuset = cpuset;
  return c;
}

}  // namespace dracpu::bench
