// OwnedAtomicWrites: one FileSystem::AtomicWrites batch whose files belong to owners (the claims
// of a Prepare call, say), answered per owner: an owner's files are written together with every
// other owner's, and its answer is the first of its files that failed, or OK.
//
// Used by one thread, like the batch it wraps.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"

namespace dracpu {

class OwnedAtomicWrites {
 public:
  // Owners are 0 .. `owners` - 1.
  OwnedAtomicWrites(std::unique_ptr<FileSystem::AtomicWrites> files, size_t owners)
      : files_(std::move(files)), answers_(owners) {}

  // Adds one of `owner`'s files to the batch (its write and fsync start now).
  void Add(size_t owner, FileSystem::FileWrite file);
  // `owner` fails with `error` whatever its files do (refused before its files were added).
  void Fail(size_t owner, Status error);
  // Finishes the batch: per owner, OK when every one of its files is in place, else the first
  // error (Fail's, or its first file's to fail). Called once.
  std::vector<Status> Finish();

 private:
  std::unique_ptr<FileSystem::AtomicWrites> files_;
  std::vector<size_t> owner_of_;  // per file added
  std::vector<Status> answers_;
};

}  // namespace dracpu
