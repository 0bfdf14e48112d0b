#include "net/dns/Resolver.h"

#include <ares.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "base/Logging.h"
#include "net/Channel.h"
#include "net/EventLoop.h"
#include "net/TimerId.h"
#include "net/dns/AddressCache.h"
#include "net/dns/StreamAnswerCheck.h"

namespace libnet::dns {

namespace {

// Rounds of ares_process_fd() on one readable stream socket in one event
// before the rest is left to the loop's queue (other sockets get their turn).
constexpr int kMaxStreamRounds = 64;
// The longest name DNS can carry (RFC 1035: 255 octets on the wire).
constexpr size_t kMaxNameLength = 253;

// One lookup as the resolver, its c-ares query and its Query handle share it.
// Cancelling empties it; it goes when c-ares is done with it and the result,
// if any, has been delivered.
struct Lookup {
  std::string host;
  uint16_t port = 0;
  NameResolver::Family family = NameResolver::Family::kAny;
  NameResolver::Callback cb;  // empty once cancelled or delivered
  ResolveResult result;
};

class QueryHandle final : public NameResolver::Query {
 public:
  explicit QueryHandle(const std::shared_ptr<Lookup>& lookup) : lookup_(lookup) {}
  ~QueryHandle() override { cancel(); }

  void cancel() override {
    if (const std::shared_ptr<Lookup> lookup = lookup_.lock()) {
      lookup->cb = nullptr;
      lookup->result = ResolveResult();
      std::string().swap(lookup->host);
    }
    lookup_.reset();
  }

