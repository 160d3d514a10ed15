#include "common/kube_names.h"

#include <string>

#include "common/log_escape.h"

namespace dracpu {
namespace {

bool LowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63 || !LowerAlnum(s.front()) || !LowerAlnum(s.back())) return false;
  for (char c : s) {
    if (!LowerAlnum(c) && c != '-') return false;
  }
  return true;
}

Status Refuse(std::string_view value, std::string_view what, std::string_view rule) {
  return InvalidArgumentError(std::string(what) + " " + LogQuote(value, 64) + " is not " +
                              std::string(rule));
}

}  // namespace

Status ValidateDnsLabel(std::string_view value, std::string_view what) {
  if (!IsLabel(value)) {
    return Refuse(value, what,
                  "a DNS label (1-63 characters of a-z, 0-9 and '-', starting and ending with a "
                  "letter or digit)");
  }
  return Status::Ok();
}

Status ValidateDnsSubdomain(std::string_view value, std::string_view what) {
  bool ok = !value.empty() && value.size() <= 253;
  for (size_t start = 0; ok && start <= value.size();) {
    size_t dot = value.find('.', start);
    if (dot == std::string_view::npos) dot = value.size();
    ok = IsLabel(value.substr(start, dot - start));
    start = dot + 1;
  }
  if (!ok) {
    return Refuse(value, what,
                  "a DNS subdomain (1-253 characters: DNS labels of a-z, 0-9 and '-' joined by "
                  "'.')");
  }
  return Status::Ok();
}

}  // namespace dracpu
