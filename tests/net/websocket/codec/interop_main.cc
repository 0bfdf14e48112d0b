// The codec as a filter, for python_interop_test.py to check it against the
// Python websockets library's framing and permessage-deflate:
//
//   interop_main decode ROLE PARAMS < frames   one line per event
//   interop_main encode ROLE PARAMS < lines    frames on stdout
//
// ROLE: server or client (this side). PARAMS: none (no deflate), default
// (deflate, context takeover, 15-bit windows) or small (no context takeover
// either way, server window 10, client window 12). Payloads are hex in both
// directions. decode prints "message text|binary HEX", "ping HEX",
// "pong HEX", "close CODE HEX" or "error CODE REASON". encode reads
// "text HEX", "binary HEX", "fragments SIZE text|binary HEX", "ping HEX",
// "close CODE HEX".
#include <cstdio>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>

#include "net/Buffer.h"
#include "net/websocket/Receiver.h"
#include "net/websocket/Sender.h"

namespace {

using namespace libnet;
using namespace libnet::ws;

std::string toHex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : bytes) {
    hex += kDigits[c >> 4];
    hex += kDigits[c & 15];
  }
  return hex.empty() ? "-" : hex;
}

std::string fromHex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; hex != "-" && i + 1 < hex.size(); i += 2) {
    bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return bytes;
}

std::optional<DeflateParams> paramsFor(const std::string& name) {
  if (name == "none") return std::nullopt;
  DeflateParams params;
  if (name == "small") params = {true, true, 10, 12};
  return params;
}

int decode(Role self, const std::optional<DeflateParams>& params) {
  std::string bytes{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  Buffer input;
  input.append(bytes);
  Receiver receiver(self, {}, params);
  for (;;) {
    switch (receiver.next(&input)) {
      case Receiver::Event::kNeedMore:
        return 0;
      case Receiver::Event::kMessage:
        std::cout << "message "
                  << (receiver.messageType() == MessageType::kText ? "text " : "binary ")
                  << toHex(receiver.payload()) << "\n";
        break;
      case Receiver::Event::kPing:
        std::cout << "ping " << toHex(receiver.payload()) << "\n";
        break;
      case Receiver::Event::kPong:
        std::cout << "pong " << toHex(receiver.payload()) << "\n";
        break;
      case Receiver::Event::kClose:
        std::cout << "close " << receiver.closeCode() << " " << toHex(receiver.closeReason())
                  << "\n";
        return 0;
      case Receiver::Event::kError:
        std::cout << "error " << receiver.closeCode() << " " << receiver.error() << "\n";
        return 0;
    }
  }
}

int encode(Role self, const std::optional<DeflateParams>& params) {
  DeflateOptions options;
  options.minMessageSize = 0;
  Sender sender(self, params, options);
  Buffer out;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string verb, hex, type;
    size_t size = 0;
    int code = 0;
    in >> verb;
    if (verb == "text" || verb == "binary") {
      in >> hex;
      sender.appendMessage(&out, verb == "text" ? MessageType::kText : MessageType::kBinary,
                           fromHex(hex));
    } else if (verb == "fragments") {
      in >> size >> type >> hex;
      sender.appendMessage(&out, type == "text" ? MessageType::kText : MessageType::kBinary,
                           fromHex(hex), size);
    } else if (verb == "ping") {
      in >> hex;
      sender.appendPing(&out, fromHex(hex));
    } else if (verb == "close") {
      in >> code >> hex;
      sender.appendClose(&out, static_cast<uint16_t>(code), fromHex(hex));
    }
  }
  std::fwrite(out.peek(), 1, out.readableBytes(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: interop_main decode|encode server|client none|default|small\n");
    return 2;
  }
  const std::string mode = argv[1];
  const Role self = std::string(argv[2]) == "server" ? Role::kServer : Role::kClient;
  const std::optional<DeflateParams> params = paramsFor(argv[3]);
  return mode == "decode" ? decode(self, params) : encode(self, params);
}
