// NRI multiplexer frames (protocols.md §2.2): an 8-byte big-endian header (connection id,
// payload length) and the payload, a piece of that logical connection's byte stream.
// Bytes only; the Multiplexer does the I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/stream_buffer.h"

namespace dracpu::mux {

inline constexpr size_t kFrameHeaderSize = 8;
// The largest payload accepted: a whole maximal ttrpc message (4 MiB data + 10-byte header),
// the most Go's writer puts in one frame.
inline constexpr uint32_t kMaxPayloadSize = (4u << 20) + 10;
// Go ttrpc reads through a 4096-byte buffer; see SplitForGoReader.
inline constexpr size_t kGoReadBufferSize = 4096;

// Connection ids NRI uses. 0 is reserved.
inline constexpr uint32_t kPluginServiceConn = 1;   // the plugin serves, the runtime calls
inline constexpr uint32_t kRuntimeServiceConn = 2;  // the runtime serves, the plugin calls

struct FrameHeader {
  uint32_t conn_id = 0;
  uint32_t length = 0;
  friend bool operator==(const FrameHeader&, const FrameHeader&) = default;
};

void EncodeFrameHeader(const FrameHeader& header, char out[kFrameHeaderSize]);
FrameHeader DecodeFrameHeader(const char in[kFrameHeaderSize]);

// Appends to `out` the frames that carry one whole message of logical connection `conn_id`, cut
// the way Go's reader accepts them: a message of up to 4096 bytes as one frame, a longer one as
// exactly two (the first 4096 bytes, then the rest). Go's mux hands one frame per Read() and
// fails when the reader's buffer is smaller; its ttrpc reader offers a 4096-byte buffer, or for
// a long message whose header it already has, exactly the missing length. INVALID_ARGUMENT when
// the message is over kMaxPayloadSize (a caller bug: ttrpc never produces one).
Status AppendMessageFrames(uint32_t conn_id, std::string_view message, std::string* out);

// Splits the trunk's byte stream into frames; the stream may be cut anywhere.
class FrameDecoder {
 public:
  // Called once per complete frame; the view is valid only during the call. A non-OK return
  // stops decoding and is returned from Feed.
  using FrameHandler = std::function<Status(uint32_t conn_id, std::string_view payload)>;

  // DATA_LOSS for a frame longer than kMaxPayloadSize (garbage, or a peer that is not an NRI
  // multiplexer); the decoder then stays failed. Frames completed before it are delivered.
  Status Feed(std::string_view bytes, const FrameHandler& handler);

  size_t buffered() const { return pending_.buffered(); }

 private:
  StreamBuffer pending_;
  Status failed_;
};

}  // namespace dracpu::mux
