// CpuSetRef: an immutable CpuSet whose copies share one allocation instead of duplicating it.
//
// A CpuSet is 1 KiB (8192 CPUs), and the policy gives one shared pool to hundreds of containers.
// Held as CpuSetRefs, moving them all to a new pool is a pointer copy each, and a scan that
// judges a container by its set alone can judge every holder of one set once (SameAs): on the
// container-start path the scan then reads one set, not hundreds of them cold.
//
// Thread safety: a value; copies may be used from different threads (the count is atomic).
#pragma once

#include <memory>

#include "common/cpu_set.h"

namespace dracpu::policy {

class CpuSetRef {
 public:
  // The empty set (every default CpuSetRef shares one).
  CpuSetRef();
  // A set of its own holding a copy of `cpus`; implicit, so a CpuSet is assigned as is.
  CpuSetRef(const CpuSet& cpus);  // NOLINT(google-explicit-constructor)

  const CpuSet& operator*() const { return *set_; }
  const CpuSet* operator->() const { return set_.get(); }

  // The same allocation, so the same set; different allocations may still hold equal sets.
  bool SameAs(const CpuSetRef& other) const { return set_ == other.set_; }

  friend bool operator==(const CpuSetRef& a, const CpuSetRef& b) {
    return a.SameAs(b) || *a.set_ == *b.set_;
  }

 private:
  std::shared_ptr<const CpuSet> set_;
};

}  // namespace dracpu::policy
