// SimState: the in-memory "etcd + registry" of the kube-apiserver simulator, independent of HTTP.
// It serves the requests dracpu makes (see dra-agent/kube/resources.h), answers with Kubernetes
// Status errors, keeps a bounded event history for watches (too old a resourceVersion -> 410
// Expired), records every request, and injects faults.
//
// A ResourceSlice write goes through the real server's pipeline, for the Kubernetes version and
// feature gates of Options (default: 1.36 and its defaults): decode (400 for a JSON type or
// quantity that does not fit; unknown fields dropped with a Warning, 400 under
// fieldValidation=Strict), fields of disabled gates dropped silently (DroppedFields() lists
// them), validation (422 Invalid with details.causes), storage. `dryRun=All` runs all of it and
// stores nothing, as upstream.
// SimApiServer puts it behind HTTP(S); a SimState outlives server restarts, so tests can take the
// API down and bring it back with its objects intact.
//
// Thread safety: every method is safe for concurrent use.
#pragma once

#include <rapidjson/document.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tests/sim/apiserver/feature_gates.h"

namespace dracpu::sim {

struct SimRequest {
  std::string method;
  std::string target;  // path?query, as received
  std::string authorization;
  std::string body;
};

struct SimResponse {
  int status = 200;
  std::string body;
  std::string retry_after;
  bool drop_connection = false;       // close without answering
  std::vector<std::string> warnings;  // sent as "Warning: 299 - \"...\"" headers
};

struct RecordedRequest {
  std::string method;
  std::string path;
  std::string query;  // raw (percent-encoded)
  std::string authorization;
  std::string body;
  int status = 0;           // 0 when the connection was dropped by a fault
  uint64_t connection = 0;  // which TCP connection carried it (1, 2, ... per server)
};

enum class FaultAction {
  kDropConnection,  // close the connection without an answer
  kStatus,          // answer `status` with a Kubernetes Status (reason `reason`)
  kDelay,           // wait `delay`, then serve normally
};

struct Fault {
  std::string method;          // "" = any
  std::string path_prefix;     // "" = any; compared with the path (no query)
  std::string query_contains;  // "" = any; e.g. "watch=true"
  FaultAction action = FaultAction::kStatus;
  int status = 500;
  std::string reason = "InternalError";
  std::string retry_after;  // Retry-After header with kStatus, when set
  std::chrono::milliseconds delay{0};
  int count = 1;  // matching requests affected; -1 = until ClearFaults()
};

// One term of a field selector: field (=|==|!=) value.
struct SelectorTerm {
  std::string field;
  bool equal = true;
  std::string value;
};

struct SimWatchEvent {
  int64_t resource_version = 0;
  std::string type;  // ADDED MODIFIED DELETED
  std::string object_json;
};

class SimState {
 public:
  struct Options {
    size_t history_size = 1000;                    // events kept for watch resumption
    uint64_t seed = 1;                             // generateName suffixes and uids
    FeatureGates gates = FeatureGates::Default();  // the version served and its gates
  };
  SimState() : SimState(Options{}) {}
  explicit SimState(Options options);

  // --- Seeding and inspection (tests) ---
  // A Node with `uid` (generated when empty); returns the uid.
  std::string AddNode(const std::string& name, const std::string& uid = "");
  // Stores a ResourceClaim (JSON with metadata.namespace and .name); false on bad JSON.
  bool PutResourceClaim(const std::string& json);
  // The stored ResourceSlices as JSON texts, sorted by name.
  std::vector<std::string> ResourceSlices() const;
  // Deletes a slice as an operator would (a watch sees DELETED); false when absent.
  bool DeleteResourceSlice(const std::string& name);
  int64_t resource_version() const;

  // --- Authentication ---
  // Requests must carry "Authorization: Bearer <token>" (401 otherwise); "" disables the check.
  void SetToken(const std::string& token);

  // --- Faults and history ---
  void AddFault(const Fault& fault);
  void ClearFaults();
  // Forgets the event history: a watch resuming from any version seen so far gets 410 Expired.
  void CompactHistory();
  // Ends every open watch with an ERROR 410 Expired event (as after an etcd compaction).
  void ExpireWatches();
  // Cuts every open watch connection without a final chunk (a network failure or an apiserver
  // crash as the client sees it); clients resume from their last version.
  void DropWatches();
  // Makes every open watch that allows bookmarks send a BOOKMARK now.
  void RequestBookmarks();
  std::vector<RecordedRequest> Requests() const;
  void ClearRequests();
  // For slice writes that were not dry runs (a dry run is a probe: meeting these is its job):
  // "unknown field \"spec.x\"" for every unknown field dropped (see DecodeResourceSlice);
  std::vector<std::string> Warnings() const;
  // the fields of disabled feature gates removed
  // ("spec.devices[0].capacity[dra.cpu/cpu].requestPolicy");
  std::vector<std::string> DroppedFields() const;
  // every 400 and 422 answered, as "<code> <message>". A publisher test expects none of these.
  std::vector<std::string> Rejections() const;

