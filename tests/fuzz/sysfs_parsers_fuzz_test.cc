// Seeded, bounded fuzzing with g++ (no libFuzzer needed): garbage and mutated sysfs text through
// every parser (FuzzSysfsParsers aborts on a broken contract), then mutated files in a small
// sysfs tree through DiscoverTopology, which must return a valid topology or an error naming a
// file, never crash. Deterministic: a failure reproduces with the printed seed and iteration.
#include "tests/fuzz/sysfs_parsers_fuzz.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/topology_discovery.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/sysfs_fixture.h"

namespace dracpu {
namespace {

constexpr uint32_t kSeed = 20261129;

const std::vector<std::string> kSeeds = {"0-3,8\n",
                                         "0\n",
                                         "\n",
                                         "",
                                         "00000000,0000ff01\n",
                                         "ff\n",
                                         "10 21 21 10\n",
                                         "on\n",
                                         "-1\n",
                                         "65535\n",
                                         "0-8191\n",
                                         "8191\n",
                                         "0,2,4,6,8,10,12,14,16,18,20\n",
                                         "ffffffff,ffffffff,ffffffff,ffffffff\n",
                                         "0-7\n\0",
                                         "notimplemented\n",
                                         "4-20\n\n"};

std::string Mutate(std::string s, std::mt19937& rng) {
  static const std::string kAlphabet = "0123456789abcdefABCDEFx,-+ \n\t\0\xff";
  std::uniform_int_distribution<int> op(0, 4);
  const int edits = std::uniform_int_distribution<int>(1, 4)(rng);
  for (int e = 0; e < edits; ++e) {
    const size_t pos = s.empty() ? 0 : std::uniform_int_distribution<size_t>(0, s.size() - 1)(rng);
    const char c = kAlphabet[std::uniform_int_distribution<size_t>(0, kAlphabet.size() - 1)(rng)];
    switch (op(rng)) {
      case 0:
        if (!s.empty()) s[pos] = c;
        break;
      case 1:
        s.insert(s.begin() + static_cast<long>(std::min(pos, s.size())), c);
        break;
      case 2:
        if (!s.empty()) s.erase(pos, 1);
        break;
      case 3:
        s += s.substr(0, std::min<size_t>(s.size(), 16));
        break;  // repeats
      case 4:
        s.insert(std::min(pos, s.size()), "99999999999");
        break;  // overflow
    }
  }
  return s;
}

std::string RandomText(std::mt19937& rng, bool full_bytes) {
  static const std::string kAlphabet = "0123456789abcdef,-\n \0x";
  const size_t len = std::uniform_int_distribution<size_t>(0, 80)(rng);
  std::string s;
  for (size_t i = 0; i < len; ++i) {
    s += full_bytes
             ? static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng))
             : kAlphabet[std::uniform_int_distribution<size_t>(0, kAlphabet.size() - 1)(rng)];
  }
  return s;
}

TEST(SysfsParsersFuzz, GarbageAndMutationsNeverBreakAContract) {
  std::mt19937 rng(kSeed);
  for (int i = 0; i < 30000; ++i) {
    std::string input;
    switch (i % 3) {
      case 0:
        input = RandomText(rng, /*full_bytes=*/true);
        break;
      case 1:
        input = RandomText(rng, /*full_bytes=*/false);
        break;
      case 2:
        input = Mutate(kSeeds[static_cast<size_t>(i / 3) % kSeeds.size()], rng);
        break;
    }
    SCOPED_TRACE("seed " + std::to_string(kSeed) + " iteration " + std::to_string(i));
    fuzz::FuzzSysfsParsers(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  }
  // Large inputs: a 100 KiB list and mask.
  std::string big;
  for (int cpu = 0; big.size() < 100 * 1024; cpu = (cpu + 2) % 8192)
    big += std::to_string(cpu) + ",";
  fuzz::FuzzSysfsParsers(reinterpret_cast<const uint8_t*>(big.data()), big.size());
  const std::string mask(100 * 1024, 'f');
  fuzz::FuzzSysfsParsers(reinterpret_cast<const uint8_t*>(mask.data()), mask.size());
}

TEST(SysfsParsersFuzz, DiscoveryOnMutatedTreesIsValidOrNamesAFile) {
  auto fixture = testing::SysfsFixture::Create();
  ASSERT_THAT(fixture, IsOk());
  testing::SysfsFixture& f = **fixture;
  f.CpuFile("online", "0-3\n").CpuFile("present", "0-3\n").CpuFile("smt/control", "on\n");
  for (int cpu = 0; cpu < 4; ++cpu) {
    const std::string siblings = cpu % 2 == 0 ? "0,2" : "1,3";
    f.Cpu(cpu, {.package = cpu % 2,
                .core_id = 0,
                .siblings = siblings,
                .die = 0,
                .cluster = 0,
                .node = cpu % 2});
    f.Cache(cpu, 0, {.level = 2, .shared = siblings, .id = cpu % 2});
    f.Cache(cpu, 1, {.level = 3, .shared = cpu % 2 == 0 ? "0,2" : "1,3", .id = cpu % 2});
  }
  f.Node(0, "0,2", "10 20").Node(1, "1,3", "20 10");
  f.File("sys/devices/system/node/online", "0-1\n");
  f.File("sys/devices/pci0000:00/pci_bus/0000:00/cpulistaffinity", "0-3\n");
  const std::vector<std::string> kFiles = {
      "sys/devices/system/cpu/online",
      "sys/devices/system/cpu/present",
      "sys/devices/system/cpu/smt/control",
      "sys/devices/system/cpu/cpu0/topology/core_cpus_list",
      "sys/devices/system/cpu/cpu1/topology/physical_package_id",
      "sys/devices/system/cpu/cpu1/topology/die_id",
      "sys/devices/system/cpu/cpu0/topology/cluster_id",
      "sys/devices/system/cpu/cpu1/cache/index0/shared_cpu_list",
      "sys/devices/system/cpu/cpu0/cache/index1/level",
      "sys/devices/system/cpu/cpu0/cache/index1/id",
      "sys/devices/system/node/node1/cpulist",
      "sys/devices/system/node/node0/distance",
      "sys/devices/system/node/online",
      "sys/devices/pci0000:00/pci_bus/0000:00/cpulistaffinity"};
  ASSERT_THAT(f.status(), IsOk());
  auto fs = f.Fs();
  ASSERT_THAT(fs, IsOk());
  std::vector<std::string> originals;
  for (const std::string& path : kFiles) {
    auto content = (*fs)->ReadFile(path);
    ASSERT_THAT(content, IsOk()) << path;
    originals.push_back(*content);
  }
  std::mt19937 rng(kSeed);
  int valid = 0, errors = 0;
  for (int i = 0; i < 400; ++i) {
    const size_t which = std::uniform_int_distribution<size_t>(0, kFiles.size() - 1)(rng);
    f.File(kFiles[which], Mutate(originals[which], rng));
    ASSERT_THAT(f.status(), IsOk());
    SCOPED_TRACE("seed " + std::to_string(kSeed) + " iteration " + std::to_string(i) + " " +
                 kFiles[which]);
    Result<CpuTopology> topo = DiscoverTopology(**fs);
    if (topo.ok()) {
      EXPECT_THAT(topo->Validate(), IsOk());
      ++valid;
    } else {
      EXPECT_THAT(topo.status().message(), ::testing::HasSubstr(f.root()));
      ++errors;
    }
    f.File(kFiles[which], originals[which]);
  }
  // Both outcomes must occur, or the mutations are not exercising anything.
  EXPECT_GT(valid, 0);
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace dracpu
