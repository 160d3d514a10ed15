#include "dra-agent/prepare/resource_claim.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>

#include "common/log_escape.h"
#include "common/untrusted_json.h"

namespace dracpu::dra {
namespace {

using Value = rapidjson::Value;

// `field` may hold keys from the document: escaped, as a hostile key must not forge a log line.
Status Bad(const std::string& field, const std::string& reason) {
  return InvalidArgumentError("ResourceClaim field " + LogEscape(field) + ": " + reason);
}

Result<std::string> StringAt(const Value& obj, const char* key, const std::string& where,
                             bool required) {
  if (!obj.HasMember(key)) {
    if (required) return Bad(where + "." + key, "missing");
    return std::string();
  }
  if (!obj[key].IsString()) return Bad(where + "." + key, "not a string");
  return std::string(obj[key].GetString(), obj[key].GetStringLength());
}

std::string ToJson(const Value& v) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  v.Accept(w);
  return std::string(b.GetString(), b.GetSize());
}

Result<std::vector<std::string>> Strings(const Value& obj, const char* key,
                                         const std::string& where) {
  std::vector<std::string> out;
  if (!obj.HasMember(key)) return out;
  if (!obj[key].IsArray()) return Bad(where + "." + key, "not a list");
  for (const auto& e : obj[key].GetArray()) {
    if (!e.IsString()) return Bad(where + "." + key, "has a non-string entry");
    out.emplace_back(e.GetString(), e.GetStringLength());
  }
  return out;
}

bool AppliesTo(const OpaqueConfigView& c, const std::string& request) {
  if (c.requests.empty()) return true;
  const std::string base = request.substr(0, request.find('/'));
  for (const std::string& r : c.requests) {
    if (r == request || r == base) return true;
  }
  return false;
}

Status ParsePolicy(const Value& p, const std::string& where, PolicyOverride& out) {
  if (!p.IsObject()) return Bad(where + ".policy", "not an object");
  PolicyParser parser;
  for (const auto& m : p.GetObject()) {
    const std::string key(m.name.GetString(), m.name.GetStringLength());
    const std::string field = where + ".policy." + key;
    PolicyValue value;
    if (m.value.IsBool()) {
      value = PolicyValue::Bool(m.value.GetBool());
    } else if (m.value.IsString()) {
      value = PolicyValue::Text(std::string_view(m.value.GetString(), m.value.GetStringLength()));
    } else {
      return Bad(field, "not a boolean or a string");
    }
    if (Status s = parser.Set(key, value); !s.ok()) return Bad(field, s.message());
  }
  Result<PolicyOverride> parsed = parser.Finish();
  if (!parsed.ok()) return Bad(where + ".policy", parsed.status().message());
  out = *parsed;
  return Status::Ok();
}

}  // namespace

Result<ResourceClaimView> ParseResourceClaim(std::string_view json) {
  rapidjson::Document doc;
  RETURN_IF_ERROR(ParseUntrustedJson(json, doc).WithContext("ResourceClaim"));
  if (!doc.IsObject() || !doc.HasMember("metadata") || !doc["metadata"].IsObject()) {
    return Bad("metadata", "missing");
  }
  ResourceClaimView view;
  const Value& meta = doc["metadata"];
  ASSIGN_OR_RETURN(view.uid, StringAt(meta, "uid", "metadata", true));
  ASSIGN_OR_RETURN(view.namespace_name, StringAt(meta, "namespace", "metadata", false));
  ASSIGN_OR_RETURN(view.name, StringAt(meta, "name", "metadata", true));
  if (meta.HasMember("annotations") && meta["annotations"].IsObject()) {
    const Value& a = meta["annotations"];
    if (auto it = a.FindMember("resource.kubernetes.io/pod-claim-name");
        it != a.MemberEnd() && it->value.IsString()) {
      view.pod_claim_name = std::string(it->value.GetString(), it->value.GetStringLength());
    }
  }
  if (!doc.HasMember("status") || !doc["status"].IsObject()) return view;
  const Value& status = doc["status"];
  if (!status.HasMember("allocation") || status["allocation"].IsNull()) return view;
  if (!status["allocation"].IsObject()) return Bad("status.allocation", "not an object");
  view.allocated = true;
  const Value& alloc = status["allocation"];
  if (!alloc.HasMember("devices")) return view;
  const Value& devices = alloc["devices"];
  if (!devices.IsObject()) return Bad("status.allocation.devices", "not an object");
  if (devices.HasMember("results")) {
    if (!devices["results"].IsArray())
      return Bad("status.allocation.devices.results", "not a list");
    int i = 0;
    for (const auto& r : devices["results"].GetArray()) {
      const std::string where = "status.allocation.devices.results[" + std::to_string(i++) + "]";
      if (!r.IsObject()) return Bad(where, "not an object");
      AllocationResultView out;
      ASSIGN_OR_RETURN(out.request, StringAt(r, "request", where, true));
      out.base_request = out.request.substr(0, out.request.find('/'));
      ASSIGN_OR_RETURN(out.driver, StringAt(r, "driver", where, true));
      ASSIGN_OR_RETURN(out.pool, StringAt(r, "pool", where, true));
      ASSIGN_OR_RETURN(out.device, StringAt(r, "device", where, true));
      if (r.HasMember("shareID")) {
        ASSIGN_OR_RETURN(out.share_id, StringAt(r, "shareID", where, true));
      }
      if (r.HasMember("consumedCapacity")) {
        const Value& cc = r["consumedCapacity"];
        if (!cc.IsObject()) return Bad(where + ".consumedCapacity", "not an object");
        if (cc.HasMember("dra.cpu/cpu")) {
          if (!cc["dra.cpu/cpu"].IsString()) {
            return Bad(where + ".consumedCapacity[dra.cpu/cpu]", "not a quantity string");
          }
          out.consumed_cpu = cc["dra.cpu/cpu"].GetString();
        }
      }
      view.results.push_back(std::move(out));
    }
  }
  if (devices.HasMember("config")) {
    if (!devices["config"].IsArray()) return Bad("status.allocation.devices.config", "not a list");
    int i = 0;
    for (const auto& c : devices["config"].GetArray()) {
      const std::string where = "status.allocation.devices.config[" + std::to_string(i++) + "]";
      if (!c.IsObject()) return Bad(where, "not an object");
      OpaqueConfigView out;
      ASSIGN_OR_RETURN(out.source, StringAt(c, "source", where, false));
      ASSIGN_OR_RETURN(out.requests, Strings(c, "requests", where));
      if (!c.HasMember("opaque")) continue;  // another kind of config: not ours
      const Value& opaque = c["opaque"];
      if (!opaque.IsObject()) return Bad(where + ".opaque", "not an object");
      ASSIGN_OR_RETURN(out.driver, StringAt(opaque, "driver", where + ".opaque", true));
      if (opaque.HasMember("parameters")) out.parameters = ToJson(opaque["parameters"]);
      view.configs.push_back(std::move(out));
    }
  }
  return view;
}

