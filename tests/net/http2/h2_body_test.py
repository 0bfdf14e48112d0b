"""Request bodies handed to the handler in pieces over HTTP/2
(HttpServer::Route::kStreamedBody; tests/net/http2:streamed_body_server),
with raw frames (h2peer.Conn) so that the client's flow control is the
test's own, on each backend:

- an upload in pieces, checked by its hash (FNV-1a 64);
- a paused consumer: the client cannot send past the stream's first window
  and gets no WINDOW_UPDATE for it, the server delivered nothing; resumed,
  the upload completes;
- RST_STREAM mid-body: the body ends kAborted, the connection serves on;
  the connection closed mid-body: kAborted;
- four uploads at once on one connection, each checked by its hash;
- a Content-Length past maxStreamedBodyBytes: 413 at once, no handler run;
  a body without one that runs past it: RST_STREAM, kAborted;
- an answer before the body's end: the answer, then RST_STREAM NO_ERROR,
  the body kAborted, and the connection serves the next stream; a consumer
  that throws: 500, then RST_STREAM NO_ERROR;
- the idle timeout spares a connection whose answer is pending (an answer
  three idle timeouts later arrives) and still closes a truly idle one.

usage: h2_body_test.py STREAMED_BODY_SERVER
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import os
import random
import struct
import sys
import time

from h2peer import (DATA, END_STREAM, HEADERS, NO_ERROR, RST_STREAM, SETTINGS,
                    WINDOW_UPDATE, CANCEL, INITIAL_WINDOW_SIZE, MAX_WINDOW, WAIT, Conn, Server,
                    check, data_frame, error_name, rst_frame, summary, wait_until)

FRAME = 16384
MAX_STREAMED = 100000


def fnv(data):
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


class Client:
    """A Conn that keeps the client's send windows from the server's
    SETTINGS and WINDOW_UPDATEs, and gathers each stream's answer."""

    def __init__(self, port):
        self.conn = Conn(port)
        self.initial = 65535
        self.conn_window = 65535
        self.windows = {}
        self.updates = {}  # stream -> WINDOW_UPDATE increments received
        self.status = {}
        self.bodies = {}
        self.ended = set()
        self.resets = {}
        # The server's SETTINGS first (its initial window decides what the
        # client may send on a stream),
        # and the connection window it opens (WINDOW_UPDATE on stream 0).
        self.conn.read_until(lambda f: f.kind == WINDOW_UPDATE and f.stream == 0,
                             "the connection's WINDOW_UPDATE")
        for f in self.conn.frames:
            self._apply(f)

    def _apply(self, f):
        if f.kind == SETTINGS and not f.flags & 1:
            for ident, value in f.settings().items():
                if ident == INITIAL_WINDOW_SIZE:
                    for s in self.windows:
                        self.windows[s] += value - self.initial
                    self.initial = value
        elif f.kind == WINDOW_UPDATE:
            inc = struct.unpack("!I", f.payload)[0] & MAX_WINDOW
            if f.stream == 0:
                self.conn_window += inc
            else:
                self.windows[f.stream] = self.windows.get(f.stream, self.initial) + inc
                self.updates.setdefault(f.stream, []).append(inc)
        elif f.kind == HEADERS and f.stream:
            status = dict(f.headers).get(":status")
            if status:
                self.status[f.stream] = status
        elif f.kind == DATA:
            self.bodies.setdefault(f.stream, bytearray()).extend(f.payload)
        elif f.kind == RST_STREAM:
            self.resets[f.stream] = f.error_code()
        if f.kind in (HEADERS, DATA) and f.flags & END_STREAM:
            self.ended.add(f.stream)

    def pump(self, timeout=WAIT):
        """Reads one frame and applies it; false once the server closed."""
        f = self.conn.read_frame(timeout)
        if f is None:
            return False
        self._apply(f)
        return True

    def open(self, stream, path, method="POST", length=None, end_stream=False):
        extra = [("content-length", str(length))] if length is not None else []
        self.windows.setdefault(stream, self.initial)
        check(self.conn.request(stream, path, method, end_stream=end_stream, extra=extra),
              "the server closed before %s" % path)

    def send_some(self, stream, data, offset, limit=None):
        """Sends what the windows allow of data[offset:limit] (END_STREAM
        with the last byte of data); the new offset."""
        end = len(data) if limit is None else limit
        while offset < end:
            n = min(FRAME, end - offset, self.windows[stream], self.conn_window)
            if n <= 0:
                break
            last = offset + n == len(data)
            self.conn.send(data_frame(stream, data[offset:offset + n], end_stream=last))
            self.windows[stream] -= n
            self.conn_window -= n
            offset += n
        return offset

    def upload(self, uploads):
        """uploads: {stream: data}, streams already open; sends them all
        under flow control, interleaved, and waits for their answers."""
        offsets = {s: 0 for s in uploads}
        deadline = time.monotonic() + WAIT
        while not all(s in self.ended or s in self.resets for s in uploads):
            for s, data in uploads.items():
                offsets[s] = self.send_some(s, data, offsets[s])
            check(time.monotonic() < deadline, "uploads not answered: sent %s, windows %s" % (
                offsets, self.windows))
            check(self.pump(max(0.1, deadline - time.monotonic())),
                  "the server closed mid-upload: %s" % summary(self.conn.frames))

    def get(self, stream, path):
        """A GET on this connection; its body."""
        self.open(stream, path, method="GET", end_stream=True)
        deadline = time.monotonic() + WAIT
        while stream not in self.ended:
            check(stream not in self.resets, "%s reset: %s" % (path, self.resets.get(stream)))
            check(time.monotonic() < deadline and self.pump(max(0.1, deadline - time.monotonic())),
                  "no answer to %s: %s" % (path, summary(self.conn.frames)))
        return bytes(self.bodies.get(stream, b""))


