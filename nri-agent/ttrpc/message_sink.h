// MessageSink: where a ttrpc endpoint writes. Each Send() carries exactly one whole ttrpc
// message (header + data), never a part and never two: the NRI multiplexer needs message
// boundaries to frame them the way Go's reader accepts (protocols.md §2.2), and a plain byte
// stream just writes them.
#pragma once

#include <string>

#include "common/status.h"

namespace dracpu::ttrpc {

class MessageSink {
 public:
  virtual ~MessageSink() = default;
  // Queues one message for writing; never blocks. UNAVAILABLE once the connection is closed.
  virtual Status Send(std::string message) = 0;
};

}  // namespace dracpu::ttrpc
