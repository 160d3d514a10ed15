// CgroupCpusets: applies a container's cpuset as a real cgroup cpuset, as runc does for
// containerd, so the simulator pins processes the way a node does (the issue's "cgroup cpuset
// when root"). One child cgroup per container under a parent directory the caller chooses
// (a cgroup v1 cpuset hierarchy directory, or a cgroup v2 directory whose parent enables the
// cpuset controller); the container's pid is moved into it.
//
// Per container: mkdir <parent>/<container id>, write cpuset.mems (v1 needs it before tasks
// can join; the parent's effective mems when the container has none), cpuset.cpus, then the pid
// into cgroup.procs. Release() moves the pid back to the parent and removes the child; the
// destructor releases every child it made, so no cgroup outlives the simulator.
//
// Thread safety: none (the simulator's event loop).
#pragma once

#include <map>
#include <string>

#include "common/status.h"

namespace dracpu::sim {

class CgroupCpusets {
 public:
  // `parent` must be an existing, writable directory (INVALID_ARGUMENT otherwise).
  static Result<CgroupCpusets> Open(const std::string& parent);
  CgroupCpusets(CgroupCpusets&&) = default;
  CgroupCpusets& operator=(CgroupCpusets&&) = default;
  ~CgroupCpusets();

  // Creates or updates the container's cgroup and moves `pid` into it (pid 0: only the
  // cgroup). `cpus`/`mems` are kernel list strings; an empty `mems` uses the parent's.
  Status Apply(const std::string& container_id, int pid, const std::string& cpus,
               const std::string& mems);
  // Moves the pid (if still alive) back to the parent and removes the cgroup. Unknown ids: OK.
  Status Release(const std::string& container_id);

  const std::string& parent() const { return parent_; }
  // Where a container's cgroup is (whether or not it exists).
  std::string PathOf(const std::string& container_id) const;

 private:
  explicit CgroupCpusets(std::string parent) : parent_(std::move(parent)) {}
  std::string parent_;
  std::map<std::string, int> pids_;  // container id -> pid moved in (0: none)
};

}  // namespace dracpu::sim
