// Fuzz target kube_list_watch: what the API server sends the ResourceSlice list and watch, as
// KubeClient reads it through a fake transport (selector bit 0: a List body; else a watch
// stream, delivered in chunks of 1 + (selector >> 1) bytes, and again whole). Limits are small
// here (4 KiB per object, 16 KiB per list) so the fuzzer reaches them. Contracts: the events of
// a stream do not depend on how it is chunked; each event's object prints as JSON that parses
// again; a List's items are the document's; every failure has a code the callers handle and a
// message with nothing from the server unescaped.
#include <memory>
#include <string>
#include <vector>

#include "common/log_escape.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kube/resources.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/memory_file_system.h"
#include "tests/testing/fake_clock.h"

namespace dracpu::fuzz {
namespace {

constexpr size_t kMaxObject = 4096;
constexpr size_t kMaxList = 16384;

// Answers every request with 200 and `body`: collected (with the request's limit, as
// CurlHttpClient does) or streamed in `chunk`-byte pieces to on_body_chunk.
class FakeHttp : public kube::HttpClient {
 public:
  FakeHttp(std::string_view body, size_t chunk) : body_(body), chunk_(chunk) {}
  kube::HttpResponse Send(const kube::HttpRequest& request) override {
    kube::HttpResponse response;
    response.status = 200;
    if (request.on_body_chunk) {
      for (size_t i = 0; i < body_.size(); i += chunk_) {
        if (!request.on_body_chunk(body_.substr(i, chunk_))) break;
      }
      return response;
    }
    if (request.max_body_bytes > 0 && body_.size() > request.max_body_bytes) {
      response.transport_error = kube::TransportError::kBodyTooLarge;
      response.error_message = "body too large";
      return response;
    }
    response.body = std::string(body_);
    return response;
  }

 private:
  const std::string_view body_;
  const size_t chunk_;
};

std::unique_ptr<kube::KubeClient> Client(std::string_view body, size_t chunk,
                                         testing::FakeClock& clock, testing::FixedRandom& random,
                                         MemoryFileSystem& fs) {
  kube::ClusterConfig config;
  config.server = "https://apiserver.fuzz:6443";
  kube::ClientOptions options;
  options.max_attempts = 1;
  options.max_object_bytes = kMaxObject;
  options.max_list_bytes = kMaxList;
  auto client = kube::KubeClient::Create(config, std::make_unique<FakeHttp>(body, chunk), fs, clock,
                                         random, options);
  if (!client.ok()) Broken("cannot make the client: " + client.status().ToString(), body);
  return std::move(client).value();
}

void CheckFailure(const Status& s, std::string_view input) {
  const StatusCode c = s.code();
  Check(c == StatusCode::kDataLoss || c == StatusCode::kInvalidArgument ||
            c == StatusCode::kResourceExhausted || c == StatusCode::kOutOfRange ||
            c == StatusCode::kUnavailable || c == StatusCode::kNotFound ||
            c == StatusCode::kUnauthenticated || c == StatusCode::kPermissionDenied ||
            c == StatusCode::kAborted || c == StatusCode::kAlreadyExists,
        "a failure has a code callers do not expect", input);
  Check(IsLogSafe(s.message()), "a failure carries unescaped server bytes", input);
}

struct Watched {
  std::vector<std::string> events;  // "<type> <object JSON>"
  Status status;
};

Watched Watch(std::string_view body, size_t chunk, std::string_view input) {
  testing::FakeClock clock;
  testing::FixedRandom random(0.5);
  MemoryFileSystem fs;
  auto client = Client(body, chunk, clock, random, fs);
  Watched out;
  kube::WatchOptions options;
  options.field_selector = "spec.nodeName=fuzz";
  out.status = client->Watch(kube::kResourceSlicesPath, options, [&](const kube::WatchEvent& e) {
    const std::string text = e.object.ToString();
    Check(kube::JsonObject::Parse(text).ok(), "an event's object does not print as JSON", input);
    out.events.push_back(std::to_string(static_cast<int>(e.type)) + " " + text);
    return true;
  });
  return out;
}

void CheckList(std::string_view body, std::string_view input) {
  testing::FakeClock clock;
  testing::FixedRandom random(0.5);
  MemoryFileSystem fs;
  auto client = Client(body, body.size() + 1, clock, random, fs);
  Result<kube::ObjectList> list = client->List(kube::kResourceSlicesPath);
  if (!list.ok()) {
    CheckFailure(list.status(), input);
    return;
  }
  Result<kube::JsonObject> doc = kube::JsonObject::Parse(body);
  Check(doc.ok(), "a List accepted a body that does not parse", input);
  const rapidjson::Value* items = doc->Find("items");
  const size_t expected = items != nullptr && items->IsArray() ? items->Size() : 0;
  Check(list->items.size() == expected, "a List lost or invented items", input);
  for (const kube::JsonObject& item : list->items) {
    Check(kube::JsonObject::Parse(item.ToString()).ok(), "an item does not print as JSON", input);
  }
}

}  // namespace
}  // namespace dracpu::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dracpu;
  const std::string_view input = fuzz::AsText(data, size);
  const fuzz::Selected s = fuzz::Select(input);
  if (s.selector & 1) {
    fuzz::CheckList(s.rest, input);
    return 0;
  }
  const size_t chunk = 1 + (s.selector >> 1);
  const fuzz::Watched whole = fuzz::Watch(s.rest, s.rest.size() + 1, input);
  const fuzz::Watched chunked = fuzz::Watch(s.rest, chunk, input);
  fuzz::Check(whole.events == chunked.events, "chunking changed the events", input);
  fuzz::Check(whole.status.code() == chunked.status.code(), "chunking changed the outcome", input);
  if (!whole.status.ok()) fuzz::CheckFailure(whole.status, input);
  return 0;
}