  // --- Version and feature gates ---
  // Serve another Kubernetes version / gate set from now on (a cluster upgraded or
  // reconfigured); stored objects are kept.
  void SetFeatureGates(const FeatureGates& gates);
  FeatureGates feature_gates() const;

  // --- Serving (SimApiServer) ---
  // The fault for this request, if any (consumes one of its count).
  std::optional<Fault> TakeFault(const std::string& method, const std::string& target);
  // 401 Status when the token does not match, else nullopt.
  std::optional<SimResponse> CheckAuth(const SimRequest& request) const;
  // Serves a non-watch request (admin /_sim/ endpoints included).
  SimResponse Handle(const SimRequest& request);
  void Record(RecordedRequest request);

  static bool IsWatch(const std::string& target);
  struct WatchStart {
    std::optional<SimResponse> error;  // HTTP error instead of a stream
    std::vector<SelectorTerm> selector;
    bool bookmarks = false;
    int timeout_seconds = 0;             // 0: none
    int64_t after = 0;                   // stream events with a larger version
    std::vector<SimWatchEvent> initial;  // synthetic ADDED for a watch without version
    bool expired = false;                // send ERROR 410 right away
    std::string expired_message;
    uint64_t expire_epoch = 0;
    uint64_t bookmark_epoch = 0;
    uint64_t drop_epoch = 0;
  };
  WatchStart StartWatch(const std::string& target);
  struct WatchWake {
    std::vector<SimWatchEvent> events;  // matching the selector, in order
    int64_t resource_version = 0;       // current version (for bookmarks)
    bool expired = false;
    bool bookmark = false;
    bool dropped = false;
  };
  // Waits until there are events after `*after`, a bookmark or expiry is requested, Shutdown(),
  // DropWatches() since `drop_epoch`, or `until`. Advances `*after`, `*expire_epoch`,
  // `*bookmark_epoch`.
  WatchWake WaitForEvents(const std::vector<SelectorTerm>& selector, int64_t* after,
                          uint64_t* expire_epoch, uint64_t* bookmark_epoch, uint64_t drop_epoch,
                          std::chrono::steady_clock::time_point until);
  // Wakes all watches so they notice the server is stopping.
  void WakeAll();

  // "kind Status" JSON for an error.
  static std::string StatusJson(int code, const std::string& reason, const std::string& message,
                                const std::string& details_json = "");

 private:
  SimResponse UpdateClaimStatus(const std::string& ns, const std::string& name,
                                const std::string& body);
  SimResponse HandleSlices(const SimRequest& request, const std::string& name,
                           const std::map<std::string, std::string>& query);
  SimResponse HandleAdmin(const SimRequest& request, const std::string& path);
  struct WriteOptions {
    bool strict = false;   // fieldValidation=Strict: unknown fields -> 400, not a warning
    bool dry_run = false;  // dryRun=All: everything but storing
  };
  // A 400 for a bad dryRun or fieldValidation value, else the options.
  static std::optional<SimResponse> ParseWriteOptions(const std::map<std::string, std::string>& q,
                                                      WriteOptions* out);
  SimResponse CreateSlice(const std::string& body, WriteOptions o);
  SimResponse UpdateSlice(const std::string& name, const std::string& body, WriteOptions o);
  // Decodes (mu_ held): the warnings, or a 400 (type error; unknown field when strict).
  std::optional<SimResponse> Decode(rapidjson::Document& doc, WriteOptions o,
                                    std::vector<std::string>* warnings);
  // Drops disabled-gate fields and validates (mu_ held): a 422, or nullopt.
  std::optional<SimResponse> DropAndValidate(rapidjson::Document& doc, const rapidjson::Value* old,
                                             const std::string& name, bool dry_run);
  // Records a 400/422 unless it answers a dry run (mu_ held).
  SimResponse Refuse(SimResponse response, bool dry_run);
  SimResponse DeleteSlice(const std::string& name, const std::string& body);
  void AppendEvent(const std::string& type, const std::string& object_json);  // mu_ held
  std::string NewUid();                                                       // mu_ held

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::mt19937_64 random_;
  int64_t rv_ = 1000;
  int64_t compacted_rv_ = 1000;                // resuming after a version below this is 410 Expired
  std::map<std::string, std::string> slices_;  // name -> JSON
  std::map<std::string, std::string> nodes_;   // name -> JSON
  std::map<std::string, std::string> claims_;  // "ns/name" -> JSON
  std::deque<SimWatchEvent> history_;
  std::vector<Fault> faults_;
  std::vector<RecordedRequest> requests_;
  std::vector<std::string> warnings_;
  std::vector<std::string> dropped_;
  std::vector<std::string> rejections_;
  FeatureGates gates_;
  std::string token_;
  uint64_t expire_epoch_ = 0;
  uint64_t bookmark_epoch_ = 0;
  uint64_t drop_epoch_ = 0;
  uint64_t wake_epoch_ = 0;
};

// Parses "a=b,c!=d"; false on a term without an operator.
bool ParseFieldSelector(const std::string& text, std::vector<SelectorTerm>* out);
bool MatchesSelector(const std::string& object_json, const std::vector<SelectorTerm>& selector);
std::string UrlDecode(const std::string& text);

}  // namespace dracpu::sim
