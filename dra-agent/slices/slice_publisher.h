// SlicePublisher: publishes the node's DeviceCatalog as ResourceSlices and keeps them true.
//
//   SlicePublisherOptions o;
//   o.node_name = "node-1";
//   auto publisher = SlicePublisher::Create(client, clock, random, o);   // Result<unique_ptr>
//   (*publisher)->SetDesired(*std::move(catalog));     // again whenever topology or config change
//   std::jthread t([&](std::stop_token stop) { (*publisher)->Run(stop); });  // or Stop()
//   (*publisher)->published();  (*publisher)->stats();  // readiness, /metrics
//
// One sync (SyncOnce) follows the Go kubeletplugin helper (protocols.md §7.2) for our one pool
// (pool name = node name, spec.nodeName = node, driver dra.cpu):
//  1. GET the Node once for its uid (the owner reference; controller = true).
//  2. LIST the node's slices (fieldSelector spec.nodeName=<node>,spec.driver=dra.cpu): a
//     consistent read, so a sync never acts on a stale cache.
//  3. generation = highest pool.generation among our pool's slices; slices with a lower one, of
//     another pool, with a name that is not "<index hex>-dra.cpu-<node>-...", with an index at or
//     beyond the desired slice count, or duplicates of an index are obsolete.
//  4. New slices needed or more than one matched slice changed: generation + 1.
//  5. DELETE obsolete slices (preconditions uid + resourceVersion; 404 is success), PUT the
//     changed matched slices (all of them when the generation moved), POST the missing ones with
//     generateName. At least one (possibly empty) slice is always published.
// A matched slice is unchanged when its spec (pool.generation aside) and ownerReferences equal
// the desired ones as JSON values (member order ignored), or equal what the server returned the
// last time we wrote that same desired content (so server-side canonicalization or defaulting
// can never cause an update loop).
// A 409 Conflict (stale resourceVersion, failed precondition) re-lists and retries at once, up to
// `conflict_retries` times; other failures return the error.
//
// Shapes that follow the cluster (slice_features.h): before rendering, the features the catalog
// needs are probed with dry-run creates when unknown, every `probe_interval`, and after a refused
// write; the slices carry only what the server keeps (SliceShape), and every write's answer is
// checked for fields the server dropped anyway (then the finding is recorded and the pool is
// republished at once). What the shape leaves out is reported (on_report) and kept in stats.
//
// Failed writes (PublishErrors): counted in dra_cpu_resourceslice_publish_errors_total{code,
// reason}, each distinct cause reported once (on_report), listed in stats until a sync succeeds.
// A refused write (400, 403, 422, ...) sets stats().rejected; its retries wait
// `rejection_backoff` (slower than `backoff`, since the same content would be refused again), and
// the features are re-probed at once: when that changes what the server keeps, the sync is retried
// with the new shape right away.
//
// Run(): an Informer list+watches the same slices; every event that is not the echo of our own
// write (a deletion, a modification, an extra slice, a re-list after 410 or an outage) marks the
// pool dirty, and after `debounce` (so a burst gives one sync) the loop syncs. SetDesired syncs
// without debounce. Failed syncs wait a capped exponential backoff with jitter (`backoff`, the
// injected Clock and Random), so the loop never hot-loops; a success resets it. When idle the
// loop sleeps on a condition variable (woken by events, SetDesired or Stop) until the next full
// sync, every `resync_interval`, a safety net: nothing polls in between, so an idle publisher does
// not wake up.
//
// Thread safety: SetDesired, Stop, stats, published and SyncOnce may be called from any thread;
// syncs are serialized. Run is called once. on_report is called from the syncing thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/status.h"
#include "dra-agent/devices/device_catalog.h"
#include "dra-agent/kube/json_object.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kube/server_features.h"
#include "dra-agent/slices/publish_errors.h"

