// FileSystem: the filesystem seen from an injectable root (systemd's `_at` style).
//
// Every path is relative to the root the implementation was made with: PosixFileSystem("/")
// reads the host; PosixFileSystem("/tmp/corpus/x") reads a recorded machine's sysfs tree at
// /tmp/corpus/x/sys/... . Leading '/' in paths is ignored ("sys/devices" == "/sys/devices").
// Paths may not contain ".." components (INVALID_ARGUMENT), so reads cannot leave the root.
//
// Errors: NOT_FOUND when the file or directory does not exist, PERMISSION_DENIED, and
// RESOURCE_EXHAUSTED when a file is larger than the caller's limit, FAILED_PRECONDITION for a
// special file where a regular one is read; messages name the path.
// Thread safety: implementations are safe for concurrent use.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dracpu {

struct DirEntry {
  enum class Type { kFile, kDirectory, kSymlink, kOther };
  std::string name;
  Type type = Type::kOther;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // The whole content of a regular file (or a sysfs/procfs attribute), at most `max_size` bytes;
  // a longer file is RESOURCE_EXHAUSTED. Symlinks are followed; anything that is not a regular
  // file in the end (a directory, a FIFO, a device, a socket) is FAILED_PRECONDITION, without
  // blocking or reading from it.
  virtual Result<std::string> ReadFile(std::string_view path, size_t max_size = 1 << 20) const = 0;

  // Entries of a directory except "." and "..", sorted by name. Symlinks are reported as such.
  virtual Result<std::vector<DirEntry>> ListDirectory(std::string_view path) const = 0;

  // The target of a symbolic link, as stored.
  virtual Result<std::string> ReadLink(std::string_view path) const = 0;

  // Whether `path` exists (following symlinks); false on any error.
  virtual bool Exists(std::string_view path) const = 0;
  virtual bool IsDirectory(std::string_view path) const = 0;

  // Writes `content` to a temp file beside `path`, fsyncs it, renames it over `path` and fsyncs
  // the directory: readers see the old or the new content, never a mix. Mode applies to the file.
  virtual Status WriteFileAtomically(std::string_view path, std::string_view content,
                                     mode_t mode) = 0;

  struct FileWrite {
    std::string path;
    std::string content;
    mode_t mode = 0644;
  };
  // WriteFileAtomically for several files, paying for durability once per batch where the
  // implementation can, and letting the caller produce the files one at a time: Add writes a
  // file's temp file and starts making it durable (the disk works while the caller prepares the
  // next one); Finish waits until every temp file is durable, renames each into place and fsyncs
  // each directory once, then answers one Status per Add, in order. A failed file keeps its old
  // content and does not affect the others. Nothing added is visible before Finish; a batch
  // destroyed without Finish leaves every old file as it was. A batch is used by one thread.
  class AtomicWrites {
   public:
    virtual ~AtomicWrites() = default;
    virtual void Add(FileWrite file) = 0;
    virtual std::vector<Status> Finish() = 0;  // once
  };
  // This default keeps the files and writes them one by one in Finish.
  virtual std::unique_ptr<AtomicWrites> BeginAtomicWrites();

  // A batch of `files` (BeginAtomicWrites, Add each, Finish).
  std::vector<Status> WriteFilesAtomically(const std::vector<FileWrite>& files);

  // Removes a file or an empty directory; NOT_FOUND when it did not exist. The removal is
  // visible at once but survives a crash only after SyncDirectories of its directory.
  virtual Status RemoveFile(std::string_view path) = 0;

  // Makes the entries of each directory durable (what was renamed, created or removed in it),
  // the directories all at once; a directory that does not exist is skipped (nothing in it to
  // keep). The first error names its directory. This default is for filesystems that keep
  // nothing across a crash (in memory), where there is nothing to do.
  virtual Status SyncDirectories(const std::vector<std::string>& paths);

  // Creates the directory and its missing parents with `mode`; OK when it already exists.
  virtual Status MakeDirectories(std::string_view path, mode_t mode) = 0;

  // The absolute host path of `path` (for tools and messages only).
  virtual std::string HostPath(std::string_view path) const = 0;
};

// Creates a FileSystem rooted at `root` (an existing directory) using openat() on a directory fd.
Result<std::unique_ptr<FileSystem>> NewPosixFileSystem(const std::string& root);

// Removes one trailing newline; sysfs attributes end with one.
std::string_view TrimTrailingNewline(std::string_view text);

}  // namespace dracpu
