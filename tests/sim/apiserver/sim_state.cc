#include "tests/sim/apiserver/sim_state.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "tests/sim/apiserver/claim_status_validation.h"
#include "tests/sim/apiserver/slice_decode.h"
#include "tests/sim/apiserver/validation.h"

namespace dracpu::sim {
namespace {

constexpr const char* kSlicesPrefix = "/apis/resource.k8s.io/v1/resourceslices";
constexpr const char* kNodesPrefix = "/api/v1/nodes/";
constexpr const char* kClaimsPrefix = "/apis/resource.k8s.io/v1/namespaces/";

using rapidjson::Document;
using rapidjson::Value;

std::string ToJson(const Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string JsonString(const std::string& s) {
  Value v(rapidjson::StringRef(s.data(), s.size()));
  return ToJson(v);
}

bool ParseObject(const std::string& text, Document* doc) {
  doc->Parse(text.data(), text.size());
  return !doc->HasParseError() && doc->IsObject();
}

Value& EnsureObject(Document& doc, Value& parent, const char* key) {
  auto it = parent.FindMember(key);
  if (it == parent.MemberEnd() || !it->value.IsObject()) {
    if (it != parent.MemberEnd()) parent.RemoveMember(it);
    parent.AddMember(Value(key, doc.GetAllocator()), Value(rapidjson::kObjectType),
                     doc.GetAllocator());
    it = parent.FindMember(key);
  }
  return it->value;
}

void SetString(Document& doc, Value& obj, const char* key, const std::string& value) {
  auto it = obj.FindMember(key);
  Value v(value.c_str(), static_cast<rapidjson::SizeType>(value.size()), doc.GetAllocator());
  if (it != obj.MemberEnd()) {
    it->value = v;
  } else {
    obj.AddMember(Value(key, doc.GetAllocator()), v, doc.GetAllocator());
  }
}

std::string GetString(const Value& obj, const char* a, const char* b = nullptr,
                      const char* c = nullptr) {
  const Value* v = &obj;
  for (const char* k : {a, b, c}) {
    if (k == nullptr) break;
    if (!v->IsObject()) return "";
    auto it = v->FindMember(k);
    if (it == v->MemberEnd()) return "";
    v = &it->value;
  }
  return v->IsString() ? std::string(v->GetString()) : "";
}

std::string Now3339() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

SimResponse Error(int code, const std::string& reason, const std::string& message,
                  const std::string& details = "") {
  return {code, SimState::StatusJson(code, reason, message, details), "", false, {}};
}

SimResponse NotFoundSlice(const std::string& name) {
  return Error(404, "NotFound", "resourceslices.resource.k8s.io \"" + name + "\" not found",
               "{\"name\":" + JsonString(name) +
                   ",\"group\":\"resource.k8s.io\",\"kind\":\"resourceslices\"}");
}

SimResponse Conflict(const std::string& name, const std::string& why) {
  return Error(
      409, "Conflict",
      "Operation cannot be fulfilled on resourceslices.resource.k8s.io \"" + name + "\": " + why,
      "{\"name\":" + JsonString(name) +
          ",\"group\":\"resource.k8s.io\",\"kind\":\"resourceslices\"}");
}

SimResponse ClaimNotFound(const std::string& name) {
  return Error(404, "NotFound", "resourceclaims.resource.k8s.io \"" + name + "\" not found",
               "{\"name\":" + JsonString(name) +
                   ",\"group\":\"resource.k8s.io\",\"kind\":\"resourceclaims\"}");
}

SimResponse Invalid(const std::string& name, std::vector<FieldError> errors,
                    const std::string& kind = "ResourceSlice",
                    const std::string& group_resource = "ResourceSlice.resource.k8s.io") {
  // As apierrors.NewInvalid: the de-duplicated list, bare for one error, [a, b] for several.
  std::vector<FieldError> unique;
  for (FieldError& e : errors) {
    bool seen = false;
    for (const FieldError& u : unique) seen = seen || u.ToString() == e.ToString();
    if (!seen) unique.push_back(std::move(e));
  }
  std::string message = group_resource + " \"" + name + "\" is invalid: ";
  if (unique.size() > 1) message += "[";
  std::string causes;
  for (size_t i = 0; i < unique.size(); ++i) {
    if (i > 0) {
      message += ", ";
      causes += ",";
    }
    message += unique[i].ToString();
    causes += "{\"reason\":" + JsonString(unique[i].reason) +
              ",\"message\":" + JsonString(unique[i].body) +
              ",\"field\":" + JsonString(unique[i].field) + "}";
  }
  if (unique.size() > 1) message += "]";
  return Error(422, "Invalid", message,
               "{\"name\":" + JsonString(name) + ",\"group\":\"resource.k8s.io\",\"kind\":" +
                   JsonString(kind) + ",\"causes\":[" + causes + "]}");
}

std::map<std::string, std::string> ParseQuery(const std::string& query) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    const std::string item = query.substr(start, end - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      out[UrlDecode(item)] = "";
    } else {
      out[UrlDecode(item.substr(0, eq))] = UrlDecode(item.substr(eq + 1));
    }
    start = end + 1;
  }
  return out;
}

void SplitTarget(const std::string& target, std::string* path, std::string* query) {
  const size_t q = target.find('?');
  *path = target.substr(0, q);
  *query = q == std::string::npos ? "" : target.substr(q + 1);
}

std::string FieldValue(const Value& obj, const std::string& field) {
  if (field == "metadata.name") return GetString(obj, "metadata", "name");
  if (field == "spec.nodeName") return GetString(obj, "spec", "nodeName");
  if (field == "spec.driver") return GetString(obj, "spec", "driver");
  if (field == "spec.pool.name") return GetString(obj, "spec", "pool", "name");
  return "";
}

bool SupportedField(const std::string& field) {
  return field == "metadata.name" || field == "spec.nodeName" || field == "spec.driver" ||
         field == "spec.pool.name";
}

}  // namespace

