// Fuzz target mux_frame: the NRI trunk's byte stream (8-byte mux headers and payloads) through
// mux::FrameDecoder, cut in two where the first byte says. Contracts: the frames do not depend
// on the cut; the delivered frames, re-encoded, are exactly the stream's prefix they came from;
// a failure is DATA_LOSS for an over-long frame and final; and AppendMessageFrames of each
// payload decodes back to that payload on the same connection.
#include <string>
#include <utility>
#include <vector>

#include "nri-agent/mux/frame.h"
#include "tests/fuzz/fuzz_check.h"

namespace dracpu::fuzz {
namespace {

struct Decoded {
  std::vector<std::pair<uint32_t, std::string>> frames;
  Status status;
};

Decoded DecodeInTwo(std::string_view stream, size_t cut) {
  mux::FrameDecoder decoder;
  Decoded out;
  auto record = [&out](uint32_t conn, std::string_view payload) {
    out.frames.emplace_back(conn, std::string(payload));
    return Status::Ok();
  };
  out.status = decoder.Feed(stream.substr(0, cut), record);
  if (out.status.ok()) out.status = decoder.Feed(stream.substr(cut), record);
  return out;
}

}  // namespace
}  // namespace dracpu::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dracpu;
  using fuzz::Check;
  const std::string_view input = fuzz::AsText(data, size);
  const fuzz::Selected s = fuzz::Select(input);
  const std::string_view stream = s.rest;
  const fuzz::Decoded whole = fuzz::DecodeInTwo(stream, stream.size());
  const fuzz::Decoded split = fuzz::DecodeInTwo(stream, stream.size() * s.selector / 255);
  Check(whole.status.ok() == split.status.ok(), "a cut changed whether the stream fails", input);
  Check(whole.frames == split.frames, "a cut changed the frames", input);
  if (!whole.status.ok()) {
    Check(whole.status.code() == StatusCode::kDataLoss, "a broken stream is not DATA_LOSS", input);
  }
  std::string reencoded;
  for (const auto& [conn, payload] : whole.frames) {
    Check(payload.size() <= mux::kMaxPayloadSize, "a frame over the limit was delivered", input);
    char header[mux::kFrameHeaderSize];
    mux::EncodeFrameHeader(mux::FrameHeader{conn, static_cast<uint32_t>(payload.size())}, header);
    reencoded.append(header, sizeof header);
    reencoded += payload;

    std::string framed;
    Check(mux::AppendMessageFrames(conn, payload, &framed).ok(), "a payload cannot be framed",
          input);
    const fuzz::Decoded back = fuzz::DecodeInTwo(framed, framed.size());
    std::string joined;
    for (const auto& [c, p] : back.frames) {
      Check(c == conn, "a framed message changed connection", input);
      joined += p;
    }
    Check(back.status.ok() && joined == payload, "a framed message does not decode back", input);
  }
  Check(stream.substr(0, reencoded.size()) == reencoded,
        "the frames are not the stream they came from", input);
  return 0;
}
