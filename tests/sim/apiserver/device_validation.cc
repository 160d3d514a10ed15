// Devices and counter sets of a ResourceSlice (upstream validateDevice, validateCounterSet and
// what they call): rules 24-60 of ../shared/spec/resourceslice-validation.md.
#include <set>

#include "tests/sim/apiserver/quantity.h"
#include "tests/sim/apiserver/validation.h"
#include "tests/sim/apiserver/validation_internal.h"

namespace dracpu::sim::internal {
namespace {

constexpr size_t kMaxAttributesAndCapacities = 32;
constexpr size_t kMaxAttributeValues = 48;
constexpr size_t kMaxAttributeValueLength = 64;
constexpr size_t kMaxIdLength = 32;
constexpr size_t kMaxKeyLength = 63 + 1 + 32;  // domain/ID, for truncating map-key paths
constexpr size_t kMaxCounters = 32;
constexpr size_t kMaxCounterConsumptions = 2;
constexpr size_t kMaxCompatibilityGroups = 2;
constexpr size_t kMaxTaints = 16;
constexpr size_t kMaxBindingConditions = 4;
constexpr size_t kMaxValidValues = 10;
constexpr char kMaxInt64[] = "9223372036854775807";

// upstream truncateIfTooLong: long map keys are shortened in the middle in field paths.
std::string Truncated(const std::string& key, size_t max) {
  max = std::max<size_t>(max, 16);
  if (key.size() <= max) return key;
  const size_t remaining = max - 3;
  return key.substr(0, (remaining + 1) / 2) + "..." + key.substr(key.size() - remaining / 2);
}

Quantity QuantityOf(const Value* v) {
  std::string ignored;
  if (v != nullptr && v->IsString()) {
    if (auto q = Quantity::Parse(v->GetString(), &ignored)) return *q;
  }
  return Quantity::FromInt(0);  // absent: Go's zero Quantity
}

// apiequality.Semantic.DeepEqual for capacity and taint subtrees: quantities by value.
bool SemanticallyEqual(const Value* a, const Value* b) {
  if (a == nullptr || b == nullptr) return a == b;
  if (a->IsString() && b->IsString()) {
    if (std::string_view(a->GetString()) == b->GetString()) return true;
    std::string ignored;
    auto qa = Quantity::Parse(a->GetString(), &ignored);
    auto qb = Quantity::Parse(b->GetString(), &ignored);
    return qa && qb && qa->Compare(*qb) == 0;
  }
  if (a->IsObject() && b->IsObject()) {
    if (a->MemberCount() != b->MemberCount()) return false;
    for (const auto& m : a->GetObject()) {
      if (!SemanticallyEqual(&m.value, Find(*b, m.name.GetString()))) return false;
    }
    return true;
  }
  if (a->IsArray() && b->IsArray()) {
    if (a->Size() != b->Size()) return false;
    for (rapidjson::SizeType i = 0; i < a->Size(); ++i) {
      if (!SemanticallyEqual(&(*a)[i], &(*b)[i])) return false;
    }
    return true;
  }
  return *a == *b;
}

void ValidateCIdentifier(const std::string& id, const std::string& field, FieldErrors& e) {
  if (id.size() > kMaxIdLength) e.TooLong(field, kMaxIdLength);
  for (const std::string& msg : IsCIdentifier(id)) e.Invalid(field, GoString(id), msg);
}

// Rule 29, reported on the map's path.
void ValidateQualifiedName(const std::string& name, const std::string& field, FieldErrors& e) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) {
    ValidateCIdentifier(name, field, e);
    return;
  }
  if (name.find('/', slash + 1) != std::string::npos) {
    e.Invalid(field, GoString(name), "must not contain more than one slash");
    return;
  }
  const std::string domain = name.substr(0, slash);
  const std::string id = name.substr(slash + 1);
  if (domain.empty()) {
    e.Invalid(field, GoString(""), "the domain must not be empty");
  } else {
    ValidateDriverName(domain, field, e);
  }
  if (id.empty()) {
    e.Invalid(field, GoString(""), "the name must not be empty");
  } else {
    ValidateCIdentifier(id, field, e);
  }
}

