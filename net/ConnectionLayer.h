// ConnectionLayer: what stands between a TcpConnection's callbacks and its
// backend's I/O strategy (TLS: net/tls/TlsLayer). Given to a TcpServer or a
// TcpClient, it makes every connection's ConnectionIo: its own strategy,
// which makes and drives the backend's (Poller::newConnectionIo) and shows
// the connection the bytes as they are meant to be read (plaintext).
//
// Shared by the server or client that holds it and by every loop thread:
// newConnectionIo() may be called from several threads at once, so an
// implementation keeps only immutable state (or guards it).
#pragma once

#include <memory>

#include "net/ConnectionIo.h"

namespace libnet {

class EventLoop;

class ConnectionLayer {
 public:
  ConnectionLayer() = default;
  virtual ~ConnectionLayer() = default;
  ConnectionLayer(const ConnectionLayer&) = delete;
  ConnectionLayer& operator=(const ConnectionLayer&) = delete;

  // The strategy that the connection (parts.owner) of `loop` will drive.
  // Called on `loop`'s thread, where the connection is made (TcpServer and
  // TcpClient make every connection on its own loop); the strategy runs
  // there from start() on. Several loops may call it at once.
  [[nodiscard]] virtual ConnectionIo::Ptr newConnectionIo(
      EventLoop* loop, const ConnectionIo::Parts& parts) const = 0;
};

}  // namespace libnet
