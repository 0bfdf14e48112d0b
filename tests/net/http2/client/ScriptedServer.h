// ScriptedServer: a hostile or scripted HTTP/2 server for the client's tests,
// written frame by frame on a raw socket. It listens on an ephemeral
// loopback port, takes one connection on a thread of its own and runs the
// test's script on it; every read is bounded by a receive timeout, so a
// script ends whatever the client does. The destructor waits for it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/UniqueFd.h"
#include "net/SocketAddress.h"

namespace libnet::http2::test {

struct Frame {
  uint8_t type = 0;
  uint8_t flags = 0;
  int32_t stream = 0;
  std::string payload;
};

// One frame's bytes.
std::string frame(uint8_t type, uint8_t flags, int32_t stream, std::string_view payload);
// HPACK (RFC 7541) pieces written by hand, so that a script can send what
// no encoder would: an integer with an N-bit prefix; a field as a literal
// without indexing, or with incremental indexing (both with a new name);
// an indexed field.
std::string hpackInteger(uint8_t firstByte, int prefixBits, uint64_t value);
std::string literal(std::string_view name, std::string_view value);
std::string literalIndexed(std::string_view name, std::string_view value);
std::string indexed(uint64_t index);
// A response head's block: :status, then `fields`.
std::string responseBlock(int status,
                          const std::vector<std::pair<std::string, std::string>>& fields = {});

// The server's end of the connection, as the script sees it.
class ScriptPeer {
 public:
  explicit ScriptPeer(int fd) : fd_(fd) {}

  bool send(std::string_view bytes);
  // The client's next frame (its preface skipped); nullopt at EOF or after
  // the receive timeout.
  std::optional<Frame> next();
  // The preface and the client's SETTINGS read; the server's SETTINGS
  // (`settings`, a SETTINGS payload) and the ACK sent.
  bool handshake(std::string_view settings = {});
  // Reads until `n` requests' HEADERS came; their stream ids.
  std::vector<int32_t> requests(size_t n);
  // Reads until EOF (or the timeout); the code of the client's GOAWAY, if
  // one came.
  std::optional<uint32_t> drain();
  [[nodiscard]] const std::optional<uint32_t>& goAwayCode() const { return goAway_; }
  // FIN after what was sent: the connection ends for the client without a
  // reset (closing with the client's bytes unread would send RST, and the
  // client's kernel may then drop what it had not read yet).
  void shutdownWrite();

 private:
  int fd_;
  std::string bytes_;
  bool prefaceSeen_ = false;
  std::optional<uint32_t> goAway_;
};

class ScriptedServer {
 public:
  using Script = std::function<void(ScriptPeer& peer)>;

  explicit ScriptedServer(Script script);
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  [[nodiscard]] const SocketAddress& address() const { return address_; }

 private:
  UniqueFd listen_;
  SocketAddress address_;
  std::thread thread_;
};

}  // namespace libnet::http2::test
