// ClaimStatusWriter: shows in the ResourceClaim which CPUs a workload got (KEP-4817,
// DRAResourceClaimDeviceStatus), so `kubectl get resourceclaim -o yaml` answers "which CPUs".
//
// After a claim is prepared, each of its dra.cpu devices gets a status.devices entry:
//   {driver: dra.cpu, pool, device, shareID (a share),
//    conditions: [{type: Ready, status: "True", reason: Prepared, message, lastTransitionTime,
//                  observedGeneration}],
//    data: {cpus: "4-7", numaNodes: [0], coreType: "p-core" (hybrid parts only),
//           claimCPUs: "4-7,12-15" (all the claim's CPUs, when it has several devices)}}
// and after Unprepare our entries are removed (other drivers' entries are never touched).
// Writes are GET + PUT .../resourceclaims/<name>/status with the object's resourceVersion,
// started over on a conflict.
//
// Off the kubelet's path: Report() only queues; one worker thread, started when there is work
// and gone when there is none (an idle agent has no thread and no wakeup for this), writes the
// latest report per claim. A report replaces an unwritten one for the same claim, so a Prepare
// followed by an Unprepare before the write costs at most one clear.
//
// Gate-aware: when the server comes back from a write without status.devices (the gate is off,
// or a server without the field), ServerFeatures learns kResourceClaimDeviceStatus dropped and
// no further writes are made. A claim that is gone, re-created (another uid) or no longer
// allocated with the device is skipped. Failures (403 without RBAC for resourceclaims/status,
// the server unreachable) are counted and logged, never retried in a loop: the status is for
// people, Prepare does not depend on it. Reports still queued at destruction are dropped.
//
// Thread safety: Report(), Flush() and stats() are safe from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kube/server_features.h"
#include "dra-agent/prepare/claim_preparer.h"

namespace dracpu::dra {

struct ClaimDeviceStatus {
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  std::string data_json;  // a JSON object, < 10 KiB
};

struct ClaimStatusReport {
  ClaimRef claim;
  std::vector<ClaimDeviceStatus> devices;  // empty: remove our entries
};

struct ClaimStatusStats {
  uint64_t written = 0;  // entries set
  uint64_t cleared = 0;  // claims whose entries were removed
  uint64_t skipped = 0;  // claim gone, re-created, deallocated, or the server drops the field
  uint64_t failed = 0;   // writes that failed
  std::string last_error;
};

class ClaimStatusWriter {
 public:
  // RFC 3339 UTC time for lastTransitionTime.
  using WallClock = std::function<std::string()>;
  static std::string SystemWallClock();

  // `client` and `features` are not owned and must outlive the writer.
  ClaimStatusWriter(kube::KubeClient& client, kube::ServerFeatures& features, WallClock wall_clock);
  ~ClaimStatusWriter();
  ClaimStatusWriter(const ClaimStatusWriter&) = delete;
  ClaimStatusWriter& operator=(const ClaimStatusWriter&) = delete;

  void Report(ClaimStatusReport report);
  // Waits until every queued report is written or given up (tests, and gatherinfo).
  void Flush();
  ClaimStatusStats stats() const;

  // One write, as the worker makes it. OK also when skipped.
  Status Write(const ClaimStatusReport& report);

 private:
  void Work();

  kube::KubeClient& client_;
  kube::ServerFeatures& features_;
  WallClock wall_clock_;

  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::map<std::string, ClaimStatusReport> queued_;  // by uid
  bool running_ = false;                             // the worker is writing
  bool stopping_ = false;
  std::thread worker_;
  ClaimStatusStats stats_;
};

}  // namespace dracpu::dra
