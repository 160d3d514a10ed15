// Every non-resize case of ../shared/alloc-cases/cases.json, one gtest per case, run through the
// `allocate` command exactly as the acceptance tests run it (case JSON on stdin, --topologies).
// Checks the hard constraints, errors exactly where kubelet errors, and placement quality never
// worse than kubelet's: (numaSpan, socketSpan, l3Span, partialCores) compared lexicographically,
// metrics recomputed here from the topology records (not taken from the command's output); for
// cases that only assert an L3 set, an L3 set no larger. Prints how many answers equal kubelet's.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "dra-agent/allocator/allocate_command.h"
#include "dra-agent/allocator/topology_records_json.h"
#include "tests/testing/shared_data.h"

namespace dracpu::allocator {
namespace {

struct Shared {
  bool loaded = false;
  std::string topologies_path;
  rapidjson::Document cases;
  std::vector<NamedTopologyJson> topologies;
};

Shared& Data() {
  static Shared* shared = [] {
    auto* s = new Shared;
    const std::optional<std::string> dir = testing::SharedDir();
    if (!dir) return s;
    s->topologies_path = *dir + "/alloc-cases/topologies.json";
    std::ifstream c(*dir + "/alloc-cases/cases.json");
    Result<std::vector<NamedTopologyJson>> topologies = ReadTopologyFile(s->topologies_path);
    if (!c || !topologies.ok()) return s;
    const std::string ct((std::istreambuf_iterator<char>(c)), std::istreambuf_iterator<char>());
    s->cases.Parse(ct.c_str());
    s->topologies = std::move(*topologies);
    s->loaded = !s->cases.HasParseError();
    return s;
  }();
  return *shared;
}

bool IsResize(const rapidjson::Value& c) {
  return c.HasMember("currentlyAllocated") || c.HasMember("mustKeep");
}

// Indices of the cases of one kind; {-1} when the shared data is absent (the test then skips).
std::vector<int> CaseIndices(bool resize) {
  Shared& d = Data();
  if (!d.loaded) return {-1};
  std::vector<int> out;
  const auto& cases = d.cases["cases"];
  for (rapidjson::SizeType i = 0; i < cases.Size(); ++i) {
    if (IsResize(cases[i]) == resize) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::string ToJson(const rapidjson::Value& v) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  v.Accept(w);
  return b.GetString();
}

std::set<int> IntSet(const rapidjson::Value& v) {
  std::set<int> out;
  if (v.IsArray()) {
    for (const auto& x : v.GetArray()) out.insert(x.GetInt());
  }
  return out;
}

struct CpuRec {
  int core, socket, numa, l3;
};

struct Metrics {
  int numa = 0, socket = 0, l3 = 0, partial = 0, cores = 0;
  std::set<int> l3_ids;
  // The rule for every case, distribute-cpus-across-cores included.
  auto Key() const { return std::make_tuple(numa, socket, l3, partial); }
};

// Independent of the allocator's code: spans from the records ((socket, l3) pairs for L3).
Metrics Measure(const std::map<int, CpuRec>& topo, const std::set<int>& cpus) {
  std::set<int> numas, sockets;
  std::set<std::pair<int, int>> l3s;
  std::map<int, int> taken, size;
  for (const auto& [cpu, r] : topo) ++size[r.core];
  Metrics m;
  for (int cpu : cpus) {
    const CpuRec& r = topo.at(cpu);
    numas.insert(r.numa);
    sockets.insert(r.socket);
    l3s.insert({r.socket, r.l3});
    m.l3_ids.insert(r.l3);
    ++taken[r.core];
  }
  for (const auto& [core, n] : taken) m.partial += n < size[core];
  m.cores = static_cast<int>(taken.size());
  m.numa = static_cast<int>(numas.size());
  m.socket = static_cast<int>(sockets.size());
  m.l3 = static_cast<int>(l3s.size());
  return m;
}

std::map<int, CpuRec> TopologyRecords(const std::string& name) {
  std::map<int, CpuRec> out;
  for (const NamedTopologyJson& t : Data().topologies) {
    if (name != t.name) continue;
    for (const CpuRecord& c : t.cpus.records) out[c.cpu] = {c.core, c.socket, c.numa, c.l3};
  }
  return out;
}

struct Tally {
  int run = 0, errors = 0, with_answer = 0, exact = 0, better = 0, l3_only = 0;
  ~Tally() {
    if (run > 0) {
      std::printf(
          "[allocator cases] %d non-resize cases: %d expected errors (met), %d with a "
          "kubelet CPU set: %d equal it exactly, %d strictly better; %d L3-set-only\n",
          run, errors, with_answer, exact, better, l3_only);
    }
  }
};
Tally tally;

class AllocatorCaseTest : public ::testing::TestWithParam<int> {};

TEST_P(AllocatorCaseTest, MeetsHardConstraintsAndIsNeverWorseThanKubelet) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  ASSERT_TRUE(Data().loaded) << "cannot read " << dir << "/alloc-cases";
  ASSERT_GE(GetParam(), 0);
  const rapidjson::Value& c = Data().cases["cases"][GetParam()];
  SCOPED_TRACE(c["name"].GetString());
  std::istringstream in(ToJson(c));
  std::ostringstream out, err;
  const int rc = RunAllocateCommand({"--topologies", Data().topologies_path}, {in, out, err});
  rapidjson::Document result;
  result.Parse(out.str().c_str());
  ASSERT_FALSE(result.HasParseError()) << "output is not JSON: " << out.str();
  ++tally.run;

  if (c["expectError"].GetBool()) {
    EXPECT_EQ(rc, 1) << "kubelet fails with \"" << c["error"].GetString() << "\"; we printed "
                     << out.str() << err.str();
    EXPECT_TRUE(result.HasMember("error"));
    tally.errors += rc == 1;
    return;
  }
  ASSERT_EQ(rc, 0) << out.str() << err.str();
  const std::set<int> cpus = IntSet(result["cpus"]);
  const std::set<int> available = IntSet(c["available"]);
  const std::set<int> reserved = c.HasMember("reserved") ? IntSet(c["reserved"]) : std::set<int>{};
  EXPECT_EQ(static_cast<int>(cpus.size()), c["request"].GetInt());
  for (int cpu : cpus) {
    EXPECT_TRUE(available.count(cpu)) << "CPU " << cpu << " is not available";
    EXPECT_FALSE(reserved.count(cpu)) << "CPU " << cpu << " is reserved";
  }
  const std::map<int, CpuRec> topo = TopologyRecords(c["topology"].GetString());
  const Metrics ours = Measure(topo, cpus);
  const auto& options = c["options"];
  if (options.HasMember("full-pcpus-only") &&
      std::string(options["full-pcpus-only"].GetString()) == "true") {
    EXPECT_EQ(ours.partial, 0) << "full-pcpus-only gave a partial core";
  }
  if (c.HasMember("expected") && c["expected"].IsArray()) {
    const Metrics kubelet = Measure(topo, IntSet(c["expected"]));
    if (c.HasMember("expectedMetrics")) {
      const auto& em = c["expectedMetrics"];
      EXPECT_EQ(kubelet.Key(), std::make_tuple(em["numaSpan"].GetInt(), em["socketSpan"].GetInt(),
                                               em["l3Span"].GetInt(), em["partialCores"].GetInt()))
          << "the test's metrics disagree with expectedMetrics";
    }
    EXPECT_LE(ours.Key(), kubelet.Key())
        << "ours (numa, socket, l3, partial) = " << ours.numa << "," << ours.socket << ","
        << ours.l3 << "," << ours.partial << " kubelet = " << kubelet.numa << "," << kubelet.socket
        << "," << kubelet.l3 << "," << kubelet.partial << " cores touched " << ours.cores << " vs "
        << kubelet.cores << "; ours " << out.str();
    ++tally.with_answer;
    tally.exact += cpus == IntSet(c["expected"]);
    tally.better += ours.Key() < kubelet.Key();
  } else {
    ASSERT_TRUE(c.HasMember("expectedL3"));
    ++tally.l3_only;
    EXPECT_LE(ours.l3_ids.size(), IntSet(c["expectedL3"]).size()) << out.str();
  }
}

std::string CaseName(const ::testing::TestParamInfo<int>& info) {
  if (info.param < 0) return "shared_data_absent";
  std::string name = std::to_string(info.param) + "_";
  for (char ch : std::string(Data().cases["cases"][info.param]["name"].GetString())) {
    name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  }
  return name.substr(0, 120);
}

INSTANTIATE_TEST_SUITE_P(Cases, AllocatorCaseTest, ::testing::ValuesIn(CaseIndices(false)),
                         CaseName);

TEST(AllocatorResizeCasesTest, EveryResizeCaseIsRejectedAsMalformed) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  ASSERT_TRUE(Data().loaded) << "cannot read " << dir << "/alloc-cases";
  int n = 0;
  for (int i : CaseIndices(true)) {
    const rapidjson::Value& c = Data().cases["cases"][i];
    std::istringstream in(ToJson(c));
    std::ostringstream out, err;
    EXPECT_EQ(RunAllocateCommand({"--topologies", Data().topologies_path}, {in, out, err}), 2)
        << c["name"].GetString();
    EXPECT_NE(out.str().find("resize"), std::string::npos) << out.str();
    ++n;
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace dracpu::allocator
