#include "nri-agent/policy/cpu_set_ref.h"

namespace dracpu::policy {

CpuSetRef::CpuSetRef() {
  static const std::shared_ptr<const CpuSet> empty = std::make_shared<const CpuSet>();
  set_ = empty;
}

CpuSetRef::CpuSetRef(const CpuSet& cpus) : set_(std::make_shared<const CpuSet>(cpus)) {}

}  // namespace dracpu::policy
