#include "dra-agent/kube/cluster_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::kube {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

using dracpu::testing::TempDir;

// base64("CA-PEM"), base64("CERT"), base64("KEY")
constexpr char kCaB64[] = "Q0EtUEVN";
constexpr char kCertB64[] = "Q0VSVA==";
constexpr char kKeyB64[] = "S0VZ";

std::string Kubeconfig(const std::string& cluster, const std::string& user,
                       const std::string& extra = "") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n" + extra +
         "contexts:\n- name: ctx\n  context:\n    cluster: c1\n    user: u1\n"
         "clusters:\n- name: c1\n  cluster:\n" +
         cluster + "users:\n- name: u1\n  user:\n" + user;
}

struct GoodCase {
  const char* name;
  std::string yaml;
  std::map<std::string, std::string> files;
  std::string want_server;
  std::string want_token;
  std::string want_token_file;
  std::string want_ca;
  std::string want_cert;
  std::string want_key;
  bool want_insecure = false;
};

void PrintTo(const GoodCase& c, std::ostream* os) { *os << c.name; }

class KubeconfigGoodTest : public ::testing::TestWithParam<GoodCase> {};

TEST_P(KubeconfigGoodTest, Loads) {
  const GoodCase& c = GetParam();
  TempDir dir;
  dir.Write("cfg/kubeconfig", c.yaml);
  for (const auto& [path, content] : c.files) dir.Write(path, content);
  auto fs = NewPosixFileSystem(dir.path());
  ASSERT_THAT(fs, IsOk());
  Result<ClusterConfig> config = LoadKubeconfig(**fs, "cfg/kubeconfig");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->server, c.want_server);
  EXPECT_EQ(config->bearer_token, c.want_token);
  EXPECT_EQ(config->token_file, c.want_token_file);
  EXPECT_EQ(config->tls.ca_pem, c.want_ca);
  EXPECT_EQ(config->tls.client_cert_pem, c.want_cert);
  EXPECT_EQ(config->tls.client_key_pem, c.want_key);
  EXPECT_EQ(config->tls.insecure_skip_verify, c.want_insecure);
  EXPECT_THAT(config->source, HasSubstr("context ctx"));
}

INSTANTIATE_TEST_SUITE_P(
    Variants, KubeconfigGoodTest,
    ::testing::Values(
        GoodCase{"TokenAndCaData",
                 Kubeconfig("    server: https://10.0.0.1:6443/\n    certificate-authority-data: " +
                                std::string(kCaB64) + "\n",
                            "    token: abc\n"),
                 {},
                 "https://10.0.0.1:6443",
                 "abc",
                 "",
                 "CA-PEM",
                 "",
                 ""},
        GoodCase{"TokenFileRelativeAndCaFile",
                 Kubeconfig("    server: https://h:1\n    certificate-authority: ca.crt\n",
                            "    tokenFile: secrets/token\n"),
                 {{"cfg/ca.crt", "CA-FROM-FILE"}, {"cfg/secrets/token", "tok\n"}},
                 "https://h:1",
                 "",
                 "cfg/secrets/token",
                 "CA-FROM-FILE",
                 "",
                 ""},
        GoodCase{"ClientCertData",
                 Kubeconfig("    server: https://h:1\n",
                            "    client-certificate-data: " + std::string(kCertB64) +
                                "\n    client-key-data: " + kKeyB64 + "\n"),
                 {},
                 "https://h:1",
                 "",
                 "",
                 "",
                 "CERT",
                 "KEY"},
        GoodCase{"ClientCertFilesAbsolute",
                 Kubeconfig("    server: https://h:1\n",
                            "    client-certificate: /pki/c.crt\n    client-key: /pki/c.key\n"),
                 {{"pki/c.crt", "CERTFILE"}, {"pki/c.key", "KEYFILE"}},
                 "https://h:1",
                 "",
                 "",
                 "",
                 "CERTFILE",
                 "KEYFILE"},
        GoodCase{"Insecure",
                 Kubeconfig("    server: https://h:1\n    insecure-skip-tls-verify: true\n",
                            "    token: t\n"),
                 {},
                 "https://h:1",
                 "t",
                 "",
                 "",
                 "",
                 "",
                 true},
        GoodCase{"PlainHttpAnonymous",
                 "current-context: ctx\ncontexts:\n- name: ctx\n  context:\n    cluster: proxy\n"
                 "clusters:\n- name: proxy\n  cluster:\n    server: http://127.0.0.1:8001\n",
                 {},
                 "http://127.0.0.1:8001",
                 "",
                 "",
                 "",
                 "",
                 ""}),
    [](const auto& info) { return std::string(info.param.name); });

