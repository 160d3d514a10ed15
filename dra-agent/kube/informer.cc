#include "dra-agent/kube/informer.h"

#include <optional>

#include "dra-agent/kube/api_error.h"

namespace dracpu::kube {

Informer::Informer(KubeClient& client, std::string collection, InformerOptions options,
                   InformerHandlers handlers, Clock& clock, Random& random)
    : client_(client),
      collection_(std::move(collection)),
      options_(std::move(options)),
      handlers_(std::move(handlers)),
      clock_(clock),
      random_(random) {}

std::vector<JsonObject> Informer::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<JsonObject> out;
  out.reserve(cache_.size());
  for (const auto& [name, object] : cache_) out.push_back(object);
  return out;
}

std::string Informer::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resource_version_;
}

InformerStats Informer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Status Informer::ListAndReplace() {
  ListOptions list_options;
  list_options.field_selector = options_.field_selector;
  list_options.label_selector = options_.label_selector;
  Result<ObjectList> list = client_.List(collection_, list_options);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.lists;
  }
  if (!list.ok()) return list.status();
  std::map<std::string, JsonObject> fresh;
  for (JsonObject& item : list->items) {
    std::string name = item.Name();
    fresh.emplace(std::move(name), std::move(item));
  }
  // Diff under the lock, call handlers outside it (they may call Snapshot()).
  std::vector<JsonObject> added, deleted;
  std::vector<std::pair<JsonObject, JsonObject>> updated;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, object] : fresh) {
      auto it = cache_.find(name);
      if (it == cache_.end()) {
        added.push_back(object);
      } else if (it->second.ResourceVersion() != object.ResourceVersion()) {
        updated.emplace_back(it->second, object);
      }
    }
    for (const auto& [name, object] : cache_) {
      if (fresh.find(name) == fresh.end()) deleted.push_back(object);
    }
    cache_ = std::move(fresh);
    resource_version_ = list->resource_version;
  }
  for (const JsonObject& o : added) {
    if (handlers_.on_add) handlers_.on_add(o);
  }
  for (const auto& [old_object, new_object] : updated) {
    if (handlers_.on_update) handlers_.on_update(old_object, new_object);
  }
  for (const JsonObject& o : deleted) {
    if (handlers_.on_delete) handlers_.on_delete(o);
  }
  synced_.store(true);
  if (handlers_.on_synced) handlers_.on_synced();
  return Status::Ok();
}

void Informer::Apply(const WatchEvent& event) {
  const std::string rv = event.object.ResourceVersion();
  std::optional<JsonObject> old_object;
  bool existed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!rv.empty()) resource_version_ = rv;
    if (event.type == WatchEventType::kBookmark) return;
    const std::string name = event.object.Name();
    auto it = cache_.find(name);
    existed = it != cache_.end();
    if (existed) old_object = it->second;
    if (event.type == WatchEventType::kDeleted) {
      if (existed) cache_.erase(it);
    } else {
      cache_[name] = event.object;
    }
  }
  if (event.type == WatchEventType::kDeleted) {
    if (handlers_.on_delete) handlers_.on_delete(old_object ? *old_object : event.object);
  } else if (existed) {
    if (handlers_.on_update) handlers_.on_update(*old_object, event.object);
  } else if (handlers_.on_add) {
    handlers_.on_add(event.object);
  }
}

Status Informer::Run(std::stop_token stop) {
  Backoff backoff(options_.backoff, random_);
  bool need_list = true;
  int gone_in_a_row = 0;  // 410s with no event in between
  Status last;
  while (!stop.stop_requested()) {
    Status s;
    if (need_list) {
      s = ListAndReplace();
      if (s.ok()) need_list = false;
    } else {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.watches;
      }
      bool got_events = false;
      WatchOptions watch_options;
      watch_options.field_selector = options_.field_selector;
      watch_options.label_selector = options_.label_selector;
      watch_options.resource_version = resource_version();
      watch_options.timeout_seconds = options_.watch_timeout_seconds;
      const Clock::TimePoint started = clock_.Now();
      s = client_.Watch(
          collection_, watch_options,
          [&](const WatchEvent& e) {
            got_events = true;
            Apply(e);
            return !stop.stop_requested();
          },
          stop);
      if (got_events) gone_in_a_row = 0;
      if (IsGone(s)) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++stats_.gone;
        }
        need_list = true;
        last = s;
        // Re-list at once: the history moved on, nothing is wrong with the server. A second 410
        // in a row without any event means a fresh list's version is already too old (a
        // server in trouble): back off rather than loop.
        if (++gone_in_a_row >= 2) clock_.SleepFor(backoff.Next(), stop);
        continue;
      }
      if (s.ok() && !got_events && clock_.Now() - started < std::chrono::seconds(1)) {
        // A stream that ends at once with nothing in it (a proxy cutting watches, say) would
        // otherwise make this loop spin: wait as after an error.
        clock_.SleepFor(backoff.Next(), stop);
        continue;
      }
      if (s.ok() || got_events) backoff.Reset();
    }
    if (s.ok() || s.code() == StatusCode::kCancelled) continue;
    last = s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.errors;
    }
    clock_.SleepFor(backoff.Next(), stop);
  }
  return last;
}

}  // namespace dracpu::kube
