// ttrpc frames (protocols.md §1.1-§1.2): a 10-byte big-endian header (data length, stream id,
// message type, flags) followed by the data. This file knows bytes only: no protobuf, no calls.
//
// Thread safety: FrameDecoder is a plain value; one per connection and direction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/stream_buffer.h"

namespace dracpu::ttrpc {

inline constexpr size_t kFrameHeaderSize = 10;
// Largest data length either side accepts or sends (4 MiB, as in Go ttrpc).
inline constexpr uint32_t kMaxMessageSize = 4u << 20;

enum class MessageType : uint8_t {
  kRequest = 0x01,
  kResponse = 0x02,
  kData = 0x03,  // streaming only; NRI does not use it
};

// Request flags; 0 = unary, all NRI needs.
inline constexpr uint8_t kFlagRemoteClosed = 0x01;
inline constexpr uint8_t kFlagRemoteOpen = 0x02;

struct FrameHeader {
  uint32_t length = 0;  // bytes of data after the header
  uint32_t stream_id = 0;
  uint8_t type = 0;  // a MessageType value, or anything a peer sent
  uint8_t flags = 0;
  friend bool operator==(const FrameHeader&, const FrameHeader&) = default;
};

void EncodeFrameHeader(const FrameHeader& header, char out[kFrameHeaderSize]);
FrameHeader DecodeFrameHeader(const char in[kFrameHeaderSize]);

// Header + data as one string. RESOURCE_EXHAUSTED when data is over kMaxMessageSize (Go's
// OversizedMessageErr: the peer would refuse it).
Result<std::string> EncodeFrame(uint32_t stream_id, MessageType type, uint8_t flags,
                                std::string_view data);

struct Frame {
  FrameHeader header;
  std::string data;
  // The header announced more than kMaxMessageSize: data is empty and the announced bytes are
  // skipped as they arrive. The receiver answers RESOURCE_EXHAUSTED on header.stream_id, as Go
  // does.
  bool oversized = false;
};

// Re-assembles frames from a byte stream cut anywhere (the mux does not align with frames).
class FrameDecoder {
 public:
  // Appends every frame completed by `bytes` to `out`, in order. DATA_LOSS when a header's
  // length has its reserved top byte set (16 MiB or more: no ttrpc peer sends that, so the
  // stream is garbage and the connection should be closed); the decoder is then poisoned and
  // fails every later call.
  Status Feed(std::string_view bytes, std::vector<Frame>* out);

  // Bytes held for an incomplete frame (header or data), for tests and diagnostics.
  size_t buffered() const { return pending_.buffered(); }

 private:
  StreamBuffer pending_;
  uint64_t skipping_ = 0;  // data bytes of an oversized frame still to drop
  bool poisoned_ = false;
};

}  // namespace dracpu::ttrpc
