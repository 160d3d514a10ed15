#include "nri-agent/nri/reconnecting_plugin.h"

namespace dracpu::nri {

// Passes every call through to the agent's handler and notices the two moments that matter
// here: a completed Synchronize (the connection is good: reset the backoff) and a disconnect.
class ReconnectingPlugin::Forwarder : public PluginHandler {
 public:
  explicit Forwarder(ReconnectingPlugin& owner) : owner_(owner) {}

  Result<EventMask> Configure(const RuntimeInfo& runtime) override {
    return owner_.handler_.Configure(runtime);
  }
  Result<std::vector<CpusetUpdate>> Synchronize(const std::vector<Pod>& pods,
                                                const std::vector<Container>& containers) override {
    auto result = owner_.handler_.Synchronize(pods, containers);
    if (result.ok()) owner_.backoff_.Reset();
    return result;
  }
  Result<CreateContainerResult> CreateContainer(const Pod& pod, const Container& c) override {
    return owner_.handler_.CreateContainer(pod, c);
  }
  Result<std::vector<CpusetUpdate>> UpdateContainer(const Pod& pod, const Container& c,
                                                    const Cpuset& requested) override {
    return owner_.handler_.UpdateContainer(pod, c, requested);
  }
  Result<std::vector<CpusetUpdate>> StopContainer(const Pod& pod, const Container& c) override {
    return owner_.handler_.StopContainer(pod, c);
  }
  Status RemoveContainer(const Pod& pod, const Container& c) override {
    return owner_.handler_.RemoveContainer(pod, c);
  }
  void Disconnected(const Status& reason) override {
    owner_.handler_.Disconnected(reason);
    owner_.ScheduleRetry(reason);
  }

 private:
  ReconnectingPlugin& owner_;
};

ReconnectingPlugin::ReconnectingPlugin(loop::EventLoop& loop, Connector connect,
                                       PluginOptions options, PluginHandler& handler,
                                       BackoffPolicy backoff)
    : loop_(loop),
      connect_(std::move(connect)),
      options_(std::move(options)),
      handler_(handler),
      backoff_(backoff, nullptr),
      forwarder_(std::make_unique<Forwarder>(*this)),
      self_(std::make_shared<ReconnectingPlugin*>(this)) {}

ReconnectingPlugin::~ReconnectingPlugin() {
  if (retry_timer_ != 0) loop_.CancelTimer(retry_timer_);
}

void ReconnectingPlugin::Start() { Attempt(); }

Plugin::State ReconnectingPlugin::state() const {
  return plugin_ ? plugin_->state() : Plugin::State::kClosed;
}

void ReconnectingPlugin::Attempt() {
  retry_timer_ = 0;
  Result<UniqueFd> fd = connect_();
  if (!fd.ok()) {
    ++failed_attempts_;
    ScheduleRetry(fd.status().WithContext("connect"));
    return;
  }
  Result<std::unique_ptr<Plugin>> plugin =
      Plugin::Start(loop_, std::move(fd).value(), options_, *forwarder_);
  if (!plugin.ok()) {
    ++failed_attempts_;
    ScheduleRetry(plugin.status());
    return;
  }
  ++connections_;
  plugin_ = std::move(plugin).value();
}

void ReconnectingPlugin::ScheduleRetry(const Status& reason) {
  last_error_ = reason;
  if (plugin_) {
    // Called from inside the old Plugin: free it once off its call stack.
    std::shared_ptr<Plugin> old(plugin_.release());
    loop_.Post([old]() {});
  }
  if (retry_timer_ != 0) return;
  const std::chrono::milliseconds delay = backoff_.Next();
  std::weak_ptr<ReconnectingPlugin*> weak = self_;
  retry_timer_ = loop_.AddTimer(delay, [weak]() {
    if (std::shared_ptr<ReconnectingPlugin*> self = weak.lock()) (*self)->Attempt();
  });
}

void ReconnectingPlugin::UpdateContainers(const std::vector<CpusetUpdate>& updates,
                                          Plugin::UpdateCallback done) {
  if (plugin_) {
    plugin_->UpdateContainers(updates, std::move(done));
    return;
  }
  std::weak_ptr<ReconnectingPlugin*> weak = self_;
  loop_.AddTimer(std::chrono::nanoseconds(0), [weak, done = std::move(done)]() {
    if (weak.lock())
      done(FailedPreconditionError("UpdateContainers: not connected to the runtime"));
  });
}

}  // namespace dracpu::nri
