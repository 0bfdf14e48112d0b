// ProxyProtocol: reads the header that a load balancer (haproxy's
// send-proxy / send-proxy-v2, and others that speak the same protocol)
// sends at the start of a connection to say whom it proxies: the client's
// address and the address the client connected to. Both versions of
// haproxy's proxy-protocol.txt: v1, one text line ("PROXY TCP4 192.0.2.1
// 198.51.100.1 56324 443\r\n", at most 107 bytes), and v2, a 16-byte binary
// header (a 12-byte signature, version and command, family, length) and its
// addresses and TLVs.
//
// Sans I/O: parse() is given the bytes received so far and says whether
// they are a whole header yet, a malformed one, or how long the header is
// and what it says. It never reads past the bytes it is given, keeps no
// state between calls and allocates nothing; any thread.
//
// What it accepts, strictly (a load balancer never sends anything else, and
// a lenient parser would let a client smuggle an address in):
// - v1: "PROXY " then "TCP4" or "TCP6", single spaces, the source and
//   destination addresses (numeric, of that family), the source and
//   destination ports (decimal, 0..65535, no sign, no leading zero), and
//   CRLF; or "PROXY UNKNOWN" and anything up to the CRLF (the addresses of
//   the socket itself are kept). The whole line is at most 107 bytes.
// - v2: version 2; command LOCAL (a health check of the proxy itself: the
//   socket's addresses are kept) or PROXY; TCP over IPv4 or IPv6 gives the
//   addresses; UNSPEC and AF_UNIX, or a datagram transport, keep the
//   socket's addresses. The address block may not be shorter than its
//   family needs; what follows it (TLVs) is skipped unread. The length after
//   the fixed 16 bytes is at most kMaxV2PayloadLength.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "net/InetAddress.h"
#include "net/SocketAddress.h"

namespace libnet {

class ProxyProtocol {
 public:
  // The longest v1 line, CRLF included (the spec's own bound).
  static constexpr size_t kMaxV1Length = 107;
  // The fixed part of a v2 header: signature, ver/cmd, family, length.
  static constexpr size_t kV2FixedLength = 16;
  // What a v2 header may carry after its fixed part (addresses and TLVs).
  // The addresses take at most 216 bytes (AF_UNIX); the rest is TLVs
  // (ALPN, authority, TLS details, cloud providers' endpoint ids), a few
  // hundred bytes in practice. Larger is refused rather than buffered.
  static constexpr size_t kMaxV2PayloadLength = 4096;
  // No header is longer than this: what a reader must be ready to hold.
  static constexpr size_t kMaxHeaderLength = kV2FixedLength + kMaxV2PayloadLength;

  enum class Status {
    kIncomplete,  // a header may still be on its way: give more bytes
    kMalformed,   // never a valid header, whatever follows: reason says why
    kDone,        // a whole header: length, source, destination
  };

  struct Result {
    Status status = Status::kIncomplete;
    // kMalformed: why, for a log line (a string literal).
    std::string_view reason{};
    // kDone: the header's length (the application's bytes start there), 1
    // or 2, and the proxied addresses; none (LOCAL, UNKNOWN, UNSPEC, Unix,
    // datagrams) means the socket's own addresses stand.
    size_t length = 0;
    int version = 0;
    std::optional<SocketAddress> source{};
    std::optional<SocketAddress> destination{};
  };

  // Parses the header at the start of `bytes`, the bytes received so far.
  [[nodiscard]] static Result parse(std::string_view bytes);

  // A source a server believes headers from: one address ("10.0.0.5",
  // "::1") or a CIDR prefix ("10.0.0.0/8", "fd00::/8"). An IPv4 prefix also
  // matches the IPv4-mapped IPv6 form of its addresses (a peer of a
  // dual-stack socket); a Unix socket's peer matches none.
  class TrustedSource {
   public:
    // nullopt unless numeric, with an optional /bits within the family's.
    [[nodiscard]] static std::optional<TrustedSource> parse(std::string_view text);
    [[nodiscard]] bool contains(const SocketAddress& peer) const;
    // "10.0.0.0/8", for logs.
    [[nodiscard]] std::string toString() const;

   private:
    TrustedSource(InetAddress address, int bits) : address_(address), bits_(bits) {}
    InetAddress address_;
    int bits_;
  };

 private:
  static Result parseV1(std::string_view bytes);
  static Result parseV2(std::string_view bytes);
};

}  // namespace libnet