std::string UrlDecode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const std::string hex = text.substr(i + 1, 2);
      char* end = nullptr;
      const long v = std::strtol(hex.c_str(), &end, 16);
      if (end == hex.c_str() + 2) {
        out.push_back(static_cast<char>(v));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i] == '+' ? ' ' : text[i]);
  }
  return out;
}

bool ParseFieldSelector(const std::string& text, std::vector<SelectorTerm>* out) {
  out->clear();
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string term = text.substr(start, end - start);
    SelectorTerm t;
    size_t op = term.find("!=");
    if (op != std::string::npos) {
      t.equal = false;
      t.field = term.substr(0, op);
      t.value = term.substr(op + 2);
    } else if ((op = term.find("==")) != std::string::npos) {
      t.field = term.substr(0, op);
      t.value = term.substr(op + 2);
    } else if ((op = term.find('=')) != std::string::npos) {
      t.field = term.substr(0, op);
      t.value = term.substr(op + 1);
    } else {
      return false;
    }
    out->push_back(t);
    start = end + 1;
  }
  return true;
}

bool MatchesSelector(const std::string& object_json, const std::vector<SelectorTerm>& selector) {
  if (selector.empty()) return true;
  Document doc;
  if (!ParseObject(object_json, &doc)) return false;
  for (const SelectorTerm& t : selector) {
    if ((FieldValue(doc, t.field) == t.value) != t.equal) return false;
  }
  return true;
}

std::string SimState::StatusJson(int code, const std::string& reason, const std::string& message,
                                 const std::string& details_json) {
  std::string out = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},";
  out += "\"status\":\"Failure\",\"message\":" + JsonString(message) +
         ",\"reason\":" + JsonString(reason);
  if (!details_json.empty()) out += ",\"details\":" + details_json;
  out += ",\"code\":" + std::to_string(code) + "}";
  return out;
}

SimState::SimState(Options options)
    : options_(options), random_(options.seed), gates_(options.gates) {}

void SimState::SetFeatureGates(const FeatureGates& gates) {
  std::lock_guard<std::mutex> lock(mu_);
  gates_ = gates;
}

FeatureGates SimState::feature_gates() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gates_;
}

std::string SimState::NewUid() {
  char buf[40];
  const uint64_t a = random_(), b = random_();
  std::snprintf(buf, sizeof(buf), "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

std::string SimState::AddNode(const std::string& name, const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string id = uid.empty() ? NewUid() : uid;
  ++rv_;
  nodes_[name] =
      "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":" + JsonString(name) +
      ",\"uid\":" + JsonString(id) + ",\"resourceVersion\":\"" + std::to_string(rv_) +
      "\"},\"spec\":{},\"status\":{}}";
  return id;
}

bool SimState::PutResourceClaim(const std::string& json) {
  Document doc;
  if (!ParseObject(json, &doc)) return false;
  const std::string ns = GetString(doc, "metadata", "namespace");
  const std::string name = GetString(doc, "metadata", "name");
  if (ns.empty() || name.empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  Value& metadata = EnsureObject(doc, doc, "metadata");
  if (GetString(doc, "metadata", "uid").empty()) SetString(doc, metadata, "uid", NewUid());
  SetString(doc, metadata, "resourceVersion", std::to_string(++rv_));
  claims_[ns + "/" + name] = ToJson(doc);
  return true;
}

std::vector<std::string> SimState::ResourceSlices() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, json] : slices_) out.push_back(json);
  return out;
}

bool SimState::DeleteResourceSlice(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slices_.find(name);
  if (it == slices_.end()) return false;
  Document doc;
  ParseObject(it->second, &doc);
  slices_.erase(it);
  SetString(doc, EnsureObject(doc, doc, "metadata"), "resourceVersion", std::to_string(++rv_));
  AppendEvent("DELETED", ToJson(doc));
  return true;
}