void ValidateStringValue(const Value& v, const std::string& field, FieldErrors& e) {
  if (v.GetStringLength() > kMaxAttributeValueLength) e.TooLong(field, kMaxAttributeValueLength);
}

void ValidateVersionValue(const Value& v, const std::string& field, FieldErrors& e) {
  if (!IsSemver(v.GetString())) {
    e.Invalid(field, GoString(v.GetString()),
              "must be a string compatible with semver.org spec 2.0.0");
  }
  if (v.GetStringLength() > kMaxAttributeValueLength) e.TooLong(field, kMaxAttributeValueLength);
}

// Rules 30-32.
void ValidateAttribute(const Value& attr, const std::string& field, FieldErrors& e) {
  int fields = 0;
  for (const char* k : {"bool", "int"}) fields += Find(attr, k) != nullptr ? 1 : 0;
  if (const Value* s = Find(attr, "string")) {
    ++fields;
    ValidateStringValue(*s, field + ".string", e);
  }
  if (const Value* v = Find(attr, "version")) {
    ++fields;
    ValidateVersionValue(*v, field + ".version", e);
  }
  static constexpr std::pair<const char*, const char*> kLists[] = {{"bools", "[]bool{}"},
                                                                   {"ints", "[]int64{}"},
                                                                   {"strings", "[]string{}"},
                                                                   {"versions", "[]string{}"}};
  for (const auto& [k, empty] : kLists) {
    const Value* list = Find(attr, k);
    if (list == nullptr) continue;
    ++fields;
    const std::string lf = field + "." + k;
    if (list->Empty()) e.Invalid(lf, empty, "must not be empty if specified");
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      if (std::string_view(k) == "strings") ValidateStringValue((*list)[i], Index(lf, i), e);
      if (std::string_view(k) == "versions") ValidateVersionValue((*list)[i], Index(lf, i), e);
    }
  }
  if (fields == 0) e.Invalid(field, GoString(""), "exactly one value must be specified");
  if (fields > 1)
    e.Invalid(field, "resource.DeviceAttribute{...}", "exactly one value must be specified");
}

size_t AttributeValues(const Value* attrs) {
  size_t n = 0;
  if (attrs == nullptr || !attrs->IsObject()) return 0;
  for (const auto& a : attrs->GetObject()) {
    size_t items = 0;
    for (const char* k : {"bools", "ints", "strings", "versions"}) items += SizeOf(a.value, k);
    n += items == 0 ? 1 : items;
  }
  return n;
}

// The integer path of a validRange bound (rule 54): [0, MaxInt64].
bool InInt64Range(const Quantity& q, const std::string& field, FieldErrors& e) {
  if (q.Sign() < 0) {
    e.Invalid(field, GoString(q.String()), "must be greater than or equal to 0");
    return false;
  }
  std::string ignored;
  if (q.Compare(*Quantity::Parse(kMaxInt64, &ignored)) > 0) {
    e.Invalid(field, GoString(q.String()), "must not be larger than 9223372036854775807");
    return false;
  }
  return true;
}

// Rule 55: value - min is a multiple of step.
void ValidateStep(const Quantity& value, const Quantity& min, const Quantity& step, bool milli,
                  const std::string& field, FieldErrors& e) {
  const auto v = milli ? value.MilliValue() : value.Value();
  const auto m = milli ? min.MilliValue() : min.Value();
  const auto s = milli ? step.MilliValue() : step.Value();
  if (!v || !m || !s || *s == 0) return;  // guarded by the range checks before
  if ((*v - *m) % *s != 0) {
    e.Invalid(field, GoString(value.String()),
              "value is not a multiple of a given step (" + step.String() + ") from (" +
                  min.String() + ")");
  }
}

