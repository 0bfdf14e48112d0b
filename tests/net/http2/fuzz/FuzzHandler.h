// The application the HTTP/2 session fuzz target serves, shared with its
// replay test: a ServerSession::Config with the default limits or with
// small ones that short inputs can exceed, and a handler that answers
//   /hello         "hello world\n"
//   /echo          the request body
//   /big           40000 bytes (several DATA frames, the client's window)
//   /file          a 3000-byte temp file, made once (the session reads it
//                  one DATA frame at a time)
//   /long-header   a 20000-byte response field (HEADERS plus CONTINUATION)
//   /204, /304     no body
//   /connection    connection-specific fields the session must drop
//   /throw         an exception (the session answers 500)
// and 404 to anything else. The handler aborts, with a line on stderr, if a
// request is not HTTP/2 or its body is over the limit.
// The configurations are made on first use; any thread may read them.
#pragma once

#include <cstddef>

#include "net/http2/ServerSession.h"

namespace libnet::http2::fuzz {

inline constexpr size_t kFileSize = 3000;
inline constexpr size_t kBigBody = 40000;

[[nodiscard]] const ServerSession::Config& fuzzConfig(bool small);

}  // namespace libnet::http2::fuzz
