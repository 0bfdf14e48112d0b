// libFuzzer target for the WebSocket Receiver (net/websocket/Receiver.h).
//
// The first input byte picks the setup, the rest is the byte stream a peer
// sent:
//   bit 0     the receiving role (0 server: frames must be masked; 1 client)
//   bit 1     permessage-deflate negotiated
//   bit 2     small limits (200-byte frames and messages) instead of 64 KiB
//   bit 3     with deflate: no context takeover both ways, 10-bit windows
//   bits 4-7  the size of the pieces the stream is fed in (kPieces)
//
// The stream is received twice, whole and in pieces, and both runs must
// report the same events. Every event must also be well-formed: text is
// valid UTF-8, control payloads fit 125 bytes, a close code is 1005 or one a
// peer may send, an error carries 1002, 1007 or 1009 and a reason, sizes
// are within the limits, and once done the receiver consumes nothing more.
// Each message, ping and close is then sent back through a Sender of the
// peer's role and received again, which must give the same event.
// A failed check prints a line and aborts.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "net/Buffer.h"
#include "net/BufferPool.h"
#include "net/websocket/Receiver.h"
#include "net/websocket/Sender.h"
#include "net/websocket/Utf8.h"

namespace libnet::ws {
namespace {

constexpr size_t kPieces[] = {1, 2, 3, 4, 5, 7, 11, 16, 32, 64, 100, 128, 256, 512, 1024, 0};

struct Setup {
  Role self = Role::kServer;
  ReceiverLimits limits;
  std::optional<DeflateParams> deflate;
  size_t piece = 0;  // 0: everything at once
};

struct Record {
  Receiver::Event event;
  MessageType type;
  std::string payload;
  uint16_t code;
  std::string text;

