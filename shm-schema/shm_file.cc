#include "shm-schema/shm_file.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <utility>

namespace dracpu::shm {

ShmFile::ShmFile(ShmFile&& other) noexcept { *this = std::move(other); }

ShmFile& ShmFile::operator=(ShmFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, mapped_);
    fd_ = std::move(other.fd_);
    writable_ = other.writable_;
    data_ = std::exchange(other.data_, nullptr);
    size_ = other.size_;
    mapped_ = std::exchange(other.mapped_, 0);
    dev_ = other.dev_;
    ino_ = other.ino_;
  }
  return *this;
}

ShmFile::~ShmFile() {
  if (data_ != nullptr) ::munmap(data_, mapped_);
}

Status ShmFile::Stat() {
  struct stat st;
  if (::fstat(fd_.get(), &st) != 0) return ErrnoStatus("fstat", errno);
  size_ = static_cast<uint64_t>(st.st_size);
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  return Status::Ok();
}

Result<ShmFile> ShmFile::Open(const std::string& path, bool writable) {
  ShmFile f;
  // O_NOFOLLOW: a symlink planted at the path would make us map (and write) another file.
  // O_NONBLOCK: a FIFO planted there must not block the open until someone writes to it.
  f.fd_.Reset(
      ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!f.fd_) {
    const int err = errno;
    if (err == ELOOP) {
      return FailedPreconditionError("segment " + path +
                                     " is a symbolic link; refusing to follow it (remove it)");
    }
    return ErrnoStatus("open segment " + path, err);
  }
  f.writable_ = writable;
  struct stat st;
  if (::fstat(f.fd_.get(), &st) != 0) return ErrnoStatus("fstat segment " + path, errno);
  if (!S_ISREG(st.st_mode)) {
    return FailedPreconditionError("segment " + path +
                                   " is not a regular file (a FIFO, socket, device or directory "
                                   "is there); refusing to use or replace it (remove it)");
  }
  RETURN_IF_ERROR(f.Stat().WithContext("segment " + path));
  return f;
}

Result<ShmFile> ShmFile::CreateExclusive(const std::string& path, uint64_t size) {
  ShmFile f;
  f.fd_.Reset(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!f.fd_) return ErrnoStatus("create segment " + path, errno);
  f.writable_ = true;
  if (::fchmod(f.fd_.get(), 0600) != 0) return ErrnoStatus("chmod 0600 " + path, errno);
  if (::ftruncate(f.fd_.get(), static_cast<off_t>(size)) != 0) {
    return ErrnoStatus("size segment " + path + " to " + std::to_string(size) + " bytes", errno);
  }
  RETURN_IF_ERROR(f.Stat().WithContext("segment " + path));
  return f;
}

Status ShmFile::Map(uint64_t bytes) {
  if (size_ == 0) return InvalidArgumentError("cannot map an empty file");
  const uint64_t length = bytes == 0 || bytes > size_ ? size_ : bytes;
  const int prot = PROT_READ | (writable_ ? PROT_WRITE : 0);
  void* p = ::mmap(nullptr, length, prot, MAP_SHARED, fd_.get(), 0);
  if (p == MAP_FAILED) return ErrnoStatus("mmap " + std::to_string(length) + " bytes", errno);
  data_ = p;
  mapped_ = length;
  return Status::Ok();
}

Status ShmFile::LockByte(off_t offset) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = offset;
  fl.l_len = 1;
  if (::fcntl(fd_.get(), F_OFD_SETLK, &fl) != 0) {
    const int err = errno;
    if (err == EAGAIN || err == EACCES)
      return UnavailableError("byte lock held by another process");
    return ErrnoStatus("F_OFD_SETLK", err);
  }
  return Status::Ok();
}

Result<bool> ShmFile::ByteLockedByOther(off_t offset) const {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = offset;
  fl.l_len = 1;
  if (::fcntl(fd_.get(), F_OFD_GETLK, &fl) != 0) return ErrnoStatus("F_OFD_GETLK", errno);
  return fl.l_type != F_UNLCK;
}

bool PathNamesInode(const std::string& path, dev_t dev, ino_t ino) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  return st.st_dev == dev && st.st_ino == ino;
}

Status FutexWait(const uint32_t* word, uint32_t expected, std::chrono::nanoseconds timeout) {
  if (timeout.count() <= 0) return DeadlineExceededError("futex wait timed out");
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<decltype(ts.tv_nsec)>(timeout.count() % 1'000'000'000);
  // FUTEX_WAIT without FUTEX_PRIVATE_FLAG: the key is (inode, offset), shared across processes.
  const auto rc = ::syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
  if (rc == 0) return Status::Ok();
  const int err = errno;
  if (err == EAGAIN || err == EINTR) return Status::Ok();  // value changed / signal: re-check
  if (err == ETIMEDOUT) return DeadlineExceededError("futex wait timed out");
  return ErrnoStatus("futex wait", err);
}

void FutexWakeAll(uint32_t* word) {
  ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

Result<uint64_t> ReadPidNamespaceInode() {
  struct stat st;
  if (::stat("/proc/self/ns/pid", &st) != 0) return ErrnoStatus("stat /proc/self/ns/pid", errno);
  return static_cast<uint64_t>(st.st_ino);
}

Result<std::string> ReadBootId() {
  UniqueFd fd(::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoStatus("open /proc/sys/kernel/random/boot_id", errno);
  char buf[64];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0) return ErrnoStatus("read /proc/sys/kernel/random/boot_id", errno);
  std::string id(buf, static_cast<size_t>(n));
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

}  // namespace dracpu::shm