int64_t SimState::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

void SimState::SetToken(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  token_ = token;
}

void SimState::AddFault(const Fault& fault) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.push_back(fault);
}

void SimState::ClearFaults() {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.clear();
}

void SimState::CompactHistory() {
  std::lock_guard<std::mutex> lock(mu_);
  history_.clear();
  compacted_rv_ = rv_;
}

void SimState::ExpireWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  ++expire_epoch_;
  cv_.notify_all();
}

void SimState::DropWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  ++drop_epoch_;
  cv_.notify_all();
}

void SimState::RequestBookmarks() {
  std::lock_guard<std::mutex> lock(mu_);
  ++bookmark_epoch_;
  cv_.notify_all();
}

void SimState::WakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  ++wake_epoch_;
  cv_.notify_all();
}

std::vector<RecordedRequest> SimState::Requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void SimState::ClearRequests() {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.clear();
}

void SimState::Record(RecordedRequest request) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.push_back(std::move(request));
}

std::optional<Fault> SimState::TakeFault(const std::string& method, const std::string& target) {
  std::string path, query;
  SplitTarget(target, &path, &query);
  if (path.rfind("/_sim/", 0) == 0) return std::nullopt;  // the admin API never fails
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (!it->method.empty() && it->method != method) continue;
    if (!it->path_prefix.empty() && path.rfind(it->path_prefix, 0) != 0) continue;
    if (!it->query_contains.empty() && query.find(it->query_contains) == std::string::npos) {
      continue;
    }
    Fault fault = *it;
    if (it->count > 0 && --it->count == 0) faults_.erase(it);
    return fault;
  }
  return std::nullopt;
}

