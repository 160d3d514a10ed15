#include "tests/sim/runtime/scenario.h"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <set>

namespace dracpu::sim {

namespace {

using namespace std::chrono_literals;

// yaml-cpp reports errors by throwing; this file is the one place that catches them.
Status CheckKeys(const YAML::Node& node, const std::set<std::string>& allowed,
                 const std::string& where) {
  if (!node.IsMap()) return InvalidArgumentError(where + ": expected a mapping");
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (allowed.count(key) == 0)
      return InvalidArgumentError(where + ": unknown key \"" + key + "\"");
  }
  return Status::Ok();
}

std::string Str(const YAML::Node& node, const char* key) {
  return node[key] ? node[key].as<std::string>() : std::string();
}

Result<nri::Container> ParseContainer(const YAML::Node& node, const std::string& where,
                                      std::string* pod_id) {
  RETURN_IF_ERROR(CheckKeys(node, {"id", "pod", "name", "env", "cpus", "mems", "pid"}, where));
  nri::Container c;
  c.id = Str(node, "id");
  if (c.id.empty()) return InvalidArgumentError(where + ": container without id");
  *pod_id = Str(node, "pod");
  c.pod_sandbox_id = *pod_id;
  c.name = Str(node, "name");
  if (node["env"]) c.env = node["env"].as<std::vector<std::string>>();
  c.cpuset = {Str(node, "cpus"), Str(node, "mems")};
  if (node["pid"]) c.pid = node["pid"].as<uint32_t>();
  return c;
}

Result<Scenario> ParseUnsafe(const std::string& text) {
  const YAML::Node root = YAML::Load(text);
  RETURN_IF_ERROR(CheckKeys(root, {"runtime", "pods", "containers", "steps"}, "scenario"));
  Scenario s;
  if (const YAML::Node r = root["runtime"]) {
    RETURN_IF_ERROR(CheckKeys(r,
                              {"name", "version", "nri_version", "registration_timeout_ms",
                               "request_timeout_ms", "apply_affinity"},
                              "runtime"));
    if (r["name"]) s.runtime.runtime_name = r["name"].as<std::string>();
    if (r["version"]) s.runtime.runtime_version = r["version"].as<std::string>();
    if (r["nri_version"]) s.runtime.nri_version = r["nri_version"].as<std::string>();
    if (r["registration_timeout_ms"]) {
      s.runtime.registration_timeout =
          std::chrono::milliseconds(r["registration_timeout_ms"].as<int>());
    }
    if (r["request_timeout_ms"]) {
      s.runtime.request_timeout = std::chrono::milliseconds(r["request_timeout_ms"].as<int>());
    }
    if (r["apply_affinity"]) s.runtime.apply_affinity = r["apply_affinity"].as<bool>();
  }
  for (const YAML::Node& p : root["pods"]) {
    RETURN_IF_ERROR(CheckKeys(p, {"id", "name", "uid", "namespace"}, "pod"));
    nri::Pod pod{Str(p, "id"), Str(p, "name"), Str(p, "uid"), Str(p, "namespace"), {}, {}};
    if (pod.id.empty()) return InvalidArgumentError("pod without id");
    s.pods[pod.id] = pod;
  }
  for (const YAML::Node& c : root["containers"]) {
    std::string pod_id;
    ASSIGN_OR_RETURN(nri::Container container, ParseContainer(c, "container", &pod_id));
    if (s.pods.count(pod_id) == 0) {
      return InvalidArgumentError("container " + container.id + ": unknown pod \"" + pod_id + "\"");
    }
    s.containers.push_back(std::move(container));
  }
  int index = 0;
  for (const YAML::Node& st : root["steps"]) {
    const std::string where = "step " + std::to_string(index++);
    if (!st.IsMap()) return InvalidArgumentError(where + ": expected a mapping");
    ScenarioStep step;
    std::string kind;
    for (const auto& kv : st) {
      const std::string key = kv.first.as<std::string>();
      if (key == "expect_error") {
        step.expect_error = kv.second.as<std::string>();
        continue;
      }
      if (!kind.empty()) return InvalidArgumentError(where + ": more than one action");
      kind = key;
    }
    const YAML::Node body = st[kind];
    if (kind == "wait_plugin") {
      step.kind = ScenarioStep::Kind::kWaitPlugin;
    } else if (kind == "drop_plugin") {
      step.kind = ScenarioStep::Kind::kDropPlugin;
    } else if (kind == "create") {
      step.kind = ScenarioStep::Kind::kCreate;
      ASSIGN_OR_RETURN(step.container, ParseContainer(body, where, &step.pod_id));
      if (s.pods.count(step.pod_id) == 0) {
        return InvalidArgumentError(where + ": unknown pod \"" + step.pod_id + "\"");
      }
    } else if (kind == "update" || kind == "stop" || kind == "remove") {
      step.kind = kind == "update" ? ScenarioStep::Kind::kUpdate
                  : kind == "stop" ? ScenarioStep::Kind::kStop
                                   : ScenarioStep::Kind::kRemove;
      RETURN_IF_ERROR(CheckKeys(
          body,
          kind == "update" ? std::set<std::string>{"id", "cpus"} : std::set<std::string>{"id"},
          where));
      step.container.id = Str(body, "id");
      step.cpus = Str(body, "cpus");
    } else if (kind == "expect_cpus") {
      step.kind = ScenarioStep::Kind::kExpectCpus;
      step.expect_cpus = body.as<std::map<std::string, std::string>>();
    } else if (kind == "expect_absent") {
      step.kind = ScenarioStep::Kind::kExpectAbsent;
      step.expect_absent = body.as<std::vector<std::string>>();
    } else {
      return InvalidArgumentError(where + ": unknown action \"" + kind + "\"");
    }
    if (!step.expect_error.empty() && step.kind != ScenarioStep::Kind::kCreate &&
        step.kind != ScenarioStep::Kind::kUpdate && step.kind != ScenarioStep::Kind::kStop &&
        step.kind != ScenarioStep::Kind::kRemove) {
      return InvalidArgumentError(where + ": expect_error only applies to container operations");
    }
    s.steps.push_back(std::move(step));
  }
  return s;
}

const char* KindName(ScenarioStep::Kind k) {
  switch (k) {
    case ScenarioStep::Kind::kWaitPlugin:
      return "wait_plugin";
    case ScenarioStep::Kind::kCreate:
      return "create";
    case ScenarioStep::Kind::kUpdate:
      return "update";
    case ScenarioStep::Kind::kStop:
      return "stop";
    case ScenarioStep::Kind::kRemove:
      return "remove";
    case ScenarioStep::Kind::kDropPlugin:
      return "drop_plugin";
    case ScenarioStep::Kind::kExpectCpus:
      return "expect_cpus";
    case ScenarioStep::Kind::kExpectAbsent:
      return "expect_absent";
  }
  return "?";
}

// Runs the loop until `done()` or `timeout` of wall time.
Status RunUntil(loop::EventLoop& loop, std::chrono::milliseconds timeout,
                const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceededError("nothing happened within " + std::to_string(timeout.count()) +
                                   " ms");
    }
    RETURN_IF_ERROR(loop.RunOnce(10ms));
  }
  return Status::Ok();
}

}  // namespace

