// Inspector: looks into a running server over HTTP, under one path prefix
// (say /debug), for an operator on the same machine:
//   GET /debug/loops         each I/O loop: thread, backend, connections,
//                            queued output, turns, busy time, lag
//   GET /debug/connections   each connection: peer, age, bytes in and out,
//                            queued output, loop (the first
//                            Options::maxConnectionsListed)
//   GET /debug/pprof/profile?seconds=N
//                            a CPU profile of the whole process for N
//                            seconds (default 30, 1..300), as google-pprof
//                            reads it (CpuProfiler.h); one at a time
//   GET /debug               the list of the above
// docs/operations.md, "The inspector", shows each answer.
//
// Every answer comes later, through an http::ResponseWriter (an
// asynchronous handler): the listings are read by each loop on itself
// (LoopGather: nothing waits for another loop, and a loop that does not
// answer within Options::gatherTimeout is reported as such), and a profile
// is answered when it is done. The profile is written to a file in a
// directory of its own, made for it (mkdtemp, mode 0700) under $TMPDIR or
// /tmp, and both are removed once it has been read for the answer, when
// the client goes away first, or when the inspector is destroyed.
//
// Safety: only peers in Options::allowedPeers (loopback by default) and
// Unix-socket peers are served; anyone else gets 403. With the PROXY
// protocol on, the peer is the client the proxy names. Any method but GET
// (and HEAD for the listings) gets 405.
//
// Like MetricsRegistry, it holds plain pointers: a server added must
// outlive the inspector and every answer in flight (the example servers
// destroy theirs after the loops have stopped). Any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/Duration.h"
#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"
#include "net/ProxyProtocol.h"
#include "net/http/HttpRequest.h"
#include "net/http/ResponseWriter.h"

namespace libnet {
class SocketAddress;
class TcpServer;
}  // namespace libnet

namespace libnet::inspect {

class Inspector {
 public:
  struct Options {
    // The prefix the endpoints are under: starts with '/', no trailing '/'.
    std::string path = "/debug";
    // Who is served: a peer inside one of these (an IPv4 prefix also
    // matches its IPv4-mapped IPv6 form) or on a Unix socket. Default:
    // 127.0.0.0/8 and ::1. Empty: only Unix-socket peers.
    std::vector<ProxyProtocol::TrustedSource> allowedPeers = loopback();
    // Serves every peer (allowedPeers is not consulted).
    bool allowRemote = false;
    // /connections lists at most this many (and says how many it left
    // out): the answer stays bounded whatever the server holds. At least 1.
    size_t maxConnectionsListed = 10000;
    // /pprof/profile without ?seconds, and the longest one may ask for.
    Duration defaultProfile = std::chrono::seconds(30);
    Duration maxProfile = std::chrono::seconds(300);
    // A listing waits at most this long for a loop to answer.
    Duration gatherTimeout = std::chrono::seconds(5);
  };

  // Throws std::invalid_argument for a bad option (the field named).
  explicit Inspector(Options options);
  // A profile still running is stopped (its answer aborted), its files
  // removed.
  ~Inspector();
  Inspector(const Inspector&) = delete;
  Inspector& operator=(const Inspector&) = delete;

  // A server to list (after its start(): its loops are known then).
  void addServer(const TcpServer* server);

  // True when `request` is for the inspector's path (the prefix or below
  // it): the answer is then `writer`'s, now or later. False otherwise,
  // `writer` untouched. Call it on the request's loop (the asynchronous
  // handler's thread).
  bool serve(const http::HttpRequest& request, const http::ResponseWriterPtr& writer);

  [[nodiscard]] const Options& options() const { return options_; }

  // Whether `peer` may be served under `options`.
  [[nodiscard]] static bool allowed(const Options& options, const SocketAddress& peer);
  // 127.0.0.0/8 and ::1/128.
  [[nodiscard]] static std::vector<ProxyProtocol::TrustedSource> loopback();

  // One profile being taken for a client (Inspector.cc).
  struct ProfileRun;

 private:
  struct Target;  // one loop of one server
  [[nodiscard]] std::vector<Target> targets() const;
  void serveLoops(const http::ResponseWriterPtr& writer, bool head) const;
  void serveConnections(const http::ResponseWriterPtr& writer, bool head) const;
  void serveProfile(const http::HttpRequest& request, const http::ResponseWriterPtr& writer);
  void serveIndex(const http::ResponseWriterPtr& writer, bool head) const;

  const Options options_;
  mutable Mutex mutex_;
  std::vector<const TcpServer*> servers_ LIBNET_GUARDED_BY(mutex_);
  // The profile under way for a client, if any: stopped by the destructor.
  std::weak_ptr<ProfileRun> profile_ LIBNET_GUARDED_BY(mutex_);
};

}  // namespace libnet::inspect
