#include "dra-agent/kubelet/plugin_paths.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/unique_fd.h"

namespace dracpu::dra {
namespace {

Status CheckSocketLength(const std::string& path) {
  if (path.size() > kMaxUnixSocketPath) {
    return InvalidArgumentError("socket path " + path + " is " + std::to_string(path.size()) +
                                " bytes; unix sockets allow at most " +
                                std::to_string(kMaxUnixSocketPath) +
                                " (choose a shorter --kubelet-root-dir)");
  }
  return Status::Ok();
}

Status MakeDirs(const std::string& dir) {
  // Walk from the root so that only directories we create get our mode.
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    prefix = dir.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0750) != 0 && errno != EEXIST) {
      return ErrnoStatus("create directory " + prefix, errno);
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return ErrnoStatus("stat " + dir, errno);
  if (!S_ISDIR(st.st_mode)) return FailedPreconditionError(dir + " exists and is not a directory");
  return Status::Ok();
}

// Whether a process accepts connections on the unix socket at `path` (ECONNREFUSED: nobody
// listens, the socket is stale).
bool SomeoneListens(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());  // CheckSocketLength bounds it
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return fd && ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
}

}  // namespace

Result<PluginPaths> MakePluginPaths(const std::string& kubelet_root_dir) {
  if (kubelet_root_dir.empty() || kubelet_root_dir.front() != '/') {
    return InvalidArgumentError("kubelet root dir \"" + kubelet_root_dir + "\" must be absolute");
  }
  // Cleaned like Go's filepath.Clean (as the reference driver does): "/a/../../b" is "/b".
  std::string root = std::filesystem::path(kubelet_root_dir).lexically_normal().string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root == "/") root.clear();
  PluginPaths paths;
  paths.registration_socket = root + "/plugins_registry/" + kDriverName + "-reg.sock";
  paths.plugin_dir = root + "/plugins/" + kDriverName;
  paths.dra_socket = paths.plugin_dir + "/dra.sock";
  RETURN_IF_ERROR(CheckSocketLength(paths.registration_socket));
  RETURN_IF_ERROR(CheckSocketLength(paths.dra_socket));
  return paths;
}

Status PrepareSocketPath(const std::string& socket_path) {
  RETURN_IF_ERROR(CheckSocketLength(socket_path));
  const size_t slash = socket_path.rfind('/');
  if (slash != std::string::npos && slash > 0)
    RETURN_IF_ERROR(MakeDirs(socket_path.substr(0, slash)));
  struct stat st;
  if (::lstat(socket_path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoStatus("stat " + socket_path, errno);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return FailedPreconditionError(socket_path + " exists and is not a socket; not removing it");
  }
  if (st.st_uid != ::geteuid()) {
    return FailedPreconditionError(socket_path + " is a socket owned by uid " +
                                   std::to_string(st.st_uid) + ", not by us (uid " +
                                   std::to_string(::geteuid()) +
                                   "); not removing it (remove it if it is stale)");
  }
  if (SomeoneListens(socket_path)) {
    return FailedPreconditionError(socket_path +
                                   " is in use: a process accepts connections on it (another "
                                   "dra-agent of this node?); not taking it over");
  }
  if (::unlink(socket_path.c_str()) != 0)
    return ErrnoStatus("remove stale socket " + socket_path, errno);
  return Status::Ok();
}

}  // namespace dracpu::dra
