#include "tests/sim/runtime/go_reader.h"

#include <algorithm>

namespace dracpu::sim {

namespace {
constexpr size_t kHeaderSize = 10;
constexpr uint32_t kMaxMessage = 4u << 20;

uint32_t Length(const std::string& header) {
  const auto* p = reinterpret_cast<const unsigned char*>(header.data());
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
}  // namespace

Status GoTtrpcReader::PushFrame(std::string_view payload, std::vector<std::string>* messages) {
  if (!failed_.ok()) return failed_;
  frames_.emplace_back(payload);
  while (true) {
    if (message_.size() == want_) {
      if (in_header_) {
        const uint32_t length = Length(message_);
        if (length > kMaxMessage) {
          // Go discards the announced bytes and answers RESOURCE_EXHAUSTED; the simulator only
          // talks to our plugin, which never sends one, so it is reported as a failure here.
          failed_ = ResourceExhaustedError("ttrpc message of " + std::to_string(length) +
                                           " bytes over the maximum");
          return failed_;
        }
        in_header_ = false;
        want_ = kHeaderSize + length;
        continue;
      }
      messages->push_back(std::move(message_));
      message_.clear();
      in_header_ = true;
      want_ = kHeaderSize;
      continue;
    }
    const size_t missing = want_ - message_.size();
    if (!buffer_.empty()) {  // bufio serves from what it holds
      const size_t n = std::min(missing, buffer_.size());
      message_.append(buffer_, 0, n);
      buffer_.erase(0, n);
      continue;
    }
    if (frames_.empty()) return Status::Ok();  // Read blocks until the next frame
    std::string frame = std::move(frames_.front());
    frames_.pop_front();
    if (missing >= kBufferSize) {
      // Direct read into the caller's slice of exactly `missing` bytes.
      if (frame.size() > missing) {
        failed_ = ResourceExhaustedError("ENOMEM: mux frame of " + std::to_string(frame.size()) +
                                         " bytes for a read of " + std::to_string(missing));
        return failed_;
      }
      message_ += frame;
    } else {
      // Refill of the 4096-byte buffer.
      if (frame.size() > kBufferSize) {
        failed_ = ResourceExhaustedError("ENOMEM: mux frame of " + std::to_string(frame.size()) +
                                         " bytes for the 4096-byte read buffer");
        return failed_;
      }
      buffer_ = std::move(frame);
    }
  }
}

}  // namespace dracpu::sim
