#include "dra-agent/slices/slice_publisher.h"

#include <algorithm>
#include <thread>

#include "dra-agent/kube/api_error.h"
#include "dra-agent/kube/informer.h"
#include "dra-agent/kube/resources.h"
#include "dra-agent/slices/slice_document.h"
#include "dra-agent/slices/slice_features.h"

namespace dracpu::dra {

using kube::JsonObject;

struct SlicePublisher::Desired {
  DeviceCatalog catalog;
};

namespace {

// Own-write bookkeeping is bounded: a lost echo must not grow memory forever.
constexpr size_t kMaxOwnRecords = 4096;

int64_t PoolGeneration(const JsonObject& slice) {
  const rapidjson::Value* g = slice.Find("spec.pool.generation");
  return g != nullptr && g->IsInt64() ? g->GetInt64() : 0;
}

std::string PoolName(const JsonObject& slice) {
  const rapidjson::Value* p = slice.Find("spec.pool");
  return p != nullptr && p->IsObject() ? std::string(kube::StringMember(*p, "name")) : "";
}

// What decides whether a slice needs an update: its spec without pool.generation, and its owner
// references, as a JSON value (compared with ==, which ignores member order).
JsonObject ContentKey(const rapidjson::Value& slice) {
  JsonObject key;
  auto& a = key.allocator();
  rapidjson::Value spec(rapidjson::kNullType);
  rapidjson::Value owners(rapidjson::kNullType);
  if (slice.IsObject()) {
    if (auto it = slice.FindMember("spec"); it != slice.MemberEnd()) {
      spec.CopyFrom(it->value, a);
      if (spec.IsObject()) {
        if (auto p = spec.FindMember("pool"); p != spec.MemberEnd() && p->value.IsObject()) {
          p->value.RemoveMember("generation");
        }
      }
    }
    if (auto m = slice.FindMember("metadata"); m != slice.MemberEnd() && m->value.IsObject()) {
      if (auto o = m->value.FindMember("ownerReferences"); o != m->value.MemberEnd()) {
        owners.CopyFrom(o->value, a);
      }
    }
  }
  key.doc().AddMember("spec", spec, a);
  key.doc().AddMember("ownerReferences", owners, a);
  return key;
}

bool SameContent(const JsonObject& a, const JsonObject& b) { return a.doc() == b.doc(); }

}  // namespace

std::optional<int> SliceIndexFromName(const std::string& name, const std::string& node_name) {
  const std::string middle = "-dra.cpu-" + node_name + "-";
  const size_t dash = name.find('-');
  if (dash == std::string::npos || dash < 5 || dash > 7) return std::nullopt;
  if (name.compare(dash, middle.size(), middle) != 0) return std::nullopt;
  if (name.size() == dash + middle.size()) return std::nullopt;  // no generated suffix
  int index = 0;
  for (size_t i = 0; i < dash; ++i) {
    const char c = name[i];
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    index = index * 16 + v;
  }
  return index;
}

Result<std::unique_ptr<SlicePublisher>> SlicePublisher::Create(kube::KubeClient& client,
                                                               Clock& clock, Random& random,
                                                               SlicePublisherOptions options) {
  if (options.node_name.empty()) return InvalidArgumentError("slice publisher: empty node name");
  if (options.conflict_retries < 0) options.conflict_retries = 0;
  return std::unique_ptr<SlicePublisher>(
      new SlicePublisher(client, clock, random, std::move(options)));
}

SlicePublisher::SlicePublisher(kube::KubeClient& client, Clock& clock, Random& random,
                               SlicePublisherOptions options)
    : client_(client),
      clock_(clock),
      random_(random),
      options_(std::move(options)),
      field_selector_("spec.nodeName=" + options_.node_name + ",spec.driver=dra.cpu"),
      own_features_(options_.features == nullptr ? std::make_unique<kube::ServerFeatures>(clock)
                                                 : nullptr),
      features_(options_.features != nullptr ? *options_.features : *own_features_),
      errors_(options_.metrics) {}

void SlicePublisher::Report(PublisherReport::Kind kind, std::string text) {
  if (options_.on_report) options_.on_report({kind, std::move(text)});
}

void SlicePublisher::RecordFailure(const std::string& request, const Status& status,
                                   const kube::ApiErrorDetails& details) {
  std::vector<PublishErrorCause> fresh;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fresh = errors_.Record(request, status, details);
    stats_.publish_errors = errors_.total();
  }
  for (const PublishErrorCause& c : fresh) {
    Report(PublisherReport::Kind::kRefused, c.request + ": " + c.ToString());
  }
}

