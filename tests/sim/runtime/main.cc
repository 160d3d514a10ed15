// dracpu-runtime-sim: serves an NRI socket like containerd, for e2e tests and the demo, in one of
// two modes against whatever plugin connects (the nri-agent):
//
//   dracpu-runtime-sim --socket PATH --scenario FILE [--step-timeout-ms 10000]
//     runs a YAML scenario (scenario.h). Exit 0 when every step passed, 1 on the first failed
//     step (printed), 2 on a usage or scenario error.
//
//   dracpu-runtime-sim --socket PATH --control [--apply-affinity] [--cgroup-parent DIR]
//                      [--runtime-name NAME] [--runtime-version V] [--nri-version vX.Y.Z]
//     prints {"ready":true,"socket":"PATH"} once the socket listens, then reads one JSON command
//     per stdin line and writes one JSON reply line per command on stdout (control_session.h has
//     the protocol). Exit 0 after "quit", EOF on stdin (once pending replies are written) or
//     SIGTERM/SIGINT; 2 on a usage or start-up error. The socket file is removed on exit.
//
// --apply-affinity pins each container's process (its pid) with sched_setaffinity;
// --cgroup-parent DIR (root) gives each one a cgroup cpuset under DIR, as runc would, and
// removes those cgroups again on container removal and on exit (cgroup_cpusets.h).
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "common/event_loop.h"
#include "tests/sim/runtime/cgroup_cpusets.h"
#include "tests/sim/runtime/control_session.h"
#include "tests/sim/runtime/runtime_sim.h"
#include "tests/sim/runtime/scenario.h"
#include "tests/testing/real_clock.h"

namespace {

int Usage(const char* argv0) {
  std::cerr << "usage: " << argv0 << " --socket PATH --scenario FILE [--step-timeout-ms N]\n"
            << "       " << argv0 << " --socket PATH --control [--apply-affinity]"
            << " [--cgroup-parent DIR] [--runtime-name NAME] [--runtime-version V]"
            << " [--nri-version vX.Y.Z]\n";
  return 2;
}

int RunControl(const std::string& socket, dracpu::sim::RuntimeOptions options) {
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  dracpu::UniqueFd sig_fd(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  auto loop = dracpu::loop::EventLoop::Create(dracpu::testing::RealClock());
  if (!sig_fd || !loop.ok()) {
    std::cerr << "start-up failed: "
              << (loop.ok() ? "signalfd: " + std::string(strerror(errno))
                            : loop.status().ToString())
              << "\n";
    return 2;
  }
  auto sim = dracpu::sim::RuntimeSimulator::Listen(**loop, socket, std::move(options));
  if (!sim.ok()) {
    std::cerr << sim.status().ToString() << "\n";
    return 2;
  }
  dracpu::loop::EventLoop& l = **loop;
  dracpu::sim::ControlSession session(
      l, **sim, [](const std::string& reply) { std::cout << reply << "\n"
                                                         << std::flush; },
      [&l]() { l.Stop(); });
  auto on_signal = l.Watch(sig_fd.get(), EPOLLIN, [&](uint32_t) {
    signalfd_siginfo info;
    while (::read(sig_fd.get(), &info, sizeof info) == sizeof info) {
    }
    l.Stop();
  });
  dracpu::loop::EventLoop::WatchId stdin_watch = 0;
  auto on_stdin = l.Watch(STDIN_FILENO, EPOLLIN, [&](uint32_t) {
    char buf[65536];
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n > 0) return session.OnInput(std::string_view(buf, static_cast<size_t>(n)));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    l.Unwatch(stdin_watch);  // EOF (or a read error): finish what is pending, then exit
    session.Finish();
  });
  if (!on_signal.ok() || !on_stdin.ok()) {
    std::cerr << "watching stdin and signals: "
              << (on_stdin.ok() ? on_signal.status() : on_stdin.status()).ToString() << "\n";
    return 2;
  }
  stdin_watch = *on_stdin;
  std::cout << "{\"ready\":true,\"socket\":\"" << socket << "\"}\n" << std::flush;
  if (dracpu::Status s = l.Run(); !s.ok()) {
    std::cerr << "event loop: " << s.ToString() << "\n";
    return 2;
  }
  return 0;  // `sim` goes out of scope and removes the socket file
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket, scenario_path;
  int step_timeout_ms = 10000;
  bool control = false;
  dracpu::sim::RuntimeOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--control") {
      control = true;
      continue;
    }
    if (flag == "--apply-affinity") {
      options.apply_affinity = true;
      continue;
    }
    if (i + 1 >= argc) return Usage(argv[0]);
    const std::string value = argv[++i];
    if (flag == "--socket") {
      socket = value;
    } else if (flag == "--scenario") {
      scenario_path = value;
    } else if (flag == "--step-timeout-ms") {
      step_timeout_ms = std::atoi(value.c_str());
    } else if (flag == "--runtime-name") {
      options.runtime_name = value;
    } else if (flag == "--runtime-version") {
      options.runtime_version = value;
    } else if (flag == "--nri-version") {
      options.nri_version = value;
    } else if (flag == "--cgroup-parent") {
      options.cgroup_parent = value;
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return Usage(argv[0]);
    }
  }
  if (socket.empty() || control == !scenario_path.empty()) return Usage(argv[0]);
  if (!options.cgroup_parent.empty()) {
    if (auto cgroups = dracpu::sim::CgroupCpusets::Open(options.cgroup_parent); !cgroups.ok()) {
      std::cerr << "--cgroup-parent: " << cgroups.status().ToString() << "\n";
      return 2;
    }
  }
  if (control) return RunControl(socket, std::move(options));
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
  auto loop = dracpu::loop::EventLoop::Create(dracpu::testing::RealClock());
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
