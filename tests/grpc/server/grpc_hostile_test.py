"""grpc::Server (tests/grpc/server:grpc_test_server) against hostile gRPC
clients written frame by frame (h2peer.Conn, python3-h2's hpack), on each
backend:

- a length prefix of 4 GiB: RESOURCE_EXHAUSTED at once, nothing held;
- the compressed flag on a call without grpc-encoding: INTERNAL;
- a gzip bomb (16 MiB of zeros in 16 KiB): RESOURCE_EXHAUSTED;
- a bad grpc-timeout, and an unknown service: one HEADERS frame with
  END_STREAM (trailers only); an unsupported grpc-encoding: UNIMPLEMENTED
  with grpc-accept-encoding;
- malformed "-bin" metadata: INTERNAL; huge metadata: refused, the
  connection serves on;
- a gzip answer only to a client that accepts gzip;
- RST_STREAM in the middle of a message: the handler's cancel callback runs,
  the connection serves on;
- a call whose handler never reads: the client is held to one stream
  window (no WINDOW_UPDATE for it), the connection serves on;
- 10,000 calls (100 connections of 100 streams) that send part of a message
  and never read: the server's memory stays bounded, a new client is
  served, and every one of those calls is cancelled once its connection
  closes.

usage: grpc_hostile_test.py GRPC_TEST_SERVER H2PEER_DIR
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import gzip
import os
import struct
import sys
import zlib

sys.path.insert(0, sys.argv[2])
import grpc  # noqa: E402
from h2peer import (DATA, END_STREAM, HEADERS, RST_STREAM, WINDOW_UPDATE, CANCEL, Conn,  # noqa: E402
                    Server, check,
                    data_frame, rst_frame, summary, wait_until)

LIMIT = 1024 * 1024
WAIT = 20


def message(payload, compressed=False):
    return struct.pack("!BI", 1 if compressed else 0, len(payload)) + payload


def start_call(conn, stream, name, extra=(), end_stream=False, path=None):
    fields = [("content-type", "application/grpc"), ("te", "trailers")] + list(extra)
    conn.request(stream, path or "/test.Test/" + name, "POST", end_stream, fields)


def ended(stream):
    return lambda f: f.stream == stream and (
        (f.kind in (HEADERS, DATA) and f.flags & END_STREAM) or f.kind == RST_STREAM)


def finish(conn, stream):
    """The stream's answer once it has ended: (fields, body, frames)."""
    f = conn.read_until(ended(stream), "the end of stream %d" % stream)
    check(f is not None, "the server closed before stream %d ended" % stream)
    response = conn.response(stream)
    frames = [f for f in conn.frames if f.stream == stream]
    return dict(response["headers"]), response["body"], frames


def status_of(conn, stream):
    fields, _, frames = finish(conn, stream)
    check("grpc-status" in fields, "no grpc-status on stream %d: %s" % (stream, summary(frames)))
    return int(fields["grpc-status"]), fields


def call(conn, stream, name, payload, extra=(), compressed=False):
    start_call(conn, stream, name, extra)
    conn.send(data_frame(stream, message(payload, compressed), end_stream=True))
    return status_of(conn, stream)


def echo_works(conn, stream):
    code, _ = call(conn, stream, "Echo", b"still")
    check(code == 0, "Echo after a hostile call: grpc-status %d" % code)


def stats(port):
    # A sanitized server takes a while over 10,000 calls: bounded, not short.
    with grpc.insecure_channel("127.0.0.1:%d" % port) as channel:
        text = channel.unary_unary("/test.Test/Stats")(b"", timeout=3 * WAIT).decode()
    return dict((k, int(v)) for k, v in (item.split("=") for item in text.split()))


def framing(port):
    conn = Conn(port)
    start_call(conn, 1, "Echo")
    conn.send(data_frame(1, b"\x00\xff\xff\xff\xff" + b"x" * 100, end_stream=True))
    code, fields = status_of(conn, 1)
    check(code == 8, "a 4 GiB prefix: grpc-status %d %r" % (code, fields))
    code, _ = call(conn, 3, "Echo", b"abc", compressed=True)
    check(code == 13, "the compressed flag without grpc-encoding: grpc-status %d" % code)
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    packed = bomb.compress(b"\0" * (16 * LIMIT)) + bomb.flush()
    check(len(packed) < 60000, "the bomb fits a window: %d bytes" % len(packed))
    code, _ = call(conn, 5, "Echo", packed, extra=[("grpc-encoding", "gzip")], compressed=True)
    check(code == 8, "a gzip bomb: grpc-status %d" % code)
    start_call(conn, 7, "Echo")
    conn.send(data_frame(7, message(b"half")[:6], end_stream=True))
    code, _ = status_of(conn, 7)
    check(code == 13, "a request ending inside a message: grpc-status %d" % code)
    echo_works(conn, 9)
    conn.close()


