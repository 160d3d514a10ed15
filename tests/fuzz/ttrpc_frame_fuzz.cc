// Fuzz target ttrpc_frame: the bytes an NRI peer sends on a logical connection, through the
// ttrpc FrameDecoder and a Server. The first byte chooses where the stream is cut in two.
// Contracts: decoding does not depend on where the stream is cut; every frame re-encodes to
// the bytes it came from; the Server answers every request frame exactly once (a registered
// method echoes, anything else gets an error) with one well-formed response frame on the same
// stream id, and nothing else.
#include <string>
#include <vector>

#include "nri-agent/ttrpc/envelope.h"
#include "nri-agent/ttrpc/frame.h"
#include "nri-agent/ttrpc/message_sink.h"
#include "nri-agent/ttrpc/server.h"
#include "tests/fuzz/fuzz_check.h"

namespace dracpu::fuzz {
namespace {

struct Decoded {
  std::vector<ttrpc::Frame> frames;
  Status status;
};

Decoded DecodeInTwo(std::string_view stream, size_t cut) {
  ttrpc::FrameDecoder decoder;
  Decoded out;
  out.status = decoder.Feed(stream.substr(0, cut), &out.frames);
  if (out.status.ok()) out.status = decoder.Feed(stream.substr(cut), &out.frames);
  return out;
}

bool SameFrames(const std::vector<ttrpc::Frame>& a, const std::vector<ttrpc::Frame>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(a[i].header == b[i].header) || a[i].data != b[i].data ||
        a[i].oversized != b[i].oversized) {
      return false;
    }
  }
  return true;
}

class RecordingSink : public ttrpc::MessageSink {
 public:
  Status Send(std::string message) override {
    sent.push_back(std::move(message));
    return Status::Ok();
  }
  std::vector<std::string> sent;
};

}  // namespace
}  // namespace dracpu::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dracpu;
  using fuzz::Check;
  const std::string_view input = fuzz::AsText(data, size);
  const fuzz::Selected s = fuzz::Select(input);
  const std::string_view stream = s.rest;
  const size_t cut = stream.size() * s.selector / 255;

  const fuzz::Decoded whole = fuzz::DecodeInTwo(stream, stream.size());
  const fuzz::Decoded split = fuzz::DecodeInTwo(stream, cut);
  Check(whole.status.ok() == split.status.ok(), "a cut changed whether the stream fails", input);
  Check(fuzz::SameFrames(whole.frames, split.frames), "a cut changed the frames", input);
  if (!whole.status.ok()) {
    Check(whole.status.code() == StatusCode::kDataLoss, "a broken stream is not DATA_LOSS", input);
  }

  size_t offset = 0;
  size_t requests = 0;
  for (const ttrpc::Frame& f : whole.frames) {
    if (f.header.type == static_cast<uint8_t>(ttrpc::MessageType::kRequest)) ++requests;
    if (f.oversized) {
      Check(f.header.length > ttrpc::kMaxMessageSize && f.data.empty(),
            "an oversized frame is within the limit or kept its data", input);
      offset += ttrpc::kFrameHeaderSize + f.header.length;  // skipped, maybe past the input
      continue;
    }
    Check(f.data.size() == f.header.length, "a frame's data is not its announced length", input);
    Result<std::string> again = ttrpc::EncodeFrame(
        f.header.stream_id, static_cast<ttrpc::MessageType>(f.header.type), f.header.flags, f.data);
    Check(again.ok() && stream.substr(offset, again->size()) == *again,
          "a frame does not re-encode to its bytes", input);
    offset += again->size();
  }

  fuzz::RecordingSink sink;
  ttrpc::Server server(sink);
  server.Register("fuzz.Service", "Echo",
                  [](const ttrpc::CallInfo&, std::string payload, ttrpc::Responder done) {
                    done(std::move(payload));
                  });
  Status served = server.OnBytes(stream.substr(0, cut));
  if (served.ok()) served = server.OnBytes(stream.substr(cut));
  Check(served.ok() == whole.status.ok(), "the server and the decoder disagree", input);
  Check(sink.sent.size() == requests, "not exactly one answer per request frame", input);
  Check(server.in_flight() == 0, "an answered call is still in flight", input);
  size_t next_request = 0;
  for (const std::string& message : sink.sent) {
    std::vector<ttrpc::Frame> frames;
    Check(ttrpc::FrameDecoder().Feed(message, &frames).ok() && frames.size() == 1 &&
              !frames[0].oversized,
          "an answer is not exactly one frame", input);
    const ttrpc::Frame& answer = frames[0];
    Check(answer.header.type == static_cast<uint8_t>(ttrpc::MessageType::kResponse),
          "an answer is not a response frame", input);
    while (whole.frames[next_request].header.type !=
           static_cast<uint8_t>(ttrpc::MessageType::kRequest)) {
      ++next_request;
    }
    Check(answer.header.stream_id == whole.frames[next_request].header.stream_id,
          "an answer is not on its request's stream", input);
    ++next_request;
    Check(ttrpc::DecodeResponse(answer.data).ok(), "an answer's envelope does not parse", input);
  }
  return 0;
}
