// CdiStore: the claim CDI spec files in one directory, through the FileSystem seam.
//
// Write is atomic (temp file, fsync, rename, fsync dir) so a runtime never reads half a spec and a
// crash leaves the old or the new file. Remove of a missing spec is OK (Unprepare is idempotent).
// Thread safety: safe for concurrent use on different claims; callers serialize per claim.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/claim_env.h"
#include "common/file_system.h"
#include "common/status.h"

namespace dracpu::dra {

class CdiStore {
 public:
  // `dir` is relative to the FileSystem's root, e.g. "/var/run/cdi". Not owned: `fs` must outlive.
  CdiStore(FileSystem& fs, std::string dir) : fs_(fs), dir_(std::move(dir)) {}

  // Creates the directory (0755: runtimes read it) when missing.
  Status EnsureDirectory();
  // Writes (or replaces) the claim's spec, mode 0644 like the CDI library.
  Status Write(std::string_view claim_uid, const CpuSet& cpus);
  // Write for several claims, made durable together (FileSystem::AtomicWrites: one directory
  // fsync for all of them). One Status per claim, in order.
  std::vector<Status> WriteAll(const std::vector<std::pair<std::string, CpuSet>>& claims);
  // The claim's spec as a file to write, for a caller's own batch of this store's FileSystem
  // (WriteAll's pieces); INVALID_ARGUMENT for a uid Kubernetes would not give or no CPUs.
  Result<FileSystem::FileWrite> SpecFile(const std::string& claim_uid, const CpuSet& cpus) const;
  // A batch on this store's FileSystem, for SpecFile's files and others written with them.
  std::unique_ptr<FileSystem::AtomicWrites> BeginWrites() const { return fs_.BeginAtomicWrites(); }
  // Removes the claim's spec; OK when it does not exist. The removal survives a crash only after
  // SyncRemovals.
  Status Remove(std::string_view claim_uid);
  // Makes the removals so far durable: the spec directory and `also` (directories of files other
  // code removed through this store's FileSystem) synced at once (FileSystem::SyncDirectories).
  Status SyncRemovals(const std::vector<std::string>& also = {}) const;

  struct Listing {
    std::vector<ClaimEnv> claims;  // valid claim specs, sorted by uid
    std::vector<Status> problems;  // unreadable or invalid dra.k8s.io-cpu_claim-*.json files
  };
  // Every claim spec in the directory. Files of other vendors are ignored. A file with our name
  // that is not ours to read is a problem and stays untouched: a symlink or other non-regular
  // file (never followed), one over 64 KiB, one that does not parse (a truncated write of
  // another tool) or whose name does not match its claim. A missing directory is an empty
  // listing.
  Result<Listing> List() const;

  std::string PathOf(std::string_view claim_uid) const;

 private:
  FileSystem& fs_;
  const std::string dir_;
};

}  // namespace dracpu::dra
