#include "tests/sim/runtime/control_session.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <utility>

namespace dracpu::sim {

namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;
constexpr std::chrono::milliseconds kPluginPoll{10};
constexpr int64_t kDefaultWaitMs = 10000;

void Str(Writer& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

const char* StateName(nri::ContainerState s) {
  switch (s) {
    case nri::ContainerState::kCreated:
      return "created";
    case nri::ContainerState::kPaused:
      return "paused";
    case nri::ContainerState::kRunning:
      return "running";
    case nri::ContainerState::kStopped:
      return "stopped";
    case nri::ContainerState::kUnknown:
      break;
  }
  return "unknown";
}

const char* PluginStateName(RuntimeSimulator::PluginState s) {
  switch (s) {
    case RuntimeSimulator::PluginState::kRegistering:
      return "registering";
    case RuntimeSimulator::PluginState::kSynchronizing:
      return "synchronizing";
    case RuntimeSimulator::PluginState::kReady:
      return "ready";
    case RuntimeSimulator::PluginState::kNone:
      break;
  }
  return "none";
}

// Reads optional string member `key` of `obj` into `out`; an error names `where`.`key`.
Status OptString(const rapidjson::Value& obj, const char* key, const std::string& where,
                 std::string* out) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd()) return Status::Ok();
  if (!it->value.IsString()) {
    return InvalidArgumentError("\"" + where + key + "\" must be a string");
  }
  *out = std::string(it->value.GetString(), it->value.GetStringLength());
  return Status::Ok();
}

Status ReqString(const rapidjson::Value& obj, const char* key, const std::string& where,
                 std::string* out) {
  if (!obj.HasMember(key)) return InvalidArgumentError("\"" + where + key + "\" is missing");
  RETURN_IF_ERROR(OptString(obj, key, where, out));
  if (out->empty()) return InvalidArgumentError("\"" + where + key + "\" is empty");
  return Status::Ok();
}

Result<nri::Pod> ParsePod(const rapidjson::Value& cmd) {
  auto it = cmd.FindMember("pod");
  if (it == cmd.MemberEnd() || !it->value.IsObject()) {
    return InvalidArgumentError("\"pod\" must be an object");
  }
  const rapidjson::Value& v = it->value;
  nri::Pod pod;
  RETURN_IF_ERROR(ReqString(v, "id", "pod.", &pod.id));
  RETURN_IF_ERROR(OptString(v, "name", "pod.", &pod.name));
  RETURN_IF_ERROR(OptString(v, "uid", "pod.", &pod.uid));
  RETURN_IF_ERROR(OptString(v, "namespace", "pod.", &pod.namespace_name));
  return pod;
}

Result<nri::Container> ParseContainer(const rapidjson::Value& cmd) {
  auto it = cmd.FindMember("container");
  if (it == cmd.MemberEnd() || !it->value.IsObject()) {
    return InvalidArgumentError("\"container\" must be an object");
  }
  const rapidjson::Value& v = it->value;
  nri::Container c;
  RETURN_IF_ERROR(ReqString(v, "id", "container.", &c.id));
  RETURN_IF_ERROR(OptString(v, "name", "container.", &c.name));
  RETURN_IF_ERROR(OptString(v, "cpus", "container.", &c.cpuset.cpus));
  RETURN_IF_ERROR(OptString(v, "mems", "container.", &c.cpuset.mems));
  if (auto env = v.FindMember("env"); env != v.MemberEnd()) {
    if (!env->value.IsArray()) return InvalidArgumentError("\"container.env\" must be an array");
    for (const auto& e : env->value.GetArray()) {
      if (!e.IsString()) return InvalidArgumentError("\"container.env\" entries must be strings");
      c.env.emplace_back(e.GetString(), e.GetStringLength());
    }
  }
  if (auto pid = v.FindMember("pid"); pid != v.MemberEnd()) {
    if (!pid->value.IsUint()) {
      return InvalidArgumentError("\"container.pid\" must be a non-negative integer");
    }
    c.pid = pid->value.GetUint();
  }
  return c;
}

}  // namespace

