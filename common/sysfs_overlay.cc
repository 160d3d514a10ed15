#include "common/sysfs_overlay.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <vector>

#include "common/yaml_tree.h"

namespace dracpu {
namespace {

constexpr std::string_view kCpuDirPrefix = "sys/devices/system/cpu/cpu";
constexpr std::string_view kNodeDir = "sys/devices/system/node";

// "sys/devices/x" for "/sys/devices/x", "//sys/devices/x/" and "sys//devices/x".
std::string Normalize(std::string_view path) {
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    const size_t end = std::min(path.find('/', i), path.size());
    if (end > i) {
      if (!out.empty()) out += '/';
      out.append(path.substr(i, end - i));
    }
    i = end;
  }
  return out;
}

std::string Parent(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(path.substr(0, slash));
}

std::string_view Base(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool HasNumericSuffix(std::string_view s, std::string_view prefix) {
  if (s.size() <= prefix.size() || s.substr(0, prefix.size()) != prefix) return false;
  for (const char c : s.substr(prefix.size())) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsCpuDirectory(std::string_view dir) { return HasNumericSuffix(dir, kCpuDirPrefix); }
bool IsNodeEntry(std::string_view name) { return HasNumericSuffix(name, "node"); }

bool IsSiblingFile(std::string_view name) {
  return name == "core_cpus_list" || name == "core_cpus" || name == "thread_siblings_list" ||
         name == "thread_siblings";
}

// A key as the reference accepts it: "/sys/" + a clean relative path.
Status CheckKey(const std::string& key) {
  if (key.rfind("/sys/", 0) != 0) return InvalidArgumentError("must be beneath /sys/");
  if (Normalize(key) != key.substr(1)) return InvalidArgumentError("is not a clean path");
  std::string_view rest(key);
  rest.remove_prefix(1);
  while (!rest.empty()) {
    const std::string_view part = rest.substr(0, rest.find('/'));
    if (part == "." || part == "..") return InvalidArgumentError("is not a clean path");
    rest.remove_prefix(std::min(rest.size(), part.size() + 1));
  }
  return Status::Ok();
}

class OverlayFileSystem final : public FileSystem {
 public:
  OverlayFileSystem(std::unique_ptr<FileSystem> base, SysfsOverlay overlay)
      : base_(std::move(base)), files_(std::move(overlay.files)) {
    for (const auto& [path, content] : files_) {
      // Every ancestor is an overlay directory holding the next component.
      std::string child = path;
      for (std::string dir = Parent(path); !dir.empty(); dir = Parent(dir)) {
        dirs_[dir].insert(std::string(Base(child)));
        child = dir;
      }
      dirs_[""].insert(child);
      if (path.rfind(std::string(kNodeDir) + "/", 0) == 0) replaced_.insert(std::string(kNodeDir));
      const std::string parent = Parent(path);
      const std::string grand = Parent(parent);
      // cpuN/cache/indexK/...: the overlay owns cpuN/cache.
      for (std::string dir = parent; !dir.empty(); dir = Parent(dir)) {
        if (Base(dir) == "cache" && IsCpuDirectory(Parent(dir))) replaced_.insert(dir);
      }
      // cpuN/topology/{core_id,physical_package_id}: the base's sibling lists go.
      if (Base(parent) == "topology" && IsCpuDirectory(grand) &&
          (Base(path) == "core_id" || Base(path) == "physical_package_id")) {
        identity_rewritten_.insert(parent);
      }
    }
  }

  Result<std::string> ReadFile(std::string_view path, size_t max_size) const override {
    const std::string p = Normalize(path);
    if (auto it = files_.find(p); it != files_.end()) {
      if (it->second.size() > max_size) {
        return ResourceExhaustedError(HostPath(path) + " (sysfs overlay) is larger than " +
                                      std::to_string(max_size) + " bytes");
      }
      return it->second;
    }
    if (dirs_.count(p)) {
      return InvalidArgumentError("read " + HostPath(path) + ": a directory in the sysfs overlay");
    }
    if (Hidden(p)) return NotFoundError("open " + HostPath(path) + ": hidden by the sysfs overlay");
    return base_->ReadFile(path, max_size);
  }

  Result<std::vector<DirEntry>> ListDirectory(std::string_view path) const override {
    const std::string p = Normalize(path);
    auto overlay = dirs_.find(p);
    if (files_.count(p)) {
      return InvalidArgumentError("open directory " + HostPath(path) +
                                  ": a file in the sysfs overlay");
    }
    if (overlay == dirs_.end() && Hidden(p)) {
      return NotFoundError("open directory " + HostPath(path) + ": hidden by the sysfs overlay");
    }
    Result<std::vector<DirEntry>> base = base_->ListDirectory(path);
    if (overlay == dirs_.end()) return base;
    std::vector<DirEntry> out;
    const bool mask_nodes = IsCpuDirectory(p) && HasNodeEntry(overlay->second);
    if (base.ok()) {
      for (DirEntry& e : *base) {
        const std::string child = p.empty() ? e.name : p + "/" + e.name;
        if (overlay->second.count(e.name) || Hidden(child)) continue;
        if (mask_nodes && IsNodeEntry(e.name)) continue;
        out.push_back(std::move(e));
      }
    }
    for (const std::string& name : overlay->second) {
      const std::string child = p.empty() ? name : p + "/" + name;
      out.push_back(
          {name, files_.count(child) ? DirEntry::Type::kFile : DirEntry::Type::kDirectory});
    }
    std::sort(out.begin(), out.end(),
              [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    return out;
  }

  Result<std::string> ReadLink(std::string_view path) const override {
    const std::string p = Normalize(path);
    if (files_.count(p) || dirs_.count(p)) {
      return InvalidArgumentError("readlink " + HostPath(path) +
                                  ": not a symbolic link (a sysfs overlay entry)");
    }
    if (Hidden(p)) return NotFoundError("readlink " + HostPath(path) + ": hidden by the overlay");
    return base_->ReadLink(path);
  }

  bool Exists(std::string_view path) const override {
    const std::string p = Normalize(path);
    if (files_.count(p) || dirs_.count(p)) return true;
    return !Hidden(p) && base_->Exists(path);
  }

  bool IsDirectory(std::string_view path) const override {
    const std::string p = Normalize(path);
    if (dirs_.count(p)) return true;
    if (files_.count(p)) return false;
    return !Hidden(p) && base_->IsDirectory(path);
  }

  Status WriteFileAtomically(std::string_view path, std::string_view content,
                             mode_t mode) override {
    return base_->WriteFileAtomically(path, content, mode);
  }
  std::unique_ptr<AtomicWrites> BeginAtomicWrites() override { return base_->BeginAtomicWrites(); }
  Status RemoveFile(std::string_view path) override { return base_->RemoveFile(path); }
  Status SyncDirectories(const std::vector<std::string>& paths) override {
    return base_->SyncDirectories(paths);
  }
  Status MakeDirectories(std::string_view path, mode_t mode) override {
    return base_->MakeDirectories(path, mode);
  }
  std::string HostPath(std::string_view path) const override { return base_->HostPath(path); }

 private:
  bool HasNodeEntry(const std::set<std::string>& names) const {
    for (const std::string& n : names) {
      if (IsNodeEntry(n)) return true;
    }
    return false;
  }

  // Whether a base path that the overlay does not define is hidden by one of the rules of the
  // header: inside a replaced directory, a masked nodeM entry of a CPU, or a sibling list of a
  // CPU whose identity the overlay rewrites.
  bool Hidden(const std::string& p) const {
    for (std::string dir = p; !dir.empty(); dir = Parent(dir)) {
      if (replaced_.count(dir) && dir != p) return true;
      const std::string parent = Parent(dir);
      if (IsCpuDirectory(parent) && IsNodeEntry(Base(dir))) {
        if (auto it = dirs_.find(parent); it != dirs_.end() && HasNodeEntry(it->second)) {
          return !it->second.count(std::string(Base(dir)));
        }
      }
    }
    return identity_rewritten_.count(Parent(p)) && IsSiblingFile(Base(p));
  }

  std::unique_ptr<FileSystem> base_;
  std::map<std::string, std::string> files_;
  std::map<std::string, std::set<std::string>> dirs_;  // overlay directory -> child names
  std::set<std::string> replaced_;
  std::set<std::string> identity_rewritten_;  // cpuN/topology directories
};

}  // namespace

Result<SysfsOverlay> ParseSysfsOverlay(std::string_view yaml_text, std::string_view source) {
  Result<YamlNode> root = ParseYaml(yaml_text);
  if (!root.ok()) return InvalidArgumentError(std::string(source) + ": " + root.status().message());
  SysfsOverlay overlay;
  if (root->kind == YamlNode::Kind::kNull) return overlay;
  if (root->kind != YamlNode::Kind::kMap) {
    return InvalidArgumentError(std::string(source) +
                                ": must be a mapping of /sys paths to file contents");
  }
  std::vector<std::string> problems;
  auto problem = [&](int line, const std::string& key, const std::string& why) {
    problems.push_back(std::string(source) + ":" + std::to_string(line) + ": key \"" + key +
                       "\": " + why);
  };
  std::map<std::string, int> line_of;
  for (const auto& [key, value] : root->map) {
    if (Status s = CheckKey(key); !s.ok()) {
      problem(value.line, key, s.message());
      continue;
    }
    const std::string path = key.substr(1);
    if (overlay.files.count(path)) {
      problem(value.line, key, "duplicate key");
      continue;
    }
    if (value.kind == YamlNode::Kind::kSequence || value.kind == YamlNode::Kind::kMap) {
      problem(value.line, key, "the value must be a string (the file's content)");
      continue;
    }
    overlay.files[path] = value.scalar;  // null reads as an empty file
    line_of[path] = value.line;
  }
  std::map<std::string, std::string> node_of_cpu;  // cpuN directory -> its nodeM entry
  for (const auto& [path, content] : overlay.files) {
    for (std::string dir = Parent(path); !dir.empty(); dir = Parent(dir)) {
      if (overlay.files.count(dir)) {
        problem(line_of[path], "/" + path,
                "/" + dir + " is both a file and a directory in the overlay");
      }
    }
    const std::string parent = Parent(path);
    for (std::string entry = path, dir = parent; !dir.empty(); entry = dir, dir = Parent(dir)) {
      if (!IsCpuDirectory(dir) || !IsNodeEntry(Base(entry))) continue;
      auto [it, inserted] = node_of_cpu.emplace(dir, std::string(Base(entry)));
      if (!inserted && it->second != Base(entry)) {
        problem(line_of[path], "/" + path,
                "the overlay gives /" + dir + " two NUMA nodes, " + it->second + " and " +
                    std::string(Base(entry)));
      }
    }
  }
  if (!problems.empty()) {
    std::ostringstream out;
    for (size_t i = 0; i < problems.size(); ++i) out << (i ? "\n" : "") << problems[i];
    return InvalidArgumentError(out.str());
  }
  return overlay;
}

std::unique_ptr<FileSystem> NewOverlayFileSystem(std::unique_ptr<FileSystem> base,
                                                 SysfsOverlay overlay) {
  if (overlay.files.empty()) return base;
  return std::make_unique<OverlayFileSystem>(std::move(base), std::move(overlay));
}

Result<std::unique_ptr<FileSystem>> WithSysfsOverlay(std::unique_ptr<FileSystem> sysfs,
                                                     const FileSystem& files,
                                                     const std::string& overlay_path) {
  if (overlay_path.empty()) return sysfs;
  Result<std::string> text = files.ReadFile(overlay_path, kMaxSysfsOverlaySize);
  if (!text.ok()) return text.status().WithContext("sysfs overlay");
  ASSIGN_OR_RETURN(SysfsOverlay overlay, ParseSysfsOverlay(*text, files.HostPath(overlay_path)));
  return NewOverlayFileSystem(std::move(sysfs), std::move(overlay));
}

}  // namespace dracpu
