#include "dra-agent/agent/logging_claim_preparer.h"

#include <glog/logging.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <set>

#include "common/log_escape.h"
#include "tests/testing/fake_clock.h"

namespace dracpu::dra {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Collects what glog writes (every severity, verbose lines included when enabled).
class CapturedLog : public google::LogSink {
 public:
  CapturedLog() { google::AddLogSink(this); }
  ~CapturedLog() override { google::RemoveLogSink(this); }
  void send(google::LogSeverity severity, const char*, const char*, int,
            const google::LogMessageTime&, const char* message, size_t length) override {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back(std::string(google::GetLogSeverityName(severity)) + " " +
                     std::string(message, length));
  }
  std::vector<std::string> lines() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

// Prepares claim "good" on CPUs 4-7 and fails "bad"; the clock advances 3 ms per call.
class FakePreparer : public ClaimPreparer {
 public:
  explicit FakePreparer(testing::FakeClock& clock) : clock_(clock) {}
  std::map<std::string, ClaimPrepareResult> Prepare(const std::vector<ClaimRef>& claims) override {
    clock_.Advance(std::chrono::milliseconds(3));
    std::map<std::string, ClaimPrepareResult> out;
    for (const ClaimRef& c : claims) {
      if (c.uid == "bad") {
        out[c.uid].error = "not enough CPUs";
      } else {
        out[c.uid].devices.push_back({{"req"}, "node-a", "cpudevnuma000", {"dra.cpu/claim=x"}, {}});
        prepared_.insert(c.uid);
      }
    }
    return out;
  }
  std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims) override {
    clock_.Advance(std::chrono::milliseconds(1));
    std::map<std::string, std::string> out;
    for (const ClaimRef& c : claims) {
      out[c.uid] = "";
      prepared_.erase(c.uid);
    }
    return out;
  }
  std::optional<CpuSet> CpusOf(const std::string& uid) const {
    if (prepared_.count(uid) == 0) return std::nullopt;
    return CpuSet::Range(4, 7);
  }

 private:
  testing::FakeClock& clock_;
  std::set<std::string> prepared_;
};

class FixedRandom : public Random {
 public:
  double Uniform01() override { return 0.25; }  // op=40000000
};

class LoggingClaimPreparerTest : public ::testing::Test {
 protected:
  LoggingClaimPreparerTest()
      : inner_(clock_),
        logging_(
            inner_, [this](const std::string& uid) { return inner_.CpusOf(uid); }, clock_,
            random_) {}
  ~LoggingClaimPreparerTest() override { FLAGS_v = saved_v_; }

  int saved_v_ = FLAGS_v;
  testing::FakeClock clock_;
  FixedRandom random_;
  FakePreparer inner_;
  LoggingClaimPreparer logging_;
};

TEST_F(LoggingClaimPreparerTest, BeginAndEndPerClaimAtV2WithCpusAndDuration) {
  FLAGS_v = 2;
  CapturedLog log;
  auto results = logging_.Prepare({{"ns", "a", "good"}, {"ns", "b", "bad"}});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results["bad"].error, "not enough CPUs");  // results pass through unchanged
  auto errors = logging_.Unprepare({{"ns", "a", "good"}});
  EXPECT_EQ(errors["good"], "");
  EXPECT_THAT(
      log.lines(),
      ElementsAre("INFO op=40000000 Prepare begin claim=ns/a uid=good",
                  "INFO op=40000000 Prepare begin claim=ns/b uid=bad",
                  "INFO op=40000000 Prepare end claim=ns/a uid=good cpus=4-7 devices=1 in 3.0ms",
                  "WARNING op=40000000 Prepare end claim=ns/b uid=bad failed in 3.0ms: not "
                  "enough CPUs",
                  "INFO op=40000000 Unprepare begin claim=ns/a uid=good",
                  "INFO op=40000000 Unprepare end claim=ns/a uid=good cpus=4-7 in 1.0ms"));
}

TEST_F(LoggingClaimPreparerTest, BelowV2OnlyFailuresAreLogged) {
  FLAGS_v = 0;
  CapturedLog log;
  logging_.Prepare({{"ns", "a", "good"}, {"ns", "b", "bad"}});
  logging_.Unprepare({{"ns", "a", "good"}});
  EXPECT_THAT(log.lines(), ElementsAre(AllOf(HasSubstr("WARNING"), HasSubstr("uid=bad"),
                                             HasSubstr("not enough CPUs"))));
  FLAGS_v = 2;
  CapturedLog quiet;
  logging_.Unprepare({});
  EXPECT_THAT(quiet.lines(), IsEmpty());
}

// A refused claim's names are logged as the kubelet sent them, escaped: a newline or a
// terminal escape in a name cannot forge a log line.
TEST_F(LoggingClaimPreparerTest, HostileNamesAreEscaped) {
  FLAGS_v = 2;
  CapturedLog log;
  logging_.Prepare({{"ns\x1b[2J", "b\nWARNING forged", "bad"}});
  logging_.Unprepare({{"ns", "a\r\n", "u\n1"}});
  const std::vector<std::string> lines = log.lines();
  ASSERT_EQ(lines.size(), 4u);
  for (const std::string& line : lines) {
    SCOPED_TRACE(line);
    EXPECT_TRUE(IsLogSafe(line));
  }
  EXPECT_THAT(lines[0], HasSubstr("claim=ns\\x1b[2J/b\\x0aWARNING forged uid=bad"));
  EXPECT_THAT(lines[2], HasSubstr("claim=ns/a\\x0d\\x0a uid=u\\x0a1"));
}

}  // namespace
}  // namespace dracpu::dra