// Rules 47-55.
void ValidateRange(const Quantity& def, const Quantity& capacity, const Value& range,
                   const std::string& field, const FeatureGates& gates, FieldErrors& e) {
  const Value* min_v = Find(range, "min");
  if (min_v == nullptr) {
    e.Required(field + ".min", "required when validRange is defined");
    return;
  }
  const Quantity min = QuantityOf(min_v);
  if (min.Compare(capacity) > 0) {
    e.Invalid(field + ".min", GoString(min.String()),
              "min is larger than capacity value: " + capacity.String());
  }
  if (def.Compare(min) < 0) {
    e.Invalid(field + ".default", GoString(def.String()),
              "default is less than min: " + min.String());
  }
  const Value* max_v = Find(range, "max");
  const Quantity max = QuantityOf(max_v);
  if (max_v != nullptr) {
    if (min.Compare(max) > 0) {
      e.Invalid(field + ".max", GoString(min.String()), "min is larger than max: " + max.String());
    }
    if (max.Compare(capacity) > 0) {
      e.Invalid(field + ".max", GoString(max.String()),
                "max is larger than capacity value: " + capacity.String());
    }
    if (def.Compare(max) > 0) {
      e.Invalid(field + ".default", GoString(def.String()),
                "default is more than max: " + max.String());
    }
  }
  const Value* step_v = Find(range, "step");
  const Quantity step = QuantityOf(step_v);
  struct Bound {
    const Quantity* q;
    const char* name;
  };
  std::vector<Bound> bounds = {{&def, "default"}, {&min, "min"}};
  if (max_v != nullptr) bounds.push_back({&max, "max"});
  if (step_v != nullptr) bounds.push_back({&step, "step"});
  bool milli = false;
  if (gates.Enabled(Gate::kFractionalCapacityRange)) {
    for (const Bound& b : bounds) milli = milli || b.q->IsFractional();
    if (milli) {
      bool unsafe = false;
      for (const Bound& b : bounds) {
        if (!b.q->IsMilliExact()) {
          e.Invalid(field + "." + b.name, GoString(b.q->String()),
                    "value cannot be represented as a milli value");
          unsafe = true;
        }
      }
      if (unsafe) return;
    }
  }
  if (step_v == nullptr) return;
  if (step.Sign() <= 0) {
    e.Invalid(field + ".step", GoString(step.String()), "must be greater than zero");
    return;
  }
  const Quantity one_step = min.Plus(step);
  if (one_step.Compare(capacity) > 0) {
    e.Invalid(
        field + ".step", GoString(step.String()),
        "one step " + one_step.String() + " is larger than capacity value: " + capacity.String());
  }
  if (!milli) {
    bool safe = true;
    for (const Bound& b : bounds) safe = InInt64Range(*b.q, field + "." + b.name, e) && safe;
    if (!safe) return;
  }
  ValidateStep(def, min, step, milli, field + ".step", e);
  if (max_v != nullptr) ValidateStep(max, min, step, milli, field + ".step", e);
}

