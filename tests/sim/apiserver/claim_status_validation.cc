#include "tests/sim/apiserver/claim_status_validation.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <regex>
#include <set>
#include <string>

#include "tests/sim/apiserver/validation.h"
#include "tests/sim/apiserver/validation_internal.h"

namespace dracpu::sim {
namespace {

using internal::Find;
using internal::StringOf;
using rapidjson::Value;

constexpr size_t kMaxConditionMessage = 32768;
constexpr size_t kMaxConditionReason = 1024;

// Upstream's DeviceID String(): driver/pool/device, with /shareID for a share.
std::string DeviceId(const Value& v) {
  std::string id = StringOf(Find(v, "driver")) + "/" + StringOf(Find(v, "pool")) + "/" +
                   StringOf(Find(v, "device"));
  if (const std::string share = StringOf(Find(v, "shareID")); !share.empty()) id += "/" + share;
  return id;
}

std::string Serialized(const Value& v) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  v.Accept(w);
  return std::string(b.GetString(), b.GetSize());
}

void ValidateConditions(const Value& conditions, const std::string& field, FieldErrors& e) {
  if (!conditions.IsArray()) return;
  if (conditions.Size() > kMaxDeviceStatusConditions) {
    e.TooMany(field, conditions.Size(), kMaxDeviceStatusConditions);
  }
  static const std::regex kReason("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$");
  std::set<std::string> types;
  for (rapidjson::SizeType j = 0; j < conditions.Size(); ++j) {
    const Value& c = conditions[j];
    const std::string at = Index(field, j);
    const std::string type = StringOf(Find(c, "type"));
    if (type.empty()) {
      e.Required(Child(at, "type"), "must be set");
    } else {
      for (const std::string& m : IsQualifiedName(type))
        e.Invalid(Child(at, "type"), GoString(type), m);
      if (!types.insert(type).second) e.Duplicate(Child(at, "type"), GoString(type));
    }
    const std::string status = StringOf(Find(c, "status"));
    if (status != "True" && status != "False" && status != "Unknown") {
      e.NotSupported(Child(at, "status"), GoString(status), {"False", "True", "Unknown"});
    }
    if (const Value* g = Find(c, "observedGeneration");
        g != nullptr && g->IsInt64() && g->GetInt64() < 0) {
      e.Invalid(Child(at, "observedGeneration"), GoInt(g->GetInt64()),
                "must be greater than or equal to zero");
    }
    if (StringOf(Find(c, "lastTransitionTime")).empty()) {
      e.Required(Child(at, "lastTransitionTime"), "must be set");
    }
    const std::string reason = StringOf(Find(c, "reason"));
    if (reason.empty()) {
      e.Required(Child(at, "reason"), "must be set");
    } else if (reason.size() > kMaxConditionReason) {
      e.TooLong(Child(at, "reason"), kMaxConditionReason);
    } else if (!std::regex_match(reason, kReason)) {
      e.Invalid(Child(at, "reason"), GoString(reason),
                "a condition reason must start with alphabetic character, optionally followed by "
                "a string of alphanumeric characters or '_,:', and must end with an alphanumeric "
                "character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or "
                "'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is "
                "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')");
    }
    if (StringOf(Find(c, "message")).size() > kMaxConditionMessage) {
      e.TooLong(Child(at, "message"), kMaxConditionMessage);
    }
  }
}

}  // namespace

std::vector<FieldError> ValidateClaimDeviceStatus(const Value& devices, const Value* allocation) {
  FieldErrors e;
  const std::string field = "status.devices";
  if (!devices.IsArray()) return e.Take();
  std::set<std::string> allocated;
  if (allocation != nullptr) {
    if (const Value* d = Find(*allocation, "devices"); d != nullptr) {
      if (const Value* results = Find(*d, "results"); results != nullptr && results->IsArray()) {
        for (const Value& r : results->GetArray()) allocated.insert(DeviceId(r));
      }
    }
  }
  std::set<std::string> seen;
  for (rapidjson::SizeType i = 0; i < devices.Size(); ++i) {
    const Value& d = devices[i];
    const std::string at = Index(field, i);
    internal::ValidateDriverName(StringOf(Find(d, "driver")), Child(at, "driver"), e);
    const std::string pool = StringOf(Find(d, "pool"));
    if (pool.empty()) {
      e.Required(Child(at, "pool"));
    } else {
      for (const std::string& m : IsDns1123Subdomain(pool))
        e.Invalid(Child(at, "pool"), GoString(pool), m);
    }
    internal::ValidateDnsLabel(StringOf(Find(d, "device")), Child(at, "device"), e);
    const std::string id = DeviceId(d);
    if (!seen.insert(id).second) {
      e.Duplicate(at, GoString(id));
    } else if (allocated.count(id) == 0) {
      e.Invalid(at, GoString(id), "must be an allocated device in the claim");
    }
    if (const Value* c = Find(d, "conditions"); c != nullptr) {
      ValidateConditions(*c, Child(at, "conditions"), e);
    }
    if (const Value* data = Find(d, "data"); data != nullptr) {
      const std::string raw = Serialized(*data);
      if (raw.size() > kMaxDeviceStatusDataBytes) {
        e.TooLong(Child(at, "data"), kMaxDeviceStatusDataBytes);
      } else if (!data->IsObject()) {
        e.Invalid(Child(at, "data"), "\"<value omitted>\"",
                  "error parsing data as JSON: json: cannot unmarshal " +
                      std::string(data->IsArray()    ? "array"
                                  : data->IsString() ? "string"
                                                     : "number") +
                      " into Go value of type map[string]interface {}");
      }
    }
  }
  return e.Take();
}

}  // namespace dracpu::sim
