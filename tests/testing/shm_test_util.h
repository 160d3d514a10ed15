// Test helpers for the segment (included only by tests; never linked into a daemon).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "shm-schema/segment.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::shm::testing {

// Segments live on tmpfs in production, so the tests' directories do too when /dev/shm exists.
class TempDir : public dracpu::testing::TempDir {
 public:
  TempDir() : dracpu::testing::TempDir("dracpu-shm-test", Base::kTmpfs) {}
};

inline OpenOptions TestOptions(Role role, uint32_t claims = 64, uint32_t containers = 64) {
  OpenOptions o;
  o.role = role;
  o.create_if_missing = role == Role::kDraAgent;
  o.node_name = "node-a";
  o.version = "test";
  o.claims_capacity = claims;
  o.containers_capacity = containers;
  o.boot_id = [] {
    return Result<std::string>(std::string("11111111-2222-3333-4444-555555555555"));
  };
  return o;
}

inline std::string Uid(int i) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "00000000-0000-0000-0000-%012d", i);
  return buf;
}

inline ClaimSpec TestClaim(int i, CpuSet cpus) {
  ClaimSpec c;
  c.uid = Uid(i);
  c.namespace_ = "ns";
  c.name = "claim-" + std::to_string(i);
  c.state = ClaimState::kPrepared;
  c.request_names = {"req"};
  c.cpus = cpus;
  c.mems = {0};
  c.prepared_time_ns = 1;
  return c;
}

}  // namespace dracpu::shm::testing
