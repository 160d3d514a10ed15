#include "dra-agent/slices/publish_errors.h"

#include <string_view>

namespace dracpu::dra {
namespace {

bool IsRefusal(int http_status) {
  return http_status >= 400 && http_status < 500 && http_status != 404 && http_status != 409 &&
         http_status != 410 && http_status != 429;
}

// What makes two causes the same: the field and the message, without the offending value of an
// "Invalid value: <v>: <detail>" (it can hold a server-generated name, different every time).
std::string CauseKey(const PublishErrorCause& c) {
  std::string message = c.message;
  constexpr std::string_view kInvalid = "Invalid value: ";
  if (message.rfind(kInvalid, 0) == 0) {
    // The value is quoted (and may contain ": "), or bare up to the next ": ".
    size_t end = std::string::npos;
    if (message.size() > kInvalid.size() && message[kInvalid.size()] == '"') {
      for (size_t i = kInvalid.size() + 1; i < message.size(); ++i) {
        if (message[i] == '\\') {
          ++i;
        } else if (message[i] == '"') {
          end = i + 1;
          break;
        }
      }
    } else {
      end = message.find(": ", kInvalid.size());
    }
    if (end != std::string::npos) message = std::string(kInvalid) + "..." + message.substr(end);
  }
  return c.code + "|" + c.reason + "|" + c.field + "|" + message;
}

}  // namespace

std::string PublishErrorCause::ToString() const {
  return code + " " + reason + ": " + (field.empty() ? "" : field + ": ") + message;
}

PublishErrors::PublishErrors(MetricsRegistry* metrics) {
  if (metrics != nullptr) {
    counter_ = &metrics->AddCounter(
        "dra_cpu_resourceslice_publish_errors_total",
        "ResourceSlice writes (and dry-run probes) the API server refused or that failed, by HTTP "
        "code (none: no answer) and Status reason. 409 Conflicts are retried at once and not "
        "counted.",
        {"code", "reason"});
  }
}

std::vector<PublishErrorCause> PublishErrors::Record(const std::string& request,
                                                     const Status& status,
                                                     const kube::ApiErrorDetails& details) {
  if (details.http_status == 409) return {};
  const std::string code = details.http_status == 0 ? "none" : std::to_string(details.http_status);
  std::string reason = details.reason;
  if (reason.empty()) {
    reason = details.http_status == 0 ? std::string(StatusCodeName(status.code())) : "Unknown";
  }
  ++total_;
  if (IsRefusal(details.http_status)) ++refusals_;
  if (counter_ != nullptr) counter_->Add({code, reason}, 1);
  // One cause per Status cause; a Status without causes is one cause of its own.
  std::vector<PublishErrorCause> found;
  if (details.causes.empty()) {
    found.push_back({code, reason, "", details.message.empty() ? status.message() : details.message,
                     request, 1, IsRefusal(details.http_status)});
  }
  for (const kube::ApiErrorCause& c : details.causes) {
    found.push_back({code, reason, c.field, c.message, request, 1, IsRefusal(details.http_status)});
  }
  std::vector<PublishErrorCause> fresh;
  for (PublishErrorCause& f : found) {
    bool known = false;
    const std::string key = CauseKey(f);
    for (PublishErrorCause& c : causes_) {
      if (CauseKey(c) == key) {
        ++c.count;
        c.request = f.request;
        known = true;
      }
    }
    if (!known) {
      fresh.push_back(f);
      causes_.push_back(std::move(f));
    }
  }
  return fresh;
}

void PublishErrors::Clear() { causes_.clear(); }

}  // namespace dracpu::dra
