// ConnectionAttachment: per-connection state of a layer built on TcpConnection
// (the coroutine layer's StreamState, net/coro/), owned by the connection it
// is attached to and told of the events such a layer cannot learn from the
// callbacks alone (or only at the cost of a queued call per message).
//
// With an attachment, the peer's half-close (end of input) no longer closes
// the connection once its output has drained: the connection stays open for
// output until the layer closes it (shutdown(), closeAfterOutput(),
// forceClose()), so that a reply computed after the peer's last byte still
// goes out. Every call comes on the connection's loop thread.
#pragma once

namespace libnet {

class ConnectionAttachment {
 public:
  ConnectionAttachment() = default;
  virtual ~ConnectionAttachment() = default;
  ConnectionAttachment(const ConnectionAttachment&) = delete;
  ConnectionAttachment& operator=(const ConnectionAttachment&) = delete;

  // The peer closed its side; every byte it sent has been delivered.
  virtual void onPeerHalfClosed() = 0;
  // Output that had to be queued has all been written (on epoll not called
  // for a send written at once; on io_uring every send is queued, and its
  // drain is reported). Called from inside the backend's own handling:
  // it must not send; queue whatever it wants to do on the loop.
  virtual void onOutputDrained() = 0;
  // Some queued output was written (the queue may still be long): the same
  // rules as onOutputDrained(). A coroutine writer held by the output limit
  // resumes here once the output has drained to half of it, as reading does.
  virtual void onOutputProgress() {}
  // The connection closed (any reason); after the connection (down)
  // callback. Nothing more can be sent or received.
  virtual void onClosed() = 0;
};

}  // namespace libnet