namespace dracpu::dra {

struct PublisherReport {
  enum class Kind {
    kRefused,    // a new cause of failed writes (refused by the server, or no answer)
    kRecovered,  // a sync succeeded after failures
    kShape,      // what the published shape leaves out changed (text: one note, or "full shape")
    kFeature,    // a feature finding changed (text: gate, kept/dropped, evidence)
  };
  Kind kind;
  std::string text;
};

struct SlicePublisherOptions {
  std::string node_name;  // required: pool name and spec.nodeName
  // Wait after a watch event before syncing, so a burst of events gives one sync.
  std::chrono::milliseconds debounce{100};
  // Failed syncs retry after these delays (reset by a success).
  BackoffPolicy backoff{std::chrono::milliseconds(500), std::chrono::milliseconds(30000), 2.0, 0.5};
  // A full sync this often even without events (0: never).
  std::chrono::milliseconds resync_interval{std::chrono::minutes(10)};
  // Immediate re-list + retry after a 409 Conflict inside one SyncOnce.
  int conflict_retries = 3;
  // The informer's watch requests last this long (the server ends them; the informer resumes).
  int watch_timeout_seconds = 300;
  // The informer's own reconnect backoff (API down, 5xx).
  BackoffPolicy watch_backoff{std::chrono::milliseconds(500), std::chrono::milliseconds(30000), 2.0,
                              0.5};
  // Retries after the server refused a write: the same content is refused until something
  // changes (the topology, the server's gates), so these are slower and capped higher.
  BackoffPolicy rejection_backoff{std::chrono::seconds(5), std::chrono::minutes(5), 2.0, 0.5};
  // What the agent knows about the API server, shared with other writers; nullptr: the
  // publisher keeps its own.
  kube::ServerFeatures* features = nullptr;
  // The needed features are probed again this often (0: only when unknown or after a refusal).
  std::chrono::milliseconds probe_interval{std::chrono::minutes(10)};
  // dra_cpu_resourceslice_publish_errors_total is registered here when set.
  MetricsRegistry* metrics = nullptr;
  // Things an operator must see, for the caller to log (the publisher does not log).
  std::function<void(const PublisherReport&)> on_report;
};

struct SlicePublisherStats {
  uint64_t syncs = 0;        // SyncOnce calls that completed (OK or not)
  uint64_t sync_errors = 0;  // ... that failed
  uint64_t creates = 0;
  uint64_t updates = 0;
  uint64_t deletes = 0;         // obsolete slices deleted (404s included)
  uint64_t conflicts = 0;       // 409s that forced a re-list
  uint64_t watch_triggers = 0;  // watch events / re-lists that marked the pool dirty
  int64_t generation = 0;       // pool generation after the last successful sync
  int slices = 0;               // slices published after the last successful sync
  bool published = false;       // the desired state was reached at least once
  std::string last_error;       // "" when the last sync succeeded
  uint64_t publish_errors = 0;  // failed writes and probes (409s not counted)
  uint64_t probes = 0;          // dry-run feature probes sent
  uint64_t dropped_fields = 0;  // fields a write's answer lacked although the probe said kept
  // The last sync ended with the server refusing a write (400, 403, 422, ...).
  bool rejected = false;
  // The distinct causes of failed writes since the last successful sync.
  std::vector<PublishErrorCause> errors;
  // What the published shape leaves out of the catalog, and why (DescribeShape).
  std::vector<std::string> shape_notes;
};

class SlicePublisher {
 public:
  // `client`, `clock` and `random` must outlive the publisher. INVALID_ARGUMENT without a node
  // name. Makes no request.
  static Result<std::unique_ptr<SlicePublisher>> Create(kube::KubeClient& client, Clock& clock,
                                                        Random& random,
                                                        SlicePublisherOptions options);
  ~SlicePublisher();
  SlicePublisher(const SlicePublisher&) = delete;
  SlicePublisher& operator=(const SlicePublisher&) = delete;

  // The devices to publish (replacing any earlier catalog); wakes Run for an immediate sync.
  void SetDesired(DeviceCatalog catalog);

  // One reconcile against the API (see above). FAILED_PRECONDITION before SetDesired; otherwise
  // the API error that stopped it (the next sync starts over).
  Status SyncOnce();

  // Runs the informer and the sync loop until a stop is requested on `stop` or Stop() is called;
  // returns promptly then (every wait, the informer's open watch included, is woken by the
  // request; a request in flight finishes or times out first). Slices are left in place: the
  // next start adopts them.
  void Run(const std::stop_token& stop);
  void Stop();

  bool published() const { return published_.load(); }
  SlicePublisherStats stats() const;

 private:
  struct Desired;
  SlicePublisher(kube::KubeClient& client, Clock& clock, Random& random,
                 SlicePublisherOptions options);

  Status SyncLocked();  // sync_mu_ held
  Status SyncAttempt(const Desired& desired, bool* conflict);
  Status EnsureNodeUid();
  // Probes the features `catalog` needs when unknown or due (or `force`); sync_mu_ held.
  Status EnsureFeatures(const DeviceCatalog& catalog, bool force);
  // Records a failed write or probe (sync_mu_ held): counts it, reports new causes.
  void RecordFailure(const std::string& request, const Status& status,
                     const kube::ApiErrorDetails& details);
  // Records the fields `answer` lacks of `sent`; true when a finding changed.
  bool CheckAnswer(const kube::JsonObject& sent, const kube::JsonObject& answer);
  void Report(PublisherReport::Kind kind, std::string text);
  void NoteOwnWrite(const kube::JsonObject& object);
  void OnWatchChange(const kube::JsonObject* object, bool deleted);
  void MarkDirty(bool immediate);

  kube::KubeClient& client_;
  Clock& clock_;
  Random& random_;
  const SlicePublisherOptions options_;
  const std::string field_selector_;

  std::mutex sync_mu_;    // serializes syncs
  std::string node_uid_;  // guarded by sync_mu_
  std::unique_ptr<kube::ServerFeatures> own_features_;
  kube::ServerFeatures& features_;
  bool probe_due_ = true;                 // guarded by sync_mu_
  Clock::TimePoint next_probe_{};         // guarded by sync_mu_
  std::vector<std::string> shape_notes_;  // last reported; guarded by sync_mu_
  bool version_asked_ = false;            // guarded by sync_mu_
  // Per desired slice index: the desired content we last wrote and the server's form of it.
  std::vector<std::pair<std::string, kube::JsonObject>> written_;  // guarded by sync_mu_

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::shared_ptr<const Desired> desired_;                    // guarded by mu_
  bool dirty_ = false;                                        // guarded by mu_
  bool immediate_ = false;                                    // guarded by mu_
  std::set<std::pair<std::string, std::string>> own_writes_;  // (name, rv); guarded by mu_
  std::set<std::string> own_deletes_;                         // guarded by mu_
  SlicePublisherStats stats_;                                 // guarded by mu_
  PublishErrors errors_;                                      // guarded by mu_
  std::atomic<bool> published_{false};
  std::stop_source stop_;  // Stop(), or the stop of Run's token
};

// The desired index encoded in a slice name made from SliceGenerateName(index, node):
// "<hex index>-dra.cpu-<node>-<suffix>", or nullopt when the name does not have that form.
std::optional<int> SliceIndexFromName(const std::string& name, const std::string& node_name);

}  // namespace dracpu::dra