 private:
  std::weak_ptr<Lookup> lookup_;
};

ResolveErrc errcOf(int status) {
  switch (status) {
    case ARES_ENOTFOUND:
      return ResolveErrc::kNotFound;
    case ARES_ENODATA:
      return ResolveErrc::kNoData;
    case ARES_ESERVFAIL:
      return ResolveErrc::kServerFailure;
    case ARES_EREFUSED:
      return ResolveErrc::kRefused;
    case ARES_ETIMEOUT:
      return ResolveErrc::kTimedOut;
    case ARES_ECONNREFUSED:
      return ResolveErrc::kNoServer;
    case ARES_EBADRESP:
      return ResolveErrc::kBadResponse;
    case ARES_EBADNAME:
      return ResolveErrc::kBadName;
    case ARES_ECANCELLED:
    case ARES_EDESTRUCTION:
      return ResolveErrc::kCancelled;
    default:
      return ResolveErrc::kOther;
  }
}

ResolveResult failure(ResolveErrc errc, std::string_view host, const char* reason = nullptr) {
  ResolveResult result;
  result.error.errc = errc;
  result.error.message.append(host).append(": ").append(reason ? reason : resolveErrcName(errc));
  return result;
}

ResolveResult fromAres(int status, const ares_addrinfo* info, const Lookup& lookup) {
  if (status != ARES_SUCCESS) {
    const ResolveErrc errc = errcOf(status);
    return failure(errc, lookup.host,
                   errc == ResolveErrc::kOther ? ares_strerror(status) : nullptr);
  }
  ResolveResult result;
  for (const ares_addrinfo_node* node = info ? info->nodes : nullptr; node != nullptr;
       node = node->ai_next) {
    if (node->ai_family == AF_INET) {
      sockaddr_in sin;
      std::memcpy(&sin, node->ai_addr, sizeof sin);
      sin.sin_port = htons(lookup.port);
      result.addresses.emplace_back(sin);
    } else if (node->ai_family == AF_INET6) {
      sockaddr_in6 sin6;
      std::memcpy(&sin6, node->ai_addr, sizeof sin6);
      sin6.sin6_port = htons(lookup.port);
      result.addresses.emplace_back(sin6);
    }
  }
  if (result.addresses.empty()) return failure(ResolveErrc::kNoData, lookup.host);
  return result;
}

// The shortest TTL of the answer's addresses (zero for /etc/hosts).
Duration ttlOf(const ares_addrinfo* info) {
  int ttl = -1;
  for (const ares_addrinfo_node* node = info ? info->nodes : nullptr; node != nullptr;
       node = node->ai_next) {
    if (ttl < 0 || node->ai_ttl < ttl) ttl = node->ai_ttl;
  }
  return std::chrono::seconds(std::max(ttl, 0));
}

// A numeric address needs no query: its result, or nullopt for a name.
std::optional<ResolveResult> numericResult(std::string_view host, uint16_t port,
                                           NameResolver::Family family) {
  std::optional<InetAddress> address = InetAddress::parse(host, port);
  if (!address) return std::nullopt;
  const bool v6 = address->family() == AF_INET6;
  if ((family == NameResolver::Family::kIPv4 && v6) ||
      (family == NameResolver::Family::kIPv6 && !v6)) {
    return failure(ResolveErrc::kNoData, host);
  }
  ResolveResult result;
  result.addresses.push_back(*address);
  return result;
}

// "localhost" and names under it (any case, a trailing dot allowed) are the
// loopback addresses without a query or the hosts file, as RFC 6761 (6.3)
// asks of resolver libraries. c-ares 1.18 does the same only as a fallback
// when /etc/hosts lacks the family asked for, and that path leaks the name
// (ares__readaddrinfo's copy is overwritten by ares__addrinfo_localhost's).
std::optional<ResolveResult> localhostResult(std::string_view host, uint16_t port,
                                             NameResolver::Family family) {
  std::string name(host);
  if (!name.empty() && name.back() == '.') name.pop_back();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  constexpr std::string_view kLocal = "localhost";
  const bool local = name == kLocal || (name.size() > kLocal.size() + 1 && name.ends_with(kLocal) &&
                                        name[name.size() - kLocal.size() - 1] == '.');
  if (!local) return std::nullopt;
  ResolveResult result;
  if (family != NameResolver::Family::kIPv4) result.addresses.emplace_back("::1", port);
  if (family != NameResolver::Family::kIPv6) result.addresses.emplace_back("127.0.0.1", port);
  return result;
}

int aresFamily(NameResolver::Family family) {
  switch (family) {
    case NameResolver::Family::kIPv4:
      return AF_INET;
    case NameResolver::Family::kIPv6:
      return AF_INET6;
    case NameResolver::Family::kAny:
      break;
  }
  return AF_UNSPEC;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0;
}

}  // namespace

class Resolver::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(EventLoop* loop, const Options& options);
  ~Impl() { shutdown(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  QueryPtr lookup(std::string_view host, uint16_t port, Family family, Callback cb);
  // Cancels everything (no callbacks) and closes c-ares's sockets.
  void shutdown();

  [[nodiscard]] size_t queriesInFlight() const { return inFlight_; }
  [[nodiscard]] uint64_t cacheHits() const { return cacheHits_; }
  [[nodiscard]] size_t openSockets() const;

 private:
  // One of c-ares's sockets as the loop watches it.
  struct Socket {
    std::shared_ptr<Channel> channel;          // null until c-ares asks for events
    bool stream = false;                       // TCP (read in pieces) or UDP
    bool refused = false;                      // a send saw the server's port closed
    std::unique_ptr<StreamAnswerCheck> check;  // TCP's: the server's framing
  };
  // What c-ares carries as a query's `arg` until it calls back.
  struct Pending {
    Impl* impl;
    std::shared_ptr<Lookup> lookup;
  };

  void configure(const Options& options);
  void setServers(const std::vector<InetAddress>& servers);
  static const ares_socket_functions kSocketFunctions;
  static int openSocket(int family, int type, int protocol, void* data);
  static int closeSocket(int fd, void* data);
  static int connectSocket(int fd, const sockaddr* addr, socklen_t len, void* data);
  static ssize_t receive(int fd, void* buf, size_t len, int flags, sockaddr* from,
                         socklen_t* fromLen, void* data);
  static ssize_t send(int fd, const iovec* iov, int count, void* data);
  static void onSocketState(void* data, int fd, int readable, int writable);
  static void onAddrInfo(void* arg, int status, int timeouts, ares_addrinfo* info);
  void socketState(int fd, bool wantRead, bool wantWrite);
  void watch(Socket& socket, int fd);
  void retire(std::shared_ptr<Channel> channel);
  void handleReadable(int fd);
  void handleWritable(int fd);
  void processLater(int fd, const Channel* channel);
  void ready(std::shared_ptr<Lookup> lookup);
  void deliver();
  void rearmTimer();
  void rearmSoon();
  void handleTimer();

  EventLoop* loop_;
  ares_channel channel_ = nullptr;
  bool closed_ = false;
  bool sortAddresses_ = true;
  int receiveBufferBytes_ = 0;
  AddressCache cache_;
  uint64_t cacheHits_ = 0;
  std::unordered_map<int, Socket> sockets_;
  size_t inFlight_ = 0;
  std::vector<std::shared_ptr<Lookup>> ready_;
  bool deliveryQueued_ = false;
  bool rearmQueued_ = false;
  // A TCP answer was malformed (StreamAnswerCheck) in the ares_process_fd()
  // under way: c-ares closes that connection as a failed server, and the
  // queries it ends meanwhile with ARES_ECONNREFUSED ended on the bad answer.
  bool badStreamAnswer_ = false;
  TimerId timer_;
  MonoTime timerAt_;
};

Resolver::Impl::Impl(EventLoop* loop, const Options& options)
    : loop_(loop),
      sortAddresses_(options.sortAddresses),
      receiveBufferBytes_(options.receiveBufferBytes),
      cache_(options.cacheEntries, options.cacheMaxTtl) {
  // ares_library_init() is not called: on Linux it does nothing the channel
  // needs, and in c-ares 1.18 its reference count is not thread-safe.
  configure(options);
  if (!options.servers.empty()) setServers(options.servers);
  ares_set_socket_functions(channel_, &kSocketFunctions, this);
}

void Resolver::Impl::configure(const Options& options) {
  ares_options opts{};
  int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_FLAGS;
  opts.sock_state_cb = &Impl::onSocketState;
  opts.sock_state_cb_data = this;
  // c-ares skips a server that answers SERVFAIL or REFUSED and, when none is
  // left, reports ECONNREFUSED: the answer's own error would be lost.
  opts.flags = options.nextServerOnFailure ? 0 : ARES_FLAG_NOCHECKRESP;
  if (options.timeout > Duration::zero()) {
    mask |= ARES_OPT_TIMEOUTMS;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(options.timeout).count();
    opts.timeout = static_cast<int>(std::min<int64_t>(ms, 1 << 30));
  }
  if (options.tries > 0) {
    mask |= ARES_OPT_TRIES;
    opts.tries = options.tries;
  }
  char lookups[] = "b";
  if (!options.useHostsFile) {
    mask |= ARES_OPT_LOOKUPS;
    opts.lookups = lookups;
  }
  std::vector<char*> domains;
  if (options.searchDomains) {
    for (const std::string& d : *options.searchDomains)
      domains.push_back(const_cast<char*>(d.c_str()));
    mask |= ARES_OPT_DOMAINS;
    opts.domains = domains.data();
    opts.ndomains = static_cast<int>(domains.size());
  }
  if (const int status = ares_init_options(&channel_, &opts, mask); status != ARES_SUCCESS) {
    throw std::runtime_error(std::string("ares_init_options: ") + ares_strerror(status));
  }
}

void Resolver::Impl::setServers(const std::vector<InetAddress>& servers) {
  std::vector<ares_addr_port_node> nodes(servers.size());
  for (size_t i = 0; i < servers.size(); ++i) {
    ares_addr_port_node& node = nodes[i];
    node.next = i + 1 < servers.size() ? &nodes[i + 1] : nullptr;
    node.family = servers[i].family();
    const sockaddr* sa = servers[i].sockAddr();
    if (node.family == AF_INET) {
      std::memcpy(&node.addr.addr4, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr,
                  sizeof node.addr.addr4);
    } else {
      std::memcpy(&node.addr.addr6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr,
                  sizeof node.addr.addr6);
    }
    node.udp_port = node.tcp_port = servers[i].port();
  }
  if (const int status = ares_set_servers_ports(channel_, nodes.data()); status != ARES_SUCCESS) {
    ares_destroy(channel_);
    channel_ = nullptr;
    throw std::runtime_error(std::string("ares_set_servers_ports: ") + ares_strerror(status));
  }
}

void Resolver::Impl::shutdown() {
  if (closed_) return;
  closed_ = true;
  // Every query calls back with ARES_EDESTRUCTION (dropped: closed_), and
  // every socket is reported closed (its Channel retired) before it is.
  if (channel_ != nullptr) ares_destroy(channel_);
  channel_ = nullptr;
  ready_.clear();
  if (timer_.valid()) loop_->cancel(timer_);
  timer_ = TimerId();
  for (auto& [fd, socket] : sockets_) retire(std::move(socket.channel));
  sockets_.clear();
}

size_t Resolver::Impl::openSockets() const {
  size_t n = 0;
  for (const auto& [fd, socket] : sockets_) n += socket.channel != nullptr;
  return n;
}

NameResolver::QueryPtr Resolver::Impl::lookup(std::string_view host, uint16_t port, Family family,
                                              Callback cb) {
  loop_->assertInLoopThread();
  auto lookup = std::make_shared<Lookup>();
  lookup->host.assign(host);
  lookup->port = port;
  lookup->family = family;
  lookup->cb = std::move(cb);
  QueryPtr query = std::make_unique<QueryHandle>(lookup);
  std::optional<ResolveResult> local = numericResult(host, port, family);
  if (!local) local = localhostResult(host, port, family);
  if (local) {
    lookup->result = std::move(*local);
    ready(std::move(lookup));
    return query;
  }
  if (auto cached = cache_.find(host, family, port, MonoClock::now())) {
    ++cacheHits_;
    lookup->result.addresses = std::move(*cached);
    ready(std::move(lookup));
    return query;
  }
  if (host.empty() || host.size() > kMaxNameLength || host.find('\0') != std::string_view::npos) {
    lookup->result = failure(ResolveErrc::kBadName, host);
    ready(std::move(lookup));
    return query;
  }
  ares_addrinfo_hints hints{};
  hints.ai_family = aresFamily(family);
  hints.ai_flags = sortAddresses_ ? 0 : ARES_AI_NOSORT;
  ++inFlight_;
  // May call back at once (a hosts-file entry, a bad name): onAddrInfo only
  // queues the result.
  ares_getaddrinfo(channel_, lookup->host.c_str(), nullptr, &hints, &Impl::onAddrInfo,
                   new Pending{this, lookup});
  rearmSoon();
  return query;
}

void Resolver::Impl::onAddrInfo(void* arg, int status, int /*timeouts*/, ares_addrinfo* info) {
  const std::unique_ptr<Pending> pending(static_cast<Pending*>(arg));
  const std::unique_ptr<ares_addrinfo, void (*)(ares_addrinfo*)> owned(info, ares_freeaddrinfo);
  Impl* self = pending->impl;
  --self->inFlight_;
  Lookup& lookup = *pending->lookup;
  if (self->closed_ || !lookup.cb) return;  // destroyed, or cancelled: detached
  if (status == ARES_ECONNREFUSED && self->badStreamAnswer_) status = ARES_EBADRESP;
  lookup.result = fromAres(status, info, lookup);
  if (lookup.result.ok()) {
    self->cache_.insert(lookup.host, lookup.family, lookup.result.addresses, ttlOf(info),
                        MonoClock::now());
  }
  self->ready(std::move(pending->lookup));
}

// c-ares's socket calls, so that the resolver knows each socket's kind and
// sees the refusals c-ares would lose (send()).
const ares_socket_functions Resolver::Impl::kSocketFunctions = {
    &Impl::openSocket, &Impl::closeSocket, &Impl::connectSocket, &Impl::receive, &Impl::send};

int Resolver::Impl::openSocket(int family, int type, int protocol, void* data) {
  // c-ares leaves sockets it does not make to their maker: non-blocking,
  // close-on-exec and TCP_NODELAY are set here.
  const int fd = ::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
  if (fd < 0) return ARES_SOCKET_BAD;
  if (type == SOCK_STREAM) {
    const int on = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
  Impl* self = static_cast<Impl*>(data);
  if (type == SOCK_DGRAM && self->receiveBufferBytes_ > 0) {
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &self->receiveBufferBytes_,
                       sizeof self->receiveBufferBytes_);
  }
  Socket& socket = self->sockets_[fd] = Socket{nullptr, type == SOCK_STREAM, false, nullptr};
  if (socket.stream) socket.check = std::make_unique<StreamAnswerCheck>();
  return fd;
}

int Resolver::Impl::closeSocket(int fd, void* data) {
  static_cast<Impl*>(data)->sockets_.erase(fd);
  return ::close(fd);
}

int Resolver::Impl::connectSocket(int fd, const sockaddr* addr, socklen_t len, void*) {
  return ::connect(fd, addr, len);
}

ssize_t Resolver::Impl::receive(int fd, void* buf, size_t len, int flags, sockaddr* from,
                                socklen_t* fromLen, void* data) {
  Impl* self = static_cast<Impl*>(data);
  const auto it = self->sockets_.find(fd);
  if (it != self->sockets_.end() && it->second.refused) {
    it->second.refused = false;
    errno = ECONNREFUSED;
    return -1;
  }
  const ssize_t n = ::recvfrom(fd, buf, len, flags, from, fromLen);
  if (it == self->sockets_.end() || !it->second.check) return n;
  StreamAnswerCheck& check = *it->second.check;
  if (n > 0 && !check.received(static_cast<const unsigned char*>(buf), static_cast<size_t>(n))) {
    // Handed to c-ares as the connection's failure, which it is: c-ares
    // closes it and retries or ends its queries (onAddrInfo says why).
    LOG_DEBUG << "resolver: a malformed answer over TCP (fd " << fd << ")";
    self->badStreamAnswer_ = true;
    errno = EBADMSG;
    return -1;
  }
  // An end (a close, or a reset: the server closed with a query of ours
  // unread) in the middle of a message: the server began an answer it did
  // not finish.
  const bool ended = n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE));
  if (ended && check.midMessage()) {
    const int err = errno;
    LOG_DEBUG << "resolver: a TCP answer cut short by the server (fd " << fd << ")";
    self->badStreamAnswer_ = true;
    errno = err;
  }
  return n;
}