def stats(port):
    c = Client(port)
    text = c.get(1, "/stats").decode()
    c.conn.close()
    return dict(kv.split("=") for kv in text.split())


def expect_hash(c, stream, data):
    check(c.status.get(stream) == "200", "stream %d: status %s, resets %s" % (
        stream, c.status.get(stream), c.resets))
    got = bytes(c.bodies.get(stream, b""))
    want = b"bytes=%d fnv=%s\n" % (len(data), fnv(data).encode())
    check(got == want, "stream %d: %r, want %r" % (stream, got, want))


def upload_by_hash(port):
    data = random.randbytes(1024 * 1024 + 123)
    c = Client(port)
    c.open(1, "/upload", length=len(data))
    c.upload({1: data})
    expect_hash(c, 1, data)
    # Without a Content-Length too, in small frames.
    data = random.randbytes(200000)
    c.open(3, "/upload")
    c.upload({3: data})
    expect_hash(c, 3, data)
    c.conn.close()


def paused_consumer(port):
    data = random.randbytes(300000)
    c = Client(port)
    c.open(1, "/paused", length=len(data))
    sent = c.send_some(1, data, 0)
    check(sent == c.initial and c.windows[1] == 0,
          "sent %d of a window of %d" % (sent, c.initial))
    # The answer to /stats comes after the server took in every byte sent
    # before it: by then no window was granted and nothing delivered.
    text = c.get(3, "/stats").decode()
    check("paused_received=0" in text, "a paused consumer was handed bytes: %s" % text)
    check(not c.updates.get(1), "WINDOW_UPDATE for a paused body: %s" % c.updates.get(1))
    check(c.send_some(1, data, sent) == sent, "the client could send past the window")
    check(c.get(5, "/resume") == b"resumed 1\n", "resume")
    deadline = time.monotonic() + WAIT
    offset = sent
    while 1 not in c.ended:
        offset = c.send_some(1, data, offset)
        check(time.monotonic() < deadline and c.pump(), "the resumed upload stalled at %d" % offset)
    expect_hash(c, 1, data)
    c.conn.close()


def reset_mid_body(port):
    before = int(stats(port)["aborted"])
    c = Client(port)
    c.open(1, "/upload", length=90000)
    c.send_some(1, random.randbytes(90000), 0, limit=30000)
    c.conn.send(rst_frame(1, CANCEL))
    text = c.get(3, "/stats").decode()
    check("aborted=%d" % (before + 1) in text, "after RST_STREAM: %s" % text)
    check(1 not in c.status, "an answer to the reset stream: %s" % c.status.get(1))
    c.conn.close()


def close_mid_body(port):
    before = int(stats(port)["aborted"])
    c = Client(port)
    c.open(1, "/upload", length=90000)
    c.send_some(1, random.randbytes(90000), 0, limit=30000)
    c.get(3, "/stats")  # the upload's handler has run
    c.conn.close()
    check(wait_until(lambda: int(stats(port)["aborted"]) == before + 1) is not None,
          "a body cut by the connection's close did not end kAborted")


def concurrent_uploads(port):
    uploads = {s: random.randbytes(400000 + s) for s in (1, 3, 5, 7)}
    c = Client(port)
    for s, data in uploads.items():
        c.open(s, "/upload", length=len(data) if s != 5 else None)
    c.upload(uploads)
    for s, data in uploads.items():
        expect_hash(c, s, data)
    c.conn.close()


