// http2::Options: what an HTTP/2 server connection is configured with beyond
// the HttpServer's own options (whose limits, timeouts and output limit it
// shares: see docs/http2.md for every default and the attack each one bounds).
#pragma once

#include <cstddef>
#include <cstdint>

namespace libnet::http2 {

struct Options {
  // Serve HTTP/2 with prior knowledge on plain TCP ("h2c": a connection that
  // starts with the client preface). HTTP/2 over TLS is chosen by ALPN
  // whenever the server's TLS context offers "h2".
  bool priorKnowledge = true;
  // SETTINGS_MAX_CONCURRENT_STREAMS: streams past it are refused.
  uint32_t maxConcurrentStreams = 100;
  // SETTINGS_INITIAL_WINDOW_SIZE: how much of a request body a client may
  // send on one stream before the server grants more (WINDOW_UPDATE, as the
  // connection's body pool allows). Also the size of each later grant.
  uint32_t initialWindowSize = 64 * 1024;
  // Rapid Reset (CVE-2023-44487): streams the client resets (or that end
  // before their answer) draw from a bucket of this many tokens, refilled at
  // resetsPerSecond; an empty bucket is a GOAWAY (ENHANCE_YOUR_CALM).
  uint32_t resetBurst = 200;
  uint32_t resetsPerSecond = 33;
  // PING, SETTINGS and empty frames the same way (floods that cost the
  // server an answer each). A PING right after request traffic (a HEADERS
  // or non-empty DATA frame) is not counted: gRPC clients send one per call.
  uint32_t controlBurst = 1000;
  uint32_t controlPerSecond = 100;
  // A header block (HEADERS plus CONTINUATION frames) is bounded in frames
  // and in bytes on the wire (twice the header section limit); past either,
  // GOAWAY. Its decoded size is bounded by the header section limit per
  // stream (431), and by four times that per block (HPACK bomb: GOAWAY).
  uint32_t maxHeaderBlockFrames = 32;
  // Request bodies held on one connection, over all its streams: the pool
  // that stream windows are granted from, so that a client sending more is
  // slowed by flow control, never refused. 0: maxConcurrentStreams x
  // initialWindowSize + limits.maxBodyBytes (7.25 MiB by default), which is
  // also the least it may be (else http2::serve() throws
  // std::invalid_argument): every stream's first window, and one whole body.
  size_t maxConnectionBodyBytes = 0;

  // Slow readers. While a connection owes response bytes, it must send at
  // least minSendRate bytes a second, counted over each window of the
  // HttpServer's idleTimeout (or what is left of its answers, if less);
  // one that does not (a window opened a byte at a time, a client that
  // reads a trickle) gets GOAWAY and is closed. 0: one byte per window.
  size_t minSendRate = 1024;
  // Answers not yet sent hold at most this many open files on one
  // connection, and this many bytes of response bodies in memory (past
  // either, the next request's handler waits until an answer is out; the
  // answer being made may pass the byte bound once).
  size_t maxConnectionFiles = 16;
  size_t maxConnectionResponseBytes = 1024 * 1024;
  // Open files held by HTTP/2 answers over the whole server; past it a file
  // answer becomes 503 with Retry-After. 0: a quarter of the process's
  // RLIMIT_NOFILE when http2::serve() runs.
  size_t maxServerFiles = 0;
};

}  // namespace libnet::http2
