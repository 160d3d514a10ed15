// Scenarios for the runtime simulator: the runtime's identity, the pods and containers present
// before the plugin connects, then steps (container operations, a runtime restart as the plugin
// sees it, expectations on applied cpusets and errors). YAML:
//
//   runtime: {name: containerd, version: 2.1.0, nri_version: v0.8.0,
//             registration_timeout_ms: 5000, request_timeout_ms: 2000, apply_affinity: false}
//   pods:       [{id: sb1, name: web, uid: u1, namespace: default}]
//   containers: [{id: c1, pod: sb1, name: app, env: ["A=1"], cpus: "0-7", pid: 0}]
//   steps:
//     - wait_plugin: {}                       # the plugin registered and synchronized
//     - create: {id: c2, pod: sb1, name: x, env: ["DRA_CPUSET_u=2-3"]}
//       expect_error: "not prepared"          # optional; without it the step must succeed
//     - update: {id: c2, cpus: "0-7"}
//     - stop: {id: c2}
//     - remove: {id: c2}
//     - drop_plugin: {}                       # closes the connection, as a runtime restart
//     - expect_cpus: {c1: "0-3", c2: "2-3"}   # "" = never pinned
//     - expect_absent: [c2]
//
// Unknown keys are errors (a typo must not silently skip a check).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/status.h"
#include "nri-agent/nri/types.h"
#include "tests/sim/runtime/runtime_sim.h"

namespace dracpu::sim {

struct ScenarioStep {
  enum class Kind {
    kWaitPlugin,
    kCreate,
    kUpdate,
    kStop,
    kRemove,
    kDropPlugin,
    kExpectCpus,
    kExpectAbsent
  };
  Kind kind = Kind::kWaitPlugin;
  std::string pod_id;        // create
  nri::Container container;  // create (id, name, env, pid); update/stop/remove use id
  std::string cpus;          // update
  std::string expect_error;  // create/update/stop/remove: substring of the error
  std::map<std::string, std::string> expect_cpus;  // expect_cpus
  std::vector<std::string> expect_absent;          // expect_absent
};

struct Scenario {
  RuntimeOptions runtime;
  std::map<std::string, nri::Pod> pods;  // by sandbox id
  std::vector<nri::Container> containers;
  std::vector<ScenarioStep> steps;
};

// INVALID_ARGUMENT naming the offending key or step.
Result<Scenario> ParseScenario(const std::string& yaml);

// Seeds `sim` with the scenario's pods and containers (before the plugin connects).
void SeedScenario(const Scenario& scenario, RuntimeSimulator& sim);

// Runs the steps in order on `loop` (which must be the simulator's). Each step may take up to
// `step_timeout` of wall time (waiting for the plugin, or for an operation the plugin delays).
// Returns the first failure as FAILED_PRECONDITION "step N (kind): ...".
Status RunScenario(const Scenario& scenario, loop::EventLoop& loop, RuntimeSimulator& sim,
                   std::chrono::milliseconds step_timeout);

}  // namespace dracpu::sim