Result<Scenario> ParseScenario(const std::string& yaml) {
  try {
    return ParseUnsafe(yaml);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string("scenario: ") + e.what());
  }
}

void SeedScenario(const Scenario& scenario, RuntimeSimulator& sim) {
  for (const nri::Container& c : scenario.containers) {
    sim.AddRunning(scenario.pods.at(c.pod_sandbox_id), c);
  }
}

Status RunScenario(const Scenario& scenario, loop::EventLoop& loop, RuntimeSimulator& sim,
                   std::chrono::milliseconds step_timeout) {
  for (size_t i = 0; i < scenario.steps.size(); ++i) {
    const ScenarioStep& step = scenario.steps[i];
    const std::string where = "step " + std::to_string(i) + " (" + KindName(step.kind) + ")";
    auto fail = [&](const std::string& what) {
      return FailedPreconditionError(where + ": " + what);
    };
    std::optional<Status> result;
    auto done = [&result](const Status& s) { result = s; };
    switch (step.kind) {
      case ScenarioStep::Kind::kWaitPlugin: {
        Status s = RunUntil(loop, step_timeout, [&] {
          return sim.plugin_state() == RuntimeSimulator::PluginState::kReady;
        });
        if (!s.ok()) return fail("plugin not synchronized: " + s.message());
        continue;
      }
      case ScenarioStep::Kind::kDropPlugin:
        sim.DropPlugin(UnavailableError("runtime restart (scenario)"));
        continue;
      case ScenarioStep::Kind::kExpectCpus:
        for (const auto& [id, cpus] : step.expect_cpus) {
          auto it = sim.containers().find(id);
          if (it == sim.containers().end()) return fail("container " + id + " does not exist");
          if (it->second.container.cpuset.cpus != cpus) {
            return fail("container " + id + " has cpus \"" + it->second.container.cpuset.cpus +
                        "\", expected \"" + cpus + "\"");
          }
        }
        continue;
      case ScenarioStep::Kind::kExpectAbsent:
        for (const std::string& id : step.expect_absent) {
          if (sim.containers().count(id) != 0) return fail("container " + id + " still exists");
        }
        continue;
      case ScenarioStep::Kind::kCreate:
        sim.CreateContainer(scenario.pods.at(step.pod_id), step.container, done);
        break;
      case ScenarioStep::Kind::kUpdate:
        sim.UpdateContainer(step.container.id, nri::Cpuset{step.cpus, ""}, done);
        break;
      case ScenarioStep::Kind::kStop:
        sim.StopContainer(step.container.id, done);
        break;
      case ScenarioStep::Kind::kRemove:
        sim.RemoveContainer(step.container.id, done);
        break;
    }
    Status waited = RunUntil(loop, step_timeout, [&] { return result.has_value(); });
    if (!waited.ok()) return fail("no outcome: " + waited.message());
    if (step.expect_error.empty()) {
      if (!result->ok()) return fail("failed: " + result->ToString());
    } else if (result->ok()) {
      return fail("succeeded, expected an error containing \"" + step.expect_error + "\"");
    } else if (result->message().find(step.expect_error) == std::string::npos) {
      return fail("error \"" + result->ToString() + "\" does not contain \"" + step.expect_error +
                  "\"");
    }
  }
  return Status::Ok();
}

}  // namespace dracpu::sim