struct BadCase {
  const char* name;
  std::string yaml;  // empty: no kubeconfig file at all
  StatusCode want_code;
  std::vector<std::string> want_in_message;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class KubeconfigBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(KubeconfigBadTest, RefusedWithAClearError) {
  const BadCase& c = GetParam();
  TempDir dir;
  if (!c.yaml.empty()) dir.Write("kubeconfig", c.yaml);
  auto fs = NewPosixFileSystem(dir.path());
  ASSERT_THAT(fs, IsOk());
  Result<ClusterConfig> config = LoadKubeconfig(**fs, "kubeconfig");
  ASSERT_THAT(config, StatusIs(c.want_code));
  for (const std::string& s : c.want_in_message) {
    EXPECT_THAT(config.status().message(), HasSubstr(s));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Broken, KubeconfigBadTest,
    ::testing::Values(
        BadCase{"MissingFile", "", StatusCode::kNotFound, {"kubeconfig kubeconfig"}},
        BadCase{"NotYaml", "a: [unclosed", StatusCode::kInvalidArgument, {"YAML"}},
        BadCase{"NoCurrentContext",
                "contexts: []\nclusters: []\nusers: []\n",
                StatusCode::kInvalidArgument,
                {"current-context", "not set"}},
        BadCase{"UnknownContext",
                "current-context: nope\ncontexts: []\n",
                StatusCode::kInvalidArgument,
                {"contexts", "\"nope\"", "current-context"}},
        BadCase{"UnknownCluster",
                "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: gone\n",
                StatusCode::kInvalidArgument,
                {"clusters", "\"gone\""}},
        BadCase{"NoServer",
                Kubeconfig("    certificate-authority-data: Q0EK\n", "    token: t\n"),
                StatusCode::kInvalidArgument,
                {"clusters[name=\"c1\"].cluster.server"}},
        BadCase{"BadScheme",
                Kubeconfig("    server: ftp://h\n", "    token: t\n"),
                StatusCode::kInvalidArgument,
                {"https://"}},
        BadCase{"ServerWithoutHost",
                Kubeconfig("    server: https://\n", "    token: t\n"),
                StatusCode::kInvalidArgument,
                {"\"https://\"", "has no host"}},
        BadCase{"ServerWithOnlyAPath",
                Kubeconfig("    server: http:///api\n", "    token: t\n"),
                StatusCode::kInvalidArgument,
                {"has no host"}},
        BadCase{"ExecPlugin",
                Kubeconfig("    server: https://h\n",
                           "    exec:\n      command: aws\n      apiVersion: x\n"),
                StatusCode::kUnimplemented,
                {"users[name=\"u1\"].user.exec", "not supported"}},
        BadCase{"AuthProvider",
                Kubeconfig("    server: https://h\n", "    auth-provider:\n      name: gcp\n"),
                StatusCode::kUnimplemented,
                {"user.auth-provider"}},
        BadCase{"ProxyUrl",
                Kubeconfig("    server: https://h\n    proxy-url: http://proxy:3128\n",
                           "    token: t\n"),
                StatusCode::kUnimplemented,
                {"clusters[name=\"c1\"].cluster.proxy-url"}},
        BadCase{"Impersonation",
                Kubeconfig("    server: https://h\n", "    token: t\n    as: admin\n"),
                StatusCode::kUnimplemented,
                {"user.as", "impersonation"}},
        BadCase{"BasicAuth",
                Kubeconfig("    server: https://h\n", "    username: u\n    password: p\n"),
                StatusCode::kUnimplemented,
                {"basic authentication"}},
        BadCase{"BadBase64",
                Kubeconfig("    server: https://h\n    certificate-authority-data: Q0$t\n",
                           "    token: t\n"),
                StatusCode::kInvalidArgument,
                {"clusters[name=\"c1\"].cluster.certificate-authority-data", "base64", "offset 2"}},
        BadCase{"MissingCaFile",
                Kubeconfig("    server: https://h\n    certificate-authority: nope.crt\n",
                           "    token: t\n"),
                StatusCode::kNotFound,
                {"certificate-authority", "nope.crt"}},
        BadCase{"MissingTokenFile",
                Kubeconfig("    server: https://h\n", "    tokenFile: /no/token\n"),
                StatusCode::kNotFound,
                {"user.tokenFile", "/no/token"}},
        BadCase{"CertWithoutKey",
                Kubeconfig("    server: https://h\n",
                           "    client-certificate-data: " + std::string(kCertB64) + "\n"),
                StatusCode::kInvalidArgument,
                {"client-key", "pair"}},
        BadCase{"BadInsecureValue",
                Kubeconfig("    server: https://h\n    insecure-skip-tls-verify: maybe\n",
                           "    token: t\n"),
                StatusCode::kInvalidArgument,
                {"insecure-skip-tls-verify", "maybe"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(KubeconfigTest, ExplicitContextWinsOverCurrentContext) {
  TempDir dir;
  dir.Write("kubeconfig",
            "current-context: a\ncontexts:\n- name: a\n  context:\n    cluster: ca\n"
            "- name: b\n  context:\n    cluster: cb\nclusters:\n"
            "- name: ca\n  cluster:\n    server: https://a\n"
            "- name: cb\n  cluster:\n    server: https://b\n");
  auto fs = NewPosixFileSystem(dir.path());
  ASSERT_THAT(fs, IsOk());
  EXPECT_THAT(LoadKubeconfig(**fs, "kubeconfig", "b"),
              IsOkAndHolds(::testing::Field(&ClusterConfig::server, "https://b")));
}

TEST(InClusterConfigTest, ReadsServiceAccount) {
  TempDir dir;
  dir.Write("sa/ca.crt", "CA");
  dir.Write("sa/token", "tok");
  auto fs = NewPosixFileSystem(dir.path());
  ASSERT_THAT(fs, IsOk());
  Result<ClusterConfig> config = InClusterConfig(**fs, "10.96.0.1", "443", "/sa");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->tls.ca_pem, "CA");
  EXPECT_EQ(config->token_file, "/sa/token");
  EXPECT_THAT(InClusterConfig(**fs, "fd00::1", "443", "/sa"),
              IsOkAndHolds(::testing::Field(&ClusterConfig::server, "https://[fd00::1]:443")));
}

TEST(InClusterConfigTest, ClearErrors) {
  TempDir dir;
  dir.Write("sa/ca.crt", "CA");
  auto fs = NewPosixFileSystem(dir.path());
  ASSERT_THAT(fs, IsOk());
  EXPECT_THAT(InClusterConfig(**fs, "", "", "/sa"),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("KUBERNETES_SERVICE_HOST")));
  EXPECT_THAT(InClusterConfig(**fs, "10.0.0.1", "443", "/sa"),
              StatusIs(StatusCode::kNotFound, HasSubstr("token")));
  EXPECT_THAT(InClusterConfig(**fs, "10.0.0.1", "443", "/elsewhere"),
              StatusIs(StatusCode::kNotFound, AllOf(HasSubstr("CA"), HasSubstr("ca.crt"))));
}

TEST(Base64Test, DecodesAndRejects) {
  EXPECT_THAT(DecodeBase64("aGVsbG8="), IsOkAndHolds(std::string("hello")));
  EXPECT_THAT(DecodeBase64("aGVs\nbG8h"), IsOkAndHolds(std::string("hello!")));
  EXPECT_THAT(DecodeBase64(""), IsOkAndHolds(std::string()));
  EXPECT_THAT(DecodeBase64("aGVsbG8"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("truncated")));
  EXPECT_THAT(DecodeBase64("a=GV"), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(DecodeBase64("aG*s"), StatusIs(StatusCode::kInvalidArgument, HasSubstr("offset 2")));
}

}  // namespace
}  // namespace dracpu::kube
