#include "dra-agent/prepare/device_metadata.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class DeviceMetadataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = NewPosixFileSystem("/").value();
    writer_ = std::make_unique<DeviceMetadataWriter>(*fs_, dir_.path() + "/plugins/dra.cpu",
                                                     dir_.path() + "/cdi");
  }
  testing::TempDir dir_;
  std::unique_ptr<FileSystem> fs_;
  std::unique_ptr<DeviceMetadataWriter> writer_;
};

TEST_F(DeviceMetadataTest, WritesTheFilesTheKubeletPluginLibraryWrites) {
  const MetadataClaim claim{"u-1", "ns", "claim-a", std::nullopt};
  const std::vector<MetadataDevice> devices = {
      {"cpus/fast",
       "node-a",
       "cpudevnuma000",
       {{"dra.cpu/numCPUs", int64_t{8}},
        {"dra.cpu/smtEnabled", true},
        {"dra.cpu/allocatedNumCPUs", int64_t{2}}}},
      {"other", "node-a", "cpudevnuma001", {{"dra.cpu/coreType", std::string("p-core")}}}};
  auto ids = writer_->Write(claim, devices);
  ASSERT_THAT(ids, IsOk());
  EXPECT_THAT(*ids, ElementsAre(Pair("cpus", "dra.cpu/metadata=u-1_cpus"),
                                Pair("other", "dra.cpu/metadata=u-1_other")));

  const std::string file =
      dir_.path() + "/plugins/dra.cpu/dra-device-metadata/ns_claim-a/cpus/metadata.json";
  EXPECT_EQ(writer_->MetadataFile(claim, "cpus"), file);
  rapidjson::Document m;
  m.Parse(Slurp(file).c_str());
  ASSERT_FALSE(m.HasParseError()) << Slurp(file);
  EXPECT_STREQ(m["kind"].GetString(), "DeviceMetadata");
  EXPECT_STREQ(m["apiVersion"].GetString(), "metadata.resource.k8s.io/v1beta1");
  EXPECT_STREQ(m["metadata"]["name"].GetString(), "claim-a");
  EXPECT_STREQ(m["metadata"]["namespace"].GetString(), "ns");
  EXPECT_STREQ(m["metadata"]["uid"].GetString(), "u-1");
  EXPECT_EQ(m["metadata"]["generation"].GetInt(), 1);
  EXPECT_FALSE(m.HasMember("podClaimName"));
  ASSERT_EQ(m["requests"].Size(), 1u);
  EXPECT_STREQ(m["requests"][0]["name"].GetString(), "cpus/fast");  // the full reference
  const auto& dev = m["requests"][0]["devices"][0];
  EXPECT_STREQ(dev["driver"].GetString(), "dra.cpu");
  EXPECT_STREQ(dev["pool"].GetString(), "node-a");
  EXPECT_STREQ(dev["name"].GetString(), "cpudevnuma000");
  EXPECT_EQ(dev["attributes"]["dra.cpu/allocatedNumCPUs"]["int"].GetInt(), 2);
  EXPECT_EQ(dev["attributes"]["dra.cpu/numCPUs"]["int"].GetInt(), 8);
  EXPECT_TRUE(dev["attributes"]["dra.cpu/smtEnabled"]["bool"].GetBool());

  const std::string spec_file = dir_.path() + "/cdi/dra.cpu_metadata_u-1_cpus.json";
  EXPECT_EQ(writer_->CdiSpecFile("u-1", "cpus"), spec_file);
  rapidjson::Document spec;
  spec.Parse(Slurp(spec_file).c_str());
  ASSERT_FALSE(spec.HasParseError());
  EXPECT_STREQ(spec["cdiVersion"].GetString(), "0.5.0");
  EXPECT_STREQ(spec["kind"].GetString(), "dra.cpu/metadata");
  EXPECT_STREQ(spec["devices"][0]["name"].GetString(), "u-1_cpus");
  const auto& mount = spec["devices"][0]["containerEdits"]["mounts"][0];
  EXPECT_EQ(mount["hostPath"].GetString(), file);
  EXPECT_STREQ(mount["containerPath"].GetString(),
               "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/claim-a/cpus/"
               "dra.cpu-metadata.json");
  EXPECT_STREQ(mount["options"][0].GetString(), "ro");
  EXPECT_STREQ(mount["options"][1].GetString(), "bind");
  EXPECT_EQ(std::filesystem::status(file).permissions() & std::filesystem::perms::all,
            std::filesystem::perms(0644));
}

TEST_F(DeviceMetadataTest, ClaimsFromATemplateUseThePodsNameForTheClaim) {
  const MetadataClaim claim{"u-2", "ns", "pod-x-cpus-7k2lq", std::string("cpus")};
  ASSERT_THAT(writer_->Write(claim, {{"req", "node-a", "cpudev003", {}}}), IsOk());
  EXPECT_EQ(DeviceMetadataWriter::ContainerPath(claim, "req"),
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/cpus/req/"
            "dra.cpu-metadata.json");
  rapidjson::Document m;
  m.Parse(Slurp(writer_->MetadataFile(claim, "req")).c_str());
  EXPECT_STREQ(m["podClaimName"].GetString(), "cpus");
}

TEST_F(DeviceMetadataTest, RemoveLeavesNothingAndIsIdempotent) {
  const MetadataClaim claim{"u-3", "ns", "c", std::nullopt};
  ASSERT_THAT(writer_->Write(claim, {{"a", "p", "d0", {}}, {"b", "p", "d1", {}}}), IsOk());
  std::ofstream(dir_.path() + "/cdi/dra.k8s.io-cpu_claim-u-3.json") << "{}";  // not ours to remove
  ASSERT_THAT(writer_->Remove("ns", "c", "u-3"), IsOk());
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/plugins/dra.cpu/dra-device-metadata/ns_c"));
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path() + "/cdi")) {
    left.push_back(e.path().filename().string());
  }
  EXPECT_THAT(left, ElementsAre("dra.k8s.io-cpu_claim-u-3.json"));
  EXPECT_THAT(writer_->Remove("ns", "c", "u-3"), IsOk());
  EXPECT_THAT(writer_->Remove("ns", "never", "u-9"), IsOk());
}

}  // namespace
}  // namespace dracpu::dra
