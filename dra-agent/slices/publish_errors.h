// PublishErrors: the failed ResourceSlice writes of a publisher, kept so operators see them:
// counted in dra_cpu_resourceslice_publish_errors_total{code,reason} (code = HTTP status, or
// "none" without an answer; reason = the Status reason, or the transport error's code), and
// grouped by distinct cause (code, reason, field, message; the value of an "Invalid value: <v>:"
// message does not count, since it may be a name the server generated) so each is logged once
// and /readyz and gatherinfo can list them.
//
// 409 Conflicts are not errors here: the publisher re-lists and retries them at once.
//
// Thread safety: not thread-safe; the publisher calls it under its own lock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "common/status.h"
#include "dra-agent/kube/api_error.h"

namespace dracpu::dra {

struct PublishErrorCause {
  std::string code;      // "422", "400", "403", "503", "none"
  std::string reason;    // "Invalid", "BadRequest", "Forbidden", "UNAVAILABLE"
  std::string field;     // the cause's field path, "" when the refusal names none
  std::string message;   // the cause's message, or the Status message
  std::string request;   // the last request that hit it: "POST resourceslices (00000-dra.cpu-n-)"
  uint64_t count = 0;    // writes that failed with it since the last successful sync
  bool refusal = false;  // the server refused the content (4xx): retrying the same is futile
  std::string ToString() const;  // "422 Invalid: spec.devices[0]...: Required value: ..."
};

class PublishErrors {
 public:
  // `metrics` may be null; the counter is registered on it.
  explicit PublishErrors(MetricsRegistry* metrics);

  // One failed write (`request` says which). Returns the causes never seen before (to log once);
  // a cause seen again only counts.
  std::vector<PublishErrorCause> Record(const std::string& request, const Status& status,
                                        const kube::ApiErrorDetails& details);
  // A sync succeeded: the causes are history. The next occurrence of one is new again.
  void Clear();

  const std::vector<PublishErrorCause>& causes() const { return causes_; }
  uint64_t total() const { return total_; }
  // Failed writes the server refused (4xx other than 404/409/410/429), ever: a caller compares
  // before and after an attempt.
  uint64_t refusals() const { return refusals_; }

 private:
  Metric* counter_ = nullptr;
  std::vector<PublishErrorCause> causes_;
  uint64_t total_ = 0;
  uint64_t refusals_ = 0;
};

}  // namespace dracpu::dra
