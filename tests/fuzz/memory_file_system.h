// MemoryFileSystem: the FileSystem seam over a map of paths to contents, for fuzz targets that
// parse files which name other files (a kubeconfig's certificate and token paths). Reads only:
// every write is UNIMPLEMENTED. Paths are looked up as given after dropping leading '/'.
#pragma once

#include <map>
#include <string>

#include "common/file_system.h"

namespace dracpu::fuzz {

class MemoryFileSystem : public FileSystem {
 public:
  void Put(std::string_view path, std::string content) { files_[Key(path)] = std::move(content); }

  Result<std::string> ReadFile(std::string_view path, size_t max_size) const override {
    auto it = files_.find(Key(path));
    if (it == files_.end()) return NotFoundError("open " + HostPath(path) + ": no such file");
    if (it->second.size() > max_size) {
      return ResourceExhaustedError(HostPath(path) + " is larger than " + std::to_string(max_size) +
                                    " bytes");
    }
    return it->second;
  }
  Result<std::vector<DirEntry>> ListDirectory(std::string_view path) const override {
    return UnimplementedError("list " + HostPath(path));
  }
  Result<std::string> ReadLink(std::string_view path) const override {
    return UnimplementedError("readlink " + HostPath(path));
  }
  bool Exists(std::string_view path) const override { return files_.count(Key(path)) > 0; }
  bool IsDirectory(std::string_view) const override { return false; }
  Status WriteFileAtomically(std::string_view path, std::string_view, mode_t) override {
    return UnimplementedError("write " + HostPath(path));
  }
  Status RemoveFile(std::string_view path) override {
    return UnimplementedError("remove " + HostPath(path));
  }
  Status MakeDirectories(std::string_view path, mode_t) override {
    return UnimplementedError("mkdir " + HostPath(path));
  }
  std::string HostPath(std::string_view path) const override { return "/" + Key(path); }

 private:
  static std::string Key(std::string_view path) {
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    return std::string(path);
  }
  std::map<std::string, std::string, std::less<>> files_;
};

}  // namespace dracpu::fuzz