bool SlicePublisher::CheckAnswer(const JsonObject& sent, const JsonObject& answer) {
  bool changed = false;
  for (const DroppedField& d : FindDroppedFields(sent.doc(), answer.doc())) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.dropped_fields;
    }
    const std::string evidence =
        "the API server's answer for slice " + answer.Name() + " lacks " + d.path + " (dropped)";
    if (features_.Learn(d.feature, kube::FeatureState::kDropped, evidence)) {
      changed = true;
      Report(PublisherReport::Kind::kFeature,
             std::string(kube::ServerFeatureGate(d.feature)) + ": dropped: " + evidence);
    }
  }
  return changed;
}

Status SlicePublisher::EnsureFeatures(const DeviceCatalog& catalog, bool force) {
  if (!version_asked_) {
    // The version is for logs and gatherinfo only: the gates decide, and they are probed.
    version_asked_ = true;
    if (auto v = client_.Get(kube::kVersionPath); v.ok()) {
      features_.SetServerVersion(std::string(kube::StringMember(v->doc(), "gitVersion")));
    }
  }
  const bool due =
      force || probe_due_ || (options_.probe_interval.count() > 0 && clock_.Now() >= next_probe_);
  std::vector<kube::ServerFeature> which;
  for (kube::ServerFeature f : FeaturesNeeded(catalog)) {
    if (due || features_.State(f) == kube::FeatureState::kUnknown) which.push_back(f);
  }
  if (which.empty()) return Status::Ok();
  std::vector<std::pair<kube::ServerFeature, kube::FeatureState>> before;
  before.reserve(which.size());
  for (kube::ServerFeature f : which) before.emplace_back(f, features_.State(f));
  kube::ApiErrorDetails details;
  Status s = ProbeSliceFeatures(client_, options_.node_name, which, features_, &details);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.probes += which.size();
  }
  if (!s.ok()) {
    RecordFailure("dry-run POST resourceslices (feature probe)", s, details);
    return s;
  }
  probe_due_ = false;
  next_probe_ = clock_.Now() + options_.probe_interval;
  for (const auto& [f, state] : before) {
    const kube::FeatureFinding now = features_.Finding(f);
    if (now.state != state) {
      Report(PublisherReport::Kind::kFeature, std::string(kube::ServerFeatureGate(f)) + ": " +
                                                  std::string(kube::FeatureStateName(now.state)) +
                                                  " (" + now.evidence + ")");
    }
  }
  return Status::Ok();
}

SlicePublisher::~SlicePublisher() = default;

void SlicePublisher::SetDesired(DeviceCatalog catalog) {
  auto desired = std::make_shared<Desired>();
  desired->catalog = std::move(catalog);
  {
    std::lock_guard<std::mutex> lock(mu_);
    desired_ = std::move(desired);
  }
  MarkDirty(/*immediate=*/true);
}

void SlicePublisher::MarkDirty(bool immediate) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = true;
    immediate_ = immediate_ || immediate;
  }
  cv_.notify_all();
}

void SlicePublisher::Stop() { stop_.request_stop(); }

SlicePublisherStats SlicePublisher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SlicePublisherStats s = stats_;
  s.published = published_.load();
  return s;
}

void SlicePublisher::NoteOwnWrite(const JsonObject& object) {
  std::lock_guard<std::mutex> lock(mu_);
  if (own_writes_.size() >= kMaxOwnRecords) own_writes_.clear();
  own_writes_.emplace(object.Name(), object.ResourceVersion());
}

void SlicePublisher::OnWatchChange(const JsonObject* object, bool deleted) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (object != nullptr) {
      // The echo of our own write changes nothing we do not already know.
      if (deleted ? own_deletes_.erase(object->Name()) > 0
                  : own_writes_.erase({object->Name(), object->ResourceVersion()}) > 0) {
        return;
      }
    }
    ++stats_.watch_triggers;
  }
  MarkDirty(/*immediate=*/false);
}

