// libFuzzer target: random server bytes into http2::ClientSession
// (tools/fuzz.sh h2client). The first byte picks the mode: bit 0 pauses the
// first stream at its head, bit 1 resumes it after every piece, bit 2 uses
// small limits (a 1 KiB header list, a 1 KiB window, a control burst of 8),
// bits 3-7 the size of the pieces the rest is cut into. Three requests are
// open: a GET, a POST with a whole body and one written in pieces.
// Checks, each an abort: every stream's close runs exactly once (by the
// session's destruction at the latest) and nothing follows it; a stream
// holds at most one window for its consumer; the session's output stays
// within its budget plus one frame.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "net/Buffer.h"
#include "net/http2/ClientSession.h"

namespace {

using libnet::Buffer;
using libnet::http2::ClientSession;

void check(bool ok) {
  if (!ok) std::abort();
}

struct Counts {
  int closes = 0;
  bool afterClose = false;
};

ClientSession::StreamCallbacks watch(Counts* counts) {
  ClientSession::StreamCallbacks cb;
  cb.onHead = [counts](int, const ClientSession::Fields&) {
    counts->afterClose |= counts->closes > 0;
  };
  cb.onData = [counts](std::string_view) { counts->afterClose |= counts->closes > 0; };
  cb.onTrailers = [counts](const ClientSession::Fields&) {
    counts->afterClose |= counts->closes > 0;
  };
  cb.onClose = [counts](const ClientSession::Close&) { ++counts->closes; };
  return cb;
}

ClientSession::Fields request(std::string_view method) {
  return {{":method", std::string(method)},
          {":scheme", "http"},
          {":path", "/"},
          {":authority", "fuzz"}};
}

void drive(ClientSession& session, std::string_view input, size_t piece, bool resume, int32_t first,
           size_t window) {
  constexpr size_t kBudget = 64 * 1024;
  constexpr size_t kMaxFrame = 16384 + 9;
  Buffer out;
  while (!input.empty()) {
    const size_t n = std::min(piece, input.size());
    const bool ok = session.receive(input.substr(0, n));
    input.remove_prefix(n);
    check(session.heldBytes(first) <= window);
    if (resume) session.resume(first);
    out.retrieveAll();
    session.produce(&out, kBudget);
    check(out.readableBytes() <= kBudget + kMaxFrame);
    if (!ok) return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  ClientSession::Options options;
  if ((mode & 4) != 0) {
    options.maxHeaderListBytes = 1024;
    options.streamWindow = 1024;
    options.controlBurst = 8;
  }
  const size_t piece = (size_t{mode} >> 3) * 97 + 1;
  Counts counts[3];
  {
    ClientSession session("fuzz", options);
    ClientSession::StreamCallbacks first = watch(&counts[0]);
    int32_t id = 0;
    ClientSession* s = &session;
    if ((mode & 1) != 0)
      first.onHead = [s, &id](int, const ClientSession::Fields&) { s->pause(id); };
    id = session.submit(request("GET"), {}, true, std::move(first));
    const int32_t post =
        session.submit(request("POST"), std::string(40000, 'p'), true, watch(&counts[1]));
    const int32_t streamed = session.submit(request("PUT"), "a", false, watch(&counts[2]));
    check(id > 0 && post > 0 && streamed > 0);
    session.write(streamed, std::string(20000, 'w'));
    session.endStream(streamed);
    drive(session, input, piece, (mode & 2) != 0, id, options.streamWindow);
  }
  for (const Counts& c : counts) {
    check(c.closes == 1);
    check(!c.afterClose);
  }
  return 0;
}
