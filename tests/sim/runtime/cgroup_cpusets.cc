#include "tests/sim/runtime/cgroup_cpusets.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace dracpu::sim {

namespace {

constexpr long kCgroupSuperMagic = 0x27e0eb;
constexpr long kCgroup2SuperMagic = 0x63677270;

Status WriteControl(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  if (!out) return ErrnoStatus("open " + path, errno);
  out << value;
  out.flush();
  if (!out) return ErrnoStatus("write \"" + value + "\" to " + path, errno);
  return Status::Ok();
}

std::string ReadControl(const std::string& path) {
  std::ifstream in(path);
  std::string value;
  std::getline(in, value);
  return value;
}

bool OnCgroupFs(const std::string& path) {
  struct statfs fs;
  if (::statfs(path.c_str(), &fs) != 0) return false;
  return static_cast<long>(fs.f_type) == kCgroupSuperMagic ||
         static_cast<long>(fs.f_type) == kCgroup2SuperMagic;
}

}  // namespace

Result<CgroupCpusets> CgroupCpusets::Open(const std::string& parent) {
  struct stat st;
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return InvalidArgumentError("cgroup parent " + parent + " is not a directory");
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    return InvalidArgumentError("cgroup parent " + parent + " is not writable (needs root)");
  }
  return CgroupCpusets(parent);
}

CgroupCpusets::~CgroupCpusets() {
  while (!pids_.empty()) {
    const std::string id = pids_.begin()->first;
    (void)Release(id);
    pids_.erase(id);  // even when Release failed: never loop forever
  }
}

std::string CgroupCpusets::PathOf(const std::string& container_id) const {
  return parent_ + "/" + container_id;
}

Status CgroupCpusets::Apply(const std::string& container_id, int pid, const std::string& cpus,
                            const std::string& mems) {
  if (container_id.empty() || container_id.find('/') != std::string::npos || container_id == "." ||
      container_id == "..") {
    return InvalidArgumentError("container id \"" + container_id + "\" cannot name a cgroup");
  }
  const std::string dir = PathOf(container_id);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus("mkdir " + dir, errno);
  if (!pids_.count(container_id)) pids_[container_id] = 0;
  std::string use_mems = mems;
  if (use_mems.empty()) use_mems = ReadControl(parent_ + "/cpuset.effective_mems");
  if (use_mems.empty()) use_mems = ReadControl(parent_ + "/cpuset.mems");
  if (!use_mems.empty()) RETURN_IF_ERROR(WriteControl(dir + "/cpuset.mems", use_mems));
  RETURN_IF_ERROR(WriteControl(dir + "/cpuset.cpus", cpus));
  if (pid > 0) {
    RETURN_IF_ERROR(WriteControl(dir + "/cgroup.procs", std::to_string(pid)));
    pids_[container_id] = pid;
  }
  return Status::Ok();
}

Status CgroupCpusets::Release(const std::string& container_id) {
  auto it = pids_.find(container_id);
  if (it == pids_.end()) return Status::Ok();
  const std::string dir = PathOf(container_id);
  const int pid = it->second;
  pids_.erase(it);
  // Back to the parent, so the cgroup can go even while the process lives on.
  if (pid > 0 && ::kill(pid, 0) == 0) {
    RETURN_IF_ERROR(WriteControl(parent_ + "/cgroup.procs", std::to_string(pid)));
  }
  if (OnCgroupFs(dir)) {
    if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("rmdir " + dir, errno);
  } else {
    // A plain directory standing in for a hierarchy (tests): its control files are real files.
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (ec) return InternalError("remove " + dir + ": " + ec.message());
  }
  return Status::Ok();
}

}  // namespace dracpu::sim