Status SlicePublisher::EnsureNodeUid() {
  if (!node_uid_.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(const JsonObject node, client_.Get(kube::NodePath(options_.node_name)));
  std::string uid = node.Uid();
  if (uid.empty()) {
    return InternalError("node " + options_.node_name + " has no metadata.uid");
  }
  node_uid_ = std::move(uid);
  return Status::Ok();
}

Status SlicePublisher::SyncOnce() {
  std::lock_guard<std::mutex> sync_lock(sync_mu_);
  Status status = SyncLocked();
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.syncs;
  if (status.ok()) {
    stats_.last_error.clear();
  } else {
    ++stats_.sync_errors;
    stats_.last_error = status.ToString();
  }
  return status;
}

Status SlicePublisher::SyncLocked() {
  std::shared_ptr<const Desired> desired;
  {
    // This sync covers every event and change seen so far.
    std::lock_guard<std::mutex> lock(mu_);
    desired = desired_;
    dirty_ = false;
    immediate_ = false;
  }
  if (desired == nullptr) {
    return FailedPreconditionError("slice publisher: no desired devices yet (SetDesired)");
  }
  auto attempt = [&] {
    Status status;
    for (int i = 0; i <= options_.conflict_retries; ++i) {
      bool conflict = false;
      status = SyncAttempt(*desired, &conflict);
      if (!conflict) break;
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.conflicts;
    }
    return status;
  };
  const uint64_t known = features_.generation();
  auto refusals = [this] {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_.refusals();
  };
  const uint64_t refusals_before = refusals();
  Status status = attempt();
  if (!status.ok() && refusals() > refusals_before) {
    // A gate turned off since the last probe makes the server refuse what it used to keep:
    // probe again now, and when that changed what it keeps, retry with the new shape at once.
    probe_due_ = true;
    if (EnsureFeatures(desired->catalog, /*force=*/true).ok() && features_.generation() != known) {
      status = attempt();
    }
  }
  std::vector<PublishErrorCause> cleared;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status.ok()) {
      cleared = errors_.causes();
      errors_.Clear();
    }
    stats_.rejected = !status.ok() && errors_.refusals() > refusals_before;
    stats_.errors = errors_.causes();
  }
  if (status.ok()) {
    published_ = true;
    uint64_t failures = 0;
    for (const PublishErrorCause& c : cleared) failures += c.count;
    if (failures > 0) {
      Report(PublisherReport::Kind::kRecovered,
             "ResourceSlices published after " + std::to_string(failures) + " failed writes");
    }
  }
  return status;
}

