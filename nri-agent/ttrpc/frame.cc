#include "nri-agent/ttrpc/frame.h"

#include <algorithm>
#include <boost/endian/conversion.hpp>

namespace dracpu::ttrpc {

void EncodeFrameHeader(const FrameHeader& header, char out[kFrameHeaderSize]) {
  boost::endian::store_big_u32(reinterpret_cast<unsigned char*>(out), header.length);
  boost::endian::store_big_u32(reinterpret_cast<unsigned char*>(out + 4), header.stream_id);
  out[8] = static_cast<char>(header.type);
  out[9] = static_cast<char>(header.flags);
}

FrameHeader DecodeFrameHeader(const char in[kFrameHeaderSize]) {
  FrameHeader h;
  h.length = boost::endian::load_big_u32(reinterpret_cast<const unsigned char*>(in));
  h.stream_id = boost::endian::load_big_u32(reinterpret_cast<const unsigned char*>(in + 4));
  h.type = static_cast<uint8_t>(in[8]);
  h.flags = static_cast<uint8_t>(in[9]);
  return h;
}

Result<std::string> EncodeFrame(uint32_t stream_id, MessageType type, uint8_t flags,
                                std::string_view data) {
  if (data.size() > kMaxMessageSize) {
    return ResourceExhaustedError("ttrpc message of " + std::to_string(data.size()) +
                                  " bytes exceeds the maximum of " +
                                  std::to_string(kMaxMessageSize));
  }
  std::string frame(kFrameHeaderSize + data.size(), '\0');
  EncodeFrameHeader(
      FrameHeader{static_cast<uint32_t>(data.size()), stream_id, static_cast<uint8_t>(type), flags},
      frame.data());
  std::copy(data.begin(), data.end(), frame.begin() + kFrameHeaderSize);
  return frame;
}

Status FrameDecoder::Feed(std::string_view bytes, std::vector<Frame>* out) {
  if (poisoned_) return DataLossError("ttrpc stream already failed");
  if (skipping_ > 0) {
    const size_t drop = static_cast<size_t>(std::min<uint64_t>(skipping_, bytes.size()));
    skipping_ -= drop;
    bytes.remove_prefix(drop);
  }
  const std::string_view src = pending_.Begin(bytes);
  size_t pos = 0;
  while (src.size() - pos >= kFrameHeaderSize) {
    const FrameHeader header = DecodeFrameHeader(src.data() + pos);
    if ((header.length >> 24) != 0) {
      poisoned_ = true;
      pending_.Clear();
      return DataLossError("ttrpc frame header announces " + std::to_string(header.length) +
                           " bytes (reserved top byte set): not a ttrpc stream");
    }
    if (header.length > kMaxMessageSize) {
      pos += kFrameHeaderSize;
      const size_t held = std::min<size_t>(header.length, src.size() - pos);
      pos += held;
      skipping_ = header.length - held;
      out->push_back(Frame{header, std::string(), true});
      if (skipping_ > 0) break;  // everything held was dropped
      continue;
    }
    if (src.size() - pos < kFrameHeaderSize + header.length) break;
    out->push_back(
        Frame{header, std::string(src.substr(pos + kFrameHeaderSize, header.length)), false});
    pos += kFrameHeaderSize + header.length;
  }
  pending_.End(pos);
  return Status::Ok();
}

}  // namespace dracpu::ttrpc
