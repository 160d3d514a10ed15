// dracpu-sim-apiserver: the kube-apiserver simulator as a process, for scripts and `make demo`.
// Prints its URL on the first line of stdout once it listens, then serves until SIGINT/SIGTERM.
// The admin API (/_sim/...) seeds objects, injects faults and reads the request log; see
// docs/kube-client.md.
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tests/sim/apiserver/base64.h"
#include "tests/sim/apiserver/sim_apiserver.h"
#include "tests/sim/apiserver/test_certs.h"

namespace {

constexpr char kUsage[] =
    "usage: dracpu-sim-apiserver [flags]\n"
    "  --address ADDR          listen address (default 127.0.0.1)\n"
    "  --port N                listen port (default 0: pick a free one)\n"
    "  --tls-cert FILE --tls-key FILE   serve HTTPS with this PEM certificate and key\n"
    "  --generate-tls DIR      serve HTTPS with a fresh self-signed cert written to "
    "DIR/sim.{crt,key}\n"
    "  --token TOKEN           require 'Authorization: Bearer TOKEN'\n"
    "  --kubeconfig-out FILE   write a kubeconfig for clients of this server\n"
    "  --node NAME[=UID]       seed a Node (repeatable)\n"
    "  --bookmark-interval-ms N  BOOKMARK period of watches (default 1000)\n"
    "  --kube-version V        serve Kubernetes V's ResourceSlice API and gate defaults:\n"
    "                          1.34, 1.35, 1.36 (default), 1.37\n"
    "  --feature-gates LIST    Name=true|false,... on top of the version's defaults\n"
    "                          (DRAConsumableCapacity, DRAListTypeAttributes, ...)\n";

int Fail(const std::string& message) {
  std::cerr << "dracpu-sim-apiserver: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  dracpu::sim::SimServerOptions options;
  std::string token, kubeconfig_out, generate_dir, kube_version = "1.36", feature_gates;
  std::vector<std::pair<std::string, std::string>> nodes;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    const std::string* v = nullptr;
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (a != "--address" && a != "--port" && a != "--tls-cert" && a != "--tls-key" &&
        a != "--generate-tls" && a != "--token" && a != "--kubeconfig-out" && a != "--node" &&
        a != "--bookmark-interval-ms" && a != "--kube-version" && a != "--feature-gates") {
      std::cerr << "unknown flag " << a << "\n" << kUsage;
      return 2;
    }
    if ((v = value()) == nullptr) {
      std::cerr << a << " needs a value\n" << kUsage;
      return 2;
    }
    if (a == "--address") options.address = *v;
    if (a == "--port" || a == "--bookmark-interval-ms") {
      char* end = nullptr;
      const long n = std::strtol(v->c_str(), &end, 10);
      if (v->empty() || *end != '\0' || n < 0 || (a == "--port" && n > 65535)) {
        std::cerr << a << ": bad number \"" << *v << "\"\n" << kUsage;
        return 2;
      }
    }
    if (a == "--port") options.port = static_cast<uint16_t>(std::atoi(v->c_str()));
    if (a == "--tls-cert") options.tls_cert_file = *v;
    if (a == "--tls-key") options.tls_key_file = *v;
    if (a == "--generate-tls") generate_dir = *v;
    if (a == "--token") token = *v;
    if (a == "--kubeconfig-out") kubeconfig_out = *v;
    if (a == "--bookmark-interval-ms") {
      options.bookmark_interval = std::chrono::milliseconds(std::atoi(v->c_str()));
    }
    if (a == "--kube-version") kube_version = *v;
    if (a == "--feature-gates") feature_gates = *v;
    if (a == "--node") {
      const size_t eq = v->find('=');
      nodes.emplace_back(v->substr(0, eq), eq == std::string::npos ? "" : v->substr(eq + 1));
    }
  }
  if (!generate_dir.empty()) {
    auto pair = dracpu::sim::GenerateSelfSignedCert("dracpu-sim-apiserver");
    if (!pair.ok()) return Fail(pair.status().ToString());
    if (auto s = dracpu::sim::WriteCertFiles(*pair, generate_dir, "sim"); !s.ok()) {
      return Fail(s.ToString());
    }
    options.tls_cert_file = generate_dir + "/sim.crt";
    options.tls_key_file = generate_dir + "/sim.key";
  }
  // Block the signals before any thread starts so only sigwait() below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto gates = dracpu::sim::FeatureGates::ForVersion(kube_version);
  if (!gates.ok()) {
    std::cerr << "--kube-version: " << gates.status().message() << "\n" << kUsage;
    return 2;
  }
  if (auto s = gates->Set(feature_gates); !s.ok()) {
    std::cerr << "--feature-gates: " << s.message() << "\n" << kUsage;
    return 2;
  }
  dracpu::sim::SimState::Options state_options;
  state_options.gates = *gates;
  auto state = std::make_shared<dracpu::sim::SimState>(state_options);
  state->SetToken(token);
  for (const auto& [name, uid] : nodes) state->AddNode(name, uid);
  auto server = dracpu::sim::SimApiServer::Start(options, state);
  if (!server.ok()) return Fail(server.status().ToString());
  const std::string url = (*server)->url();
  if (!kubeconfig_out.empty()) {
    std::ofstream out(kubeconfig_out, std::ios::trunc);
    out << "apiVersion: v1\nkind: Config\ncurrent-context: sim\n"
        << "clusters:\n- name: sim\n  cluster:\n    server: " << url << "\n";
    if (!options.tls_cert_file.empty()) {
      std::ifstream cert(options.tls_cert_file);
      const std::string pem((std::istreambuf_iterator<char>(cert)),
                            std::istreambuf_iterator<char>());
      out << "    certificate-authority-data: " << dracpu::sim::Base64Encode(pem) << "\n";
    }
    out << "users:\n- name: sim\n  user:\n";
    if (!token.empty()) {
      out << "    token: " << token << "\n";
    } else {
      out << "    {}\n";
    }
    out << "contexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sim\n";
    out.close();
    if (!out) return Fail("cannot write " + kubeconfig_out);
  }
  std::cout << url << std::endl;
  int sig = 0;
  sigwait(&signals, &sig);
  (*server)->Stop();
  return 0;
}
