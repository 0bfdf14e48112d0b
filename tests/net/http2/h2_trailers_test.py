"""What a gRPC server sends and receives over HTTP/2, against python3-h2 as
the client (tests/net/http2:streamed_body_server, h2c, each backend). The
bytes are split into frames here as well as fed to h2, so that the checks
see the exact frames and that a conforming client takes them:

- /grpc/echo: a request with gRPC's fields (te: trailers, content-type
  application/grpc+proto, grpc-timeout, grpc-encoding,
  grpc-accept-encoding, user-agent, custom and -bin metadata), its body
  echoed piece by piece while it still streams in, ended by request
  trailers; the answer's trailers (grpc-status 0, grpc-message,
  x-trailer-bin) come in a HEADERS frame with END_STREAM after the last
  DATA frame, which has none, and h2 reports TrailersReceived;
- /grpc/unimplemented: a trailers-only answer, one HEADERS frame with
  END_STREAM, grpc-status 12, no content-length, no DATA;
- /grpc/deadline: DATA, the trailers (grpc-status 4), then RST_STREAM
  CANCEL while the client still sends, in that order;
- RST_STREAM CANCEL from the client mid-body and mid-answer: the writer's
  closed callback runs and the body ends kAborted (the server's /stats);
- HTTP/1.1 on the same port: a chunked body with a trailer section;
- the server exits 0 on SIGTERM afterwards.

usage: h2_trailers_test.py STREAMED_BODY_SERVER
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import os
import socket
import struct
import sys
import time

import h2.config
import h2.connection
import h2.events

from h2peer import WAIT, Server, check, fetch, wait_until

DATA, HEADERS, RST_STREAM = 0, 1, 3
END_STREAM, END_HEADERS = 0x1, 0x4
CANCEL = 8

GRPC_FIELDS = [("content-type", "application/grpc+proto"), ("te", "trailers"),
               ("grpc-timeout", "1S"), ("grpc-encoding", "gzip"),
               ("grpc-accept-encoding", "identity,deflate,gzip"),
               ("user-agent", "grpc-python/1.51.1 grpc-c/29.0.0 (linux; chttp2)"),
               ("x-user", "value"), ("x-meta-bin", "AAECAw==")]


class Client:
    """python3-h2's client on one connection; every frame read is also kept
    as (type, flags, stream, payload)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.buf = b""
        self.frames = []
        self.events = []
        self.flush()

    def flush(self):
        self.sock.sendall(self.conn.data_to_send())

    def post(self, stream, path, fields=(), end_stream=False):
        self.conn.send_headers(stream, [(":method", "POST"), (":scheme", "http"),
                                        (":authority", "127.0.0.1"), (":path", path),
                                        *fields], end_stream=end_stream)
        self.flush()

    def pump(self):
        data = self.sock.recv(65536)
        check(data, "the server closed the connection; frames %s" % self.frames[-8:])
        self.buf += data
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[:3], "big")
            if len(self.buf) < 9 + length:
                break
            kind, flags, stream = struct.unpack_from("!BBI", self.buf, 3)
            self.frames.append((kind, flags, stream & 0x7fffffff, self.buf[9:9 + length]))
            self.buf = self.buf[9 + length:]
        for event in self.conn.receive_data(data):
            self.events.append(event)
            if isinstance(event, h2.events.DataReceived):
                self.conn.acknowledge_received_data(event.flow_controlled_length,
                                                    event.stream_id)
        self.flush()

    def until(self, predicate, what):
        deadline = time.monotonic() + WAIT
        while not predicate():
            check(time.monotonic() < deadline, "no %s: frames %s" % (what, self.frames[-8:]))
            self.pump()

    def of(self, stream, kind=None):
        return [e for e in self.events
                if getattr(e, "stream_id", None) == stream and (kind is None or
                                                                isinstance(e, kind))]

    def stream_frames(self, stream):
        return [(kind, flags, payload) for kind, flags, s, payload in self.frames if s == stream]

    def body(self, stream):
        return b"".join(e.data for e in self.of(stream, h2.events.DataReceived))


def stats(port):
    status, _, body = fetch(port, "/stats")
    check(status == "200", "/stats: %s" % status)
    return dict(kv.split("=") for kv in body.decode().split())