ssize_t Resolver::Impl::send(int fd, const iovec* iov, int count, void* data) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(count);
  const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
  const int err = errno;
  Impl* self = static_cast<Impl*>(data);
  const auto it = self->sockets_.find(fd);
  if (it == self->sockets_.end()) return n;
  Socket& socket = it->second;
  if (n > 0 && socket.check) socket.check->sent(iov, count, static_cast<size_t>(n));
  if (n >= 0 || err != ECONNREFUSED || socket.stream) {
    errno = err;
    return n;
  }
  // The ICMP refusal of an earlier datagram on this UDP socket (the server's
  // port is closed) came back here, to a send: c-ares retries only this
  // query, and the others on the socket would wait for their timeouts.
  // Handed back to the next read instead, which c-ares takes as the
  // server's failure for every query on the socket.
  socket.refused = true;
  if (socket.channel) self->processLater(fd, socket.channel.get());
  errno = ECONNREFUSED;
  return -1;
}

void Resolver::Impl::onSocketState(void* data, int fd, int readable, int writable) {
  static_cast<Impl*>(data)->socketState(fd, readable != 0, writable != 0);
}

void Resolver::Impl::socketState(int fd, bool wantRead, bool wantWrite) {
  auto it = sockets_.find(fd);
  if (!wantRead && !wantWrite) {
    // c-ares closes the fd right after this returns (closeSocket()).
    if (it != sockets_.end()) retire(std::move(it->second.channel));
    return;
  }
  if (it == sockets_.end()) it = sockets_.emplace(fd, Socket{}).first;
  Socket& socket = it->second;
  if (!socket.channel) watch(socket, fd);
  Channel& channel = *socket.channel;
  const uint32_t want =
      (wantRead ? Channel::kReadEvent : 0u) | (wantWrite ? Channel::kWriteEvent : 0u);
  if (channel.events() == want) return;
  if ((channel.events() & ~want) != 0) channel.disableAll();
  if (wantRead && wantWrite) {
    channel.enableReadWrite();
  } else if (wantRead) {
    channel.enableReading();
  } else {
    channel.enableWriting();
  }
}

