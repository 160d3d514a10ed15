#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/concurrent_fsync.h"
#include "common/file_system.h"
#include "common/unique_fd.h"

namespace dracpu {
namespace {

// Root-relative form of `path` ("." for the root itself), or INVALID_ARGUMENT for "..".
Result<std::string> Relative(std::string_view path) {
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (path.empty()) return std::string(".");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") {
      return InvalidArgumentError("path \"" + std::string(path) + "\" leaves the root");
    }
    start = end + 1;
  }
  return std::string(path);
}

std::string_view FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "directory";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  return "special file";
}

std::string ParentOf(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? std::string(".") : rel.substr(0, slash);
}

class PosixFileSystem final : public FileSystem {
 public:
  PosixFileSystem(std::string root, UniqueFd root_fd)
      : root_(std::move(root)), root_fd_(std::move(root_fd)) {}

  Result<std::string> ReadFile(std::string_view path, size_t max_size) const override {
    ASSIGN_OR_RETURN(const std::string rel, Relative(path));
    // O_NONBLOCK: opening a FIFO planted where a file should be must not wait for a writer.
    UniqueFd fd(::openat(root_fd_.get(), rel.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) return ErrnoStatus("open " + HostPath(path), errno);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return ErrnoStatus("stat " + HostPath(path), errno);
    if (!S_ISREG(st.st_mode)) {
      return FailedPreconditionError(HostPath(path) + " is a " +
                                     std::string(FileTypeName(st.st_mode)) +
                                     ", not a regular file");
    }
    std::string content;
    char buf[4096];
    while (true) {
      const ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("read " + HostPath(path), errno);
      }
      if (n == 0) break;
      if (content.size() + static_cast<size_t>(n) > max_size) {
        return ResourceExhaustedError(HostPath(path) + " is larger than " +
                                      std::to_string(max_size) + " bytes");
      }
      content.append(buf, static_cast<size_t>(n));
    }
    return content;
  }

