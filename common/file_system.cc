#include "common/file_system.h"

#include <utility>

namespace dracpu {
namespace {

// Files written one by one in Finish, each with WriteFileAtomically: nothing to overlap.
class WritesOneByOne : public FileSystem::AtomicWrites {
 public:
  explicit WritesOneByOne(FileSystem& fs) : fs_(fs) {}
  void Add(FileSystem::FileWrite file) override { files_.push_back(std::move(file)); }
  std::vector<Status> Finish() override {
    std::vector<Status> out;
    out.reserve(files_.size());
    for (const FileSystem::FileWrite& f : files_) {
      out.push_back(fs_.WriteFileAtomically(f.path, f.content, f.mode));
    }
    files_.clear();
    return out;
  }

 private:
  FileSystem& fs_;
  std::vector<FileSystem::FileWrite> files_;
};

}  // namespace

std::unique_ptr<FileSystem::AtomicWrites> FileSystem::BeginAtomicWrites() {
  return std::make_unique<WritesOneByOne>(*this);
}

Status FileSystem::SyncDirectories(const std::vector<std::string>& /*paths*/) {
  return Status::Ok();
}

std::vector<Status> FileSystem::WriteFilesAtomically(const std::vector<FileWrite>& files) {
  std::unique_ptr<AtomicWrites> batch = BeginAtomicWrites();
  for (const FileWrite& f : files) batch->Add(f);
  return batch->Finish();
}

}  // namespace dracpu
