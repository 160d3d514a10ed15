#include "dra-agent/cdi/cdi_spec.h"

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <optional>

#include "common/log_escape.h"
#include "common/untrusted_json.h"

namespace dracpu::dra {
namespace {

constexpr std::string_view kDevicePrefix = "claim-";

bool KnownCdiVersion(std::string_view v) {
  // Versions whose readers accept an env-only device with a digit-leading name.
  for (std::string_view known : {"0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"}) {
    if (v == known) return true;
  }
  return false;
}

}  // namespace

std::string CdiSpecFileName(std::string_view claim_uid) {
  return std::string(kCdiVendor) + "-" + std::string(kCdiClass) + "_" + CdiDeviceName(claim_uid) +
         ".json";
}

std::string CdiDeviceName(std::string_view claim_uid) {
  return std::string(kDevicePrefix) + std::string(claim_uid);
}

std::string CdiDeviceId(std::string_view claim_uid) {
  return std::string(kCdiKind) + "=" + CdiDeviceName(claim_uid);
}

std::string RenderCdiSpec(std::string_view claim_uid, const CpuSet& cpus) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.SetIndent(' ', 2);
  const std::string device = CdiDeviceName(claim_uid);
  const std::string env = ClaimEnvEntry(claim_uid, cpus);
  w.StartObject();
  w.Key("cdiVersion");
  w.String(kCdiVersion.data(), static_cast<rapidjson::SizeType>(kCdiVersion.size()));
  w.Key("kind");
  w.String(kCdiKind.data(), static_cast<rapidjson::SizeType>(kCdiKind.size()));
  w.Key("devices");
  w.StartArray();
  w.StartObject();
  w.Key("name");
  w.String(device.c_str(), static_cast<rapidjson::SizeType>(device.size()));
  w.Key("containerEdits");
  w.StartObject();
  w.Key("env");
  w.StartArray();
  w.String(env.c_str(), static_cast<rapidjson::SizeType>(env.size()));
  w.EndArray();
  w.EndObject();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  std::string out(buffer.GetString(), buffer.GetSize());
  out += '\n';
  return out;
}

Result<ClaimEnv> ParseCdiSpec(std::string_view json, std::string_view source) {
  auto bad = [&](const std::string& reason) {
    return InvalidArgumentError("CDI spec " + std::string(source) + ": " + reason);
  };
  rapidjson::Document doc;
  if (Status s = ParseUntrustedJson(json, doc); !s.ok()) return bad(s.message());
  if (!doc.IsObject()) return bad("not a JSON object");
  if (!doc.HasMember("cdiVersion") || !doc["cdiVersion"].IsString() ||
      !KnownCdiVersion(
          std::string_view(doc["cdiVersion"].GetString(), doc["cdiVersion"].GetStringLength()))) {
    return bad("missing or unsupported cdiVersion");
  }
  if (!doc.HasMember("kind") || !doc["kind"].IsString() ||
      std::string_view(doc["kind"].GetString(), doc["kind"].GetStringLength()) != kCdiKind) {
    return bad("kind is not " + std::string(kCdiKind));
  }
  if (!doc.HasMember("devices") || !doc["devices"].IsArray() || doc["devices"].Size() != 1) {
    return bad("must have exactly one device");
  }
  const auto& device = doc["devices"][0];
  if (!device.IsObject() || !device.HasMember("name") || !device["name"].IsString()) {
    return bad("device has no name");
  }
  const std::string_view name(device["name"].GetString(), device["name"].GetStringLength());
  if (name.substr(0, kDevicePrefix.size()) != kDevicePrefix) {
    return bad("device name " + LogQuote(name) + " does not start with claim-");
  }
  const std::string_view uid = name.substr(kDevicePrefix.size());
  if (Status s = ValidateClaimUid(uid); !s.ok()) return bad(s.message());
  if (!device.HasMember("containerEdits") || !device["containerEdits"].IsObject() ||
      !device["containerEdits"].HasMember("env") || !device["containerEdits"]["env"].IsArray()) {
    return bad("device has no containerEdits.env");
  }
  std::optional<ClaimEnv> found;
  for (const auto& entry : device["containerEdits"]["env"].GetArray()) {
    if (!entry.IsString()) return bad("env entry is not a string");
    auto parsed = ParseClaimEnvEntry(std::string_view(entry.GetString(), entry.GetStringLength()));
    if (!parsed.ok()) return bad(parsed.status().message());
    if (!parsed->has_value()) continue;
    if (found) return bad("more than one DRA_CPUSET_ entry");
    found = std::move(**parsed);
  }
  if (!found) return bad("no DRA_CPUSET_ entry");
  if (found->claim_uid != uid) {
    return bad("env names claim " + found->claim_uid + " but the device is " + LogEscape(name));
  }
  return *found;
}

}  // namespace dracpu::dra
