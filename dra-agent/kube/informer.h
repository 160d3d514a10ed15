// Informer: a local cache of one collection kept current by list + watch, with callbacks on
// changes (client-go's reflector + informer, reduced to what the ResourceSlice publisher needs).
//
// Run() lists, then watches from the list's resourceVersion, resuming from the last event or
// bookmark when a watch ends. A 410 Gone (too old a resourceVersion) re-lists; the re-list is
// diffed against the cache, so handlers see the adds, updates and deletes they missed. Other
// errors wait with capped exponential backoff (injected Clock), never hot-looping; the backoff
// resets after a watch that delivered events or ended normally.
//
// Handlers run on the Run() thread, after the cache is updated, inside the watch's read loop:
// keep them short (mark the pool dirty and wake a worker). They may call KubeClient and
// Snapshot(), but the watch stream is not read meanwhile. Snapshot()/synced()/stats() may be
// called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "common/backoff.h"
#include "common/clock.h"
#include "dra-agent/kube/kube_client.h"

namespace dracpu::kube {

struct InformerHandlers {
  std::function<void(const JsonObject&)> on_add;
  std::function<void(const JsonObject& old_object, const JsonObject& new_object)> on_update;
  std::function<void(const JsonObject&)> on_delete;
  // After each successful (re-)list has been applied to the cache.
  std::function<void()> on_synced;
};

struct InformerOptions {
  std::string field_selector;
  std::string label_selector;
  int watch_timeout_seconds = 300;
  // Capped at 10 s (client-go's reflector uses 30 s) so that after an API outage the cache is
  // current again within about 10 s of the server's return; jitter spreads the nodes.
  BackoffPolicy backoff{std::chrono::milliseconds(500), std::chrono::milliseconds(10000), 2.0, 0.5};
};

struct InformerStats {
  uint64_t lists = 0;
  uint64_t watches = 0;
  uint64_t gone = 0;    // 410s that forced a re-list
  uint64_t errors = 0;  // failures that waited for backoff
};

class Informer {
 public:
  // `client`, `clock` and `random` must outlive the informer.
  Informer(KubeClient& client, std::string collection, InformerOptions options,
           InformerHandlers handlers, Clock& clock, Random& random);

  // Runs until a stop is requested on `stop` (which also ends an open watch at once: nothing
  // polls meanwhile). Returns the last error seen, or OK.
  Status Run(std::stop_token stop);

  // The cached objects, sorted by name.
  std::vector<JsonObject> Snapshot() const;
  // True once the first list has been applied.
  bool synced() const { return synced_.load(); }
  std::string resource_version() const;
  InformerStats stats() const;

 private:
  Status ListAndReplace();
  void Apply(const WatchEvent& event);

  KubeClient& client_;
  const std::string collection_;
  const InformerOptions options_;
  const InformerHandlers handlers_;
  Clock& clock_;
  Random& random_;

  mutable std::mutex mu_;
  std::map<std::string, JsonObject> cache_;  // by metadata.name; guarded by mu_
  std::string resource_version_;             // guarded by mu_
  InformerStats stats_;                      // guarded by mu_
  std::atomic<bool> synced_{false};
};

}  // namespace dracpu::kube
