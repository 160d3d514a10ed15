// HttpConnection: one client connection of HttpServer (http_server.h) apart from its socket, so
// that what a connection does with the bytes it reads is tested and fuzzed as it runs: bytes in,
// the bytes of the answers out.
//
// Requests are parsed with the limits of http_request.h and answered in order (pipelined
// requests included) with http_request::Answer. A malformed request, or one over the limits,
// gets no answer: the connection is to be closed, as is one whose last answer did not keep it
// alive. After that, further input is ignored. Not thread-safe; one per connection.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/http_server.h"

namespace dracpu {

class HttpConnection {
 public:
  // `routes` must outlive the connection.
  explicit HttpConnection(const std::map<std::string, HttpHandler>& routes);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Takes the bytes read from the peer; appends to `answers` the serialized answers of every
  // request they complete.
  void Receive(std::string_view bytes, std::string& answers);
  // The peer will send nothing more (it shut down its side).
  void ReceiveEof();

  // True once the connection should be closed when `answers` has been written: a refused
  // request, an answer without keep-alive, or the peer's end of input.
  bool done() const { return done_; }
  // Bytes of an unfinished request are held (the input stopped inside a request).
  bool inside_request() const;
  // Requests answered so far.
  size_t answered() const { return answered_; }

 private:
  struct Parsing;
  void NewRequest();

  const std::map<std::string, HttpHandler>& routes_;
  std::unique_ptr<Parsing> parsing_;
  std::string pending_;  // read but not yet taken by the parser
  bool done_ = false;
  size_t answered_ = 0;
};

}  // namespace dracpu
