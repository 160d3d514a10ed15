// Field errors as apimachinery's util/validation/field builds them: one constructor per error
// type, the message body upstream prints ("Invalid value: \"x\": detail", "Too many: 129: must
// have at most 128 items", ...) and the StatusCause reason (FieldValueInvalid, ...). The 422
// Status of the simulator is made from these (sim_state.cc).
//
// Values are passed already formatted the way Go prints them (GoString for strings, GoInt for
// numbers, kGoNull for nil, a literal for structs): upstream formats with %q, %d and %#v.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dracpu::sim {

struct FieldError {
  std::string field;   // "spec.devices[3].attributes[dra.cpu/x]"
  std::string reason;  // StatusCause reason: FieldValueRequired, FieldValueInvalid, ...
  std::string body;    // upstream's ErrorBody: "Required value: exactly one ..."
  std::string ToString() const { return field + ": " + body; }  // Error()
};

// Go's %q of a string and %d of an integer, and the text of a nil value.
std::string GoString(std::string_view s);
std::string GoInt(int64_t v);
inline constexpr char kGoNull[] = "null";

// Field paths as field.Path prints them.
inline std::string Child(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}
inline std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}
inline std::string Key(const std::string& path, std::string_view key) {
  return path + "[" + std::string(key) + "]";
}

class FieldErrors {
 public:
  void Required(const std::string& field, std::string_view detail = "");
  void Invalid(const std::string& field, const std::string& value, std::string_view detail);
  void Forbidden(const std::string& field, std::string_view detail);
  void TooLong(const std::string& field, size_t max_bytes);
  void TooMany(const std::string& field, size_t have, size_t max_items);
  void Duplicate(const std::string& field, const std::string& value);
  void NotFound(const std::string& field, const std::string& value);
  void NotSupported(const std::string& field, const std::string& value,
                    const std::vector<std::string>& supported);

  void Append(std::vector<FieldError> more);
  size_t size() const { return errors_.size(); }
  bool empty() const { return errors_.empty(); }
  const std::vector<FieldError>& errors() const { return errors_; }
  std::vector<FieldError> Take() { return std::move(errors_); }

 private:
  void Add(const std::string& field, const char* reason, std::string body);
  std::vector<FieldError> errors_;
};

}  // namespace dracpu::sim
