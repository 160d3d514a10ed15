// KEP-5304 device metadata: the files the reference driver's kubelet plugin library writes at
// Prepare so a container can read its devices' attributes (KubeVirt reads them to place vCPUs),
// written here by us the same way, at the same paths, in the same format (the reference enables
// it with metadata.resource.k8s.io/v1beta1 only, so that is the one version written).
//
// Per base request of a claim (the part of "req/sub" before the '/'):
//  * the metadata file <plugin dir>/dra-device-metadata/<namespace>_<claim>/<request>/metadata.json
//    (the plugin dir is <kubelet root>/plugins/dra.cpu), one DeviceMetadata object:
//      {"kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v1beta1",
//       "metadata": {"name", "namespace", "uid", "generation": 1},
//       "podClaimName": ... (claims made from a template: the pod's name for the claim),
//       "requests": [{"name": "<req or req/sub>",
//                     "devices": [{"driver": "dra.cpu", "pool", "name", "attributes"}]}]}
//    where the attributes are the device's published ones (ResourceSlice format) plus, for a
//    grouped device, dra.cpu/allocatedNumCPUs (the CPUs the result consumed);
//  * a CDI spec <cdi dir>/dra.cpu_metadata_<uid>_<request>.json, kind dra.cpu/metadata, device
//    <uid>_<request>, that bind-mounts the file read-only at
//    /var/run/kubernetes.io/dra-device-attributes/resourceclaims/<claim>/<request>/dra.cpu-metadata.json
//    (resourceclaimtemplates/<podClaimName>/... for a claim made from a template);
//  * the CDI device id dra.cpu/metadata=<uid>_<request>, which Prepare adds to the devices of that
//    request so the runtime applies the mount.
// Files are written atomically (mode 0644, directories 0755). Thread safety: calls for different
// claims may run concurrently; callers serialize per claim.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/owned_atomic_writes.h"
#include "common/status.h"
#include "dra-agent/devices/device_catalog.h"

namespace dracpu::dra {

struct MetadataClaim {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::optional<std::string> pod_claim_name;  // annotation resource.kubernetes.io/pod-claim-name
};

struct MetadataDevice {
  std::string request;  // as allocated: "req" or "req/sub"
  std::string pool;
  std::string device;
  std::map<std::string, AttributeValue> attributes;
};

inline constexpr char kContainerMetadataDir[] = "/var/run/kubernetes.io/dra-device-attributes";

class DeviceMetadataWriter {
 public:
  // `fs` is rooted at the host's "/"; `plugin_dir` and `cdi_dir` are absolute. Not owned.
  DeviceMetadataWriter(FileSystem& fs, std::string plugin_dir, std::string cdi_dir)
      : fs_(fs), plugin_dir_(std::move(plugin_dir)), cdi_dir_(std::move(cdi_dir)) {}

  // One claim's files, rendered but not written, and the CDI device id per base request to add
  // to that request's devices.
  struct Plan {
    std::vector<std::string> directories;
    std::vector<FileSystem::FileWrite> files;
    std::map<std::string, std::string> cdi_ids;  // base request -> CDI device id
  };
  Plan Render(const MetadataClaim& claim, const std::vector<MetadataDevice>& devices) const;

  // Writes the files of several claims' plans (replacing earlier ones) as one durability batch
  // (FileSystem::WriteFilesAtomically), so a Prepare of many claims pays for it once. One Status
  // per plan, in order; an error names the file. A failed plan may leave some of its files
  // written: Remove() them.
  std::vector<Status> WriteAll(const std::vector<const Plan*>& plans);
  // WriteAll's piece for a caller's own batch, which must write through this writer's
  // FileSystem: makes the plan's directories now and adds its files as `owner`'s (a directory
  // that cannot be made fails `owner`, and none of its files is added).
  void AddTo(OwnedAtomicWrites& writes, size_t owner, const Plan& plan);

  // Render and WriteAll for one claim: base request -> CDI device id.
  Result<std::map<std::string, std::string>> Write(const MetadataClaim& claim,
                                                   const std::vector<MetadataDevice>& devices);

  // Removes the claim's metadata files, their directories and CDI specs; OK when there are none.
  // Durable only after FileSystem::SyncDirectories of RemovalDirectories().
  Status Remove(const std::string& namespace_name, const std::string& name, const std::string& uid);
  // The directories whose entries Remove changes for any claim: the CDI directory and the one
  // holding the claims' metadata directories.
  std::vector<std::string> RemovalDirectories() const;

  // Paths, for tests and messages.
  std::string MetadataFile(const MetadataClaim& claim, const std::string& base_request) const;
  std::string CdiSpecFile(const std::string& uid, const std::string& base_request) const;
  static std::string ContainerPath(const MetadataClaim& claim, const std::string& base_request);

 private:
  std::string ClaimDir(const std::string& namespace_name, const std::string& name) const;

  FileSystem& fs_;
  const std::string plugin_dir_;
  const std::string cdi_dir_;
};

}  // namespace dracpu::dra
