#include "tests/testing/sysfs_fixture.h"

#include <dirent.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "common/cpu_set.h"

extern char** environ;

namespace dracpu::testing {

Status ExtractTarball(const std::string& tarball, const std::string& dir) {
  std::vector<std::string> args = {"tar", "-xzf", tarball, "-C", dir};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, "tar", nullptr, nullptr, argv.data(), environ);
  if (rc != 0) return ErrnoStatus("spawn tar for " + tarball, rc);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoStatus("wait for tar", errno);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return InternalError("tar -xzf " + tarball + " -C " + dir + " failed (status " +
                         std::to_string(status) + ")");
  }
  return Status::Ok();
}

std::vector<std::string> CorpusMachines(const std::string& shared_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  const std::filesystem::path corpus = std::filesystem::path(shared_dir) / "sysfs-corpus";
  for (std::filesystem::directory_iterator it(corpus, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (std::filesystem::exists(it->path() / "tree.tar.gz")) {
      names.push_back(it->path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::unique_ptr<TempDir>> ExtractCorpusMachine(const std::string& shared_dir,
                                                      const std::string& machine) {
  // On tmpfs: extracting a 10,000-file corpus tree there takes 0.1 s where a busy disk-backed
  // /tmp took seconds.
  auto dir = std::make_unique<TempDir>("dracpu-corpus", TempDir::Base::kTmpfs);
  RETURN_IF_ERROR(
      ExtractTarball(shared_dir + "/sysfs-corpus/" + machine + "/tree.tar.gz", dir->path()));
  return dir;
}

std::string MaskOf(const std::string& list) {
  Result<CpuSet> set = CpuSet::ParseList(list);
  return set.ok() ? set->ToMaskString() : std::string("not-a-list");
}

Result<std::unique_ptr<SysfsFixture>> SysfsFixture::Create() {
  auto dir = std::make_unique<TempDir>("dracpu-sysfs", TempDir::Base::kTmpfs);
  return std::unique_ptr<SysfsFixture>(new SysfsFixture(std::move(dir)));
}

SysfsFixture& SysfsFixture::Dir(const std::string& path) {
  if (!status_.ok()) return *this;
  std::error_code ec;
  std::filesystem::create_directories(root() + "/" + path, ec);
  if (ec) status_ = InternalError("mkdir " + path + ": " + ec.message());
  return *this;
}

SysfsFixture& SysfsFixture::File(const std::string& path, std::string_view content) {
  const std::string full = root() + "/" + path;
  Dir(std::filesystem::path(path).parent_path().string());
  if (!status_.ok()) return *this;
  std::ofstream out(full, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) status_ = InternalError("write " + full);
  return *this;
}

SysfsFixture& SysfsFixture::Symlink(const std::string& path, const std::string& target) {
  Dir(std::filesystem::path(path).parent_path().string());
  if (!status_.ok()) return *this;
  if (::symlink(target.c_str(), (root() + "/" + path).c_str()) != 0) {
    status_ = ErrnoStatus("symlink " + path, errno);
  }
  return *this;
}

SysfsFixture& SysfsFixture::Remove(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(root() + "/" + path, ec);
  if (ec && status_.ok()) status_ = InternalError("remove " + path + ": " + ec.message());
  return *this;
}

SysfsFixture& SysfsFixture::CpuFile(const std::string& name, std::string_view content) {
  return File("sys/devices/system/cpu/" + name, content);
}

SysfsFixture& SysfsFixture::Cpu(int cpu, const CpuSpec& spec) {
  const std::string dir = "sys/devices/system/cpu/cpu" + std::to_string(cpu);
  const std::string topo = dir + "/topology/";
  const std::string siblings = spec.siblings.empty() ? std::to_string(cpu) : spec.siblings;
  File(topo + "physical_package_id", std::to_string(spec.package) + "\n");
  File(topo + "core_id", std::to_string(spec.core_id) + "\n");
  if (!spec.masks_only) File(topo + "thread_siblings_list", siblings + "\n");
  File(topo + "thread_siblings", MaskOf(siblings) + "\n");
  if (!spec.legacy) {
    if (!spec.masks_only) File(topo + "core_cpus_list", siblings + "\n");
    File(topo + "core_cpus", MaskOf(siblings) + "\n");
  }
  if (spec.die >= 0) File(topo + "die_id", std::to_string(spec.die) + "\n");
  if (spec.cluster >= 0) File(topo + "cluster_id", std::to_string(spec.cluster) + "\n");
  if (spec.node >= 0) {
    Symlink(dir + "/node" + std::to_string(spec.node),
            "../../node/node" + std::to_string(spec.node));
  }
  if (spec.capacity >= 0) File(dir + "/cpu_capacity", std::to_string(spec.capacity) + "\n");
  return *this;
}

SysfsFixture& SysfsFixture::Cache(int cpu, int index, const CacheSpec& spec) {
  const std::string dir = "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/index" +
                          std::to_string(index) + "/";
  File(dir + "level", std::to_string(spec.level) + "\n");
  File(dir + "type", spec.type + "\n");
  if (!spec.mask_only) File(dir + "shared_cpu_list", spec.shared + "\n");
  File(dir + "shared_cpu_map", MaskOf(spec.shared) + "\n");
  if (spec.id >= 0) File(dir + "id", std::to_string(spec.id) + "\n");
  return *this;
}

SysfsFixture& SysfsFixture::Node(int node, const std::string& cpulist, const std::string& distance,
                                 bool as_mask) {
  const std::string dir = "sys/devices/system/node/node" + std::to_string(node) + "/";
  if (as_mask) {
    File(dir + "cpumap", MaskOf(cpulist) + "\n");
  } else {
    File(dir + "cpulist", cpulist + "\n");
    File(dir + "cpumap", MaskOf(cpulist) + "\n");
  }
  if (!distance.empty()) File(dir + "distance", distance + "\n");
  return *this;
}

Result<std::unique_ptr<FileSystem>> SysfsFixture::Fs() const {
  RETURN_IF_ERROR(status_);
  return NewPosixFileSystem(root());
}

}  // namespace dracpu::testing