// Rules 41, 43-46.
void ValidateValidValues(const Quantity& def, const Quantity& capacity, const Value& values,
                         const std::string& field, const FeatureGates& gates, FieldErrors& e) {
  std::vector<Quantity> options;
  for (const Value& v : values.GetArray()) options.push_back(QuantityOf(&v));
  for (size_t i = 0; i + 1 < options.size(); ++i) {
    if (options[i].Compare(options[i + 1]) > 0) {
      e.Invalid(Index(field, i + 1), GoString(options[i + 1].String()),
                "values must be sorted in ascending order");
    }
  }
  bool found_default = false;
  if (options.size() > kMaxValidValues) {
    e.TooMany(field, options.size(), kMaxValidValues);
  } else {
    std::set<std::string> keys;
    for (size_t i = 0; i < options.size(); ++i) {
      const Quantity& o = options[i];
      if (o.Compare(capacity) > 0) {
        e.Invalid(Index(field, i), GoString(o.String()),
                  "option is larger than capacity value: " + capacity.String());
      }
      if (o.Compare(def) == 0) found_default = true;
    }
    for (size_t i = 0; i < options.size(); ++i) {
      // Duplicates: by integer value, or by exact decimal with DRAFractionalCapacityRange.
      const std::string key = gates.Enabled(Gate::kFractionalCapacityRange)
                                  ? options[i].String()
                                  : std::to_string(options[i].Value().value_or(0));
      if (!keys.insert(key).second) e.Duplicate(Index(field, i), GoString(key));
    }
  }
  if (!found_default) {
    e.Invalid(field, GoString(def.String()),
              "default value is not valid according to the requestPolicy");
  }
}

// Rules 39-55 for one capacity entry.
void ValidateCapacity(const Value& capacity, bool multi, const std::string& field,
                      const FeatureGates& gates, FieldErrors& e) {
  const Value* policy = Find(capacity, "requestPolicy");
  if (policy == nullptr) return;
  const std::string pf = field + ".requestPolicy";
  if (!multi) {
    e.Forbidden(pf, "allowMultipleAllocations must be true");
    return;
  }
  const Value* values = Find(*policy, "validValues");
  const Value* range = Find(*policy, "validRange");
  const bool have_values = values != nullptr && !values->Empty();
  if (have_values && range != nullptr) {
    e.Forbidden(pf,
                "exactly one policy can be specified, cannot specify \"validValues\" and "
                "\"validRange\" at the same time");
    return;
  }
  const Value* def = Find(*policy, "default");
  const Quantity cap = QuantityOf(Find(capacity, "value"));
  if (have_values) {
    if (def == nullptr) {
      e.Required(pf + ".default", "required when validValues is defined");
    } else {
      ValidateValidValues(QuantityOf(def), cap, *values, pf + ".validValues", gates, e);
    }
  } else if (range != nullptr) {
    if (def == nullptr) {
      e.Required(pf + ".default", "required when validRange is defined");
    } else {
      ValidateRange(QuantityOf(def), cap, *range, pf + ".validRange", gates, e);
    }
  }
}

// Rules 56-60.
void ValidateNodeAllocatable(const Value& resources, const Value* capacities,
                             const std::string& field, FieldErrors& e) {
  for (const auto& r : resources.GetObject()) {
    const std::string name = r.name.GetString();
    const std::string kp = Key(field, name);
    if (name != "cpu" && name != "memory" && name.rfind("hugepages-", 0) != 0) {
      e.Invalid(kp, GoString(name), "must be a node allocatable resource name");
    }
    const Value* mapping = Find(r.value, "mapping");
    const Value* overhead = Find(r.value, "overhead");
    if (mapping == nullptr && overhead == nullptr) {
      e.Required(kp, "at least one of mapping or overhead must be set");
    }
    if (mapping != nullptr) {
      const std::string mp = kp + ".mapping";
      const Value* key = Find(*mapping, "capacityKey");
      const Value* cm = Find(*mapping, "capacityMultiplier");
      const Value* dm = Find(*mapping, "deviceMultiplier");
      if (key != nullptr) {
        const std::string k = StringOf(key);
        if (k.empty()) {
          e.Invalid(mp + ".capacityKey", GoString(""), "capacityKey must not be an empty string");
        } else if (capacities == nullptr || Find(*capacities, k.c_str()) == nullptr) {
          e.NotFound(mp + ".capacityKey", GoString(k));
        }
        if (cm == nullptr) {
          e.Required(mp + ".capacityMultiplier",
                     "capacityMultiplier is required when capacityKey is set");
        } else if (QuantityOf(cm).Sign() <= 0) {
          e.Invalid(mp + ".capacityMultiplier", GoString(QuantityOf(cm).String()),
                    "must be positive");
        }
      }
      if (dm != nullptr && QuantityOf(dm).Sign() <= 0) {
        e.Invalid(mp + ".deviceMultiplier", GoString(QuantityOf(dm).String()), "must be positive");
      }
      if (cm != nullptr && key == nullptr) {
        e.Required(mp + ".capacityKey", "capacityKey is required when capacityMultiplier is set");
      }
      // Declarative (+k8s:unionMember): exactly one of capacityKey and deviceMultiplier.
      if ((key != nullptr) == (dm != nullptr)) {
        e.Invalid(mp, "resource.NodeAllocatableMapping{...}",
                  "must specify exactly one of: `capacityKey`, `deviceMultiplier`");
      }
    }
    if (overhead != nullptr) {
      const std::string op = kp + ".overhead";
      const Value* per_pod = Find(*overhead, "perPod");
      const Value* per_container = Find(*overhead, "perContainer");
      if (per_pod == nullptr && per_container == nullptr) {
        e.Invalid(op, GoString(""), "at least one of perPod or perContainer must be set");
        continue;
      }
      for (const auto& [q, name] :
           {std::pair{per_pod, "perPod"}, {per_container, "perContainer"}}) {
        if (q != nullptr && QuantityOf(q).Sign() < 0) {
          e.Invalid(op + "." + name, GoString(QuantityOf(q).String()), "must be non-negative");
        }
      }
    }
  }
}

