#include "tests/sim/apiserver/field_errors.h"

#include <cstdio>

namespace dracpu::sim {

std::string GoString(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string GoInt(int64_t v) { return std::to_string(v); }

void FieldErrors::Add(const std::string& field, const char* reason, std::string body) {
  errors_.push_back({field, reason, std::move(body)});
}

void FieldErrors::Required(const std::string& field, std::string_view detail) {
  Add(field, "FieldValueRequired",
      "Required value" + (detail.empty() ? std::string() : ": " + std::string(detail)));
}

void FieldErrors::Invalid(const std::string& field, const std::string& value,
                          std::string_view detail) {
  Add(field, "FieldValueInvalid",
      "Invalid value: " + value + (detail.empty() ? std::string() : ": " + std::string(detail)));
}

void FieldErrors::Forbidden(const std::string& field, std::string_view detail) {
  Add(field, "FieldValueForbidden",
      "Forbidden" + (detail.empty() ? std::string() : ": " + std::string(detail)));
}

void FieldErrors::TooLong(const std::string& field, size_t max_bytes) {
  Add(field, "FieldValueTooLong",
      "Too long: must have at most " + std::to_string(max_bytes) + " bytes");
}

void FieldErrors::TooMany(const std::string& field, size_t have, size_t max_items) {
  Add(field, "FieldValueTooMany",
      "Too many: " + std::to_string(have) + ": must have at most " + std::to_string(max_items) +
          " items");
}

void FieldErrors::Duplicate(const std::string& field, const std::string& value) {
  Add(field, "FieldValueDuplicate", "Duplicate value: " + value);
}

void FieldErrors::NotFound(const std::string& field, const std::string& value) {
  Add(field, "FieldValueNotFound", "Not found: " + value);
}

void FieldErrors::NotSupported(const std::string& field, const std::string& value,
                               const std::vector<std::string>& supported) {
  std::string list;
  for (const std::string& s : supported) list += (list.empty() ? "" : ", ") + GoString(s);
  Add(field, "FieldValueNotSupported",
      "Unsupported value: " + value + ": supported values: " + list);
}

void FieldErrors::Append(std::vector<FieldError> more) {
  for (FieldError& e : more) errors_.push_back(std::move(e));
}

}  // namespace dracpu::sim
