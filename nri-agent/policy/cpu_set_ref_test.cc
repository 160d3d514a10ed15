#include "nri-agent/policy/cpu_set_ref.h"

#include <gtest/gtest.h>

namespace dracpu::policy {
namespace {

TEST(CpuSetRef, CopiesShareTheSetAndEqualityReadsItOtherwise) {
  const CpuSetRef empty;
  EXPECT_TRUE(empty->Empty());
  EXPECT_TRUE(empty.SameAs(CpuSetRef()));  // every default shares one empty set

  const CpuSetRef pool(CpuSet::Range(0, 7));
  const CpuSetRef copy = pool;
  EXPECT_TRUE(copy.SameAs(pool));
  EXPECT_EQ(&*copy, &*pool);

  const CpuSetRef same_cpus(CpuSet::Range(0, 7));  // a set of its own
  EXPECT_FALSE(same_cpus.SameAs(pool));
  EXPECT_EQ(same_cpus, pool);
  EXPECT_NE(CpuSetRef(CpuSet{1}), pool);
  EXPECT_NE(empty, pool);
}

TEST(CpuSetRef, AssigningMovesTheHolderNotTheSet) {
  CpuSetRef held(CpuSet{1, 2});
  const CpuSetRef before = held;
  held = CpuSet{3};
  EXPECT_EQ(*before, (CpuSet{1, 2}));  // the other holder keeps the old set
  EXPECT_EQ(*held, CpuSet{3});
}

}  // namespace
}  // namespace dracpu::policy
