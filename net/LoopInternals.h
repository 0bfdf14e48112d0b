// LoopInternals: the library's own way into a loop's machinery: its backend
// (Poller), its scratch buffer and its buffer pool. EventLoop keeps them
// private, so that an application sees only what it uses (loop, timers,
// queued functors, Channels for its own fds); the connection, acceptor,
// server and layer code that makes I/O strategies and lends buffers (and the
// backends' tests) reach them here. No header an application includes
// includes this one.
//
// Thread rules as the members': loop thread only, except that a thread
// creating an acceptor for another loop (TcpServer's per-loop acceptors)
// uses poller() to make its strategy (nothing is registered until the
// strategy's start(), on the loop). Connections are made on their own loop.
#pragma once

#include "net/EventLoopBase.h"

namespace libnet {

struct LoopInternals {
  [[nodiscard]] static Poller& poller(EventLoopBase& loop) { return *loop.poller_; }
  // A buffer that connections on this loop read into (the epoll strategy);
  // the strategy's owner empties it after each delivery, whatever its
  // callbacks did (ConnectionInput::settle; under TLS, TlsConnectionIo,
  // which takes the ciphertext whole). Empty between uses.
  [[nodiscard]] static Buffer* scratchBuffer(EventLoopBase& loop) { return loop.scratch_.get(); }
  // Spare buffer storage for this loop's connections (see BufferPool).
  [[nodiscard]] static BufferPool& bufferPool(EventLoopBase& loop) { return *loop.bufferPool_; }
};

}  // namespace libnet