std::string OkReply() { return R"({"ok":true})"; }

std::string ErrorReply(std::string_view error) {
  rapidjson::StringBuffer b;
  Writer w(b);
  w.StartObject();
  w.Key("ok");
  w.Bool(false);
  w.Key("error");
  Str(w, error);
  w.EndObject();
  return b.GetString();
}

ControlSession::ControlSession(loop::EventLoop& loop, RuntimeSimulator& sim,
                               std::function<void(const std::string&)> write_line,
                               std::function<void()> quit)
    : loop_(loop),
      sim_(sim),
      write_line_(std::move(write_line)),
      quit_(std::move(quit)),
      self_(std::make_shared<ControlSession*>(this)) {}

ControlSession::~ControlSession() = default;

uint64_t ControlSession::Reserve() {
  replies_.emplace_back();
  return first_slot_ + replies_.size() - 1;
}

void ControlSession::Complete(uint64_t slot, std::string text, bool quit) {
  Reply& r = replies_[slot - first_slot_];
  r.ready = true;
  r.quit = quit;
  r.text = std::move(text);
  Flush();
}

void ControlSession::Flush() {
  while (!replies_.empty() && replies_.front().ready && !quit_called_) {
    Reply r = std::move(replies_.front());
    replies_.pop_front();
    ++first_slot_;
    write_line_(r.text);
    if (r.quit) {
      quit_called_ = true;
      quit_();
    }
  }
  if (finishing_ && replies_.empty() && !quit_called_) {
    quit_called_ = true;
    quit_();
  }
}

RuntimeSimulator::Done ControlSession::Answer(uint64_t slot) {
  std::weak_ptr<ControlSession*> weak = self_;
  return [weak, slot](const Status& s) {
    std::shared_ptr<ControlSession*> self = weak.lock();
    if (!self) return;
    (*self)->Complete(slot, s.ok() ? OkReply() : ErrorReply(s.ToString()));
  };
}

void ControlSession::OnInput(std::string_view bytes) {
  partial_.append(bytes);
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    OnLine(std::string_view(partial_).substr(start, nl - start));
  }
  partial_.erase(0, start);
}

void ControlSession::Finish() {
  if (!partial_.empty()) {
    std::string last = std::move(partial_);
    partial_.clear();
    OnLine(last);
  }
  finishing_ = true;
  Flush();
}

void ControlSession::WaitPlugin(uint64_t slot, std::chrono::steady_clock::time_point deadline) {
  if (sim_.plugin_state() == RuntimeSimulator::PluginState::kReady) {
    return Complete(slot, OkReply());
  }
  if (std::chrono::steady_clock::now() >= deadline) {
    std::string why = "wait_plugin: no plugin ready (state " +
                      std::string(PluginStateName(sim_.plugin_state())) + ")";
    if (!sim_.last_drop().ok()) why += "; last drop: " + sim_.last_drop().ToString();
    return Complete(slot, ErrorReply(why));
  }
  std::weak_ptr<ControlSession*> weak = self_;
  loop_.AddTimer(kPluginPoll, [weak, slot, deadline]() {
    std::shared_ptr<ControlSession*> self = weak.lock();
    if (self) (*self)->WaitPlugin(slot, deadline);
  });
}

