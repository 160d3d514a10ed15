// Conversions between NRI wire messages (proto/nri.proto) and the plain structs of types.h.
// Only nri-agent/nri/ includes this header: it is the edge where generated code stops.
#pragma once

#include <string>
#include <vector>

#include "nri-agent/nri/types.h"
#include "nri.pb.h"

namespace dracpu::nri {

namespace api = ::nri::pkg::api::v1alpha1;

Pod FromProto(const api::PodSandbox& pod);
Container FromProto(const api::Container& container);
Cpuset CpusetFromProto(const api::LinuxResources& resources);
RuntimeInfo FromProto(const api::ConfigureRequest& request);
CpusetUpdate FromProto(const api::ContainerUpdate& update);

// Sets only linux.resources.cpu.cpus/mems that are non-empty.
void ToProto(const Cpuset& cpuset, api::LinuxResources* resources);
void ToProto(const CpusetUpdate& update, api::ContainerUpdate* out);
void ToProto(const CreateContainerResult& result, api::CreateContainerResponse* out);

// The wire bytes of the replies that carry updates, exactly what the generated serializer
// writes for the same message (ToProto, then SerializeAsString), but each distinct
// LinuxContainerUpdate encoded once: a pool change is hundreds of updates to one cpuset, and
// this is the container-start path (CreateContainerResponse: adjust = 1, update = 2;
// UpdateContainerResponse and StopContainerResponse: update = 1).
std::string SerializeCreateContainerResponse(const CreateContainerResult& result);
std::string SerializeUpdatesResponse(const std::vector<CpusetUpdate>& updates);

// Used by tests and the runtime simulator to build what a runtime would send.
void ToProto(const Pod& pod, api::PodSandbox* out);
void ToProto(const Container& container, api::Container* out);

}  // namespace dracpu::nri
