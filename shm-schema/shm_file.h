// The OS adapter under the segment: the file, its mapping, role byte locks and the futex. Every
// syscall's errno becomes a Status here; nothing above this file sees errno. The mapping is a
// plain mmap of our own descriptor (rather than Boost.Interprocess file_mapping, which opens the
// path a second time and throws): the descriptor that holds the role lock is provably the file
// that is mapped, and no exception can escape.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "common/unique_fd.h"

namespace dracpu::shm {

// An open segment file and (optionally) its shared mapping. Move-only; unmaps and closes on
// destruction (which also drops any OFD lock taken on the descriptor).
class ShmFile {
 public:
  ShmFile() = default;
  ShmFile(ShmFile&& other) noexcept;
  ShmFile& operator=(ShmFile&& other) noexcept;
  ShmFile(const ShmFile&) = delete;
  ShmFile& operator=(const ShmFile&) = delete;
  ~ShmFile();

  // Opens an existing file. NOT_FOUND when it does not exist; FAILED_PRECONDITION, without
  // blocking or following anything, when the path is a symbolic link or not a regular file.
  static Result<ShmFile> Open(const std::string& path, bool writable);
  // Creates `path` exclusively with mode 0600 (whatever the umask) and size `size` (zeros).
  static Result<ShmFile> CreateExclusive(const std::string& path, uint64_t size);

  // Maps the file (MAP_SHARED; PROT_READ, plus PROT_WRITE when opened writable): its first
  // `bytes` bytes, or all of it when `bytes` is 0 or more than the file holds.
  Status Map(uint64_t bytes = 0);

  int fd() const { return fd_.get(); }
  bool writable() const { return writable_; }
  uint64_t file_size() const { return size_; }
  void* data() const { return data_; }
  dev_t dev() const { return dev_; }
  ino_t ino() const { return ino_; }

  // Exclusive F_OFD_SETLK write lock on byte `offset` (non-blocking). UNAVAILABLE when another
  // open file description holds it.
  Status LockByte(off_t offset);
  // Whether another open file description holds a lock on byte `offset` (F_OFD_GETLK).
  Result<bool> ByteLockedByOther(off_t offset) const;

 private:
  Status Stat();

  UniqueFd fd_;
  bool writable_ = false;
  void* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t mapped_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// Whether `path` still names the inode (dev, ino). NOT_FOUND errors mean "no".
bool PathNamesInode(const std::string& path, dev_t dev, ino_t ino);

// Shared (not FUTEX_PRIVATE) futex on a 32-bit word of a MAP_SHARED mapping.
// Waits while *word == expected, at most `timeout`. OK when woken or the value differed,
// DEADLINE_EXCEEDED on timeout.
Status FutexWait(const uint32_t* word, uint32_t expected, std::chrono::nanoseconds timeout);
void FutexWakeAll(uint32_t* word);

// Inode of /proc/self/ns/pid (the default PID-namespace reader).
Result<uint64_t> ReadPidNamespaceInode();
// /proc/sys/kernel/random/boot_id without the newline (the default boot-id reader).
Result<std::string> ReadBootId();

}  // namespace dracpu::shm
