// DraEnv: the seams the dra-agent's parts receive instead of making their own. main() builds
// the real ones (dra-agent/main.cc: the filesystems rooted at / and at --sysfs-root with the
// sysfsOverlay, SystemClock, the system wall clock, DefaultRandom, the libcurl Kubernetes client
// from the in-cluster config or --kubeconfig, the gRPC KubeletPluginServer); the agent's unit test
// passes a temp-dir filesystem, a FakeClock, the in-process API server simulator and a fake kubelet
// server. Not owned: the references must outlive the agent.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/status.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kubelet/kubelet_plugin_server.h"

namespace dracpu::dra {

// Makes the agent's Kubernetes API client (called once, by DraAgent::Start).
using KubeClientFactory = std::function<Result<std::unique_ptr<kube::KubeClient>>()>;

struct DraEnv {
  // The host's files: the CDI directory, the kubelet's directory (its CPU Manager state, the
  // device metadata) and /proc, at the config's absolute paths.
  FileSystem& host;
  // The node's CPUs: sys/devices/system/... below it (--sysfs-root, with the sysfsOverlay).
  FileSystem& sysfs;
  Clock& clock;  // backoff, slice publishing, the topology watcher, request durations
  // The wall-clock time, RFC 3339 in UTC: the lastTransitionTime of the conditions written into
  // claim statuses (ClaimStatusWriter::SystemWallClock in main).
  std::function<std::string()> wall_time;
  Random& random;  // backoff jitter, operation ids
  KubeClientFactory kube_client;
  // The kubelet-facing sockets (registration and DRA service).
  KubeletPluginServerFactory kubelet_server;
};

}  // namespace dracpu::dra
