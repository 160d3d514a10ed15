// ControlSession: drives a RuntimeSimulator from JSON command lines (dracpu-runtime-sim
// --control), so a script (tests/e2e/whole_node.py, the soak, the demo) plays the container
// runtime step by step against whatever plugin connects.
//
// Protocol. One JSON object per input line; exactly one JSON reply line per command, written in
// command order (a reply waits for every earlier one). Every reply has "ok": true/false and, when
// false, "error": a string naming what failed (the line number and field for a bad command, the
// plugin's or the simulator's error otherwise). A malformed line or an unknown op is answered
// with ok:false and the session goes on. Commands ("op"):
//   {"op":"wait_plugin","timeout_ms":10000}   ok once a plugin is registered and synchronized
//       (PluginState kReady); error after timeout_ms (default 10000).
//   {"op":"create","pod":{"id","name","uid","namespace"},
//                  "container":{"id","name","env":["K=V",...],"pid":0,"cpus":"","mems":""}}
//       RuntimeSimulator::CreateContainer; pod.id and container.id are required, the rest
//       optional (container cpus/mems: what the kubelet asked for, before the plugin adjusts).
//       Reply {"ok":true,"cpus":"<applied>","mems":"<applied or empty>"} or the plugin's error.
//   {"op":"update","id":"c1","cpus":"0-7","mems":""}   UpdateContainer; ok / error.
//   {"op":"stop","id":"c1"}  {"op":"remove","id":"c1"}  StopContainer / RemoveContainer.
//   {"op":"list"}  {"ok":true,"plugin":"none|registering|synchronizing|ready",
//       "containers":[{"id","pod","name","state","cpus","mems","pid"},...]} sorted by id, where
//       pod is the sandbox id, state one of unknown|created|paused|running|stopped and cpus/mems
//       what the runtime applied (unsolicited UpdateContainers from the plugin included).
//   {"op":"restart"}      a runtime restart as the plugin sees it: the plugin connection is
//       dropped, containers are kept (running), the socket is closed and listens again; ok once
//       it listens. The plugin reconnects and gets a Synchronize with the kept containers.
//   {"op":"drop_plugin"}  closes the plugin connection only.
//   {"op":"quit"}         ok, then the session asks to quit (after its reply is written).
// Operations run on the simulator's event loop and never block it: a reply is written when its
// operation completes.
//
// Thread safety: none; everything runs on the simulator's EventLoop thread. The session must
// outlive no callback: callbacks pending at destruction are dropped safely.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/event_loop.h"
#include "tests/sim/runtime/runtime_sim.h"

namespace dracpu::sim {

class ControlSession {
 public:
  // `write_line` gets each reply without the newline (the caller adds it and flushes).
  // `quit` runs once, after the reply to "quit" or, following Finish(), once every reply is out.
  ControlSession(loop::EventLoop& loop, RuntimeSimulator& sim,
                 std::function<void(const std::string&)> write_line, std::function<void()> quit);
  ~ControlSession();
  ControlSession(const ControlSession&) = delete;
  ControlSession& operator=(const ControlSession&) = delete;

  // Splits `bytes` (a chunk of the input stream) into lines and handles each complete one.
  void OnInput(std::string_view bytes);
  // Handles one command line (no newline). Blank lines are ignored and get no reply.
  void OnLine(std::string_view line);
  // End of input: handles a last unterminated line, then quits once every reply is written.
  void Finish();

  size_t pending_replies() const { return replies_.size(); }

 private:
  struct Reply {
    bool ready = false;
    bool quit = false;
    std::string text;
  };
  // Reserves the next reply slot; Complete fills it and writes every ready reply at the front.
  uint64_t Reserve();
  void Complete(uint64_t slot, std::string text, bool quit = false);
  void Flush();
  void WaitPlugin(uint64_t slot, std::chrono::steady_clock::time_point deadline);
  // A completion callback for the simulator that answers `slot` (guarded against our destruction).
  RuntimeSimulator::Done Answer(uint64_t slot);

  loop::EventLoop& loop_;
  RuntimeSimulator& sim_;
  std::function<void(const std::string&)> write_line_;
  std::function<void()> quit_;
  std::string partial_;  // input after the last newline
  int line_number_ = 0;
  uint64_t first_slot_ = 0;  // slot number of replies_.front()
  std::deque<Reply> replies_;
  bool finishing_ = false;
  bool quit_called_ = false;
  std::shared_ptr<ControlSession*> self_;
};

// Reply helpers, exposed for the tests: {"ok":true} and {"ok":false,"error":"..."}.
std::string OkReply();
std::string ErrorReply(std::string_view error);

}  // namespace dracpu::sim
