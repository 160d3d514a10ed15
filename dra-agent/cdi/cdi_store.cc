#include "dra-agent/cdi/cdi_store.h"

#include <algorithm>

#include "common/owned_atomic_writes.h"
#include "dra-agent/cdi/cdi_spec.h"

namespace dracpu::dra {
namespace {

// Ours are about 300 bytes; a larger file is not one of ours and is not read further.
constexpr size_t kMaxSpecBytes = size_t{64} * 1024;

}  // namespace

std::string CdiStore::PathOf(std::string_view claim_uid) const {
  return dir_ + "/" + CdiSpecFileName(claim_uid);
}

Status CdiStore::EnsureDirectory() { return fs_.MakeDirectories(dir_, 0755); }

Status CdiStore::Write(std::string_view claim_uid, const CpuSet& cpus) {
  return std::move(WriteAll({{std::string(claim_uid), cpus}}).front());
}

Result<FileSystem::FileWrite> CdiStore::SpecFile(const std::string& claim_uid,
                                                 const CpuSet& cpus) const {
  RETURN_IF_ERROR(ValidateClaimUid(claim_uid));
  if (cpus.Empty()) return InvalidArgumentError("claim " + claim_uid + ": no CPUs to write");
  return FileSystem::FileWrite{PathOf(claim_uid), RenderCdiSpec(claim_uid, cpus), 0644};
}

std::vector<Status> CdiStore::WriteAll(const std::vector<std::pair<std::string, CpuSet>>& claims) {
  OwnedAtomicWrites writes(fs_.BeginAtomicWrites(), claims.size());
  for (size_t i = 0; i < claims.size(); ++i) {
    Result<FileSystem::FileWrite> file = SpecFile(claims[i].first, claims[i].second);
    if (file.ok()) {
      writes.Add(i, *std::move(file));
    } else {
      writes.Fail(i, file.status());
    }
  }
  return writes.Finish();
}

Status CdiStore::Remove(std::string_view claim_uid) {
  RETURN_IF_ERROR(ValidateClaimUid(claim_uid));
  Status s = fs_.RemoveFile(PathOf(claim_uid));
  if (s.code() == StatusCode::kNotFound) return Status::Ok();
  return s;
}

Status CdiStore::SyncRemovals(const std::vector<std::string>& also) const {
  // "/var/run/cdi" and "var/run/cdi" are one directory to the FileSystem: synced once.
  auto unrooted = [](std::string_view d) {
    return d.substr(std::min(d.find_first_not_of('/'), d.size()));
  };
  std::vector<std::string> dirs{dir_};
  for (const std::string& d : also) {
    if (std::none_of(dirs.begin(), dirs.end(),
                     [&](const std::string& e) { return unrooted(e) == unrooted(d); })) {
      dirs.push_back(d);
    }
  }
  return fs_.SyncDirectories(dirs);
}

Result<CdiStore::Listing> CdiStore::List() const {
  Listing listing;
  auto entries = fs_.ListDirectory(dir_);
  if (!entries.ok()) {
    if (entries.status().code() == StatusCode::kNotFound) return listing;
    return entries.status();
  }
  const std::string prefix = std::string(kCdiVendor) + "-" + std::string(kCdiClass) + "_claim-";
  constexpr std::string_view kSuffix = ".json";
  for (const DirEntry& e : *entries) {
    const std::string& n = e.name;
    if (n.size() <= prefix.size() + kSuffix.size() || n.compare(0, prefix.size(), prefix) != 0 ||
        n.compare(n.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
      continue;
    }
    const std::string path = dir_ + "/" + n;
    // Only files we could have written count: a symlink with our name (to a file anywhere on
    // the host) or a FIFO is reported and left alone, never followed, opened or removed.
    if (e.type != DirEntry::Type::kFile) {
      listing.problems.push_back(FailedPreconditionError(
          "CDI spec " + fs_.HostPath(path) + " is " +
          (e.type == DirEntry::Type::kSymlink ? "a symbolic link" : "not a regular file") +
          "; ignored and left in place"));
      continue;
    }
    auto text = fs_.ReadFile(path, kMaxSpecBytes);
    if (!text.ok()) {
      listing.problems.push_back(text.status());
      continue;
    }
    auto claim = ParseCdiSpec(*text, fs_.HostPath(path));
    if (!claim.ok()) {
      listing.problems.push_back(claim.status());
      continue;
    }
    if (n != CdiSpecFileName(claim->claim_uid)) {
      listing.problems.push_back(InvalidArgumentError("CDI spec " + fs_.HostPath(path) +
                                                      ": file name does not match claim " +
                                                      claim->claim_uid));
      continue;
    }
    listing.claims.push_back(std::move(claim).value());
  }
  std::sort(listing.claims.begin(), listing.claims.end(),
            [](const ClaimEnv& a, const ClaimEnv& b) { return a.claim_uid < b.claim_uid; });
  return listing;
}

}  // namespace dracpu::dra
