// CompletionHandler: what an owner of io_uring operations implements to
// receive their completions: the io_uring I/O strategies (UringConnectionIo,
// UringAcceptorIo), each registered in its loop's UringContext for a token
// that its ops' user_data carry (UringUserData.h). The UringPoller of the
// loop calls them. Free of liburing. Called on the loop thread only.
#pragma once

#include <cstdint>

#include "net/poller/UringUserData.h"

namespace libnet {

class CompletionHandler {
 public:
  // `res` and `flags` are the CQE's (res < 0 is -errno).
  virtual void onCompletion(UringOp op, int32_t res, uint32_t flags) = 0;
  // The end of the loop turn the handler asked for it in
  // (UringContext::atTurnEnd): the handler submits what it put off.
  virtual void onTurnEnd() {}

 protected:
  ~CompletionHandler() = default;
};

}  // namespace libnet