def trailers_only(port):
    conn = Conn(port)
    for stream, extra, path, want in (
            (1, [("grpc-timeout", "abc")], None, 13),
            (3, [("grpc-timeout", "123456789S")], None, 13),
            (5, [], "/no.Such/Method", 12),
            (7, [("grpc-encoding", "snappy")], None, 12),
            (9, [("x-bad-bin", "!!!")], None, 13)):
        start_call(conn, stream, "Echo", extra, path=path)
        conn.send(data_frame(stream, message(b"x"), end_stream=True))
        code, fields = status_of(conn, stream)
        check(code == want, "stream %d: grpc-status %d, not %d" % (stream, code, want))
        answer = [f for f in conn.frames if f.stream == stream and f.kind in (HEADERS, DATA)]
        check(len(answer) == 1 and answer[0].kind == HEADERS and answer[0].flags & END_STREAM,
              "stream %d: not trailers only: %s" % (stream, summary(answer)))
        check(fields.get(":status") == "200" and fields.get("content-type") == "application/grpc",
              "stream %d: %r" % (stream, fields))
        if stream == 7:
            check("gzip" in fields.get("grpc-accept-encoding", ""),
                  "UNIMPLEMENTED encoding without grpc-accept-encoding: %r" % fields)
    # Metadata past the header section limit: refused, the connection lives.
    start_call(conn, 11, "Echo", [("x-huge", "v" * 70000)], end_stream=True)
    conn.read_until(ended(11), "the answer to huge metadata")
    check(conn.response(11)["status"] != "200" or conn.response(11)["reset"] is not None or
          dict(conn.response(11)["headers"]).get("grpc-status", "0") != "0",
          "huge metadata was served")
    echo_works(Conn(port), 1)
    conn.close()


def compression(port):
    conn = Conn(port)
    payload = b"z" * 1000
    code, fields = call(conn, 1, "Gzip", payload, extra=[("grpc-accept-encoding", "gzip")])
    body = conn.response(1)["body"]
    check(code == 0 and fields.get("grpc-encoding") == "gzip", "gzip answer: %r" % fields)
    check(body[0] == 1 and gzip.decompress(body[5:]) == payload, "gzip answer's message")
    code, fields = call(conn, 3, "Gzip", payload)
    body = conn.response(3)["body"]
    check(code == 0 and "grpc-encoding" not in fields, "an answer the client cannot take: %r" % fields)
    check(body == message(payload), "a plain answer's message")
    conn.close()


def reset_mid_message(port):
    before = stats(port)["cancels"]
    conn = Conn(port)
    start_call(conn, 1, "Hold")
    conn.send(data_frame(1, message(b"y" * 100)[:40], end_stream=False))
    conn.send(rst_frame(1, CANCEL))
    check(wait_until(lambda: stats(port)["cancels"] == before + 1),
          "RST_STREAM did not reach the handler's cancel callback")
    echo_works(conn, 3)
    conn.close()


def unread_call(port):
    conn = Conn(port)
    start_call(conn, 1, "Hold")
    messages = b"".join(message(b"u" * 995) for _ in range(60))  # 60,000 bytes
    for offset in range(0, len(messages), 15000):
        conn.send(data_frame(1, messages[offset:offset + 15000], end_stream=False))
    # Stream 3's answer comes after the server has taken in every byte sent
    # before it on this connection.
    echo_works(conn, 3)
    updates = [f for f in conn.frames if f.kind == WINDOW_UPDATE and f.stream == 1]
    check(not updates, "WINDOW_UPDATE for a call that does not read: %s" % summary(updates))
    conn.close()


def sanitized(binary):
    """Whether the server was built with ASan or TSan."""
    with open(binary, "rb") as f:
        image = f.read()
    return b"__asan_init" in image or b"__tsan_init" in image


def many_streams(server):
    port = server.port
    before = stats(port)
    rss = server.rss()
    conns = []
    for c in range(100):
        conn = Conn(port)
        for s in range(100):
            start_call(conn, 2 * s + 1, "Hold")
            conn.send(data_frame(2 * s + 1, message(b"h" * 2048)[:1024], end_stream=False))
        conns.append(conn)
    check(wait_until(lambda: stats(port)["handled"] >= before["handled"] + 10000, timeout=120),
          "the 10,000 calls did not all begin: %r" % stats(port))
    grown = server.rss() - rss
    # 10,000 calls, each holding 1 KiB of a message and its stream's state
    # (about 5 KiB in a plain build); a sanitizer's shadow memory multiplies it.
    bound = (128 << 20) * (4 if sanitized(server.argv[0]) else 1)
    check(grown < bound, "10,000 held calls took %d MiB (bound %d MiB)" % (grown >> 20,
                                                                           bound >> 20))
    echo_works(Conn(port), 1)
    for conn in conns:
        conn.close()
    check(wait_until(lambda: stats(port)["cancels"] >= before["cancels"] + 10000, timeout=120),
          "the held calls were not all cancelled: %r" % stats(port))
    print("10,000 held calls: %d KiB more resident" % (grown >> 10))


def main():
    binary = sys.argv[1]
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        server = Server(binary, backend, "--max-receive", str(LIMIT))
        framing(server.port)
        trailers_only(server.port)
        compression(server.port)
        reset_mid_message(server.port)
        unread_call(server.port)
        many_streams(server)
        server.stop()
        print("ok: %s" % backend)


if __name__ == "__main__":
    main()