void ControlSession::OnLine(std::string_view raw) {
  ++line_number_;
  std::string line(raw);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.find_first_not_of(" \t") == std::string::npos) return;
  const uint64_t slot = Reserve();
  const std::string where = "line " + std::to_string(line_number_) + ": ";
  auto fail = [&](const std::string& why) { Complete(slot, ErrorReply(where + why)); };

  rapidjson::Document cmd;
  cmd.Parse(line.data(), line.size());
  if (cmd.HasParseError()) {
    return fail(std::string("not JSON (") + rapidjson::GetParseError_En(cmd.GetParseError()) +
                " at offset " + std::to_string(cmd.GetErrorOffset()) + ")");
  }
  if (!cmd.IsObject()) return fail("not a JSON object");
  std::string op;
  if (Status s = ReqString(cmd, "op", "", &op); !s.ok()) return fail(s.message());

  if (op == "wait_plugin") {
    int64_t timeout_ms = kDefaultWaitMs;
    if (auto it = cmd.FindMember("timeout_ms"); it != cmd.MemberEnd()) {
      if (!it->value.IsInt64() || it->value.GetInt64() < 0) {
        return fail("\"timeout_ms\" must be a non-negative integer");
      }
      timeout_ms = it->value.GetInt64();
    }
    return WaitPlugin(slot,
                      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms));
  }
  if (op == "create") {
    Result<nri::Pod> pod = ParsePod(cmd);
    if (!pod.ok()) return fail(pod.status().message());
    Result<nri::Container> container = ParseContainer(cmd);
    if (!container.ok()) return fail(container.status().message());
    std::weak_ptr<ControlSession*> weak = self_;
    const std::string id = container->id;
    sim_.CreateContainer(*pod, *container, [weak, slot, id](const Status& s) {
      std::shared_ptr<ControlSession*> self = weak.lock();
      if (!self) return;
      ControlSession& session = **self;
      if (!s.ok()) return session.Complete(slot, ErrorReply(s.ToString()));
      auto it = session.sim_.containers().find(id);
      const nri::Cpuset applied =
          it == session.sim_.containers().end() ? nri::Cpuset{} : it->second.container.cpuset;
      rapidjson::StringBuffer b;
      Writer w(b);
      w.StartObject();
      w.Key("ok");
      w.Bool(true);
      w.Key("cpus");
      Str(w, applied.cpus);
      w.Key("mems");
      Str(w, applied.mems);
      w.EndObject();
      session.Complete(slot, b.GetString());
    });
    return;
  }
  if (op == "update" || op == "stop" || op == "remove") {
    std::string id;
    if (Status s = ReqString(cmd, "id", "", &id); !s.ok()) return fail(s.message());
    if (op == "update") {
      nri::Cpuset requested;
      if (Status s = OptString(cmd, "cpus", "", &requested.cpus); !s.ok()) return fail(s.message());
      if (Status s = OptString(cmd, "mems", "", &requested.mems); !s.ok()) return fail(s.message());
      if (requested.empty()) return fail("update needs \"cpus\" or \"mems\"");
      return sim_.UpdateContainer(id, requested, Answer(slot));
    }
    if (op == "stop") return sim_.StopContainer(id, Answer(slot));
    return sim_.RemoveContainer(id, Answer(slot));
  }
  if (op == "list") {
    rapidjson::StringBuffer b;
    Writer w(b);
    w.StartObject();
    w.Key("ok");
    w.Bool(true);
    w.Key("plugin");
    Str(w, PluginStateName(sim_.plugin_state()));
    w.Key("containers");
    w.StartArray();
    for (const auto& [cid, c] : sim_.containers()) {
      w.StartObject();
      w.Key("id");
      Str(w, cid);
      w.Key("pod");
      Str(w, c.pod.id);
      w.Key("name");
      Str(w, c.container.name);
      w.Key("state");
      Str(w, StateName(c.container.state));
      w.Key("cpus");
      Str(w, c.container.cpuset.cpus);
      w.Key("mems");
      Str(w, c.container.cpuset.mems);
      w.Key("pid");
      w.Uint(c.container.pid);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    return Complete(slot, b.GetString());
  }
  if (op == "restart") {
    sim_.DropPlugin(UnavailableError("runtime restart"));
    Status s = sim_.Relisten();
    return Complete(slot, s.ok() ? OkReply() : ErrorReply("restart: " + s.ToString()));
  }
  if (op == "drop_plugin") {
    sim_.DropPlugin(UnavailableError("dropped by the control session"));
    return Complete(slot, OkReply());
  }
  if (op == "quit") return Complete(slot, OkReply(), /*quit=*/true);
  fail("unknown op \"" + op + "\"");
}

}  // namespace dracpu::sim