void Resolver::Impl::watch(Socket& socket, int fd) {
  socket.channel = std::make_shared<Channel>(loop_, fd);
  // An error (ICMP port unreachable on UDP: ECONNREFUSED) and a hang-up are
  // reported by c-ares's next read on the socket.
  socket.channel->setReadCallback([this, fd](Timestamp) { handleReadable(fd); });
  socket.channel->setErrorCallback([this, fd] { handleReadable(fd); });
  socket.channel->setCloseCallback([this, fd] { handleReadable(fd); });
  socket.channel->setWriteCallback([this, fd] { handleWritable(fd); });
}

void Resolver::Impl::retire(std::shared_ptr<Channel> channel) {
  if (!channel) return;
  channel->removeBeforeClose();
  // It may be the channel whose event is being handled: destroyed from the
  // loop's queue, after the handler returns.
  loop_->queueInLoop([channel = std::move(channel)] {});
}

void Resolver::Impl::handleReadable(int fd) {
  auto it = sockets_.find(fd);
  if (closed_ || it == sockets_.end() || !it->second.channel) return;
  const Channel* channel = it->second.channel.get();
  const bool stream = it->second.stream;
  // Edge-triggered: the socket must be left empty. c-ares reads a UDP socket
  // until EAGAIN (it is connected, so every datagram is the server's), but a
  // TCP socket one piece per call (the length word, then the message), so
  // that one is processed again while it stays readable.
  for (int round = 0;; ++round) {
    ares_process_fd(channel_, fd, ARES_SOCKET_BAD);
    badStreamAnswer_ = false;
    if (!stream) break;
    it = sockets_.find(fd);
    if (it == sockets_.end() || it->second.channel.get() != channel) break;  // closed
    if (!readable(fd)) break;
    if (round == kMaxStreamRounds) {
      processLater(fd, channel);
      break;
    }
  }
  rearmTimer();
}

