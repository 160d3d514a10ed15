#include "nri-agent/mux/frame.h"

#include <boost/endian/conversion.hpp>

namespace dracpu::mux {

namespace {

void AppendFrame(uint32_t conn_id, std::string_view payload, std::string* out) {
  char header[kFrameHeaderSize];
  EncodeFrameHeader(FrameHeader{conn_id, static_cast<uint32_t>(payload.size())}, header);
  out->append(header, kFrameHeaderSize);
  out->append(payload);
}

}  // namespace

void EncodeFrameHeader(const FrameHeader& header, char out[kFrameHeaderSize]) {
  boost::endian::store_big_u32(reinterpret_cast<unsigned char*>(out), header.conn_id);
  boost::endian::store_big_u32(reinterpret_cast<unsigned char*>(out + 4), header.length);
}

FrameHeader DecodeFrameHeader(const char in[kFrameHeaderSize]) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  return FrameHeader{boost::endian::load_big_u32(bytes), boost::endian::load_big_u32(bytes + 4)};
}

Status AppendMessageFrames(uint32_t conn_id, std::string_view message, std::string* out) {
  if (message.size() > kMaxPayloadSize) {
    return InvalidArgumentError("mux message of " + std::to_string(message.size()) +
                                " bytes exceeds the maximum of " + std::to_string(kMaxPayloadSize));
  }
  if (message.size() <= kGoReadBufferSize) {
    AppendFrame(conn_id, message, out);
    return Status::Ok();
  }
  // The first frame fills Go's buffer exactly (header and the start of the data); the second
  // lies wholly inside the data, which Go then reads straight into a slice of the missing length.
  AppendFrame(conn_id, message.substr(0, kGoReadBufferSize), out);
  AppendFrame(conn_id, message.substr(kGoReadBufferSize), out);
  return Status::Ok();
}

Status FrameDecoder::Feed(std::string_view bytes, const FrameHandler& handler) {
  if (!failed_.ok()) return failed_;
  const std::string_view src = pending_.Begin(bytes);
  size_t pos = 0;
  Status status;
  while (status.ok() && src.size() - pos >= kFrameHeaderSize) {
    const FrameHeader header = DecodeFrameHeader(src.data() + pos);
    if (header.length > kMaxPayloadSize) {
      failed_ =
          DataLossError("mux frame on connection " + std::to_string(header.conn_id) +
                        " announces " + std::to_string(header.length) +
                        " bytes, more than the maximum of " + std::to_string(kMaxPayloadSize));
      pending_.Clear();
      return failed_;
    }
    if (src.size() - pos < kFrameHeaderSize + header.length) break;
    const std::string_view payload = src.substr(pos + kFrameHeaderSize, header.length);
    pos += kFrameHeaderSize + header.length;
    status = handler(header.conn_id, payload);
  }
  pending_.End(pos);
  return status;
}

}  // namespace dracpu::mux
