// SerialEventEngine: a gRPC EventEngine that runs every closure and timer on one thread, which
// sleeps in the kernel until the earliest deadline (or forever when none is pending).
//
// Why: gRPC 1.51 (Debian 12) creates its default engine (PosixEventEngine) for every server,
// with a pool of two threads, a poller and a timer thread that wakes about once a second even
// with no timer pending. The dra-agent's kubelet server speaks HTTP/2 through gRPC's iomgr
// (1.51 does not route server sockets through the EventEngine), so the engine only carries a few
// closures and timers: one thread with exact deadlines does that with no idle wakeups.
//
// The thread starts with the first task (a server on 1.51 may never post one).
//
// Contract (grpc/event_engine/event_engine.h): Run() and RunAfter() never run the closure
// inline; closures run one at a time, in deadline order (Run() = deadline now). A closure may
// call back into the engine. Cancel() is true only for a timer that has not started. Networking
// (CreateListener, Connect, DNS) is not offered: each fails with UNIMPLEMENTED (Connect and DNS
// through their callbacks, on the engine's thread), which is what a gRPC build whose experiments
// route those through the engine would report.
//
// Destruction drops the tasks still pending (AnyInvocables destroyed, Closures left to their
// owners) and ends the thread; from the engine's own thread it detaches it instead of joining.
#pragma once

#include <grpc/event_engine/event_engine.h>

#include <memory>

namespace dracpu::dra {

class SerialEventEngine final : public grpc_event_engine::experimental::EventEngine {
 public:
  SerialEventEngine();
  ~SerialEventEngine() override;

  // Makes SerialEventEngine gRPC's default engine factory; idempotent. Effective for engines
  // created afterwards: call before the first gRPC server or channel of the process.
  static void InstallAsDefault();

  bool IsWorkerThread() override;
  std::unique_ptr<DNSResolver> GetDNSResolver(const DNSResolver::ResolverOptions& options) override;
  void Run(Closure* closure) override;
  void Run(absl::AnyInvocable<void()> closure) override;
  TaskHandle RunAfter(Duration when, Closure* closure) override;
  TaskHandle RunAfter(Duration when, absl::AnyInvocable<void()> closure) override;
  bool Cancel(TaskHandle handle) override;
  absl::StatusOr<std::unique_ptr<Listener>> CreateListener(
      Listener::AcceptCallback on_accept, absl::AnyInvocable<void(absl::Status)> on_shutdown,
      const grpc_event_engine::experimental::EndpointConfig& config,
      std::unique_ptr<grpc_event_engine::experimental::MemoryAllocatorFactory>
          memory_allocator_factory) override;
  ConnectionHandle Connect(OnConnectCallback on_connect, const ResolvedAddress& addr,
                           const grpc_event_engine::experimental::EndpointConfig& args,
                           grpc_event_engine::experimental::MemoryAllocator memory_allocator,
                           Duration timeout) override;
  bool CancelConnect(ConnectionHandle handle) override;

  struct State;  // shared with the thread, so a detached thread outlives the engine safely

 private:
  std::shared_ptr<State> state_;
};

}  // namespace dracpu::dra
