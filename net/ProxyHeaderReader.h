// ProxyHeaderReader: for a TcpServer with Options::proxyProtocol on, one per
// I/O loop. Takes each socket the loop accepts before any TcpConnection
// exists, waits (a Channel for readability, a timer for the deadline) until
// the PROXY protocol header has arrived, takes exactly its bytes off the
// socket, and hands the socket on with the addresses the header gave. So the
// connection callback sees the client's address, a TLS handshake starts
// after the header, and no byte of the application's is consumed.
//
// The header is found with recv(MSG_PEEK), which leaves what it sees in the
// socket, so that a header that arrives a byte at a time costs no buffer of
// ours; only once it is whole is it read, exactly its length.
//
// A socket whose header is malformed, that closes or errs before it is
// whole, or whose deadline passes, is closed with one WARN line naming the
// peer and the reason, and counted (rejected()). A socket from a peer that
// is not a trusted source (when some are listed) is handed on at once,
// unread: its bytes are the application's, a forged header included.
//
// Built on any thread, then used on its loop's thread only, except
// rejected() (any thread). Held by std::shared_ptr (the deadline timers
// hold weak ones); destroying it closes every socket still waiting.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/Duration.h"
#include "base/UniqueFd.h"
#include "net/ProxyProtocol.h"
#include "net/SocketAddress.h"
#include "net/TimerId.h"

namespace libnet {

class Channel;
class EventLoop;

class ProxyHeaderReader : public std::enable_shared_from_this<ProxyHeaderReader> {
 public:
  // The socket, its peer (the header's source, else the socket's as the
  // acceptor gave it: possibly none) and its local address (the header's
  // destination, else none: the socket's own).
  using HandOn = std::function<void(UniqueFd fd, const std::optional<SocketAddress>& peer,
                                    const std::optional<SocketAddress>& local)>;

  ProxyHeaderReader(EventLoop* loop, std::string serverName, Duration timeout,
                    std::vector<ProxyProtocol::TrustedSource> trusted, HandOn handOn);
  ~ProxyHeaderReader();
  ProxyHeaderReader(const ProxyHeaderReader&) = delete;
  ProxyHeaderReader& operator=(const ProxyHeaderReader&) = delete;

  // A socket just accepted on this loop. Loop thread.
  void add(UniqueFd fd, const std::optional<SocketAddress>& peer);
  // Called on the loop after each rejection (the server's drain counts
  // every socket to its end). Before the first add().
  void setRejectedCallback(std::function<void()> cb) { onRejected_ = std::move(cb); }

  // Sockets closed for a missing, malformed or late header. Any thread.
  [[nodiscard]] uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }
  // Sockets waiting for their header now. Loop thread.
  [[nodiscard]] size_t pending() const { return pending_.size(); }

 private:
  struct Pending;

  void onReadable(uint64_t id);
  void onTimeout(uint64_t id);
  // Takes the header's bytes off the socket and hands it on.
  void finish(uint64_t id, const ProxyProtocol::Result& header);
  void reject(uint64_t id, std::string_view reason);
  // Unregisters the entry's channel (destroyed from the loop's queue: we may
  // be inside its handler) and takes the entry out of the map.
  std::unique_ptr<Pending> release(uint64_t id);
  // Ends the connection at once (the fd is closed by its owner).
  static void closeNow(int fd);
  // The peer as the acceptor gave it, else as the kernel says.
  static std::optional<SocketAddress> peerOf(int fd, const std::optional<SocketAddress>& peer);

  EventLoop* const loop_;
  const std::string serverName_;
  const Duration timeout_;
  const std::vector<ProxyProtocol::TrustedSource> trusted_;
  const HandOn handOn_;
  std::function<void()> onRejected_;
  std::unordered_map<uint64_t, std::unique_ptr<Pending>> pending_;
  uint64_t nextId_ = 1;
  std::atomic<uint64_t> rejected_{0};
};

}  // namespace libnet