Status SlicePublisher::SyncAttempt(const Desired& desired, bool* conflict) {
  RETURN_IF_ERROR(EnsureNodeUid());
  RETURN_IF_ERROR(EnsureFeatures(desired.catalog, /*force=*/false));
  kube::ListOptions list_options;
  list_options.field_selector = field_selector_;
  ASSIGN_OR_RETURN(kube::ObjectList list, client_.List(kube::kResourceSlicesPath, list_options));
  const std::string& node = options_.node_name;

  // Only what the server keeps; say what that leaves out when it changes.
  const SliceShape shape = ShapeFor(features_);
  std::vector<std::string> notes = DescribeShape(desired.catalog, shape, features_);
  if (notes != shape_notes_) {
    if (notes.empty()) Report(PublisherReport::Kind::kShape, "the full shape is published");
    for (const std::string& n : notes) Report(PublisherReport::Kind::kShape, n);
    shape_notes_ = notes;
    std::lock_guard<std::mutex> lock(mu_);
    stats_.shape_notes = std::move(notes);
  }

  // The desired slices, rendered without generation, name or version: the content to compare.
  const auto chunks = ChunkDevices(desired.catalog, shape);
  const int count = static_cast<int>(chunks.size());
  PoolInfo pool{node, node_uid_, 0, desired.catalog.options.publish_node_allocatable_mapping,
                shape};
  std::vector<std::string> desired_text(count);
  std::vector<JsonObject> desired_key(count);
  for (int i = 0; i < count; ++i) {
    desired_text[i] = RenderResourceSlice(chunks[i], count, i, pool, "", "");
    ASSIGN_OR_RETURN(const JsonObject doc, JsonObject::Parse(desired_text[i]));
    desired_key[i] = ContentKey(doc.doc());
  }
  if (written_.size() < static_cast<size_t>(count)) written_.resize(count);

  auto unchanged = [&](const JsonObject& slice, int index) {
    const JsonObject key = ContentKey(slice.doc());
    if (SameContent(key, desired_key[index])) return true;
    const auto& [text, server_form] = written_[index];
    return text == desired_text[index] && SameContent(key, server_form);
  };

  // 1. The pool's generation; 2. match slices to indexes, the rest is obsolete.
  std::sort(list.items.begin(), list.items.end(),
            [](const JsonObject& a, const JsonObject& b) { return a.Name() < b.Name(); });
  int64_t generation = 0;
  for (const JsonObject& s : list.items) {
    if (PoolName(s) == node) generation = std::max(generation, PoolGeneration(s));
  }
  std::vector<const JsonObject*> matched(count, nullptr);
  std::vector<bool> is_unchanged(count, false);
  std::vector<const JsonObject*> obsolete;
  for (const JsonObject& s : list.items) {
    const std::optional<int> index = SliceIndexFromName(s.Name(), node);
    if (PoolName(s) != node || PoolGeneration(s) < generation || !index || *index >= count) {
      obsolete.push_back(&s);
      continue;
    }
    const bool same = unchanged(s, *index);
    if (matched[*index] == nullptr) {
      matched[*index] = &s;
      is_unchanged[*index] = same;
    } else if (same && !is_unchanged[*index]) {  // keep the duplicate that is already right
      obsolete.push_back(matched[*index]);
      matched[*index] = &s;
      is_unchanged[*index] = true;
    } else {
      obsolete.push_back(&s);
    }
  }

  // 3. A new slice, or more than one changed, moves the generation (protocols.md §7.2).
  int missing = 0;
  int changed = 0;
  for (int i = 0; i < count; ++i) {
    if (matched[i] == nullptr) {
      ++missing;
    } else if (!is_unchanged[i]) {
      ++changed;
    }
  }
  const bool bump = missing > 0 || changed > 1;
  pool.generation = bump ? generation + 1 : generation;

  auto remember = [&](int index, const JsonObject& written) {
    written_[index] = {desired_text[index], ContentKey(written.doc())};
    NoteOwnWrite(written);
  };
  auto fail = [&](const std::string& request, const Status& s,
                  const kube::ApiErrorDetails& details) {
    *conflict = kube::IsConflict(s);
    RecordFailure(request, s, details);
    return s;
  };
  bool relearned = false;  // an answer showed a field dropped: republish once this sync ends

  // 4. Delete obsolete slices.
  for (const JsonObject* s : obsolete) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (own_deletes_.size() >= kMaxOwnRecords) own_deletes_.clear();
      own_deletes_.insert(s->Name());
    }
    kube::DeleteOptions preconditions;
    preconditions.uid = s->Uid();
    preconditions.resource_version = s->ResourceVersion();
    const Status st = client_.Delete(kube::ResourceSlicePath(s->Name()), preconditions);
    if (!st.ok() && !kube::IsNotFound(st)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        own_deletes_.erase(s->Name());
      }
      // Delete gives a Status only; its code says enough for the metric.
      kube::ApiErrorDetails details;
      details.reason = std::string(StatusCodeName(st.code()));
      details.message = st.message();
      return fail("DELETE resourceslices/" + s->Name(), st, details);
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.deletes;
  }
  // 5. Update changed slices (all of them when the generation moved).
  for (int i = 0; i < count; ++i) {
    if (matched[i] == nullptr || (!bump && is_unchanged[i])) continue;
    ASSIGN_OR_RETURN(JsonObject body, JsonObject::Parse(RenderResourceSlice(
                                          chunks[i], count, i, pool, matched[i]->Name(),
                                          matched[i]->ResourceVersion())));
    kube::ApiErrorDetails details;
    Result<JsonObject> updated =
        client_.Update(kube::ResourceSlicePath(matched[i]->Name()), body, &details);
    if (!updated.ok()) {
      return fail("PUT resourceslices/" + matched[i]->Name(), updated.status(), details);
    }
    relearned = CheckAnswer(body, *updated) || relearned;
    remember(i, *updated);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.updates;
  }
  // 6. Create missing slices.
  for (int i = 0; i < count; ++i) {
    if (matched[i] != nullptr) continue;
    ASSIGN_OR_RETURN(JsonObject body,
                     JsonObject::Parse(RenderResourceSlice(chunks[i], count, i, pool, "", "")));
    kube::ApiErrorDetails details;
    Result<JsonObject> created = client_.Create(kube::kResourceSlicesPath, body, &details);
    if (!created.ok()) {
      return fail("POST resourceslices (" + SliceGenerateName(i, node) + ")", created.status(),
                  details);
    }
    relearned = CheckAnswer(body, *created) || relearned;
    remember(i, *created);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.creates;
  }
  if (relearned) MarkDirty(/*immediate=*/true);  // the shape changed under us: publish it
  std::lock_guard<std::mutex> lock(mu_);
  stats_.generation = pool.generation;
  stats_.slices = count;
  return Status::Ok();
}

