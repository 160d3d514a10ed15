#include "dra-agent/agent/logging_claim_preparer.h"

#include <glog/logging.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include "common/log_escape.h"
#include "common/operation_id.h"

namespace dracpu::dra {
namespace {

// The kubelet's names as they came: escaped, since a refused claim's names are logged too.
std::string Who(const ClaimRef& c) {
  return "claim=" + LogEscape(c.namespace_name, 64) + "/" + LogEscape(c.name) +
         " uid=" + LogEscape(c.uid, 64);
}

std::string Millis(Clock::Duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fms", std::chrono::duration<double, std::milli>(d).count());
  return buf;
}

}  // namespace

LoggingClaimPreparer::LoggingClaimPreparer(ClaimPreparer& inner, CpusOf cpus_of, const Clock& clock,
                                           Random& random)
    : inner_(inner), cpus_of_(std::move(cpus_of)), clock_(clock), random_(random) {}

std::string LoggingClaimPreparer::NewOp() { return NewOperationId(random_); }

std::string LoggingClaimPreparer::CpusText(const std::optional<CpuSet>& cpus) const {
  if (!cpus) return "none";
  return cpus->Empty() ? "none" : cpus->ToListString();
}

std::map<std::string, ClaimPrepareResult> LoggingClaimPreparer::Prepare(
    const std::vector<ClaimRef>& claims) {
  const std::string op = NewOp();
  for (const ClaimRef& c : claims) VLOG(2) << "op=" << op << " Prepare begin " << Who(c);
  const Clock::TimePoint start = clock_.Now();
  std::map<std::string, ClaimPrepareResult> results = inner_.Prepare(claims);
  const std::string took = Millis(clock_.Now() - start);
  for (const ClaimRef& c : claims) {
    auto it = results.find(c.uid);
    if (it == results.end()) {
      LOG(WARNING) << "op=" << op << " Prepare end " << Who(c) << " no result in " << took;
    } else if (!it->second.error.empty()) {
      LOG(WARNING) << "op=" << op << " Prepare end " << Who(c) << " failed in " << took << ": "
                   << it->second.error;
    } else if (VLOG_IS_ON(2)) {
      VLOG(2) << "op=" << op << " Prepare end " << Who(c) << " cpus=" << CpusText(cpus_of_(c.uid))
              << " devices=" << it->second.devices.size() << " in " << took;
    }
  }
  return results;
}

std::map<std::string, std::string> LoggingClaimPreparer::Unprepare(
    const std::vector<ClaimRef>& claims) {
  const std::string op = NewOp();
  std::map<std::string, std::optional<CpuSet>> held;
  for (const ClaimRef& c : claims) {
    VLOG(2) << "op=" << op << " Unprepare begin " << Who(c);
    if (VLOG_IS_ON(2)) held[c.uid] = cpus_of_(c.uid);
  }
  const Clock::TimePoint start = clock_.Now();
  std::map<std::string, std::string> errors = inner_.Unprepare(claims);
  const std::string took = Millis(clock_.Now() - start);
  for (const ClaimRef& c : claims) {
    auto it = errors.find(c.uid);
    if (it == errors.end()) {
      LOG(WARNING) << "op=" << op << " Unprepare end " << Who(c) << " no result in " << took;
    } else if (!it->second.empty()) {
      LOG(WARNING) << "op=" << op << " Unprepare end " << Who(c) << " failed in " << took << ": "
                   << it->second;
    } else {
      VLOG(2) << "op=" << op << " Unprepare end " << Who(c) << " cpus=" << CpusText(held[c.uid])
              << " in " << took;
    }
  }
  return errors;
}

}  // namespace dracpu::dra
