// ConnectionCounters: bytes moved by a group of connections (a TcpServer's
// on one loop), for monitoring. Written by that loop's thread only, where a
// connection's input is handed up and where the application sends; read by
// any thread (relaxed). A connection with none (a TcpClient's) pays one
// branch.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace libnet {

struct ConnectionCounters {
  // Bytes handed to the message callback (plaintext under TLS).
  std::atomic<uint64_t> bytesReceived{0};
  // Bytes the application sent (written, or still queued), files included.
  std::atomic<uint64_t> bytesSent{0};

  // The owning loop's thread only: a load and a store, no locked add.
  static void add(std::atomic<uint64_t>& counter, size_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

}  // namespace libnet