def grpc_echo(port):
    c = Client(port)
    c.post(1, "/grpc/echo", GRPC_FIELDS)
    c.until(lambda: c.of(1, h2.events.ResponseReceived), "answer head")
    fields = dict(c.of(1, h2.events.ResponseReceived)[0].headers)
    check(fields.get(":status") == "200", "status: %s" % fields)
    check(fields.get("content-type") == "application/grpc", "content-type: %s" % fields)
    check("content-length" not in fields, "a streamed answer announced a length")
    check(fields.get("x-seen-te") == "trailers" and fields.get("x-seen-grpc-timeout") == "1S" and
          fields.get("x-seen-x-meta-bin") == "AAECAw==", "the fields the handler saw: %s" % fields)
    # Bidirectional: each piece comes back before the next is sent.
    sent = b""
    for piece in (b"\0\0\0\0\x03abc", b"\0\0\0\0\x02de"):
        c.conn.send_data(1, piece)
        c.flush()
        sent += piece
        c.until(lambda: c.body(1) == sent, "echo of %r" % piece)
    c.conn.send_headers(1, [("x-request-trailer", "1")], end_stream=True)  # request trailers
    c.flush()
    c.until(lambda: c.of(1, h2.events.StreamEnded), "end of stream 1")
    trailers = c.of(1, h2.events.TrailersReceived)
    check(len(trailers) == 1, "trailers: %s" % c.of(1))
    check(list(trailers[0].headers) == [("grpc-status", "0"), ("grpc-message", "echo%20done"),
                                        ("x-trailer-bin", "AAEC")],
          "trailers: %s" % trailers[0].headers)
    check(trailers[0].stream_ended is not None, "the trailers did not end the stream")
    frames = c.stream_frames(1)
    check(frames[-1][0] == HEADERS and frames[-1][1] == END_STREAM | END_HEADERS,
          "the last frame: %s" % frames[-1:])
    check(all(flags & END_STREAM == 0 for _, flags, _ in frames[:-1]),
          "END_STREAM before the trailers: %s" % frames)
    check(c.body(1) == sent, "echoed %r" % c.body(1))
    check(not c.of(1, h2.events.StreamReset), "stream 1 reset")
    c.sock.close()


def grpc_trailers_only(port):
    c = Client(port)
    c.post(3, "/grpc/unimplemented", GRPC_FIELDS)
    c.conn.send_data(3, b"\0\0\0\0\0", end_stream=True)
    c.flush()
    c.until(lambda: c.of(3, h2.events.StreamEnded), "end of stream 3")
    frames = c.stream_frames(3)
    check([(kind, flags) for kind, flags, _ in frames] == [(HEADERS, END_STREAM | END_HEADERS)],
          "a trailers-only answer in more than one HEADERS frame: %s" % frames)
    response = c.of(3, h2.events.ResponseReceived)[0]
    fields = dict(response.headers)
    check(response.stream_ended is not None, "no END_STREAM on the HEADERS")
    check(fields.get(":status") == "200" and fields.get("grpc-status") == "12" and
          fields.get("grpc-message") == "unknown%20method" and
          fields.get("content-type") == "application/grpc", "fields: %s" % fields)
    check("content-length" not in fields, "content-length in a trailers-only answer")
    c.sock.close()


def grpc_deadline(port):
    c = Client(port)
    c.post(5, "/grpc/deadline", GRPC_FIELDS)
    c.conn.send_data(5, b"\0\0\0\0\x01x")  # and the client goes on sending
    c.flush()
    c.until(lambda: c.of(5, h2.events.StreamReset), "RST_STREAM on stream 5")
    kinds = [(kind, flags & END_STREAM) for kind, flags, _ in c.stream_frames(5)]
    check(kinds == [(HEADERS, 0), (DATA, 0), (HEADERS, END_STREAM), (RST_STREAM, 0)],
          "frames: %s" % c.stream_frames(5))
    check(c.of(5, h2.events.StreamReset)[0].error_code == CANCEL,
          "reset with %s" % c.of(5, h2.events.StreamReset)[0].error_code)
    check(dict(c.of(5, h2.events.TrailersReceived)[0].headers).get("grpc-status") == "4",
          "trailers: %s" % c.of(5))
    check(c.body(5) == b"partial", "body %r" % c.body(5))
    c.sock.close()


def client_cancels_bidi(port):
    before = stats(port)
    c = Client(port)
    c.post(7, "/grpc/echo", GRPC_FIELDS)
    c.conn.send_data(7, b"\0\0\0\0\x01p")
    c.flush()
    c.until(lambda: c.body(7) == b"\0\0\0\0\x01p", "echo on stream 7")
    c.conn.reset_stream(7, error_code=CANCEL)
    c.flush()
    check(wait_until(lambda: int(stats(port)["closed"]) == int(before["closed"]) + 1)
          is not None, "the closed callback did not run: %s" % stats(port))
    after = stats(port)
    check(int(after["aborted"]) == int(before["aborted"]) + 1, "body not kAborted: %s" % after)
    # The connection serves on.
    c.post(9, "/grpc/unimplemented", end_stream=True)
    c.until(lambda: c.of(9, h2.events.StreamEnded), "an answer after the cancel")
    c.sock.close()


def http1_trailers(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock.sendall(b"GET /h1/trailers HTTP/1.1\r\nHost: t\r\nTE: trailers\r\n\r\n")
    got = b""
    deadline = time.monotonic() + WAIT
    while not got.endswith(b"0\r\nX-Checksum: abc\r\n\r\n") and time.monotonic() < deadline:
        data = sock.recv(65536)
        check(data, "closed after %r" % got)
        got += data
    head, _, body = got.partition(b"\r\n\r\n")
    check(b"Transfer-Encoding: chunked" in head, "head: %r" % head)
    check(body == b"3\r\nabc\r\n0\r\nX-Checksum: abc\r\n\r\n", "body: %r" % body)
    sock.close()


def main():
    binary = sys.argv[1]
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        server = Server(binary, backend)
        grpc_echo(server.port)
        grpc_trailers_only(server.port)
        grpc_deadline(server.port)
        client_cancels_bidi(server.port)
        http1_trailers(server.port)
        server.stop()
        print("ok: %s" % backend)


if __name__ == "__main__":
    main()