void Resolver::Impl::handleWritable(int fd) {
  if (closed_) return;
  ares_process_fd(channel_, ARES_SOCKET_BAD, fd);
  rearmTimer();
}

void Resolver::Impl::processLater(int fd, const Channel* channel) {
  loop_->queueInLoop([weak = weak_from_this(), fd, channel] {
    const std::shared_ptr<Impl> self = weak.lock();
    if (!self) return;
    const auto it = self->sockets_.find(fd);
    if (it != self->sockets_.end() && it->second.channel.get() == channel) {
      self->handleReadable(fd);
    }
  });
}

void Resolver::Impl::ready(std::shared_ptr<Lookup> lookup) {
  ready_.push_back(std::move(lookup));
  if (deliveryQueued_) return;
  deliveryQueued_ = true;
  loop_->queueInLoop([weak = weak_from_this()] {
    if (const std::shared_ptr<Impl> self = weak.lock()) self->deliver();
  });
}

void Resolver::Impl::deliver() {
  deliveryQueued_ = false;
  std::vector<std::shared_ptr<Lookup>> batch;
  batch.swap(ready_);
  for (const std::shared_ptr<Lookup>& lookup : batch) {
    // A callback may destroy the resolver, or cancel lookups of this batch.
    if (closed_) return;
    if (!lookup->cb) continue;
    const Callback cb = std::move(lookup->cb);
    lookup->cb = nullptr;
    try {
      cb(std::move(lookup->result));
    } catch (const std::exception& e) {
      LOG_ERROR << "resolver callback for " << lookup->host << " threw: " << e.what();
    } catch (...) {
      LOG_ERROR << "resolver callback for " << lookup->host << " threw";
    }
  }
}

