#include "dra-agent/agent/claim_status_writer.h"

#include <glog/logging.h>
#include <rapidjson/document.h>

#include <chrono>
#include <ctime>

#include "common/log_escape.h"
#include "dra-agent/kube/api_error.h"
#include "dra-agent/kube/resources.h"

namespace dracpu::dra {
namespace {

using rapidjson::Value;

constexpr char kDriver[] = "dra.cpu";

std::string_view Str(const Value& v, const char* key) {
  auto it = v.FindMember(key);
  return it != v.MemberEnd() && it->value.IsString()
             ? std::string_view(it->value.GetString(), it->value.GetStringLength())
             : std::string_view();
}

bool SameDevice(const Value& v, const ClaimDeviceStatus& d) {
  return Str(v, "driver") == kDriver && Str(v, "pool") == d.pool && Str(v, "device") == d.device &&
         Str(v, "shareID") == d.share_id.value_or("");
}

// Whether status.allocation still holds the device (the server refuses entries that it does
// not, and a deallocated claim has no business showing CPUs).
bool Allocated(const kube::JsonObject& claim, const ClaimDeviceStatus& d) {
  const Value* results = claim.Find("status.allocation.devices.results");
  if (results == nullptr || !results->IsArray()) return false;
  for (const Value& r : results->GetArray()) {
    if (SameDevice(r, d)) return true;
  }
  return false;
}

}  // namespace

std::string ClaimStatusWriter::SystemWallClock() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

ClaimStatusWriter::ClaimStatusWriter(kube::KubeClient& client, kube::ServerFeatures& features,
                                     WallClock wall_clock)
    : client_(client), features_(features), wall_clock_(std::move(wall_clock)) {}

ClaimStatusWriter::~ClaimStatusWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queued_.clear();
  }
  if (worker_.joinable()) worker_.join();
}

void ClaimStatusWriter::Report(ClaimStatusReport report) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  const std::string uid = report.claim.uid;
  queued_.insert_or_assign(uid, std::move(report));
  if (running_) return;
  // The previous worker has returned or is returning (running_ went false under mu_).
  if (worker_.joinable()) worker_.join();
  running_ = true;
  worker_ = std::thread([this] { Work(); });
}

void ClaimStatusWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return !running_; });
}

ClaimStatusStats ClaimStatusWriter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void ClaimStatusWriter::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!queued_.empty() && !stopping_) {
    ClaimStatusReport report = std::move(queued_.begin()->second);
    queued_.erase(queued_.begin());
    lock.unlock();
    const Status s = Write(report);
    if (!s.ok()) {
      LOG(WARNING) << "ResourceClaim " << LogEscape(report.claim.namespace_name, 64) << "/"
                   << LogEscape(report.claim.name)
                   << ": status.devices not updated: " << s.message();
    }
    lock.lock();
    if (!s.ok()) {
      ++stats_.failed;
      stats_.last_error = s.message();
    }
  }
  running_ = false;
  idle_.notify_all();
}

Status ClaimStatusWriter::Write(const ClaimStatusReport& report) {
  if (features_.State(kube::ServerFeature::kResourceClaimDeviceStatus) ==
      kube::FeatureState::kDropped) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.skipped;
    return Status::Ok();
  }
  const ClaimRef& ref = report.claim;
  const std::string path = kube::ResourceClaimPath(ref.namespace_name, ref.name);
  size_t wrote = 0;
  bool skip = false;
  auto mutate = [&](kube::JsonObject& claim) -> Status {
    wrote = 0;
    skip = false;
    if (claim.Uid() != ref.uid) {
      skip = true;  // re-created under the same name: not ours to touch
      return FailedPreconditionError("claim re-created");
    }
    rapidjson::Document& doc = claim.doc();
    auto& alloc = claim.allocator();
    if (!doc.HasMember("status") || !doc["status"].IsObject()) {
      doc.RemoveMember("status");
      doc.AddMember("status", Value(rapidjson::kObjectType), alloc);
    }
    Value& status = doc["status"];
    if (!status.HasMember("devices") || !status["devices"].IsArray()) {
      status.RemoveMember("devices");
      status.AddMember("devices", Value(rapidjson::kArrayType), alloc);
    }
    Value& devices = status["devices"];
    size_t removed = 0;
    for (Value::ValueIterator it = devices.Begin(); it != devices.End();) {
      if (it->IsObject() && Str(*it, "driver") == kDriver) {
        it = devices.Erase(it);
        ++removed;
      } else {
        ++it;
      }
    }
    const std::string now = wall_clock_();
    int64_t generation = 0;
    if (const Value* g = claim.Find("metadata.generation"); g != nullptr && g->IsInt64()) {
      generation = g->GetInt64();
    }
    for (const ClaimDeviceStatus& d : report.devices) {
      if (!Allocated(claim, d)) continue;
      Value entry(rapidjson::kObjectType);
      entry.AddMember("driver", Value(kDriver, alloc), alloc);
      entry.AddMember("pool", Value(d.pool.c_str(), alloc), alloc);
      entry.AddMember("device", Value(d.device.c_str(), alloc), alloc);
      if (d.share_id) entry.AddMember("shareID", Value(d.share_id->c_str(), alloc), alloc);
      Value ready(rapidjson::kObjectType);
      ready.AddMember("type", "Ready", alloc);
      ready.AddMember("status", "True", alloc);
      ready.AddMember("reason", "Prepared", alloc);
      ready.AddMember("message", "CPUs prepared by dra.cpu for the claim's container", alloc);
      ready.AddMember("lastTransitionTime", Value(now.c_str(), alloc), alloc);
      ready.AddMember("observedGeneration", generation, alloc);
      Value conditions(rapidjson::kArrayType);
      conditions.PushBack(ready, alloc);
      entry.AddMember("conditions", conditions, alloc);
      rapidjson::Document data;
      data.Parse(d.data_json.c_str());
      if (!data.HasParseError() && data.IsObject()) {
        entry.AddMember("data", Value(data, alloc), alloc);
      }
      devices.PushBack(entry, alloc);
      ++wrote;
    }
    if (wrote == 0 && removed == 0) {
      skip = true;  // nothing of ours there and nothing to add: no write
      return FailedPreconditionError("nothing to write");
    }
    return Status::Ok();
  };
  Result<kube::JsonObject> updated = client_.UpdateWithRetry(path, mutate, 5, path + "/status");
  if (!updated.ok()) {
    if (skip || kube::IsNotFound(updated.status())) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.skipped;
      return Status::Ok();
    }
    return updated.status();
  }
  if (wrote > 0) {
    const Value* devices = updated->Find("status.devices");
    if (devices == nullptr || !devices->IsArray() || devices->Empty()) {
      if (features_.Learn(kube::ServerFeature::kResourceClaimDeviceStatus,
                          kube::FeatureState::kDropped,
                          "a status update of ResourceClaim " + ref.namespace_name + "/" +
                              ref.name + " came back without status.devices")) {
        LOG(WARNING) << "the API server drops ResourceClaim status.devices "
                        "(DRAResourceClaimDeviceStatus off?): claims will not show their CPUs";
      }
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.skipped;
      return Status::Ok();
    }
    features_.Learn(kube::ServerFeature::kResourceClaimDeviceStatus, kube::FeatureState::kKept,
                    "a status update kept status.devices");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (wrote > 0) {
    stats_.written += wrote;
  } else {
    ++stats_.cleared;
  }
  return Status::Ok();
}

}  // namespace dracpu::dra
