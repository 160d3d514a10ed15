#include "nri-agent/mux/multiplexer.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace dracpu::mux {

namespace {
// One read() per wake-up at most this large; big enough for a whole 4096-byte Go frame plus
// many small ones, small enough to keep other fds on the loop served while a 4 MiB message
// streams in.
constexpr size_t kReadChunk = size_t{256} * 1024;
}  // namespace

class Multiplexer::ConnSink : public ttrpc::MessageSink {
 public:
  ConnSink(Multiplexer& mux, uint32_t conn_id) : mux_(mux), conn_id_(conn_id) {}
  Status Send(std::string message) override { return mux_.SendMessage(conn_id_, message); }

 private:
  Multiplexer& mux_;
  uint32_t conn_id_;
};

Result<std::unique_ptr<Multiplexer>> Multiplexer::Create(loop::EventLoop& loop, UniqueFd trunk,
                                                         CloseCallback on_close) {
  if (!trunk) return InvalidArgumentError("multiplexer: no trunk descriptor");
  const int flags = ::fcntl(trunk.get(), F_GETFL);
  if (flags < 0 || ::fcntl(trunk.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoStatus("multiplexer: fcntl(O_NONBLOCK)", errno);
  }
  std::unique_ptr<Multiplexer> mux(new Multiplexer(loop, std::move(trunk), std::move(on_close)));
  Multiplexer* raw = mux.get();
  ASSIGN_OR_RETURN(mux->watch_, loop.Watch(mux->trunk_.get(), EPOLLIN | EPOLLRDHUP,
                                           [raw](uint32_t events) { raw->OnEvents(events); }));
  return mux;
}

Multiplexer::Multiplexer(loop::EventLoop& loop, UniqueFd trunk, CloseCallback on_close)
    : loop_(loop), trunk_(std::move(trunk)), on_close_(std::move(on_close)) {}

Multiplexer::~Multiplexer() {
  if (watch_ != 0) loop_.Unwatch(watch_);
}

void Multiplexer::Open(uint32_t conn_id, Receiver receiver) {
  receivers_[conn_id] = std::move(receiver);
}

ttrpc::MessageSink& Multiplexer::Sink(uint32_t conn_id) {
  auto& sink = sinks_[conn_id];
  if (!sink) sink = std::make_unique<ConnSink>(*this, conn_id);
  return *sink;
}

Status Multiplexer::SendMessage(uint32_t conn_id, std::string_view message) {
  if (closed()) return UnavailableError("multiplexer closed");
  if (conn_id == 0) return InvalidArgumentError("mux connection id 0 is reserved");
  // Compact before growing: what the socket already took is not needed any more.
  if (out_sent_ > 0 && out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
  }
  if (pending_write_bytes() + message.size() > kMaxPendingWriteBytes) {
    Status stuck = ResourceExhaustedError(
        "multiplexer: the peer has not read " + std::to_string(pending_write_bytes()) +
        " queued bytes; closing the trunk rather than queueing more");
    CloseFromLoop(stuck);
    return stuck;
  }
  RETURN_IF_ERROR(AppendMessageFrames(conn_id, message, &out_));
  if (Status flushed = Flush(); !flushed.ok()) {
    // The error is the trunk's, not this message's.
    CloseFromLoop(flushed);
    return UnavailableError("multiplexer: " + flushed.ToString());
  }
  return Status::Ok();
}

void Multiplexer::CloseFromLoop(const Status& reason) {
  // Not from here: the close completes pending calls, and a caller in the middle of Send must
  // not see its own callbacks run.
  std::weak_ptr<bool> alive = alive_;
  loop_.AddTimer(std::chrono::nanoseconds(0), [this, alive, reason]() {
    if (alive.lock()) Close(reason);
  });
}

Status Multiplexer::Flush() {
  while (out_sent_ < out_.size()) {
    const ssize_t n =
        ::send(trunk_.get(), out_.data() + out_sent_, out_.size() - out_sent_, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return ErrnoStatus("multiplexer: send", errno);
    }
    out_sent_ += static_cast<size_t>(n);
  }
  if (out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
  }
  const bool want_write = out_sent_ < out_.size();
  if (want_write != want_write_) {
    want_write_ = want_write;
    RETURN_IF_ERROR(loop_.Modify(watch_, EPOLLIN | EPOLLRDHUP | (want_write ? EPOLLOUT : 0u)));
  }
  return Status::Ok();
}

void Multiplexer::OnEvents(uint32_t events) {
  if (events & EPOLLOUT) {
    if (Status s = Flush(); !s.ok()) return Close(s);
  }
  // EPOLLIN also fires at EOF and on errors: read() then tells which.
  if (events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
    if (Status s = ReadAvailable(); !s.ok()) return Close(s);
  }
}

Status Multiplexer::ReadAvailable() {
  read_buf_.resize(kReadChunk);
  ssize_t n;
  do {
    n = ::read(trunk_.get(), read_buf_.data(), read_buf_.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::Ok();
    return ErrnoStatus("multiplexer: read", errno);
  }
  if (n == 0) {
    if (decoder_.buffered() > 0) {
      return UnavailableError("multiplexer: peer closed the trunk inside a frame");
    }
    return UnavailableError("multiplexer: peer closed the trunk");
  }
  return decoder_.Feed(std::string_view(read_buf_.data(), static_cast<size_t>(n)),
                       [this](uint32_t conn_id, std::string_view payload) -> Status {
                         auto it = receivers_.find(conn_id);
                         if (it == receivers_.end()) return Status::Ok();  // unopened: dropped
                         Status s = it->second(payload);
                         if (!s.ok()) return s;
                         // A receiver may have closed the trunk; stop decoding then.
                         return closed()
                                    ? Status(StatusCode::kCancelled, "trunk closed by a receiver")
                                    : Status::Ok();
                       });
}

void Multiplexer::Close(const Status& reason) {
  if (closed()) return;
  loop_.Unwatch(watch_);
  watch_ = 0;
  trunk_.Reset();
  out_.clear();
  out_sent_ = 0;
  if (on_close_) {
    CloseCallback cb = std::move(on_close_);
    on_close_ = nullptr;
    cb(reason);
  }
}

}  // namespace dracpu::mux