void ValidateTaint(const Value& taint, const std::string& field, FieldErrors& e) {
  ValidateLabelName(StringOf(Find(taint, "key")), field + ".key", e);
  const std::string value = StringOf(Find(taint, "value"));
  if (!value.empty()) {
    for (const std::string& msg : IsValidLabelValue(value)) {
      e.Invalid(field + ".value", GoString(value), msg);
    }
  }
  const std::string effect = StringOf(Find(taint, "effect"));
  if (effect.empty()) {
    e.Required(field + ".effect");
  } else if (effect != "None" && effect != "NoSchedule" && effect != "NoExecute") {
    e.NotSupported(field + ".effect", GoString(effect), {"NoExecute", "NoSchedule", "None"});
  }
}

// A map of counters (DNS-label keys, any quantity), rule 25/34.
void ValidateCounters(const Value& counters, const std::string& field, FieldErrors& e) {
  if (counters.MemberCount() > kMaxCounters) {
    e.TooMany(field, counters.MemberCount(), kMaxCounters);
    return;
  }
  for (const auto& c : counters.GetObject()) ValidateDnsLabel(c.name.GetString(), field, e);
}

void ValidateCounterConsumption(const Value& c, const std::string& field, FieldErrors& e) {
  const std::string set = StringOf(Find(c, "counterSet"));
  if (set.empty()) {
    e.Required(field + ".counterSet");
  } else {
    ValidateDnsLabel(set, field + ".counterSet", e);
  }
  const Value* counters = Find(c, "counters");
  if (counters == nullptr || counters->MemberCount() == 0) {
    e.Required(field + ".counters");
  } else {
    ValidateCounters(*counters, field + ".counters", e);
  }
  if (const Value* groups = Find(c, "compatibilityGroups")) {  // declarative
    const std::string gf = field + ".compatibilityGroups";
    if (groups->Size() > kMaxCompatibilityGroups) {
      e.TooMany(gf, groups->Size(), kMaxCompatibilityGroups);
      return;
    }
    std::set<std::string> seen;
    for (rapidjson::SizeType i = 0; i < groups->Size(); ++i) {
      const std::string g = StringOf(&(*groups)[i]);
      ValidateDnsLabel(g, Index(gf, i), e);
      if (!seen.insert(g).second) e.Duplicate(Index(gf, i), GoString(g));
    }
  }
}

