// GoTtrpcReader: how containerd's Go code reads one logical connection of the NRI multiplexer,
// reproduced so the simulator accepts exactly what a real runtime accepts (protocols.md §2.2).
//
// Go's multiplexer hands one whole mux frame to each Read() and fails with ENOMEM when the
// caller's buffer is smaller than the frame. Go ttrpc reads through a 4096-byte bufio.Reader:
// a read with buffered bytes is served from them; with an empty buffer, a request for 4096 or
// more bytes goes straight to the mux with exactly that slice, anything smaller refills the
// 4096-byte buffer from the mux. ttrpc itself reads a 10-byte header, then exactly `length`
// data bytes (io.ReadFull).
//
// Frames are pushed in as the multiplexer delivers them; complete ttrpc messages (header +
// data) come out. An ENOMEM is sticky, as the Go connection is dead after it.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dracpu::sim {

class GoTtrpcReader {
 public:
  static constexpr size_t kBufferSize = 4096;

  // Queues one mux frame's payload and reads as far as Go would. RESOURCE_EXHAUSTED ("ENOMEM")
  // when Go's Read would fail; the reader then fails forever.
  Status PushFrame(std::string_view payload, std::vector<std::string>* messages);

  size_t queued_frames() const { return frames_.size(); }

 private:
  std::deque<std::string> frames_;
  std::string buffer_;   // bufio's unread bytes
  std::string message_;  // the message being assembled
  size_t want_ = 10;     // bytes message_ must reach for the current ReadFull
  bool in_header_ = true;
  Status failed_;
};

}  // namespace dracpu::sim