  bool operator==(const Record&) const = default;
};

[[noreturn]] void fail(const char* what, size_t size) {
  std::fprintf(stderr, "ReceiverFuzzer: %zu-byte input: %s\n", size, what);
  std::abort();
}

Setup setupFrom(uint8_t mode) {
  Setup setup;
  setup.self = (mode & 1) ? Role::kClient : Role::kServer;
  const size_t limit = (mode & 4) ? 200 : 64 * 1024;
  setup.limits = {limit, limit};
  if (mode & 2) {
    DeflateParams params;
    if (mode & 8) {
      params = {true, true, 10, 10};
    }
    setup.deflate = params;
  }
  setup.piece = kPieces[mode >> 4];
  return setup;
}

void checkRecord(const Record& r, const Setup& setup, size_t size) {
  using Event = Receiver::Event;
  switch (r.event) {
    case Event::kMessage:
      if (r.payload.size() > setup.limits.maxMessageBytes) fail("message over the limit", size);
      if (r.type == MessageType::kText && !Utf8Validator::isValid(r.payload)) {
        fail("text message is not UTF-8", size);
      }
      break;
    case Event::kPing:
    case Event::kPong:
      if (r.payload.size() > kMaxControlPayload) fail("control payload over 125 bytes", size);
      break;
    case Event::kClose:
      if (r.code != close_code::kNoStatus && !isSendableCloseCode(r.code)) {
        fail("close with an invalid code", size);
      }
      if (!Utf8Validator::isValid(r.text)) fail("close reason is not UTF-8", size);
      break;
    case Event::kError:
      if (r.code != close_code::kProtocolError && r.code != close_code::kInvalidPayload &&
          r.code != close_code::kMessageTooBig) {
        fail("error with an unexpected close code", size);
      }
      if (r.text.empty()) fail("error without a reason", size);
      break;
    case Event::kNeedMore:
      fail("kNeedMore recorded", size);
  }
}

// Drains `input` into `records`; false once the receiver is done.
bool drain(Receiver& receiver, Buffer* input, std::vector<Record>* records, size_t size) {
  for (;;) {
    const Receiver::Event event = receiver.next(input);
    if (event == Receiver::Event::kNeedMore) {
      if (input->readableBytes() >= kMaxFrameHeader) fail("kNeedMore with a header left", size);
      return true;
    }
    // An error leaves whatever part of a frame had arrived in payload(),
    // which depends on the pieces: not recorded.
    const bool error = event == Receiver::Event::kError;
    records->push_back(
        {event, error ? MessageType::kBinary : receiver.messageType(),
         error ? std::string() : std::string(receiver.payload()), receiver.closeCode(),
         event == Receiver::Event::kClose ? receiver.closeReason() : receiver.error()});
    if (event == Receiver::Event::kClose || event == Receiver::Event::kError) {
      const size_t left = input->readableBytes();
      if (receiver.next(input) != event || input->readableBytes() != left) {
        fail("a done receiver changed", size);
      }
      return false;
    }
    if (event == Receiver::Event::kMessage && records->size() % 2 == 0) {
      receiver.releaseMessage();  // the caller may give it back before next()
    }
  }
}

std::vector<Record> receive(std::string_view stream, const Setup& setup, size_t piece) {
  // Message storage from a pool, as on a loop, when fed in pieces.
  BufferPool pool;
  Receiver receiver(setup.self, setup.limits, setup.deflate, piece ? &pool : nullptr);
  std::vector<Record> records;
  Buffer input;
  size_t offset = 0;
  do {
    const size_t n = piece ? std::min(piece, stream.size() - offset) : stream.size();
    input.append(stream.substr(offset, n));
    offset += n;
    if (!drain(receiver, &input, &records, stream.size())) break;
  } while (offset < stream.size());
  return records;
}

// Deflate validates text after each inflate call, and how much one call
// inflates depends on the pieces: a message both too big and invalid may
// be reported either way.
bool sameOutcome(const std::vector<Record>& a, const std::vector<Record>& b, const Setup& setup) {
  if (a == b) return true;
  if (!setup.deflate || a.size() != b.size() || a.empty()) return false;
  const Record& x = a.back();
  const Record& y = b.back();
  const auto compressedError = [](uint16_t code) {
    return code == close_code::kInvalidPayload || code == close_code::kMessageTooBig;
  };
  return std::equal(a.begin(), a.end() - 1, b.begin()) && x.event == Receiver::Event::kError &&
         y.event == Receiver::Event::kError && compressedError(x.code) && compressedError(y.code);
}

// Sends what was received back through a Sender of the peer's role and
// receives it again.
void echo(const std::vector<Record>& records, const Setup& setup, size_t size) {
  const Role peer = setup.self == Role::kServer ? Role::kClient : Role::kServer;
  DeflateOptions options;
  // Every message compressed (empty ones included) for some inputs; short
  // ones sent plain for others.
  options.minMessageSize = records.size() % 2 ? 0 : 16;
  Sender sender(peer, setup.deflate, options);
  Buffer wire;
  std::vector<Record> expected;
  for (const Record& r : records) {
    if (r.event == Receiver::Event::kMessage) {
      sender.appendMessage(&wire, r.type, r.payload, r.payload.size() % 3 == 0 ? 7 : 0);
    } else if (r.event == Receiver::Event::kPing) {
      sender.appendPing(&wire, r.payload);
    } else if (r.event == Receiver::Event::kPong) {
      sender.appendPong(&wire, r.payload);
    } else if (r.event == Receiver::Event::kClose) {
      sender.appendClose(&wire, r.code, r.text);
    } else {
      continue;
    }
    expected.push_back(r);
    if (r.event != Receiver::Event::kMessage) expected.back().type = MessageType::kBinary;
  }
  // Compressed, a message at the size limit can become a frame over it.
  const ReceiverLimits limits{SIZE_MAX, setup.limits.maxMessageBytes};
  Receiver receiver(setup.self, limits, setup.deflate);
  std::vector<Record> again;
  drain(receiver, &wire, &again, size);
  for (Record& r : again) {
    if (r.event != Receiver::Event::kMessage) r.type = MessageType::kBinary;
  }
  if (again != expected) fail("echoed events differ", size);
}

}  // namespace
}  // namespace libnet::ws

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace libnet::ws;
  if (size == 0) return 0;
  const Setup setup = setupFrom(data[0]);
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::vector<Record> whole = receive(stream, setup, 0);
  for (const Record& r : whole) checkRecord(r, setup, size);
  const std::vector<Record> split = receive(stream, setup, setup.piece ? setup.piece : 1);
  if (!sameOutcome(whole, split, setup)) fail("whole and split runs differ", size);
  echo(whole, setup, size);
  return 0;
}