void ValidateBindingConditions(const Value& device, const std::string& field, FieldErrors& e) {
  const Value* conditions = Find(device, "bindingConditions");
  const Value* failures = Find(device, "bindingFailureConditions");
  std::vector<std::string> cs, fs;
  struct List {
    const Value* list;
    const char* name;
    std::vector<std::string>* out;
  };
  for (const List& l : {List{conditions, "bindingConditions", &cs},
                        List{failures, "bindingFailureConditions", &fs}}) {
    const auto& [list, name, out] = l;
    if (list == nullptr) continue;
    for (const Value& v : list->GetArray()) out->push_back(StringOf(&v));
    const std::string lf = field + "." + name;
    if (out->size() > kMaxBindingConditions) {
      e.TooMany(lf, out->size(), kMaxBindingConditions);
    } else {
      for (size_t i = 0; i < out->size(); ++i) ValidateLabelName((*out)[i], Index(lf, i), e);
    }
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < cs.size(); ++i) {
    if (!seen.insert(cs[i]).second)
      e.Duplicate(Index(field + ".bindingConditions", i), GoString(cs[i]));
  }
  std::set<std::string> seen_failures;
  for (size_t i = 0; i < fs.size(); ++i) {
    const std::string f = Index(field + ".bindingFailureConditions", i);
    if (!seen_failures.insert(fs[i]).second) e.Duplicate(f, GoString(fs[i]));
    if (seen.count(fs[i]) > 0) {
      e.Invalid(f, GoString(fs[i]),
                "bindingFailureConditions must not overlap with bindingConditions");
    }
  }
  if (cs.empty() && !fs.empty()) {
    e.Invalid(field + ".bindingConditions", "[]string(nil)",
              "bindingConditions are required to use bindingFailureConditions");
  }
  if (fs.empty() && !cs.empty()) {
    e.Invalid(field + ".bindingFailureConditions", "[]string(nil)",
              "bindingFailureConditions are required to use bindingConditions");
  }
}

void ValidatePerDeviceNodes(const Value& device, bool per_device, const std::string& field,
                            FieldErrors& e) {
  const Value* node = Find(device, "nodeName");
  const Value* selector = Find(device, "nodeSelector");
  const Value* all = Find(device, "allNodes");
  if (!per_device) {
    if (node != nullptr || selector != nullptr || all != nullptr) {
      e.Invalid(field, kGoNull,
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                "`perDeviceNodeSelection` is set to true in the ResourceSlice spec");
    }
    return;
  }
  std::vector<std::string> set;
  if (node != nullptr) {
    if (!StringOf(node).empty()) {
      set.push_back("`nodeName`");
      ValidateNodeName(StringOf(node), field + ".nodeName", e);
    } else {
      e.Invalid(field + ".nodeName", GoString(""), "must not be empty");
    }
  }
  if (selector != nullptr) {
    set.push_back("`nodeSelector`");
    ValidateNodeSelector(*selector, field + ".nodeSelector", e);
  }
  if (all != nullptr) {
    if (all->GetBool()) {
      set.push_back("`allNodes`");
    } else {
      e.Invalid(field + ".allNodes", "false", "must be either unset or set to true");
    }
  }
  const char* kWhich =
      "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
      "`perDeviceNodeSelection` is set to true in the ResourceSlice spec";
  if (set.empty()) e.Required(field, kWhich);
  if (set.size() > 1) {
    std::string joined;
    for (const std::string& s : set) joined += (joined.empty() ? "" : ", ") + s;
    e.Invalid(field, GoString("{" + joined + "}"), kWhich);
  }
}

}  // namespace

