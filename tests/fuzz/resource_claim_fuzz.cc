// Fuzz target resource_claim: a ResourceClaim as the API server returns it to Prepare
// (ParseResourceClaim), then what Prepare asks of it: each result's config (ConfigForRequest)
// and CPU quantity (ParseWholeCpuQuantity). Contracts: a refusal is INVALID_ARGUMENT with
// nothing from the document unescaped; a parsed claim, written back as JSON, parses to the same
// view; a quantity is a whole positive number of CPUs; a config's cpuset names CPUs.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/log_escape.h"
#include "dra-agent/prepare/resource_claim.h"
#include "tests/fuzz/fuzz_check.h"

namespace dracpu::fuzz {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Str(Writer& w, const std::string& s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void Member(Writer& w, const char* key, const std::string& value) {
  w.Key(key);
  Str(w, value);
}

// The view as the JSON the API server would have sent.
std::string Render(const dra::ResourceClaimView& v) {
  rapidjson::StringBuffer b;
  Writer w(b);
  w.StartObject();
  w.Key("metadata");
  w.StartObject();
  Member(w, "uid", v.uid);
  Member(w, "namespace", v.namespace_name);
  Member(w, "name", v.name);
  w.EndObject();
  if (v.allocated) {
    w.Key("status");
    w.StartObject();
    w.Key("allocation");
    w.StartObject();
    w.Key("devices");
    w.StartObject();
    w.Key("results");
    w.StartArray();
    for (const auto& r : v.results) {
      w.StartObject();
      Member(w, "request", r.request);
      Member(w, "driver", r.driver);
      Member(w, "pool", r.pool);
      Member(w, "device", r.device);
      if (r.share_id) Member(w, "shareID", *r.share_id);
      if (r.consumed_cpu) {
        w.Key("consumedCapacity");
        w.StartObject();
        Member(w, "dra.cpu/cpu", *r.consumed_cpu);
        w.EndObject();
      }
      w.EndObject();
    }
    w.EndArray();
    w.Key("config");
    w.StartArray();
    for (const auto& c : v.configs) {
      w.StartObject();
      Member(w, "source", c.source);
      w.Key("requests");
      w.StartArray();
      for (const auto& r : c.requests) Str(w, r);
      w.EndArray();
      w.Key("opaque");
      w.StartObject();
      Member(w, "driver", c.driver);
      if (!c.parameters.empty()) {
        w.Key("parameters");
        w.RawValue(c.parameters.data(), c.parameters.size(), rapidjson::kObjectType);
      }
      w.EndObject();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    w.EndObject();
    w.EndObject();
  }
  w.EndObject();
  return std::string(b.GetString(), b.GetSize());
}

bool Same(const dra::ResourceClaimView& a, const dra::ResourceClaimView& b) {
  if (a.uid != b.uid || a.namespace_name != b.namespace_name || a.name != b.name ||
      a.allocated != b.allocated || a.results.size() != b.results.size() ||
      a.configs.size() != b.configs.size()) {
    return false;
  }
  for (size_t i = 0; i < a.results.size(); ++i) {
    const auto &x = a.results[i], &y = b.results[i];
    if (x.request != y.request || x.base_request != y.base_request || x.driver != y.driver ||
        x.pool != y.pool || x.device != y.device || x.share_id != y.share_id ||
        x.consumed_cpu != y.consumed_cpu) {
      return false;
    }
  }
  for (size_t i = 0; i < a.configs.size(); ++i) {
    const auto &x = a.configs[i], &y = b.configs[i];
    if (x.source != y.source || x.requests != y.requests || x.driver != y.driver ||
        x.parameters != y.parameters) {
      return false;
    }
  }
  return true;
}

void CheckRefusal(const Status& s, std::string_view what, std::string_view input) {
  Check(s.code() == StatusCode::kInvalidArgument, std::string(what) + " is not INVALID_ARGUMENT",
        input);
  Check(IsLogSafe(s.message()), std::string(what) + " carries unescaped bytes", input);
}

}  // namespace
}  // namespace dracpu::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dracpu;
  using fuzz::Check;
  const std::string_view input = fuzz::AsText(data, size);
  Result<dra::ResourceClaimView> claim = dra::ParseResourceClaim(input);
  if (!claim.ok()) {
    fuzz::CheckRefusal(claim.status(), "a refused claim", input);
    return 0;
  }
  Result<dra::ResourceClaimView> again = dra::ParseResourceClaim(fuzz::Render(*claim));
  Check(again.ok() && fuzz::Same(*claim, *again), "a claim does not round-trip", input);
  for (const dra::AllocationResultView& r : claim->results) {
    Check(r.request.substr(0, r.base_request.size()) == r.base_request &&
              r.base_request.find('/') == std::string::npos,
          "the base request is not the request's first part", input);
    if (r.consumed_cpu) {
      Result<int64_t> count = dra::ParseWholeCpuQuantity(*r.consumed_cpu);
      if (count.ok()) {
        Check(*count > 0, "a quantity is not positive", input);
      } else {
        fuzz::CheckRefusal(count.status(), "a refused quantity", input);
      }
    }
    Result<dra::RequestConfig> config = dra::ConfigForRequest(*claim, r.request);
    if (!config.ok()) {
      fuzz::CheckRefusal(config.status(), "a refused config", input);
      continue;
    }
    if (config->cpuset) Check(!config->cpuset->Empty(), "a config's cpuset is empty", input);
  }
  return 0;
}
