// Where the kubelet finds the plugin: the registration socket in its plugin watcher directory and
// the DRA service socket in the plugin's own directory (protocols.md §5, reference-driver.md §2.1).
#pragma once

#include <string>

#include "common/status.h"

namespace dracpu::dra {

inline constexpr char kDriverName[] = "dra.cpu";
// sun_path holds 108 bytes including the terminating NUL.
inline constexpr size_t kMaxUnixSocketPath = 107;

struct PluginPaths {
  std::string registration_socket;  // <kubelet-root>/plugins_registry/dra.cpu-reg.sock
  std::string plugin_dir;           // <kubelet-root>/plugins/dra.cpu
  std::string dra_socket;           // <kubelet-root>/plugins/dra.cpu/dra.sock
};

// Cleans `kubelet_root_dir` lexically and validates it (absolute) and the socket path lengths;
// the error names the path and its length.
Result<PluginPaths> MakePluginPaths(const std::string& kubelet_root_dir);

// Prepares a socket path for bind(): creates its directory (mode 0750 for directories we create),
// removes a stale socket left by an earlier run of ours. FAILED_PRECONDITION, removing nothing,
// when the path is not a socket, is a socket of another user, or is a live socket (a process
// accepts connections on it: a second agent must not steal the kubelet's endpoint).
Status PrepareSocketPath(const std::string& socket_path);

}  // namespace dracpu::dra