def too_large(port):
    before = stats(port)
    c = Client(port)
    c.open(1, "/upload", length=MAX_STREAMED + 1)
    deadline = time.monotonic() + WAIT
    while 1 not in c.resets:
        check(time.monotonic() < deadline and c.pump(), "no 413: %s" % summary(c.conn.frames))
    check(c.status.get(1) == "413", "Content-Length past the bound: %s" % c.status.get(1))
    check(c.resets[1] == NO_ERROR, "413 then %s" % error_name(c.resets[1]))
    after = dict(kv.split("=") for kv in c.get(3, "/stats").decode().split())
    check(int(after["handled"]) == int(before["handled"]) + 1,  # the /stats only
          "the handler ran for a refused body: %s -> %s" % (before, after))
    # Without a Content-Length: cut off one byte past the bound.
    c.open(5, "/upload")
    data = random.randbytes(MAX_STREAMED + 50000)
    offset = 0
    deadline = time.monotonic() + WAIT
    while 5 not in c.resets:
        offset = c.send_some(5, data, offset)
        check(time.monotonic() < deadline and c.pump(), "no reset past the bound at %d" % offset)
    check(5 not in c.ended, "a body past the bound was answered: %s" % c.status.get(5))
    check(offset <= MAX_STREAMED + 1 + FRAME, "the server let %d bytes in" % offset)
    text = c.get(7, "/stats").decode()
    check("aborted=%d" % (int(after["aborted"]) + 1) in text, "past the bound: %s" % text)
    c.conn.close()


def answer_before_body(port):
    before = int(stats(port)["aborted"])
    c = Client(port)
    c.open(1, "/early", length=100000)
    c.send_some(1, random.randbytes(100000), 0, limit=1000)
    deadline = time.monotonic() + WAIT
    while 1 not in c.resets:
        check(time.monotonic() < deadline and c.pump(), "no reset after the early answer: %s" %
              summary(c.conn.frames))
    check(c.status.get(1) == "200" and 1 in c.ended, "early answer: %s %s" % (
        c.status.get(1), summary(c.conn.frames)))
    check(bytes(c.bodies.get(1, b"")) == b"early\n", "early body %r" % c.bodies.get(1))
    check(c.resets[1] == NO_ERROR, "early answer then %s" % error_name(c.resets[1]))
    text = c.get(3, "/stats").decode()
    check("aborted=%d" % (before + 1) in text, "the body of an early answer: %s" % text)
    c.conn.close()


def consumer_throws(port):
    c = Client(port)
    c.open(1, "/throw", length=100000)
    c.send_some(1, random.randbytes(100000), 0, limit=1000)
    deadline = time.monotonic() + WAIT
    while 1 not in c.resets:
        check(time.monotonic() < deadline and c.pump(), "no reset after the failed consumer: %s" %
              summary(c.conn.frames))
    check(c.status.get(1) == "500" and 1 in c.ended, "a consumer that threw: %s" % c.status.get(1))
    check(c.resets[1] == NO_ERROR, "500 then %s" % error_name(c.resets[1]))
    check(b"handled=" in c.get(3, "/stats"), "the connection after a failed consumer")
    c.conn.close()


def idle_spares_pending(binary, backend):
    server = Server(binary, backend, "--idle-ms", "500")
    c = Client(server.port)
    # Three idle timeouts with nothing on the wire: the answer is pending.
    check(c.get(1, "/later?ms=1500") == b"later 1500\n", "pending answer")
    c.conn.close()
    # A connection with nothing pending is still closed.
    idle = Client(server.port)
    start = time.monotonic()
    while idle.pump():
        check(time.monotonic() - start < WAIT, "an idle HTTP/2 connection was kept")
    idle.conn.close()
    server.stop()


def main():
    binary = sys.argv[1]
    random.seed(44)
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        server = Server(binary, backend, "--max-streamed", str(MAX_STREAMED))
        # The first ones take no bound on the body: a server of their own.
        big = Server(binary, backend)
        upload_by_hash(big.port)
        paused_consumer(big.port)
        concurrent_uploads(big.port)
        big.stop()
        reset_mid_body(server.port)
        close_mid_body(server.port)
        too_large(server.port)
        answer_before_body(server.port)
        consumer_throws(server.port)
        server.stop()
        idle_spares_pending(binary, backend)
        print("ok: %s" % backend)


if __name__ == "__main__":
    main()