Result<int64_t> ParseWholeCpuQuantity(std::string_view q) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("CPU quantity " + LogQuote(q, 64) + " " + why);
  };
  std::string_view digits = q;
  int64_t divisor = 1;
  if (!digits.empty() && digits.back() == 'm') {
    digits.remove_suffix(1);
    divisor = 1000;
  }
  std::string_view fraction;
  if (const size_t dot = digits.find('.'); dot != std::string_view::npos) {
    fraction = digits.substr(dot + 1);
    digits = digits.substr(0, dot);
  }
  int64_t whole = 0;
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), whole);
  if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || whole < 0) {
    return bad("is not a whole number of CPUs");
  }
  for (char c : fraction) {
    if (c != '0') return bad("is a fraction of a CPU; only whole CPUs can be granted");
  }
  if (whole % divisor != 0) return bad("is a fraction of a CPU; only whole CPUs can be granted");
  whole /= divisor;
  if (whole <= 0) return bad("is not positive");
  return whole;
}

Result<RequestConfig> ConfigForRequest(const ResourceClaimView& claim, const std::string& request) {
  RequestConfig out;
  bool have_cpuset = false, have_policy = false;
  for (size_t i = 0; i < claim.configs.size(); ++i) {
    const OpaqueConfigView& c = claim.configs[i];
    if (c.driver != kDriverNameForClaims || !AppliesTo(c, request)) continue;
    const std::string where =
        "status.allocation.devices.config[" + std::to_string(i) + "].opaque.parameters";
    rapidjson::Document p;
    if (!ParseUntrustedJson(c.parameters, p).ok() || !p.IsObject()) {
      return Bad(where, "not a JSON object");
    }
    if (!p.HasMember("apiVersion")) return Bad(where + ".apiVersion", "missing (must be v1alpha1)");
    if (!p["apiVersion"].IsString())
      return Bad(where + ".apiVersion", "not a string (must be v1alpha1)");
    if (const std::string_view v = p["apiVersion"].GetString(); v != "v1alpha1") {
      return Bad(where + ".apiVersion", LogQuote(v, 64) + " is not supported (must be v1alpha1)");
    }
    for (const auto& m : p.GetObject()) {
      const std::string key = m.name.GetString();
      if (key == "apiVersion") continue;
      if (key == "cpuConfig") {
        if (c.source == "FromClass") {
          return Bad(where, "a cpuConfig from the DeviceClass is not allowed; put it in the claim");
        }
        if (have_cpuset) return Bad(where, "more than one cpuConfig for request " + request);
        have_cpuset = true;
        if (!m.value.IsObject() || !m.value.HasMember("cpuset") || !m.value["cpuset"].IsString()) {
          return Bad(where + ".cpuConfig.cpuset", "missing or not a string");
        }
        for (const auto& k : m.value.GetObject()) {
          if (std::string_view(k.name.GetString()) != "cpuset") {
            return Bad(where + ".cpuConfig." + k.name.GetString(), "unknown key");
          }
        }
        auto set = CpuSet::ParseList(m.value["cpuset"].GetString(), "cpuConfig.cpuset");
        if (!set.ok()) return Bad(where + ".cpuConfig.cpuset", set.status().message());
        if (set->Empty()) return Bad(where + ".cpuConfig.cpuset", "is empty");
        out.cpuset = *set;
      } else if (key == "policy") {
        if (have_policy) return Bad(where, "more than one policy for request " + request);
        have_policy = true;
        RETURN_IF_ERROR(ParsePolicy(m.value, where, out.policy));
      } else {
        return Bad(where + "." + key, "unknown key");
      }
    }
  }
  return out;
}

}  // namespace dracpu::dra
