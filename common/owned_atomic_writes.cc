#include "common/owned_atomic_writes.h"

#include <utility>

namespace dracpu {

void OwnedAtomicWrites::Add(size_t owner, FileSystem::FileWrite file) {
  files_->Add(std::move(file));
  owner_of_.push_back(owner);
}

void OwnedAtomicWrites::Fail(size_t owner, Status error) {
  if (answers_[owner].ok()) answers_[owner] = std::move(error);
}

std::vector<Status> OwnedAtomicWrites::Finish() {
  std::vector<Status> written = files_->Finish();
  for (size_t k = 0; k < written.size(); ++k) {
    if (!written[k].ok()) Fail(owner_of_[k], std::move(written[k]));
  }
  return std::move(answers_);
}

}  // namespace dracpu
