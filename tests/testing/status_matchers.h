// gMock matchers for Status and Result<T>: IsOk(), StatusIs(code[, message_matcher]),
// IsOkAndHolds(value_matcher). Test-only; never linked into a daemon.
#pragma once

#include <gmock/gmock.h>

#include <ostream>

#include "common/status.h"

namespace dracpu {

inline void PrintTo(const Status& status, std::ostream* os) { *os << status.ToString(); }

template <typename T>
void PrintTo(const Result<T>& result, std::ostream* os) {
  if (result.ok()) {
    *os << "OK holding " << ::testing::PrintToString(result.value());
  } else {
    *os << result.status().ToString();
  }
}

namespace testing_internal {
inline const Status& GetStatus(const Status& s) { return s; }
template <typename T>
Status GetStatus(const Result<T>& r) {
  return r.status();
}
}  // namespace testing_internal

MATCHER(IsOk, "is OK") {
  const Status s = testing_internal::GetStatus(arg);
  if (!s.ok()) *result_listener << "status is " << s.ToString();
  return s.ok();
}

MATCHER_P(StatusIs, code, "has status code " + std::string(StatusCodeName(code))) {
  const Status s = testing_internal::GetStatus(arg);
  *result_listener << "status is " << s.ToString();
  return s.code() == code;
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has status code " + std::string(StatusCodeName(code)) + " and a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher)) {
  const Status s = testing_internal::GetStatus(arg);
  *result_listener << "status is " << s.ToString();
  return s.code() == code && ::testing::Matcher<std::string>(message_matcher).Matches(s.message());
}

MATCHER_P(IsOkAndHolds, value_matcher, "is OK and holds a matching value") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status().ToString();
    return false;
  }
  return ::testing::ExplainMatchResult(value_matcher, arg.value(), result_listener);
}

}  // namespace dracpu