void ValidateDevice(const Value& device, const Value* old_device, const std::string& field,
                    bool per_device_node_selection, const FeatureGates& gates, FieldErrors& e) {
  const Value* multi_v = Find(device, "allowMultipleAllocations");
  const bool multi = multi_v != nullptr && multi_v->GetBool();
  ValidateDnsLabel(StringOf(Find(device, "name")), field + ".name", e);
  const Value* attrs = Find(device, "attributes");
  const Value* caps = Find(device, "capacity");
  const size_t entries =
      (attrs != nullptr ? attrs->MemberCount() : 0) + (caps != nullptr ? caps->MemberCount() : 0);
  if (entries > kMaxAttributesAndCapacities) {
    e.Invalid(field, GoInt(static_cast<int64_t>(entries)),
              "the total number of attributes and capacities must not exceed 32");
  }
  const size_t values = AttributeValues(attrs);
  if (values > kMaxAttributeValues) {
    e.Invalid(field, GoInt(static_cast<int64_t>(values)),
              "the total number of attribute values must not exceed 48");
  }
  if (attrs != nullptr) {
    const std::string ap = field + ".attributes";
    for (const auto& a : attrs->GetObject()) {
      const std::string key = a.name.GetString();
      ValidateQualifiedName(key, ap, e);
      ValidateAttribute(a.value, Key(ap, Truncated(key, kMaxKeyLength)), e);
    }
  }
  // Capacity is validated only when new or changed (ratcheting).
  const Value* old_caps = old_device == nullptr ? nullptr : Find(*old_device, "capacity");
  if (caps != nullptr && (old_device == nullptr || !SemanticallyEqual(caps, old_caps))) {
    const std::string cp = field + ".capacity";
    for (const auto& c : caps->GetObject()) {
      const std::string key = c.name.GetString();
      ValidateQualifiedName(key, cp, e);
      ValidateCapacity(c.value, multi, Key(cp, Truncated(key, kMaxKeyLength)), gates, e);
    }
  }
  const Value* taints = Find(device, "taints");
  const Value* old_taints = old_device == nullptr ? nullptr : Find(*old_device, "taints");
  if (taints != nullptr && (old_device == nullptr || !SemanticallyEqual(taints, old_taints))) {
    if (taints->Size() > kMaxTaints) {
      e.TooMany(field + ".taints", taints->Size(), kMaxTaints);
    } else {
      for (rapidjson::SizeType i = 0; i < taints->Size(); ++i) {
        ValidateTaint((*taints)[i], Index(field + ".taints", i), e);
      }
    }
  }
  if (const Value* consumes = Find(device, "consumesCounters")) {
    const std::string cf = field + ".consumesCounters";
    if (consumes->Size() > kMaxCounterConsumptions) {
      e.TooMany(cf, consumes->Size(), kMaxCounterConsumptions);
    } else {
      std::set<std::string> sets;
      for (rapidjson::SizeType i = 0; i < consumes->Size(); ++i) {
        ValidateCounterConsumption((*consumes)[i], Index(cf, i), e);
      }
      for (rapidjson::SizeType i = 0; i < consumes->Size(); ++i) {
        const std::string set = StringOf(Find((*consumes)[i], "counterSet"));
        if (!sets.insert(set).second) e.Duplicate(Index(cf, i), GoString(set));
      }
    }
  }
  ValidatePerDeviceNodes(device, per_device_node_selection, field, e);
  ValidateBindingConditions(device, field, e);
  if (const Value* na = Find(device, "nodeAllocatableResources")) {
    ValidateNodeAllocatable(*na, caps, field + ".nodeAllocatableResources", e);
  }
}

void ValidateCounterSet(const Value& set, const std::string& field, FieldErrors& e) {
  const std::string name = StringOf(Find(set, "name"));
  if (name.empty()) {
    e.Required(field + ".name");
  } else {
    ValidateDnsLabel(name, field + ".name", e);
  }
  const Value* counters = Find(set, "counters");
  if (counters == nullptr || counters->MemberCount() == 0) {
    e.Required(field + ".counters");
  } else {
    ValidateCounters(*counters, field + ".counters", e);
  }
}

}  // namespace dracpu::sim::internal
