#include "net/ProxyHeaderReader.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/Logging.h"
#include "net/Channel.h"
#include "net/EventLoop.h"

namespace libnet {

struct ProxyHeaderReader::Pending {
  UniqueFd fd;
  std::optional<SocketAddress> peer;  // as the acceptor gave it
  // Shared only to be destroyed from the loop's queue after its removal.
  std::shared_ptr<Channel> channel;
  TimerId deadline;
};

ProxyHeaderReader::ProxyHeaderReader(EventLoop* loop, std::string serverName, Duration timeout,
                                     std::vector<ProxyProtocol::TrustedSource> trusted,
                                     HandOn handOn)
    : loop_(loop),
      serverName_(std::move(serverName)),
      timeout_(timeout),
      trusted_(std::move(trusted)),
      handOn_(std::move(handOn)) {}

ProxyHeaderReader::~ProxyHeaderReader() {
  // Their deadline timers find nothing (they hold weak pointers): not
  // cancelled here, where the loop itself may be going.
  for (auto& [id, entry] : pending_) {
    entry->channel->disableAll();
    entry->channel->remove();
    closeNow(entry->fd.get());
  }
}

void ProxyHeaderReader::closeNow(int fd) {
  // On io_uring the cancelled poll holds the file until its cancellation
  // has gone through the ring, which may not turn again soon (a loop being
  // torn down): the shutdown ends the connection now, whoever holds it.
  ::shutdown(fd, SHUT_RDWR);
}

std::optional<SocketAddress> ProxyHeaderReader::peerOf(int fd,
                                                       const std::optional<SocketAddress>& peer) {
  if (peer) return peer;
  sockaddr_storage storage{};
  socklen_t len = sizeof storage;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &len) != 0) return std::nullopt;
  return SocketAddress::fromSockAddr(storage, len);
}

void ProxyHeaderReader::add(UniqueFd fd, const std::optional<SocketAddress>& peer) {
  loop_->assertInLoopThread();
  if (!trusted_.empty()) {
    const std::optional<SocketAddress> source = peerOf(fd.get(), peer);
    bool trusted = false;
    for (const ProxyProtocol::TrustedSource& t : trusted_) {
      if (source && t.contains(*source)) trusted = true;
    }
    // Not through the proxy: a direct client, whose bytes are never read as
    // a header.
    if (!trusted) {
      handOn_(std::move(fd), source, std::nullopt);
      return;
    }
  }
  const uint64_t id = nextId_++;
  auto entry = std::make_unique<Pending>();
  entry->peer = peer;
  entry->channel = std::make_shared<Channel>(loop_, fd.get());
  entry->fd = std::move(fd);
  auto onEvent = [this, id] { onReadable(id); };
  entry->channel->setReadCallback([onEvent](Timestamp) { onEvent(); });
  entry->channel->setCloseCallback(onEvent);
  entry->channel->setErrorCallback(onEvent);
  entry->deadline = loop_->runAfter(timeout_, [weak = weak_from_this(), id] {
    if (const std::shared_ptr<ProxyHeaderReader> self = weak.lock()) self->onTimeout(id);
  });
  Channel* channel = entry->channel.get();
  pending_.emplace(id, std::move(entry));
  // Bytes already in the socket (a client that spoke at once) are reported
  // by the registration itself, on both backends.
  channel->enableReading();
}

void ProxyHeaderReader::onReadable(uint64_t id) {
  const auto it = pending_.find(id);
  if (it == pending_.end()) return;
  std::array<char, ProxyProtocol::kMaxHeaderLength> peeked;
  ssize_t n;
  do {
    n = ::recv(it->second->fd.get(), peeked.data(), peeked.size(), MSG_PEEK);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    reject(id, std::strerror(errno));
    return;
  }
  if (n == 0) {
    reject(id, "closed before the PROXY protocol header was complete");
    return;
  }
  const ProxyProtocol::Result header =
      ProxyProtocol::parse(std::string_view(peeked.data(), static_cast<size_t>(n)));
  switch (header.status) {
    case ProxyProtocol::Status::kIncomplete:
      // The peek sees the bytes still in the socket, never the end behind
      // them: the hang-up says that no more will come.
      if ((it->second->channel->returnedEvents() & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
        reject(id, "closed before the PROXY protocol header was complete");
      }
      return;  // more comes with the next readiness
    case ProxyProtocol::Status::kMalformed:
      reject(id, header.reason);
      return;
    case ProxyProtocol::Status::kDone:
      finish(id, header);
      return;
  }
}

void ProxyHeaderReader::onTimeout(uint64_t id) {
  if (pending_.count(id) == 0) return;
  reject(id, "no complete PROXY protocol header before the deadline");
}

void ProxyHeaderReader::finish(uint64_t id, const ProxyProtocol::Result& header) {
  std::unique_ptr<Pending> entry = release(id);
  // Exactly the header: what the peek saw is in the socket, so this takes
  // it all at once, and the application's bytes behind it stay there.
  std::array<char, ProxyProtocol::kMaxHeaderLength> discard;
  ssize_t n;
  do {
    n = ::recv(entry->fd.get(), discard.data(), header.length, 0);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(header.length)) {
    closeNow(entry->fd.get());
    rejected_.fetch_add(1, std::memory_order_relaxed);
    LOG_WARN << "TcpServer " << serverName_ << ": connection from "
             << (peerOf(entry->fd.get(), entry->peer).value_or(SocketAddress()).toIpPort())
             << " closed: could not take its PROXY protocol header off the socket";
    return;
  }
  if (header.source) {
    handOn_(std::move(entry->fd), header.source, header.destination);
  } else {
    handOn_(std::move(entry->fd), entry->peer, std::nullopt);
  }
}

void ProxyHeaderReader::reject(uint64_t id, std::string_view reason) {
  std::unique_ptr<Pending> entry = release(id);
  rejected_.fetch_add(1, std::memory_order_relaxed);
  const std::optional<SocketAddress> peer = peerOf(entry->fd.get(), entry->peer);
  closeNow(entry->fd.get());
  LOG_WARN << "TcpServer " << serverName_ << ": connection from "
           << (peer ? peer->toIpPort() : std::string("an unknown peer"))
           << " closed: PROXY protocol: " << reason;
  if (onRejected_) onRejected_();
}

std::unique_ptr<ProxyHeaderReader::Pending> ProxyHeaderReader::release(uint64_t id) {
  const auto it = pending_.find(id);
  std::unique_ptr<Pending> entry = std::move(it->second);
  pending_.erase(it);
  loop_->cancel(entry->deadline);
  entry->channel->disableAll();
  entry->channel->remove();
  loop_->queueInLoop([channel = std::move(entry->channel)] {});
  return entry;
}

}  // namespace libnet
