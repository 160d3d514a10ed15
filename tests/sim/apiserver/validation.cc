#include "tests/sim/apiserver/validation.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "tests/sim/apiserver/validation_internal.h"

namespace dracpu::sim {
namespace {

using internal::Find;
using internal::SizeOf;
using internal::StringOf;
using rapidjson::Value;

constexpr size_t kMaxDriverLength = 63;
constexpr size_t kMaxPoolNameLength = 253;
constexpr size_t kMaxDevices = 128;
constexpr size_t kMaxDevicesWithAdvancedFeatures = 64;  // taints, counters or list attributes
constexpr size_t kMaxCounterSets = 8;
constexpr size_t kMaxAnnotationBytes = 256 * 1024;

constexpr char kLabelFmt[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr char kLabelMsg[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character";
constexpr char kSubdomainMsg[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character";
constexpr char kQualifiedFmt[] = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr char kQualifiedMsg[] =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";

std::string SubdomainFmt() { return std::string(kLabelFmt) + "(\\." + kLabelFmt + ")*"; }

// apimachinery's RegexError.
std::string RegexError(const std::string& msg, const std::string& fmt,
                       std::initializer_list<const char*> examples) {
  std::string out = msg + " (e.g. ";
  bool first = true;
  for (const char* e : examples) {
    out += (first ? "" : " or ") + std::string("'") + e + "', ";
    first = false;
  }
  return out + "regex used for validation is '" + fmt + "')";
}

std::string MaxLen(size_t n) { return "must be no more than " + std::to_string(n) + " characters"; }

// The patterns of apimachinery, matched by hand (they are plain character classes; std::regex
// is far too slow for the corpus tests, which validate millions of names).
bool IsAlnumLower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool MatchesLabel(std::string_view s) {
  if (s.empty() || !IsAlnumLower(s.front()) || !IsAlnumLower(s.back())) return false;
  for (char c : s) {
    if (!IsAlnumLower(c) && c != '-') return false;
  }
  return true;
}

// label(\.label)*
bool MatchesSubdomain(std::string_view s) {
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    if (!MatchesLabel(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool MatchesQualified(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// [A-Za-z_][A-Za-z0-9_]*
bool MatchesCIdentifier(std::string_view s) {
  if (s.empty() || (!std::isalpha(static_cast<unsigned char>(s.front())) && s.front() != '_')) {
    return false;
  }
  for (char c : s) {
    if (!IsAlnum(c) && c != '_') return false;
  }
  return true;
}

// The three node selection fields of a spec that are set, as upstream lists them.
std::vector<std::string> NodeSelectionFields(const Value& spec, FieldErrors& e) {
  std::vector<std::string> set;
  if (const Value* name = Find(spec, "nodeName")) {
    if (!StringOf(name).empty()) {
      set.push_back("`nodeName`");
      internal::ValidateNodeName(StringOf(name), "spec.nodeName", e);
    } else {
      e.Invalid("spec.nodeName", GoString(""), "must be either unset or set to a non-empty string");
    }
  }
  if (const Value* selector = Find(spec, "nodeSelector")) {
    set.push_back("`nodeSelector`");
    internal::ValidateNodeSelector(*selector, "spec.nodeSelector", e);
    if (SizeOf(*selector, "nodeSelectorTerms") != 1) {
      e.Invalid("spec.nodeSelector.nodeSelectorTerms", "[]core.NodeSelectorTerm{...}",
                "must have exactly one node selector term");
    }
  }
  for (const char* k : {"allNodes", "perDeviceNodeSelection"}) {
    const Value* v = Find(spec, k);
    if (v == nullptr) continue;
    if (v->IsBool() && v->GetBool()) {
      set.push_back("`" + std::string(k) + "`");
    } else {
      e.Invalid("spec." + std::string(k), "false", "must be either unset or set to true");
    }
  }
  return set;
}

void ValidateMetadata(const Value& slice, const Value* old_slice, FieldErrors& e) {
  const Value* meta = Find(slice, "metadata");
  static const Value kEmpty(rapidjson::kObjectType);
  const Value& m = meta != nullptr ? *meta : kEmpty;
  const std::string name = StringOf(Find(m, "name"));
  const std::string generate = StringOf(Find(m, "generateName"));
  if (!generate.empty()) {
    std::string masked = generate;
    if (masked.back() == '-') masked.back() = 'a';
    for (const std::string& msg : IsDns1123Subdomain(masked)) {
      e.Invalid("metadata.generateName", GoString(generate), msg);
    }
  }
  if (name.empty()) {
    if (generate.empty()) e.Required("metadata.name", "name or generateName is required");
  } else {
    for (const std::string& msg : IsDns1123Subdomain(name)) {
      e.Invalid("metadata.name", GoString(name), msg);
    }
  }
  if (!StringOf(Find(m, "namespace")).empty()) {
    e.Forbidden("metadata.namespace", "not allowed on this type");
  }
  if (const Value* labels = Find(m, "labels"); labels != nullptr && labels->IsObject()) {
    for (const auto& l : labels->GetObject()) {
      internal::ValidateLabelName(l.name.GetString(), "metadata.labels", e);
      for (const std::string& msg : IsValidLabelValue(StringOf(&l.value))) {
        e.Invalid("metadata.labels", GoString(StringOf(&l.value)), msg);
      }
    }
  }
  if (const Value* ann = Find(m, "annotations"); ann != nullptr && ann->IsObject()) {
    size_t total = 0;
    for (const auto& a : ann->GetObject()) {
      std::string key = a.name.GetString();
      std::string lower = key;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      for (const std::string& msg : IsQualifiedName(lower)) {
        e.Invalid("metadata.annotations", GoString(key), msg);
      }
      total += key.size() + StringOf(&a.value).size();
    }
    if (total > kMaxAnnotationBytes) e.TooLong("metadata.annotations", kMaxAnnotationBytes);
  }
  if (const Value* owners = Find(m, "ownerReferences"); owners != nullptr && owners->IsArray()) {
    // Upstream validates each reference on the list's path, without an index.
    const std::string f = "metadata.ownerReferences";
    std::vector<std::string> controllers;
    for (const Value& o : owners->GetArray()) {
      const std::string api_version = StringOf(Find(o, "apiVersion"));
      // schema.ParseGroupVersion: "v1", "group/v1"; a second slash is an error (no version).
      std::string version = api_version;
      if (const size_t slash = api_version.find('/'); slash != std::string::npos) {
        version = api_version.find('/', slash + 1) != std::string::npos
                      ? ""
                      : api_version.substr(slash + 1);
      }
      if (version.empty()) {
        e.Invalid(f + ".apiVersion", GoString(api_version), "version must not be empty");
      }
      for (const char* k : {"kind", "name", "uid"}) {
        if (StringOf(Find(o, k)).empty()) e.Invalid(f + "." + k, GoString(""), "must not be empty");
      }
      const Value* controller = Find(o, "controller");
      if (controller != nullptr && controller->IsBool() && controller->GetBool()) {
        controllers.push_back(StringOf(Find(o, "kind")) + "/" + StringOf(Find(o, "name")));
      }
    }
    if (controllers.size() > 1) {
      std::string list;
      for (const std::string& c : controllers) list += (list.empty() ? "" : ", ") + c;
      e.Invalid(f, "[]v1.OwnerReference{...}",
                "Only one reference can have Controller set to true. Found \"true\" in "
                "references for " +
                    list);
    }
  }
  if (const Value* finalizers = Find(m, "finalizers"); finalizers != nullptr) {
    for (const Value& f : finalizers->GetArray()) {
      const std::string fin = StringOf(&f);
      for (const std::string& msg : IsQualifiedName(fin)) {
        e.Invalid("metadata.finalizers", GoString(fin), msg);
      }
      static const std::set<std::string> kStandard = {"kubernetes", "orphan", "foregroundDeletion"};
      if (fin.find('/') == std::string::npos && kStandard.count(fin) == 0) {
        e.Invalid("metadata.finalizers", GoString(fin),
                  "name is neither a standard finalizer name nor is it fully qualified");
      }
    }
  }
  if (old_slice == nullptr) return;
  const Value* old_meta = Find(*old_slice, "metadata");
  if (old_meta == nullptr) return;
  if (name != StringOf(Find(*old_meta, "name"))) {
    e.Invalid("metadata.name", GoString(name), "field is immutable");
  }
  for (const char* k : {"uid", "creationTimestamp"}) {
    const std::string now = StringOf(Find(m, k));
    if (!now.empty() && now != StringOf(Find(*old_meta, k))) {
      e.Invalid("metadata." + std::string(k), GoString(now), "field is immutable");
    }
  }
  if (StringOf(Find(m, "resourceVersion")).empty()) {
    e.Invalid("metadata.resourceVersion", "0x0", "must be specified for an update");
  }
}

void ValidatePool(const Value* pool, FieldErrors& e) {
  static const Value kEmpty(rapidjson::kObjectType);
  const Value& p = pool != nullptr ? *pool : kEmpty;
  const std::string name = StringOf(Find(p, "name"));
  if (name.empty()) {
    e.Required("spec.pool.name");
  } else {
    if (name.size() > kMaxPoolNameLength) e.TooLong("spec.pool.name", kMaxPoolNameLength);
    size_t start = 0;
    while (true) {
      const size_t end = name.find('/', start);
      const std::string part = name.substr(start, end == std::string::npos ? end : end - start);
      for (const std::string& msg : IsDns1123Subdomain(part)) {
        e.Invalid("spec.pool.name", GoString(part), msg);
      }
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  const Value* count = Find(p, "resourceSliceCount");
  const int64_t n = count != nullptr && count->IsInt64() ? count->GetInt64() : 0;
  if (n <= 0) e.Invalid("spec.pool.resourceSliceCount", GoInt(n), "must be greater than zero");
  const Value* generation = Find(p, "generation");
  if (generation != nullptr && generation->IsInt64() && generation->GetInt64() < 0) {
    e.Invalid("spec.pool.generation", GoInt(generation->GetInt64()),
              "must be greater than or equal to zero");
  }
}

bool AnyDeviceHas(const Value* devices, const char* key) {
  if (devices == nullptr || !devices->IsArray()) return false;
  for (const Value& d : devices->GetArray()) {
    if (SizeOf(d, key) > 0) return true;
  }
  return false;
}

bool HaveListAttributes(const Value* devices) {
  if (devices == nullptr || !devices->IsArray()) return false;
  for (const Value& d : devices->GetArray()) {
    const Value* attrs = Find(d, "attributes");
    if (attrs == nullptr || !attrs->IsObject()) continue;
    for (const auto& a : attrs->GetObject()) {
      for (const char* k : {"ints", "bools", "strings", "versions"}) {
        if (Find(a.value, k) != nullptr) return true;
      }
    }
  }
  return false;
}

const Value* OldDevice(const Value* old_spec, const std::string& name) {
  const Value* devices = old_spec == nullptr ? nullptr : Find(*old_spec, "devices");
  if (devices == nullptr || !devices->IsArray()) return nullptr;
  for (const Value& d : devices->GetArray()) {
    if (StringOf(Find(d, "name")) == name) return &d;
  }
  return nullptr;
}

void ValidatePartitionTypeAttribute(const Value& spec, FieldErrors& e) {
  const std::string name = StringOf(Find(spec, "partitionTypeAttribute"));
  const Value* devices = Find(spec, "devices");
  if (!AnyDeviceHas(devices, "consumesCounters")) {
    e.Invalid("spec.partitionTypeAttribute", GoString(name),
              "may only be set on a slice which declares devices that consume counters");
    return;
  }
  // The name's format is declarative: a fully qualified name (domain/ID).
  const size_t slash = name.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size() ||
      name.find('/', slash + 1) != std::string::npos) {
    e.Invalid("spec.partitionTypeAttribute", GoString(name),
              "a fully qualified name must be a domain and a name separated by a slash");
    return;
  }
  const std::string driver = StringOf(Find(spec, "driver"));
  const std::string bare = name.rfind(driver + "/", 0) == 0 ? name.substr(driver.size() + 1) : "";
  for (rapidjson::SizeType i = 0; i < devices->Size(); ++i) {
    const Value& d = (*devices)[i];
    if (SizeOf(d, "consumesCounters") == 0) continue;
    const std::string path = "spec.devices[" + std::to_string(i) + "].attributes[" + name + "]";
    const Value* attrs = Find(d, "attributes");
    const Value* attr = attrs == nullptr ? nullptr : Find(*attrs, name.c_str());
    if (attr == nullptr && !bare.empty() && attrs != nullptr) attr = Find(*attrs, bare.c_str());
    if (attr == nullptr) {
      e.Required(path,
                 "device consumes counters and `partitionTypeAttribute` names this attribute, so "
                 "it must be set");
    } else if (Find(*attr, "string") == nullptr) {
      e.Invalid(path, "resource.DeviceAttribute{...}",
                "must be a string value because `partitionTypeAttribute` names this attribute");
    }
  }
}

void ValidateSkipNodeOperations(const Value& spec, FieldErrors& e) {
  const Value* ops = Find(spec, "skipNodeOperations");
  if (ops == nullptr || !ops->IsArray()) return;
  // Declarative: an enum and a set.
  static const std::vector<std::string> kValues = {"*", "NodePrepareResources",
                                                   "NodeUnprepareResources"};
  std::set<std::string> seen;
  for (rapidjson::SizeType i = 0; i < ops->Size(); ++i) {
    const std::string op = StringOf(&(*ops)[i]);
    const std::string path = "spec.skipNodeOperations[" + std::to_string(i) + "]";
    if (std::find(kValues.begin(), kValues.end(), op) == kValues.end()) {
      e.NotSupported(path, GoString(op), kValues);
    }
    if (!seen.insert(op).second) e.Duplicate(path, GoString(op));
  }
  if (seen.count("NodePrepareResources") && !seen.count("NodeUnprepareResources") &&
      !seen.count("*")) {
    e.Invalid("spec.skipNodeOperations", "[]resource.SkipNodeOperation{...}",
              "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also "
              "skipped");
  }
}

void ValidateSpec(const Value& spec, const Value* old_spec, const FeatureGates& gates,
                  FieldErrors& e) {
  const std::string driver = StringOf(Find(spec, "driver"));
  internal::ValidateDriverName(driver, "spec.driver", e);
  const Value* pool = Find(spec, "pool");
  ValidatePool(pool, e);
  if (old_spec != nullptr) {
    const Value* old_pool = Find(*old_spec, "pool");
    const std::string pool_name = pool == nullptr ? "" : StringOf(Find(*pool, "name"));
    if (pool_name != (old_pool == nullptr ? "" : StringOf(Find(*old_pool, "name")))) {
      e.Invalid("spec.pool.name", GoString(pool_name), "field is immutable");
    }
    if (driver != StringOf(Find(*old_spec, "driver"))) {
      e.Invalid("spec.driver", GoString(driver), "field is immutable");
    }
    const Value* node = Find(spec, "nodeName");
    const Value* old_node = Find(*old_spec, "nodeName");
    if ((node == nullptr) != (old_node == nullptr) || StringOf(node) != StringOf(old_node)) {
      e.Invalid("spec.nodeName", node == nullptr ? kGoNull : GoString(StringOf(node)),
                "field is immutable");
    }
  }
  const std::vector<std::string> set = NodeSelectionFields(spec, e);
  if (set.empty()) {
    e.Required("spec",
               "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
               "is required");
  } else if (set.size() > 1) {
    std::string joined;
    for (const std::string& s : set) joined += (joined.empty() ? "" : ", ") + s;
    e.Invalid("spec", GoString("{" + joined + "}"),
              "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
              "is required, but multiple fields are set");
  }
  const Value* devices = Find(spec, "devices");
  const Value* counters = Find(spec, "sharedCounters");
  if (devices != nullptr && counters != nullptr) {
    e.Invalid("spec", GoString(""), "only one of `sharedCounters` or `devices` is allowed");
  }
  const Value* per_device = Find(spec, "perDeviceNodeSelection");
  const bool per_device_nodes = per_device != nullptr && per_device->GetBool();
  if (devices != nullptr) {
    const size_t max = AnyDeviceHas(devices, "taints") ||
                               AnyDeviceHas(devices, "consumesCounters") ||
                               HaveListAttributes(devices)
                           ? kMaxDevicesWithAdvancedFeatures
                           : kMaxDevices;
    if (devices->Size() > max) {
      e.TooMany("spec.devices", devices->Size(), max);  // short-circuits: items not validated
    } else {
      std::set<std::string> names;
      for (rapidjson::SizeType i = 0; i < devices->Size(); ++i) {
        const Value& d = (*devices)[i];
        const std::string name = StringOf(Find(d, "name"));
        internal::ValidateDevice(d, OldDevice(old_spec, name), Index("spec.devices", i),
                                 per_device_nodes, gates, e);
      }
      for (rapidjson::SizeType i = 0; i < devices->Size(); ++i) {
        const std::string name = StringOf(Find((*devices)[i], "name"));
        if (!names.insert(name).second) e.Duplicate(Index("spec.devices", i), GoString(name));
      }
    }
  }
  if (counters != nullptr) {
    if (counters->Size() > kMaxCounterSets) {
      e.TooMany("spec.sharedCounters", counters->Size(), kMaxCounterSets);
    } else {
      std::set<std::string> names;
      for (rapidjson::SizeType i = 0; i < counters->Size(); ++i) {
        internal::ValidateCounterSet((*counters)[i], Index("spec.sharedCounters", i), e);
      }
      for (rapidjson::SizeType i = 0; i < counters->Size(); ++i) {
        const std::string name = StringOf(Find((*counters)[i], "name"));
        if (!names.insert(name).second) {
          e.Duplicate(Index("spec.sharedCounters", i), GoString(name));
        }
      }
    }
  }
  if (Find(spec, "partitionTypeAttribute") != nullptr) ValidatePartitionTypeAttribute(spec, e);
  ValidateSkipNodeOperations(spec, e);
}

}  // namespace

namespace internal {

void ValidateDriverName(const std::string& name, const std::string& field, FieldErrors& e) {
  if (name.empty()) {
    e.Required(field);
    return;
  }
  if (name.size() > kMaxDriverLength) {
    e.TooLong(field, kMaxDriverLength);
    return;
  }
  std::string lower = name;  // upper case only warns upstream
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  for (const std::string& msg : IsDns1123Subdomain(lower)) e.Invalid(field, GoString(name), msg);
}

void ValidateNodeName(const std::string& name, const std::string& field, FieldErrors& e) {
  for (const std::string& msg : IsDns1123Subdomain(name)) e.Invalid(field, GoString(name), msg);
}

void ValidateDnsLabel(const std::string& name, const std::string& field, FieldErrors& e) {
  for (const std::string& msg : IsDns1123Label(name)) e.Invalid(field, GoString(name), msg);
}

void ValidateLabelName(const std::string& name, const std::string& field, FieldErrors& e) {
  for (const std::string& msg : IsQualifiedName(name)) e.Invalid(field, GoString(name), msg);
}

void ValidateNodeSelector(const Value& selector, const std::string& field, FieldErrors& e) {
  const std::string terms_path = field + ".nodeSelectorTerms";
  const Value* terms = Find(selector, "nodeSelectorTerms");
  if (terms == nullptr || terms->Empty()) {
    e.Required(terms_path, "must have at least one node selector term");
    return;
  }
  for (rapidjson::SizeType t = 0; t < terms->Size(); ++t) {
    const Value& term = (*terms)[t];
    const std::string tp = Index(terms_path, t);
    if (const Value* exprs = Find(term, "matchExpressions")) {
      for (rapidjson::SizeType j = 0; j < exprs->Size(); ++j) {
        const Value& r = (*exprs)[j];
        const std::string rp = Index(tp + ".matchExpressions", j);
        const std::string op = StringOf(Find(r, "operator"));
        const size_t values = SizeOf(r, "values");
        if (op == "In" || op == "NotIn") {
          if (values == 0) {
            e.Required(rp + ".values", "must be specified when `operator` is 'In' or 'NotIn'");
          }
        } else if (op == "Exists" || op == "DoesNotExist") {
          if (values > 0) {
            e.Forbidden(rp + ".values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
          }
        } else if (op == "Gt" || op == "Lt") {
          if (values != 1) {
            e.Required(rp + ".values",
                       "must be specified single value when `operator` is 'Lt' or 'Gt'");
          }
        } else {
          e.Invalid(rp + ".operator", GoString(op), "not a valid selector operator");
        }
        ValidateLabelName(StringOf(Find(r, "key")), rp + ".key", e);
        if (const Value* vs = Find(r, "values")) {
          for (rapidjson::SizeType k = 0; k < vs->Size(); ++k) {
            for (const std::string& msg : IsValidLabelValue(StringOf(&(*vs)[k]))) {
              e.Invalid(Index(rp + ".values", k), GoString(StringOf(&(*vs)[k])), msg);
            }
          }
        }
      }
    }
    if (const Value* fields = Find(term, "matchFields")) {
      for (rapidjson::SizeType j = 0; j < fields->Size(); ++j) {
        const Value& r = (*fields)[j];
        const std::string rp = Index(tp + ".matchFields", j);
        const std::string op = StringOf(Find(r, "operator"));
        if (op == "In" || op == "NotIn") {
          if (SizeOf(r, "values") != 1) {
            e.Required(rp + ".values",
                       "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                       "selector");
          }
        } else {
          e.Invalid(rp + ".operator", GoString(op), "not a valid selector operator");
        }
        const std::string key = StringOf(Find(r, "key"));
        if (key != "metadata.name") {
          e.Invalid(rp + ".key", GoString(key), "not a valid field selector key");
        } else if (const Value* vs = Find(r, "values")) {
          for (rapidjson::SizeType k = 0; k < vs->Size(); ++k) {
            ValidateNodeName(StringOf(&(*vs)[k]), Index(rp + ".values", k), e);
          }
        }
      }
    }
  }
}

}  // namespace internal

std::vector<std::string> IsDns1123Label(const std::string& s) {
  std::vector<std::string> errs;
  if (s.size() > 63) errs.push_back(MaxLen(63));
  if (!MatchesLabel(s)) {
    if (MatchesSubdomain(s)) {
      errs.push_back("must not contain dots");
    } else {
      errs.push_back(RegexError(kLabelMsg, kLabelFmt, {"my-name", "123-abc"}));
    }
  }
  return errs;
}

std::vector<std::string> IsDns1123Subdomain(const std::string& s) {
  std::vector<std::string> errs;
  if (s.size() > 253) errs.push_back(MaxLen(253));
  if (!MatchesSubdomain(s)) {
    errs.push_back(RegexError(kSubdomainMsg, SubdomainFmt(), {"example.com"}));
  }
  return errs;
}

std::vector<std::string> IsCIdentifier(const std::string& s) {
  constexpr char kFmt[] = "[A-Za-z_][A-Za-z0-9_]*";
  if (MatchesCIdentifier(s)) return {};
  return {RegexError(
      "a valid C identifier must start with alphabetic character or '_', followed by a string of "
      "alphanumeric characters or '_'",
      kFmt, {"my_name", "MY_NAME", "MyName"})};
}

std::vector<std::string> IsQualifiedName(const std::string& s) {
  std::vector<std::string> errs;
  const std::string pattern =
      RegexError(kQualifiedMsg, kQualifiedFmt, {"MyName", "my.name", "123-abc"});
  std::string name = s;
  const size_t slash = s.find('/');
  if (slash != std::string::npos) {
    if (s.find('/', slash + 1) != std::string::npos) {
      return {"a qualified name " + pattern +
              " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"};
    }
    const std::string prefix = s.substr(0, slash);
    name = s.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (const std::string& msg : IsDns1123Subdomain(prefix))
        errs.push_back("prefix part " + msg);
    }
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errs.push_back("name part " + MaxLen(63));
  }
  if (!MatchesQualified(name)) errs.push_back("name part " + pattern);
  return errs;
}

std::vector<std::string> IsValidLabelValue(const std::string& s) {
  std::vector<std::string> errs;
  if (s.size() > 63) errs.push_back(MaxLen(63));
  const std::string fmt = std::string("(") + kQualifiedFmt + ")?";
  if (!s.empty() && !MatchesQualified(s)) {
    errs.push_back(RegexError(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character",
        fmt, {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

bool IsSemver(const std::string& s) {
  static const std::regex re(
      "(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)"
      "(-(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]"
      "*))"
      "*)?(\\+[0-9a-zA-Z-]+(\\.[0-9a-zA-Z-]+)*)?");
  return std::regex_match(s, re);
}

std::vector<FieldError> ValidateResourceSlice(const Value& slice, const Value* old_slice,
                                              const FeatureGates& gates) {
  FieldErrors e;
  ValidateMetadata(slice, old_slice, e);
  static const Value kEmpty(rapidjson::kObjectType);
  const Value* spec = Find(slice, "spec");
  const Value* old_spec = old_slice == nullptr ? nullptr : Find(*old_slice, "spec");
  if (old_slice != nullptr && old_spec == nullptr) old_spec = &kEmpty;
  ValidateSpec(spec != nullptr ? *spec : kEmpty, old_spec, gates, e);
  return e.Take();
}

}  // namespace dracpu::sim