std::optional<SimResponse> SimState::CheckAuth(const SimRequest& request) const {
  if (request.target.rfind("/_sim/", 0) == 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  if (token_.empty() || request.authorization == "Bearer " + token_) return std::nullopt;
  return Error(401, "Unauthorized", "Unauthorized");
}

void SimState::AppendEvent(const std::string& type, const std::string& object_json) {
  history_.push_back({rv_, type, object_json});
  while (history_.size() > options_.history_size) {
    // A watcher must have seen this event to resume: versions below it are now too old.
    compacted_rv_ = history_.front().resource_version;
    history_.pop_front();
  }
  cv_.notify_all();
}

bool SimState::IsWatch(const std::string& target) {
  std::string path, query;
  SplitTarget(target, &path, &query);
  const std::map<std::string, std::string> q = ParseQuery(query);
  auto it = q.find("watch");
  return it != q.end() && (it->second == "true" || it->second == "1");
}

SimResponse SimState::Handle(const SimRequest& request) {
  std::string path, query;
  SplitTarget(request.target, &path, &query);
  const std::map<std::string, std::string> q = ParseQuery(query);
  if (path.rfind("/_sim/", 0) == 0) return HandleAdmin(request, path);
  if (path == "/version") {
    if (request.method != "GET") return Error(405, "MethodNotAllowed", "method not allowed");
    const std::string v = feature_gates().version();  // "1.36"
    return {200,
            "{\"major\":\"1\",\"minor\":\"" + v.substr(2) + "\",\"gitVersion\":\"v" + v +
                ".0-dracpu-sim\",\"platform\":\"linux/amd64\"}",
            "",
            false,
            {}};
  }
  if (path.rfind(kNodesPrefix, 0) == 0) {
    const std::string name = path.substr(std::string(kNodesPrefix).size());
    if (request.method != "GET") return Error(405, "MethodNotAllowed", "method not allowed");
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(name);
    if (it == nodes_.end()) {
      return Error(404, "NotFound", "nodes \"" + name + "\" not found",
                   "{\"name\":" + JsonString(name) + ",\"kind\":\"nodes\"}");
    }
    return {200, it->second, "", false, {}};
  }
  if (path == kSlicesPrefix) return HandleSlices(request, "", q);
  if (path.rfind(std::string(kSlicesPrefix) + "/", 0) == 0) {
    const std::string name = path.substr(std::string(kSlicesPrefix).size() + 1);
    if (name.empty() || name.find('/') != std::string::npos) {
      return Error(404, "NotFound", "the server could not find the requested resource");
    }
    return HandleSlices(request, name, q);
  }
  if (path.rfind(kClaimsPrefix, 0) == 0) {
    // /apis/resource.k8s.io/v1/namespaces/<ns>/resourceclaims/<name>
    const std::string rest = path.substr(std::string(kClaimsPrefix).size());
    const size_t slash = rest.find('/');
    const std::string ns = rest.substr(0, slash);
    const std::string tail = slash == std::string::npos ? "" : rest.substr(slash);
    const std::string kClaims = "/resourceclaims/";
    if (tail.rfind(kClaims, 0) == 0 && tail.size() > kClaims.size() &&
        tail.find('/', kClaims.size()) == std::string::npos) {
      const std::string name = tail.substr(kClaims.size());
      if (request.method == "PUT") {
        return Error(405, "MethodNotAllowed", "dracpu's simulator takes claim writes on /status");
      }
      if (request.method != "GET") return Error(405, "MethodNotAllowed", "method not allowed");
      std::lock_guard<std::mutex> lock(mu_);
      auto it = claims_.find(ns + "/" + name);
      if (it == claims_.end()) return ClaimNotFound(name);
      return {200, it->second, "", false, {}};
    }
    const std::string kStatus = "/status";
    if (tail.rfind(kClaims, 0) == 0 && tail.size() > kClaims.size() + kStatus.size() &&
        tail.compare(tail.size() - kStatus.size(), kStatus.size(), kStatus) == 0) {
      const std::string name =
          tail.substr(kClaims.size(), tail.size() - kClaims.size() - kStatus.size());
      if (name.find('/') == std::string::npos) {
        if (request.method == "GET") {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = claims_.find(ns + "/" + name);
          if (it != claims_.end()) return {200, it->second, "", false, {}};
        } else if (request.method == "PUT") {
          return UpdateClaimStatus(ns, name, request.body);
        } else {
          return Error(405, "MethodNotAllowed", "method not allowed");
        }
        return ClaimNotFound(name);
      }
    }
  }
  return Error(404, "NotFound", "the server could not find the requested resource");
}

// PUT .../resourceclaims/<name>/status, as far as a driver uses it: status.devices is replaced
// by the body's (validated; silently dropped while DRAResourceClaimDeviceStatus is off, unless
// the stored claim already has some), the rest of the status is kept.
SimResponse SimState::UpdateClaimStatus(const std::string& ns, const std::string& name,
                                        const std::string& body) {
  Document in;
  if (!ParseObject(body, &in)) return Error(400, "BadRequest", "the body is not a JSON object");
  const FeatureGates gates = feature_gates();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = claims_.find(ns + "/" + name);
  if (it == claims_.end()) return ClaimNotFound(name);
  Document stored;
  ParseObject(it->second, &stored);
  const std::string rv = GetString(in, "metadata", "resourceVersion");
  if (!rv.empty() && rv != GetString(stored, "metadata", "resourceVersion")) {
    return Error(409, "Conflict",
                 "Operation cannot be fulfilled on resourceclaims.resource.k8s.io \"" + name +
                     "\": the object has been modified; please apply your changes to the latest "
                     "version and try again",
                 "{\"name\":" + JsonString(name) +
                     ",\"group\":\"resource.k8s.io\",\"kind\":\"resourceclaims\"}");
  }
  Value& status = EnsureObject(stored, stored, "status");
  const Value* devices = nullptr;
  if (const auto s = in.FindMember("status"); s != in.MemberEnd() && s->value.IsObject()) {
    if (const auto d = s->value.FindMember("devices");
        d != s->value.MemberEnd() && d->value.IsArray() && !d->value.Empty()) {
      devices = &d->value;
    }
  }
  const auto had = status.FindMember("devices");
  const bool stored_has = had != status.MemberEnd() && had->value.IsArray() && !had->value.Empty();
  if (!gates.Enabled(Gate::kResourceClaimDeviceStatus) && !stored_has) devices = nullptr;
  if (devices != nullptr) {
    const auto a = status.FindMember("allocation");
    const Value* allocation = a != status.MemberEnd() && a->value.IsObject() ? &a->value : nullptr;
    std::vector<FieldError> errors = ValidateClaimDeviceStatus(*devices, allocation);
    if (!errors.empty()) {
      return Invalid(name, std::move(errors), "ResourceClaim", "ResourceClaim.resource.k8s.io");
    }
  }
  status.RemoveMember("devices");
  if (devices != nullptr) {
    Value copy(*devices, stored.GetAllocator());
    status.AddMember("devices", copy, stored.GetAllocator());
  }
  SetString(stored, EnsureObject(stored, stored, "metadata"), "resourceVersion",
            std::to_string(++rv_));
  it->second = ToJson(stored);
  return {200, it->second, "", false, {}};
}

SimResponse SimState::HandleSlices(const SimRequest& request, const std::string& name,
                                   const std::map<std::string, std::string>& q) {
  WriteOptions write;
  if (request.method == "POST" || request.method == "PUT") {
    if (auto bad = ParseWriteOptions(q, &write)) return *bad;
  }
  if (name.empty()) {
    if (request.method == "POST") return CreateSlice(request.body, write);
    if (request.method != "GET") return Error(405, "MethodNotAllowed", "method not allowed");
    std::vector<SelectorTerm> selector;
    auto fs = q.find("fieldSelector");
    if (fs != q.end() && !ParseFieldSelector(fs->second, &selector)) {
      return Error(400, "BadRequest", "invalid field selector \"" + fs->second + "\"");
    }
    for (const SelectorTerm& t : selector) {
      if (!SupportedField(t.field)) {
        return Error(400, "BadRequest",
                     "unable to parse requirement: field label not supported: " + t.field);
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::string items;
    for (const auto& [n, json] : slices_) {
      if (!MatchesSelector(json, selector)) continue;
      if (!items.empty()) items += ",";
      items += json;
    }
    return {200,
            "{\"kind\":\"ResourceSliceList\",\"apiVersion\":\"resource.k8s.io/v1\","
            "\"metadata\":{\"resourceVersion\":\"" +
                std::to_string(rv_) + "\"},\"items\":[" + items + "]}",
            "",
            false,
            {}};
  }
  if (request.method == "GET") {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slices_.find(name);
    if (it == slices_.end()) return NotFoundSlice(name);
    return {200, it->second, "", false, {}};
  }
  if (request.method == "PUT") return UpdateSlice(name, request.body, write);
  if (request.method == "DELETE") return DeleteSlice(name, request.body);
  return Error(405, "MethodNotAllowed", "method not allowed");
}

std::vector<std::string> SimState::Warnings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return warnings_;
}

std::vector<std::string> SimState::DroppedFields() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

std::vector<std::string> SimState::Rejections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rejections_;
}

std::optional<SimResponse> SimState::ParseWriteOptions(const std::map<std::string, std::string>& q,
                                                       WriteOptions* out) {
  if (auto fv = q.find("fieldValidation"); fv != q.end()) {
    if (fv->second != "Strict" && fv->second != "Warn" && fv->second != "Ignore") {
      return Error(400, "BadRequest",
                   "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\"");
    }
    out->strict = fv->second == "Strict";
  }
  if (auto dr = q.find("dryRun"); dr != q.end()) {
    if (dr->second != "All") {
      return Error(400, "BadRequest", "Invalid dryRun value: \"" + dr->second + "\"");
    }
    out->dry_run = true;
  }
  return std::nullopt;
}

SimResponse SimState::Refuse(SimResponse response, bool dry_run) {
  if (dry_run) return response;  // a probe: finding drops and refusals is its purpose
  Document status;
  const std::string message =
      ParseObject(response.body, &status) ? GetString(status, "message") : response.body;
  rejections_.push_back(std::to_string(response.status) + " " + message);
  return response;
}

std::optional<SimResponse> SimState::Decode(Document& doc, WriteOptions o,
                                            std::vector<std::string>* warnings) {
  DecodeResult decoded = DecodeResourceSlice(doc, doc.GetAllocator(), gates_);
  if (!decoded.error.empty()) return Refuse(Error(400, "BadRequest", decoded.error), o.dry_run);
  if (decoded.unknown_fields.empty()) return std::nullopt;
  if (o.strict) {
    std::string message = "strict decoding error: ";
    for (size_t i = 0; i < decoded.unknown_fields.size(); ++i) {
      message +=
          (i ? ", " : "") + std::string("unknown field \"") + decoded.unknown_fields[i] + "\"";
    }
    return Refuse(Error(400, "BadRequest", message), o.dry_run);
  }
  for (const std::string& f : decoded.unknown_fields) {
    warnings->push_back("unknown field \"" + f + "\"");
    if (!o.dry_run) warnings_.push_back(warnings->back());
  }
  return std::nullopt;
}

std::optional<SimResponse> SimState::DropAndValidate(Document& doc, const Value* old,
                                                     const std::string& name, bool dry_run) {
  for (std::string& f : DropDisabledFields(doc, old, gates_)) {
    if (!dry_run) dropped_.push_back(std::move(f));
  }
  std::vector<FieldError> errors = ValidateResourceSlice(doc, old, gates_);
  if (errors.empty()) return std::nullopt;
  return Refuse(Invalid(name, std::move(errors)), dry_run);
}

SimResponse SimState::CreateSlice(const std::string& body, WriteOptions o) {
  Document doc;
  if (!ParseObject(body, &doc)) {
    return Error(400, "BadRequest", "the request body is not a JSON object");
  }
  const std::string kind = GetString(doc, "kind");
  const std::string api_version = GetString(doc, "apiVersion");
  if ((!kind.empty() && kind != "ResourceSlice") ||
      (!api_version.empty() && api_version != "resource.k8s.io/v1")) {
    return Error(400, "BadRequest",
                 "the object provided is unrecognized (must be of type ResourceSlice): " + kind +
                     " " + api_version);
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> warnings;
  if (auto refused = Decode(doc, o, &warnings)) return *refused;
  Value& metadata = EnsureObject(doc, doc, "metadata");
  std::string name = GetString(doc, "metadata", "name");
  const std::string generate_name = GetString(doc, "metadata", "generateName");
  if (name.empty() && !generate_name.empty()) {
    // As upstream: generateName truncated to leave room for a 5-character suffix.
    static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string candidate = generate_name.substr(0, std::min<size_t>(generate_name.size(), 58));
      for (int i = 0; i < 5; ++i)
        candidate.push_back(kAlphabet[random_() % (sizeof(kAlphabet) - 1)]);
      if (slices_.count(candidate) == 0) {
        name = candidate;
        break;
      }
    }
    SetString(doc, metadata, "name", name);
  }
  if (!GetString(doc, "metadata", "resourceVersion").empty()) {
    return Error(500, "InternalError",
                 "resourceVersion should not be set on objects to be created");
  }
  if (auto refused = DropAndValidate(doc, nullptr, name, o.dry_run)) return *refused;
  if (slices_.count(name) != 0) {
    return Error(409, "AlreadyExists",
                 "resourceslices.resource.k8s.io \"" + name + "\" already exists",
                 "{\"name\":" + JsonString(name) +
                     ",\"group\":\"resource.k8s.io\",\"kind\":\"resourceslices\"}");
  }
  if (kind.empty()) doc.AddMember("kind", "ResourceSlice", doc.GetAllocator());
  if (api_version.empty()) doc.AddMember("apiVersion", "resource.k8s.io/v1", doc.GetAllocator());
  SetString(doc, metadata, "uid", NewUid());
  SetString(doc, metadata, "creationTimestamp", Now3339());
  metadata.RemoveMember("generation");
  metadata.AddMember("generation", 1, doc.GetAllocator());
  if (o.dry_run) return {201, ToJson(doc), "", false, warnings};  // no resourceVersion, no event
  SetString(doc, metadata, "resourceVersion", std::to_string(++rv_));
  const std::string json = ToJson(doc);
  slices_[name] = json;
  AppendEvent("ADDED", json);
  return {201, json, "", false, warnings};
}

SimResponse SimState::UpdateSlice(const std::string& name, const std::string& body,
                                  WriteOptions o) {
  Document doc;
  if (!ParseObject(body, &doc)) {
    return Error(400, "BadRequest", "the request body is not a JSON object");
  }
  const std::string body_name = GetString(doc, "metadata", "name");
  if (body_name != name) {
    return Error(400, "BadRequest",
                 "the name of the object (" + body_name + ") does not match the name on the URL (" +
                     name + ")");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> warnings;
  if (auto refused = Decode(doc, o, &warnings)) return *refused;
  auto it = slices_.find(name);
  if (it == slices_.end()) return NotFoundSlice(name);
  Document old;
  ParseObject(it->second, &old);
  const std::string rv = GetString(doc, "metadata", "resourceVersion");
  if (!rv.empty() && rv != GetString(old, "metadata", "resourceVersion")) {
    return Conflict(name,
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again");
  }
  Value& metadata = EnsureObject(doc, doc, "metadata");
  // Server-owned metadata the client left out is carried over (BeforeUpdate).
  for (const char* k : {"uid", "creationTimestamp"}) {
    if (GetString(doc, "metadata", k).empty())
      SetString(doc, metadata, k, GetString(old, "metadata", k));
  }
  if (auto refused = DropAndValidate(doc, &old, name, o.dry_run)) return *refused;
  int64_t generation = 1;
  if (auto g = old["metadata"].FindMember("generation");
      g != old["metadata"].MemberEnd() && g->value.IsInt64()) {
    generation = g->value.GetInt64();
  }
  const bool spec_changed = !doc.HasMember("spec") || !old.HasMember("spec") ||
                            ToJson(doc["spec"]) != ToJson(old["spec"]);
  metadata.RemoveMember("generation");
  metadata.AddMember("generation", generation + (spec_changed ? 1 : 0), doc.GetAllocator());
  if (!doc.HasMember("kind")) doc.AddMember("kind", "ResourceSlice", doc.GetAllocator());
  if (!doc.HasMember("apiVersion")) {
    doc.AddMember("apiVersion", "resource.k8s.io/v1", doc.GetAllocator());
  }
  if (o.dry_run) return {200, ToJson(doc), "", false, warnings};
  SetString(doc, metadata, "resourceVersion", std::to_string(++rv_));
  const std::string json = ToJson(doc);
  it->second = json;
  AppendEvent("MODIFIED", json);
  return {200, json, "", false, warnings};
}

SimResponse SimState::DeleteSlice(const std::string& name, const std::string& body) {
  std::string want_uid, want_rv;
  if (!body.empty()) {
    Document options;
    if (!ParseObject(body, &options)) {
      return Error(400, "BadRequest", "the request body is not a JSON object");
    }
    want_uid = GetString(options, "preconditions", "uid");
    want_rv = GetString(options, "preconditions", "resourceVersion");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slices_.find(name);
  if (it == slices_.end()) return NotFoundSlice(name);
  Document doc;
  ParseObject(it->second, &doc);
  const std::string uid = GetString(doc, "metadata", "uid");
  const std::string rv = GetString(doc, "metadata", "resourceVersion");
  if (!want_uid.empty() && want_uid != uid) {
    return Conflict(name, "Precondition failed: UID in precondition: " + want_uid +
                              ", UID in object meta: " + uid);
  }
  if (!want_rv.empty() && want_rv != rv) {
    return Conflict(name, "Precondition failed: ResourceVersion in precondition: " + want_rv +
                              ", ResourceVersion in object meta: " + rv);
  }
  slices_.erase(it);
  SetString(doc, EnsureObject(doc, doc, "metadata"), "resourceVersion", std::to_string(++rv_));
  const std::string json = ToJson(doc);
  AppendEvent("DELETED", json);
  return {200, json, "", false, {}};
}

SimState::WatchStart SimState::StartWatch(const std::string& target) {
  WatchStart w;
  std::string path, query;
  SplitTarget(target, &path, &query);
  const std::map<std::string, std::string> q = ParseQuery(query);
  if (path != kSlicesPrefix) {
    w.error = Error(405, "MethodNotAllowed", "watch is only served for resourceslices");
    return w;
  }
  if (auto fs = q.find("fieldSelector"); fs != q.end()) {
    if (!ParseFieldSelector(fs->second, &w.selector)) {
      w.error = Error(400, "BadRequest", "invalid field selector \"" + fs->second + "\"");
      return w;
    }
    for (const SelectorTerm& t : w.selector) {
      if (!SupportedField(t.field)) {
        w.error = Error(400, "BadRequest",
                        "unable to parse requirement: field label not supported: " + t.field);
        return w;
      }
    }
  }
  if (auto b = q.find("allowWatchBookmarks"); b != q.end()) w.bookmarks = b->second == "true";
  if (auto t = q.find("timeoutSeconds"); t != q.end())
    w.timeout_seconds = std::atoi(t->second.c_str());
  std::string rv;
  if (auto r = q.find("resourceVersion"); r != q.end()) rv = r->second;
  std::lock_guard<std::mutex> lock(mu_);
  w.expire_epoch = expire_epoch_;
  w.bookmark_epoch = bookmark_epoch_;
  w.drop_epoch = drop_epoch_;
  if (rv.empty() || rv == "0") {
    for (const auto& [name, json] : slices_) {
      if (MatchesSelector(json, w.selector)) {
        Document doc;
        ParseObject(json, &doc);
        w.initial.push_back(
            {std::atoll(GetString(doc, "metadata", "resourceVersion").c_str()), "ADDED", json});
      }
    }
    w.after = rv_;
    return w;
  }
  char* end = nullptr;
  const long long v = std::strtoll(rv.c_str(), &end, 10);
  if (end == rv.c_str() || *end != '\0' || v < 0) {
    w.error = Error(400, "BadRequest", "invalid resource version \"" + rv + "\"");
    return w;
  }
  // Events after v must all still be in the history.
  if (v < compacted_rv_) {
    w.expired = true;
    w.expired_message =
        "too old resource version: " + rv + " (" + std::to_string(compacted_rv_) + ")";
  }
  w.after = std::min<int64_t>(v, rv_);
  return w;
}

SimState::WatchWake SimState::WaitForEvents(const std::vector<SelectorTerm>& selector,
                                            int64_t* after, uint64_t* expire_epoch,
                                            uint64_t* bookmark_epoch, uint64_t drop_epoch,
                                            std::chrono::steady_clock::time_point until) {
  WatchWake wake;
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t wake_epoch = wake_epoch_;
  cv_.wait_until(lock, until, [&] {
    return rv_ > *after && !history_.empty() && history_.back().resource_version > *after
               ? true
               : (expire_epoch_ != *expire_epoch || bookmark_epoch_ != *bookmark_epoch ||
                  wake_epoch_ != wake_epoch || drop_epoch_ != drop_epoch);
  });
  if (drop_epoch_ != drop_epoch) {
    wake.dropped = true;
    return wake;
  }
  if (expire_epoch_ != *expire_epoch) {
    *expire_epoch = expire_epoch_;
    wake.expired = true;
  }
  if (bookmark_epoch_ != *bookmark_epoch) {
    *bookmark_epoch = bookmark_epoch_;
    wake.bookmark = true;
  }
  if (*after < compacted_rv_) {
    // The watcher fell behind the history (compacted under it).
    wake.expired = true;
  }
  for (const SimWatchEvent& e : history_) {
    if (e.resource_version <= *after) continue;
    if (MatchesSelector(e.object_json, selector)) wake.events.push_back(e);
  }
  if (!history_.empty()) *after = std::max(*after, history_.back().resource_version);
  wake.resource_version = rv_;
  return wake;
}

SimResponse SimState::HandleAdmin(const SimRequest& request, const std::string& path) {
  Document body;
  const bool has_body = !request.body.empty() && ParseObject(request.body, &body);
  if (!request.body.empty() && !has_body)
    return Error(400, "BadRequest", "body is not a JSON object");
  auto str = [&](const char* k) { return has_body ? GetString(body, k) : std::string(); };
  auto integer = [&](const char* k, int64_t fallback) -> int64_t {
    if (!has_body || !body.HasMember(k) || !body[k].IsInt64()) return fallback;
    return body[k].GetInt64();
  };
  const std::string ok = "{\"ok\":true}";
  if (path == "/_sim/requests" && request.method == "GET") {
    std::string out = "[";
    for (const RecordedRequest& r : Requests()) {
      if (out.size() > 1) out += ",";
      out += "{\"method\":" + JsonString(r.method) + ",\"path\":" + JsonString(r.path) +
             ",\"query\":" + JsonString(r.query) + ",\"status\":" + std::to_string(r.status) + "}";
    }
    return {200, out + "]", "", false, {}};
  }
  if (path == "/_sim/requests" && request.method == "DELETE") {
    ClearRequests();
    return {200, ok, "", false, {}};
  }
  if (path == "/_sim/faults" && request.method == "POST") {
    Fault f;
    f.method = str("method");
    f.path_prefix = str("pathPrefix");
    f.query_contains = str("queryContains");
    const std::string action = str("action");
    if (action == "drop") {
      f.action = FaultAction::kDropConnection;
    } else if (action == "delay") {
      f.action = FaultAction::kDelay;
    } else if (action == "status" || action.empty()) {
      f.action = FaultAction::kStatus;
    } else {
      return Error(400, "BadRequest", "action must be drop, delay or status");
    }
    f.status = static_cast<int>(integer("code", 500));
    if (!str("reason").empty()) f.reason = str("reason");
    f.retry_after = str("retryAfter");
    f.delay = std::chrono::milliseconds(integer("delayMs", 0));
    f.count = static_cast<int>(integer("count", 1));
    AddFault(f);
    return {200, ok, "", false, {}};
  }
  if (path == "/_sim/faults" && request.method == "DELETE") {
    ClearFaults();
    return {200, ok, "", false, {}};
  }
  if (path == "/_sim/feature-gates" && request.method == "GET") {
    const FeatureGates g = feature_gates();
    return {200,
            "{\"version\":" + JsonString(g.version()) +
                ",\"featureGates\":" + JsonString(g.ToString()) + "}",
            "",
            false,
            {}};
  }
  if (path == "/_sim/feature-gates" && request.method == "POST") {
    // {"version": "1.34", "featureGates": "DRAConsumableCapacity=true"}: a cluster upgraded or
    // reconfigured; version defaults to the current one.
    auto gates = FeatureGates::ForVersion(str("version").empty() ? feature_gates().version()
                                                                 : str("version"));
    if (!gates.ok()) return Error(400, "BadRequest", gates.status().message());
    if (Status st = gates->Set(str("featureGates")); !st.ok()) {
      return Error(400, "BadRequest", st.message());
    }
    SetFeatureGates(*gates);
    return {200, ok, "", false, {}};
  }
  if (path == "/_sim/nodes" && request.method == "POST") {
    if (str("name").empty()) return Error(400, "BadRequest", "name is required");
    const std::string uid = AddNode(str("name"), str("uid"));
    return {200, "{\"uid\":" + JsonString(uid) + "}", "", false, {}};
  }
  if (path == "/_sim/resourceclaims" && request.method == "POST") {
    if (!PutResourceClaim(request.body)) {
      return Error(400, "BadRequest",
                   "a ResourceClaim with metadata.namespace and name is required");
    }
    return {200, ok, "", false, {}};
  }
  if (request.method == "POST") {
    if (path == "/_sim/compact") {
      CompactHistory();
      return {200, ok, "", false, {}};
    }
    if (path == "/_sim/expire-watches") {
      ExpireWatches();
      return {200, ok, "", false, {}};
    }
    if (path == "/_sim/drop-watches") {
      DropWatches();
      return {200, ok, "", false, {}};
    }
    if (path == "/_sim/bookmark") {
      RequestBookmarks();
      return {200, ok, "", false, {}};
    }
    if (path == "/_sim/token") {
      SetToken(str("token"));
      return {200, ok, "", false, {}};
    }
  }
  return Error(404, "NotFound", "unknown simulator endpoint " + request.method + " " + path);
}

}  // namespace dracpu::sim