void Resolver::Impl::rearmSoon() {
  // A burst of lookups computes the next timeout once (ares_timeout() walks
  // every query in flight).
  if (rearmQueued_) return;
  rearmQueued_ = true;
  loop_->queueInLoop([weak = weak_from_this()] {
    if (const std::shared_ptr<Impl> self = weak.lock()) {
      self->rearmQueued_ = false;
      self->rearmTimer();
    }
  });
}

void Resolver::Impl::rearmTimer() {
  if (closed_) return;
  timeval tv{};
  if (ares_timeout(channel_, nullptr, &tv) == nullptr) {
    if (timer_.valid()) loop_->cancel(timer_);
    timer_ = TimerId();
    return;
  }
  // c-ares rounds the wait down to a millisecond: one more, so that the
  // timer never fires just before the try is due.
  const MonoTime when = MonoClock::now() + std::chrono::seconds(tv.tv_sec) +
                        std::chrono::microseconds(tv.tv_usec) + std::chrono::milliseconds(1);
  if (timer_.valid() && timerAt_ <= when) return;  // fires first and re-arms then
  if (timer_.valid()) loop_->cancel(timer_);
  timerAt_ = when;
  timer_ = loop_->runAt(when, [weak = weak_from_this()] {
    if (const std::shared_ptr<Impl> self = weak.lock()) self->handleTimer();
  });
}

void Resolver::Impl::handleTimer() {
  timer_ = TimerId();
  if (closed_) return;
  ares_process_fd(channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  rearmTimer();
}

Resolver::Resolver(EventLoop* loop) : Resolver(loop, Options()) {}

Resolver::Resolver(EventLoop* loop, const Options& options)
    : loop_(loop), impl_(std::make_shared<Impl>(loop, options)) {
  loop->assertInLoopThread();
}

Resolver::~Resolver() {
  loop_->assertInLoopThread();
  impl_->shutdown();
}

NameResolver::QueryPtr Resolver::lookup(std::string_view host, uint16_t port, Family family,
                                        Callback cb) {
  return impl_->lookup(host, port, family, std::move(cb));
}

size_t Resolver::queriesInFlight() const { return impl_->queriesInFlight(); }

size_t Resolver::openSockets() const { return impl_->openSockets(); }

uint64_t Resolver::cacheHits() const { return impl_->cacheHits(); }

}  // namespace libnet::dns
