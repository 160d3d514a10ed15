// StreamBuffer: the pending bytes of a byte stream that arrives cut anywhere, for decoders of
// length-prefixed frames (the NRI multiplexer's frames, ttrpc's frames). One decode pass is
// Begin(bytes) -> decode whole frames from the returned view -> End(bytes used).
//
// With nothing pending the view is `bytes` itself (no copy: the common case, whole frames per
// read) and only an incomplete tail is kept; otherwise `bytes` is appended to the pending bytes.
// The decoded prefix is dropped once it dominates the buffer, so a long-lived stream does not
// grow and a large frame arriving in pieces is not copied once per piece.
//
// Contract: the view from Begin is valid until End or Clear; End(used) with used <= its size.
// Thread safety: a plain value; one per stream and direction.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dracpu {

class StreamBuffer {
 public:
  std::string_view Begin(std::string_view bytes) {
    direct_ = consumed_ == buffer_.size();
    if (direct_) {
      buffer_.clear();
      consumed_ = 0;
      view_ = bytes;
    } else {
      buffer_.append(bytes);
      view_ = std::string_view{buffer_}.substr(consumed_);
    }
    return view_;
  }

  void End(size_t used) {
    if (direct_) {
      buffer_.assign(view_.substr(used));
      return;
    }
    consumed_ += used;
    if (consumed_ == buffer_.size()) {
      Clear();
    } else if (consumed_ > buffer_.size() / 2) {
      buffer_.erase(0, consumed_);
      consumed_ = 0;
    }
  }

  // Drops everything pending (a decoder that failed).
  void Clear() {
    buffer_.clear();
    consumed_ = 0;
  }

  // Bytes held for an incomplete frame.
  size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  std::string buffer_;
  size_t consumed_ = 0;  // prefix of buffer_ already decoded
  bool direct_ = false;
  std::string_view view_;
};

}  // namespace dracpu
