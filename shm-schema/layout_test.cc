#include "shm-schema/layout.h"

#include <gtest/gtest.h>

#include <cstring>

#include "shm-schema/checksum.h"

namespace dracpu::shm {
namespace {

TEST(LayoutTest, DefaultCapacitiesFitRealNodes) {
  const TableLayout l = ComputeTableLayout(kDefaultClaimsCapacity, kDefaultContainersCapacity);
  EXPECT_GE(l.claims.capacity, 4096u);
  EXPECT_GE(l.containers.capacity, 8192u);
  EXPECT_EQ(CpuSet::kMaxCpus, 8192);
  EXPECT_EQ(l.claims.index_offset, kHeaderBytes);
  EXPECT_GE(l.claims.index_slots, 2 * l.claims.capacity);
  EXPECT_GE(l.claims.entries_offset, l.claims.index_offset + l.claims.index_slots * 4);
  EXPECT_GE(l.containers.index_offset,
            l.claims.entries_offset + uint64_t{l.claims.capacity} * sizeof(ClaimEntry));
  EXPECT_EQ(l.segment_size % 4096, 0u);
  EXPECT_EQ(l.segment_size, 30523392u);  // documented in docs/shm-layout.md
}

TEST(LayoutTest, FileNameCarriesMajor) {
  EXPECT_EQ(SegmentFileName(1), "state.v1.shm");
  EXPECT_EQ(SegmentFileName(), "state.v" + std::to_string(kLayoutMajor) + ".shm");
}

TEST(LayoutTest, ChecksumDetectsAnyWordChange) {
  ClaimEntry e{};
  e.uid[0] = 'a';
  const uint64_t base = RecordChecksum(e);
  EXPECT_NE(base, 0u);
  auto* words = reinterpret_cast<uint64_t*>(&e);
  for (size_t i = 0; i < sizeof(ClaimEntry) / 8 - 1; ++i) {
    words[i] ^= 1;
    EXPECT_NE(RecordChecksum(e), base) << "word " << i;
    words[i] ^= 1;
  }
  e.checksum = 12345;  // the checksum field itself is not covered
  EXPECT_EQ(RecordChecksum(e), base);
}

TEST(LayoutTest, AgentVersionStopsAtTheFieldsEndWithoutANul) {
  AgentRecord a{};
  EXPECT_EQ(a.Version(), "");
  std::memset(a.version, 'v', sizeof a.version);
  std::memset(a.reserved1, 'x', sizeof a.reserved1);
  EXPECT_EQ(a.Version(), std::string(kVersionBytes, 'v'));
}

TEST(LayoutTest, NodeMask) {
  NodeMask m{};
  m.Set(0);
  m.Set(1023);
  EXPECT_TRUE(m.Contains(0));
  EXPECT_TRUE(m.Contains(1023));
  EXPECT_FALSE(m.Contains(1));
  EXPECT_FALSE(m.Contains(1024));
  EXPECT_FALSE(m.Contains(-1));
}

}  // namespace
}  // namespace dracpu::shm