  Result<std::vector<DirEntry>> ListDirectory(std::string_view path) const override {
    ASSIGN_OR_RETURN(const std::string rel, Relative(path));
    const int fd = ::openat(root_fd_.get(), rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("open directory " + HostPath(path), errno);
    DIR* dir = ::fdopendir(fd);
    if (dir == nullptr) {
      const int err = errno;
      ::close(fd);
      return ErrnoStatus("open directory " + HostPath(path), err);
    }
    std::vector<DirEntry> entries;
    while (true) {
      errno = 0;
      const dirent* e = ::readdir(dir);
      if (e == nullptr) break;
      const std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      DirEntry entry{std::string(name), DirEntry::Type::kOther};
      unsigned char type = e->d_type;
      if (type == DT_UNKNOWN) {
        struct stat st;
        if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
          type = S_ISDIR(st.st_mode)   ? DT_DIR
                 : S_ISLNK(st.st_mode) ? DT_LNK
                 : S_ISREG(st.st_mode) ? DT_REG
                                       : DT_UNKNOWN;
        }
      }
      if (type == DT_REG) entry.type = DirEntry::Type::kFile;
      if (type == DT_DIR) entry.type = DirEntry::Type::kDirectory;
      if (type == DT_LNK) entry.type = DirEntry::Type::kSymlink;
      entries.push_back(std::move(entry));
    }
    const int err = errno;
    ::closedir(dir);
    if (err != 0) return ErrnoStatus("read directory " + HostPath(path), err);
    std::sort(entries.begin(), entries.end(),
              [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    return entries;
  }

  Result<std::string> ReadLink(std::string_view path) const override {
    ASSIGN_OR_RETURN(const std::string rel, Relative(path));
    char buf[4096];
    const ssize_t n = ::readlinkat(root_fd_.get(), rel.c_str(), buf, sizeof buf);
    if (n < 0) return ErrnoStatus("readlink " + HostPath(path), errno);
    return std::string(buf, static_cast<size_t>(n));
  }

  bool Exists(std::string_view path) const override {
    auto rel = Relative(path);
    struct stat st;
    return rel.ok() && ::fstatat(root_fd_.get(), rel->c_str(), &st, 0) == 0;
  }

  bool IsDirectory(std::string_view path) const override {
    auto rel = Relative(path);
    struct stat st;
    return rel.ok() && ::fstatat(root_fd_.get(), rel->c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode);
  }

  Status WriteFileAtomically(std::string_view path, std::string_view content,
                             mode_t mode) override {
    PosixAtomicWrites batch(*this);
    batch.Add({std::string(path), std::string(content), mode});
    return std::move(batch.Finish().front());
  }

  std::unique_ptr<AtomicWrites> BeginAtomicWrites() override {
    return std::make_unique<PosixAtomicWrites>(*this);
  }

  Status SyncDirectories(const std::vector<std::string>& paths) override {
    std::vector<std::string> rel_dirs;
    rel_dirs.reserve(paths.size());
    for (const std::string& path : paths) {
      ASSIGN_OR_RETURN(std::string rel, Relative(path));
      rel_dirs.push_back(std::move(rel));
    }
    return SyncRelativeDirectories(rel_dirs);
  }

  Status RemoveFile(std::string_view path) override {
    ASSIGN_OR_RETURN(const std::string rel, Relative(path));
    if (::unlinkat(root_fd_.get(), rel.c_str(), 0) != 0) {
      // A directory (EISDIR on Linux, EPERM elsewhere): removed when empty.
      if ((errno != EISDIR && errno != EPERM) ||
          ::unlinkat(root_fd_.get(), rel.c_str(), AT_REMOVEDIR) != 0) {
        return ErrnoStatus("remove " + HostPath(path), errno);
      }
    }
    return Status::Ok();
  }

  Status MakeDirectories(std::string_view path, mode_t mode) override {
    ASSIGN_OR_RETURN(const std::string rel, Relative(path));
    if (rel == ".") return Status::Ok();
    size_t pos = 0;
    while (pos != std::string::npos) {
      pos = rel.find('/', pos + 1);
      const std::string prefix = rel.substr(0, pos);
      if (::mkdirat(root_fd_.get(), prefix.c_str(), mode) != 0 && errno != EEXIST) {
        return ErrnoStatus("mkdir " + HostPath(prefix), errno);
      }
    }
    if (!IsDirectory(path))
      return AlreadyExistsError(HostPath(path) + " exists and is not a directory");
    return Status::Ok();
  }

  std::string HostPath(std::string_view path) const override {
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    if (root_ == "/") return "/" + std::string(path);
    return root_ + "/" + std::string(path);
  }

 private:
  // 1. Each temp file written and its fsync started as it is added (ConcurrentFsync); 2. every
  // temp file durable before any rename: ext4 (and most journalling filesystems) serve
  // concurrent fsyncs with one journal commit and the block layer merges their cache flushes,
  // where fsyncs one after another pay a flush each (ext4 flushes again for every file whose
  // transaction is already committed: 8 files cost 8); unlike syncfs, nothing else dirty on the
  // filesystem is written back on our time. 3. Renamed into place; 4. each directory synced
  // once, all at once too.
  class PosixAtomicWrites : public AtomicWrites {
   public:
    explicit PosixAtomicWrites(PosixFileSystem& fs) : fs_(fs), fsyncs_(fs.fsync_.Begin()) {}
    ~PosixAtomicWrites() override {
      fsyncs_.Wait();
      for (Temp& t : temps_) {
        if (t.fd) ::unlinkat(fs_.root_fd_.get(), t.tmp.c_str(), 0);
      }
    }

    void Add(FileWrite file) override {
      Temp& t = temps_.emplace_back();
      t.path = std::move(file.path);
      Result<std::string> rel = Relative(t.path);
      if (!rel.ok()) {
        t.status = rel.status();
        return;
      }
      t.rel = *std::move(rel);
      t.tmp = TempNameFor(t.rel);
      t.status = fs_.WriteTemp(t.tmp, file.content, file.mode, &t.fd);
      if (t.status.ok()) {
        t.sync = started_++;
        fsyncs_.Start(t.fd.get());
      }
    }

    std::vector<Status> Finish() override {
      const std::vector<int>& errors = fsyncs_.Wait();
      std::vector<std::string> dirs;
      std::vector<Status> out;
      out.reserve(temps_.size());
      for (Temp& t : temps_) {
        if (t.fd) {
          if (const int error = errors[t.sync]; error != 0) {
            t.status = ErrnoStatus("fsync " + fs_.HostPath(t.tmp), error);
          }
          t.fd.Reset();
          if (t.status.ok() && ::renameat(fs_.root_fd_.get(), t.tmp.c_str(), fs_.root_fd_.get(),
                                          t.rel.c_str()) != 0) {
            t.status =
                ErrnoStatus("rename " + fs_.HostPath(t.tmp) + " to " + fs_.HostPath(t.path), errno);
          }
          if (t.status.ok()) {
            const std::string dir = ParentOf(t.rel);
            if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
          } else {
            ::unlinkat(fs_.root_fd_.get(), t.tmp.c_str(), 0);
          }
        }
        out.push_back(std::move(t.status));
      }
      temps_.clear();
      // Best effort: the renames are visible already; this makes them survive a crash.
      fs_.SyncRelativeDirectories(dirs).IgnoreError();
      return out;
    }

   private:
    struct Temp {
      std::string path;  // as given, for messages
      std::string rel;
      std::string tmp;
      UniqueFd fd;      // open from the temp's write until Finish renames it
      size_t sync = 0;  // its index among the batch's fsyncs
      Status status;
    };
    PosixFileSystem& fs_;
    ConcurrentFsync::Batch fsyncs_;
    std::vector<Temp> temps_;
    size_t started_ = 0;  // fsyncs
  };

  // Unique per process and call, so concurrent writers never share a temp file; the name does
  // not end in .json/.yaml, so CDI watchers ignore it until the rename.
  static std::string TempNameFor(const std::string& rel) {
    static std::atomic<uint64_t> counter{0};
    return rel + ".tmp." + std::to_string(::getpid()) + "." +
           std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
  }

  // Creates `tmp` with `content` and `mode`; on failure the file is removed and *fd is closed.
  Status WriteTemp(const std::string& tmp, std::string_view content, mode_t mode, UniqueFd* fd) {
    *fd = UniqueFd(::openat(root_fd_.get(), tmp.c_str(),
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode));
    if (!*fd) return ErrnoStatus("create " + HostPath(tmp), errno);
    Status status = WriteAll(fd->get(), content, tmp);
    if (status.ok() && ::fchmod(fd->get(), mode) != 0) status = ErrnoStatus("chmod " + tmp, errno);
    if (!status.ok()) {
      fd->Reset();
      ::unlinkat(root_fd_.get(), tmp.c_str(), 0);
    }
    return status;
  }

  // fsync of each directory (relative to the root), all at once; a missing one is skipped. The
  // first error names its directory.
  Status SyncRelativeDirectories(const std::vector<std::string>& rel_dirs) {
    std::vector<UniqueFd> open;
    std::vector<int> fds;
    std::vector<const std::string*> names;
    Status first = Status::Ok();
    for (const std::string& rel_dir : rel_dirs) {
      UniqueFd dir(::openat(root_fd_.get(), rel_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!dir) {
        if (errno != ENOENT && first.ok()) first = ErrnoStatus("open " + HostPath(rel_dir), errno);
        continue;
      }
      fds.push_back(dir.get());
      names.push_back(&rel_dir);
      open.push_back(std::move(dir));
    }
    const std::vector<int> errors = fsync_.SyncAll(fds);
    for (size_t i = 0; i < errors.size() && first.ok(); ++i) {
      if (errors[i] != 0) first = ErrnoStatus("fsync " + HostPath(*names[i]), errors[i]);
    }
    return first;
  }

  static Status WriteAll(int fd, std::string_view content, const std::string& what) {
    while (!content.empty()) {
      const ssize_t n = ::write(fd, content.data(), content.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("write " + what, errno);
      }
      content.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  }

  const std::string root_;
  const UniqueFd root_fd_;
  ConcurrentFsync fsync_;  // the fsyncs of batches and directories
};

}  // namespace

Result<std::unique_ptr<FileSystem>> NewPosixFileSystem(const std::string& root) {
  std::string clean = root.empty() ? "/" : root;
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  UniqueFd fd(::open(clean.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return ErrnoStatus("open root directory " + clean, errno);
  return std::unique_ptr<FileSystem>(new PosixFileSystem(clean, std::move(fd)));
}

std::string_view TrimTrailingNewline(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text;
}

}  // namespace dracpu
