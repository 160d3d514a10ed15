// Test helpers for topology discovery: temporary directories, extraction of the corpus tarballs,
// and SysfsFixture, a builder of small sysfs trees (one call per file or per CPU) so each unit
// test states exactly the quirk it exercises. Test-only; never linked into a daemon.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::testing {

// Runs `tar -xzf <tarball> -C <dir>` (posix_spawn, no shell) and waits for it.
Status ExtractTarball(const std::string& tarball, const std::string& dir);

// The 27 machine names of ../shared/sysfs-corpus (the directory entries holding tree.tar.gz),
// sorted; empty when the directory cannot be read.
std::vector<std::string> CorpusMachines(const std::string& shared_dir);

// Extracts <shared_dir>/sysfs-corpus/<machine>/tree.tar.gz into a new TempDir.
Result<std::unique_ptr<TempDir>> ExtractCorpusMachine(const std::string& shared_dir,
                                                      const std::string& machine);

// Builds a sysfs tree in a TempDir. Paths are relative to the root ("sys/devices/...").
// Methods record the first error and later calls do nothing; status() reports it.
class SysfsFixture {
 public:
  struct CpuSpec {
    int package = 0;
    int core_id = 0;
    std::string siblings;     // thread_siblings_list (and core_cpus_list unless legacy)
    int die = -1;             // die_id, written when >= 0
    int cluster = -1;         // cluster_id, written when >= 0
    bool legacy = false;      // old kernel: no core_cpus*, only thread_siblings(_list)
    bool masks_only = false;  // no *_list files at all, only the hex masks
    int node = -1;            // cpuN/nodeM symlink when >= 0
    int capacity = -1;        // cpu_capacity when >= 0
  };
  struct CacheSpec {
    int level = 3;
    std::string type = "Unified";
    std::string shared;  // shared_cpu_list
    int id = -1;         // `id` file when >= 0
    bool mask_only = false;
  };

  static Result<std::unique_ptr<SysfsFixture>> Create();

  // Raw files and links.
  SysfsFixture& File(const std::string& path, std::string_view content);
  SysfsFixture& Symlink(const std::string& path, const std::string& target);
  SysfsFixture& Dir(const std::string& path);

  // cpu/online, present, possible (each written as given; pass "" to skip... use Remove()).
  SysfsFixture& CpuFile(const std::string& name, std::string_view content);
  SysfsFixture& Cpu(int cpu, const CpuSpec& spec);
  SysfsFixture& Cache(int cpu, int index, const CacheSpec& spec);
  // node/nodeN with cpulist (or cpumap when as_mask) and an optional distance row.
  SysfsFixture& Node(int node, const std::string& cpulist, const std::string& distance = "",
                     bool as_mask = false);
  SysfsFixture& Remove(const std::string& path);

  const std::string& root() const { return dir_->path(); }
  Status status() const { return status_; }
  // A FileSystem rooted at the tree (fails if a builder call failed).
  Result<std::unique_ptr<FileSystem>> Fs() const;

 private:
  explicit SysfsFixture(std::unique_ptr<TempDir> dir) : dir_(std::move(dir)) {}
  std::unique_ptr<TempDir> dir_;
  Status status_;
};

// The kernel's mask format of a CPU list ("0-3" -> "0000000f"), for fixtures.
std::string MaskOf(const std::string& list);

}  // namespace dracpu::testing
