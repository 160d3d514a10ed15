#include "common/http_connection.h"

#include <boost/asio/buffer.hpp>

#include "common/http_request.h"

namespace dracpu {

namespace http = boost::beast::http;

struct HttpConnection::Parsing {
  http_request::Parser parser;
  size_t taken = 0;  // bytes the parser has consumed
};

HttpConnection::HttpConnection(const std::map<std::string, HttpHandler>& routes) : routes_(routes) {
  NewRequest();
}

HttpConnection::~HttpConnection() = default;

void HttpConnection::NewRequest() {
  parsing_ = std::make_unique<Parsing>();
  http_request::Limit(parsing_->parser);
}

bool HttpConnection::inside_request() const { return !pending_.empty() || parsing_->taken > 0; }

void HttpConnection::Receive(std::string_view bytes, std::string& answers) {
  if (done_) return;
  // Beast's parser takes a header only whole: what it leaves unconsumed is offered again with
  // the bytes that follow.
  pending_.append(bytes);
  while (!pending_.empty() && !done_) {
    boost::beast::error_code ec;
    const size_t used =
        parsing_->parser.put(boost::asio::buffer(pending_.data(), pending_.size()), ec);
    parsing_->taken += used;
    pending_.erase(0, used);
    if (ec == http::error::need_more) break;
    if (ec) {  // malformed or over the limits: no answer, the connection closes
      done_ = true;
      pending_.clear();
      break;
    }
    if (!parsing_->parser.is_done()) {
      if (used == 0) break;
      continue;
    }
    const http_request::Request& request = parsing_->parser.get();
    const http_request::Response response = http_request::Answer(request, routes_);
    answers += http_request::Serialize(response);
    ++answered_;
    if (!response.keep_alive()) {
      done_ = true;
      pending_.clear();
      break;
    }
    NewRequest();
  }
}

void HttpConnection::ReceiveEof() { done_ = true; }

}  // namespace dracpu
