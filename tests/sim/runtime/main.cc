// dracpu-runtime-sim: serves an NRI socket like containerd and runs a scenario against whatever
// plugin connects (the nri-agent, in e2e tests and the demo). Exit 0 when every step passed,
// 1 on the first failed step (printed), 2 on a usage or scenario error.
//
//   dracpu-runtime-sim --socket /tmp/x/nri.sock --scenario s.yaml [--step-timeout-ms 10000]
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "nri-agent/loop/event_loop.h"
#include "tests/sim/runtime/runtime_sim.h"
#include "tests/sim/runtime/scenario.h"

int main(int argc, char** argv) {
  std::string socket, scenario_path;
  int step_timeout_ms = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--socket") {
      socket = argv[i + 1];
    } else if (flag == "--scenario") {
      scenario_path = argv[i + 1];
    } else if (flag == "--step-timeout-ms") {
      step_timeout_ms = std::atoi(argv[i + 1]);
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (socket.empty() || scenario_path.empty() || argc % 2 == 0) {
    std::cerr << "usage: " << argv[0] << " --socket PATH --scenario FILE [--step-timeout-ms N]\n";
    return 2;
  }
  std::ifstream in(scenario_path);
  if (!in) {
    std::cerr << "cannot read " << scenario_path << "\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto scenario = dracpu::sim::ParseScenario(text.str());
  if (!scenario.ok()) {
    std::cerr << scenario_path << ": " << scenario.status().ToString() << "\n";
    return 2;
  }
  auto loop = dracpu::loop::EventLoop::Create();
  if (!loop.ok()) {
    std::cerr << loop.status().ToString() << "\n";
    return 2;
  }
  auto sim = dracpu::sim::RuntimeSimulator::Listen(**loop, socket, scenario->runtime);
  if (!sim.ok()) {
    std::cerr << sim.status().ToString() << "\n";
    return 2;
  }
  dracpu::sim::SeedScenario(*scenario, **sim);
  const dracpu::Status result = dracpu::sim::RunScenario(
      *scenario, **loop, **sim, std::chrono::milliseconds(step_timeout_ms));
  if (!result.ok()) {
    std::cout << "FAIL " << result.ToString() << "\n";
    return 1;
  }
  std::cout << "PASS " << scenario->steps.size() << " steps\n";
  return 0;
}