void SlicePublisher::Run(const std::stop_token& stop) {
  // Stop() and the caller's stop both end every wait below (condition variable, clock sleeps, the
  // informer's watch) without any of them polling.
  std::stop_callback forward(stop, [this] { Stop(); });
  const std::stop_token token = stop_.get_token();
  auto stopping = [&] { return token.stop_requested(); };
  auto sleep = [&](std::chrono::milliseconds d) { clock_.SleepFor(d, token); };

  kube::InformerOptions io;
  io.field_selector = field_selector_;
  io.watch_timeout_seconds = options_.watch_timeout_seconds;
  io.backoff = options_.watch_backoff;
  kube::InformerHandlers handlers;
  handlers.on_add = [this](const JsonObject& o) { OnWatchChange(&o, false); };
  handlers.on_update = [this](const JsonObject&, const JsonObject& o) { OnWatchChange(&o, false); };
  handlers.on_delete = [this](const JsonObject& o) { OnWatchChange(&o, true); };
  handlers.on_synced = [this] { OnWatchChange(nullptr, false); };
  kube::Informer informer(client_, std::string(kube::kResourceSlicesPath), io, handlers, clock_,
                          random_);
  std::jthread informer_thread(
      [&](std::stop_token informer_stop) { informer.Run(std::move(informer_stop)).IgnoreError(); });

  Backoff backoff(options_.backoff, random_);
  Backoff rejection_backoff(options_.rejection_backoff, random_);
  bool retry = false;  // the last sync failed: sync again after the backoff, events or not
  auto next_resync = clock_.Now() + options_.resync_interval;
  while (!stopping()) {
    bool dirty = false;
    bool immediate = false;
    bool have_desired = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Events before the first SetDesired keep the pool dirty but must not spin the loop.
      if (!retry) {
        auto ready = [&] { return dirty_ && desired_ != nullptr; };
        if (options_.resync_interval.count() > 0) {
          // Until the next safety-net resync, measured on the injected clock.
          const auto left = std::max(Clock::Duration::zero(), next_resync - clock_.Now());
          cv_.wait_for(lock, token, left, ready);
        } else {
          cv_.wait(lock, token, ready);
        }
      }
      dirty = dirty_;
      immediate = immediate_;
      have_desired = desired_ != nullptr;
    }
    if (stopping()) break;
    if (!have_desired) {  // nothing to publish yet; events keep the pool dirty
      next_resync = clock_.Now() + options_.resync_interval;
      continue;
    }
    const bool resync_due = options_.resync_interval.count() > 0 && clock_.Now() >= next_resync;
    if (!dirty && !retry && !resync_due) continue;
    if (dirty && !immediate && !retry && options_.debounce.count() > 0) {
      sleep(options_.debounce);  // let a burst of events settle into one sync
      if (stopping()) break;
    }
    if (SyncOnce().ok()) {
      backoff.Reset();
      rejection_backoff.Reset();
      retry = false;
      next_resync = clock_.Now() + options_.resync_interval;
    } else {
      retry = true;
      // A refusal waits longer: the same content would be refused again.
      sleep(stats().rejected ? rejection_backoff.Next() : backoff.Next());
    }
  }
  informer_thread.request_stop();
  informer_thread.join();
}

}  // namespace dracpu::dra
