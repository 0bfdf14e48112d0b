#include "net/websocket/Options.h"

#include <stdexcept>
#include <string>

namespace libnet::ws {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("ws::Options: " + what);
}

}  // namespace

void check(const Options& options) {
  require(options.maxFrameBytes > 0, "maxFrameBytes is zero");
  require(options.maxMessageBytes > 0, "maxMessageBytes is zero");
  require(options.closeTimeout > Duration::zero(), "closeTimeout must be positive");
  require(options.pingTimeout > Duration::zero(), "pingTimeout must be positive");
  require(options.pingInterval >= Duration::zero(), "pingInterval is negative");
  const DeflateOptions& deflate = options.deflate;
  require(deflate.serverMaxWindowBits >= 8 && deflate.serverMaxWindowBits <= 15,
          "deflate.serverMaxWindowBits is outside 8..15");
  require(deflate.clientMaxWindowBits >= 8 && deflate.clientMaxWindowBits <= 15,
          "deflate.clientMaxWindowBits is outside 8..15");
  require(deflate.level >= 0 && deflate.level <= 9, "deflate.level is outside 0..9");
}

}  // namespace libnet::ws
