#include "dra-agent/prepare/device_metadata.h"

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include "dra-agent/slices/slice_document.h"

namespace dracpu::dra {
namespace {

constexpr char kDriver[] = "dra.cpu";
constexpr char kMetadataSubDir[] = "dra-device-metadata";
constexpr char kMetadataApiVersion[] = "metadata.resource.k8s.io/v1beta1";
constexpr mode_t kFileMode = 0644;
constexpr mode_t kDirMode = 0755;

using Writer = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void Str(Writer& w, const std::string& s) {
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
}

std::string BaseRequest(const std::string& request) { return request.substr(0, request.find('/')); }

std::string DeviceMetadataJson(const MetadataClaim& claim, const std::string& request,
                               const std::vector<const MetadataDevice*>& devices) {
  rapidjson::StringBuffer b;
  Writer w(b);
  w.SetIndent(' ', 2);
  w.StartObject();
  w.Key("kind");
  w.String("DeviceMetadata");
  w.Key("apiVersion");
  w.String(kMetadataApiVersion);
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  Str(w, claim.name);
  w.Key("namespace");
  Str(w, claim.namespace_name);
  w.Key("uid");
  Str(w, claim.uid);
  // Written once per Prepare, never updated in place: always the first generation.
  w.Key("generation");
  w.Int(1);
  w.EndObject();
  if (claim.pod_claim_name) {
    w.Key("podClaimName");
    Str(w, *claim.pod_claim_name);
  }
  w.Key("requests");
  w.StartArray();
  w.StartObject();
  w.Key("name");
  Str(w, request);
  w.Key("devices");
  w.StartArray();
  for (const MetadataDevice* d : devices) {
    w.StartObject();
    w.Key("driver");
    w.String(kDriver);
    w.Key("pool");
    Str(w, d->pool);
    w.Key("name");
    Str(w, d->device);
    w.Key("attributes");
    w.StartObject();
    for (const auto& [key, value] : d->attributes) {
      w.Key(key.c_str());
      rapidjson::Document a;  // the slice's rendering, re-emitted with this file's indentation
      a.Parse(RenderAttributeJson(value).c_str());
      a.Accept(w);
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  return std::string(b.GetString(), b.GetSize()) + "\n";
}

std::string CdiSpecJson(const std::string& device_name, const std::string& host_path,
                        const std::string& container_path) {
  rapidjson::StringBuffer b;
  Writer w(b);
  w.SetIndent(' ', 2);
  w.StartObject();
  w.Key("cdiVersion");
  w.String("0.5.0");  // the lowest version with mount options, as the kubelet library writes
  w.Key("kind");
  w.String("dra.cpu/metadata");
  w.Key("devices");
  w.StartArray();
  w.StartObject();
  w.Key("name");
  Str(w, device_name);
  w.Key("containerEdits");
  w.StartObject();
  w.Key("mounts");
  w.StartArray();
  w.StartObject();
  w.Key("hostPath");
  Str(w, host_path);
  w.Key("containerPath");
  Str(w, container_path);
  w.Key("options");
  w.StartArray();
  w.String("ro");
  w.String("bind");
  w.EndArray();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  return std::string(b.GetString(), b.GetSize()) + "\n";
}

std::string Parent(const std::string& path) { return path.substr(0, path.rfind('/')); }

}  // namespace

std::string DeviceMetadataWriter::ClaimDir(const std::string& namespace_name,
                                           const std::string& name) const {
  return plugin_dir_ + "/" + kMetadataSubDir + "/" + namespace_name + "_" + name;
}

std::string DeviceMetadataWriter::MetadataFile(const MetadataClaim& claim,
                                               const std::string& base_request) const {
  return ClaimDir(claim.namespace_name, claim.name) + "/" + base_request + "/metadata.json";
}

std::string DeviceMetadataWriter::CdiSpecFile(const std::string& uid,
                                              const std::string& base_request) const {
  return cdi_dir_ + "/" + kDriver + "_metadata_" + uid + "_" + base_request + ".json";
}

std::string DeviceMetadataWriter::ContainerPath(const MetadataClaim& claim,
                                                const std::string& base_request) {
  const bool from_template = claim.pod_claim_name && !claim.pod_claim_name->empty();
  return std::string(kContainerMetadataDir) +
         (from_template ? "/resourceclaimtemplates/" + *claim.pod_claim_name
                        : "/resourceclaims/" + claim.name) +
         "/" + base_request + "/" + kDriver + "-metadata.json";
}

DeviceMetadataWriter::Plan DeviceMetadataWriter::Render(
    const MetadataClaim& claim, const std::vector<MetadataDevice>& devices) const {
  // One file per base request, holding the devices of the request as allocated ("req/sub").
  std::map<std::string, std::pair<std::string, std::vector<const MetadataDevice*>>> by_request;
  for (const MetadataDevice& d : devices) {
    auto& entry = by_request[BaseRequest(d.request)];
    entry.first = d.request;
    entry.second.push_back(&d);
  }
  Plan plan;
  if (!by_request.empty()) plan.directories.push_back(cdi_dir_);
  for (const auto& [base, entry] : by_request) {
    const std::string file = MetadataFile(claim, base);
    plan.directories.push_back(Parent(file));
    plan.files.push_back({file, DeviceMetadataJson(claim, entry.first, entry.second), kFileMode});
    const std::string device = claim.uid + "_" + base;
    plan.files.push_back({CdiSpecFile(claim.uid, base),
                          CdiSpecJson(device, file, ContainerPath(claim, base)), kFileMode});
    plan.cdi_ids[base] = std::string(kDriver) + "/metadata=" + device;
  }
  return plan;
}

void DeviceMetadataWriter::AddTo(OwnedAtomicWrites& writes, size_t owner, const Plan& plan) {
  for (const std::string& dir : plan.directories) {
    if (Status s = fs_.MakeDirectories(dir, kDirMode); !s.ok()) {
      writes.Fail(owner, s.WithContext("device metadata"));
      return;
    }
  }
  for (const FileSystem::FileWrite& f : plan.files) writes.Add(owner, f);
}

std::vector<Status> DeviceMetadataWriter::WriteAll(const std::vector<const Plan*>& plans) {
  OwnedAtomicWrites writes(fs_.BeginAtomicWrites(), plans.size());
  for (size_t i = 0; i < plans.size(); ++i) AddTo(writes, i, *plans[i]);
  return writes.Finish();  // an error names the file or directory
}

Result<std::map<std::string, std::string>> DeviceMetadataWriter::Write(
    const MetadataClaim& claim, const std::vector<MetadataDevice>& devices) {
  Plan plan = Render(claim, devices);
  if (Status s = WriteAll({&plan}).front(); !s.ok()) return s;
  return std::move(plan.cdi_ids);
}

std::vector<std::string> DeviceMetadataWriter::RemovalDirectories() const {
  return {cdi_dir_, plugin_dir_ + "/" + kMetadataSubDir};
}

Status DeviceMetadataWriter::Remove(const std::string& namespace_name, const std::string& name,
                                    const std::string& uid) {
  const std::string prefix = std::string(kDriver) + "_metadata_" + uid + "_";
  if (auto specs = fs_.ListDirectory(cdi_dir_); specs.ok()) {
    for (const DirEntry& e : *specs) {
      if (e.name.rfind(prefix, 0) != 0) continue;
      if (Status s = fs_.RemoveFile(cdi_dir_ + "/" + e.name);
          !s.ok() && s.code() != StatusCode::kNotFound) {
        return s;
      }
    }
  } else if (specs.status().code() != StatusCode::kNotFound) {
    return specs.status();
  }
  const std::string dir = ClaimDir(namespace_name, name);
  Result<std::vector<DirEntry>> requests = fs_.ListDirectory(dir);
  if (!requests.ok()) {
    return requests.status().code() == StatusCode::kNotFound ? Status::Ok() : requests.status();
  }
  for (const DirEntry& r : *requests) {
    const std::string request_dir = dir + "/" + r.name;
    if (Result<std::vector<DirEntry>> files = fs_.ListDirectory(request_dir); files.ok()) {
      for (const DirEntry& f : *files) RETURN_IF_ERROR(fs_.RemoveFile(request_dir + "/" + f.name));
    }
    RETURN_IF_ERROR(fs_.RemoveFile(request_dir));
  }
  return fs_.RemoveFile(dir);
}

}  // namespace dracpu::dra
