#include "shm-schema/layout.h"

#include <algorithm>
#include <cstring>

namespace dracpu::shm {
namespace {

std::string_view Field(const char* data, size_t size) {
  return std::string_view(data, ::strnlen(data, size));
}

uint32_t IndexSlotsFor(uint32_t capacity) {
  return std::bit_ceil(std::max<uint32_t>(2 * capacity, 8));
}

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

std::string_view AgentRecord::Version() const { return Field(version, sizeof version); }

std::string_view ClaimEntry::Uid() const { return Field(uid, sizeof uid); }
std::string_view ClaimEntry::Namespace() const { return Field(namespace_, sizeof namespace_); }
std::string_view ClaimEntry::Name() const { return Field(name, sizeof name); }
std::string_view ClaimEntry::RequestName(int i) const {
  return Field(request_names[i], sizeof request_names[i]);
}

std::string_view ContainerEntry::Id() const { return Field(container_id, sizeof container_id); }
std::string_view ContainerEntry::PodUid() const { return Field(pod_uid, sizeof pod_uid); }
std::string_view ContainerEntry::PodNamespace() const {
  return Field(pod_namespace, sizeof pod_namespace);
}
std::string_view ContainerEntry::PodName() const { return Field(pod_name, sizeof pod_name); }
std::string_view ContainerEntry::Name() const {
  return Field(container_name, sizeof container_name);
}
std::string_view ContainerEntry::ClaimUid(int i) const {
  return Field(claim_uids[i], sizeof claim_uids[i]);
}

TableLayout ComputeTableLayout(uint32_t claims_capacity, uint32_t containers_capacity) {
  TableLayout out{};
  uint64_t offset = kHeaderBytes;
  auto place = [&offset](TableDescriptor& d, uint32_t capacity, uint32_t entry_size) {
    d.capacity = capacity;
    d.entry_size = entry_size;
    d.index_slots = IndexSlotsFor(capacity);
    d.index_offset = offset;
    offset = AlignUp(offset + uint64_t{d.index_slots} * sizeof(uint32_t), 64);
    d.entries_offset = offset;
    offset = AlignUp(offset + uint64_t{capacity} * entry_size, 4096);
  };
  place(out.claims, claims_capacity, sizeof(ClaimEntry));
  place(out.containers, containers_capacity, sizeof(ContainerEntry));
  out.segment_size = offset;
  return out;
}

std::string SegmentFileName(uint32_t major) { return "state.v" + std::to_string(major) + ".shm"; }

}  // namespace dracpu::shm
