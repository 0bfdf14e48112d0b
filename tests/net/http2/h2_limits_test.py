"""HTTP/2 under heavy and hostile peers: what a connection and the server may
hold, against examples/http:http_server, on each backend.

- many uploads at once (as a Go client sends them: 64 requests in flight,
  40 POSTs of up to 1 MiB to /echo, with and without Content-Length, the
  windows honoured, python3-h2): every one answered 200 with its body back,
  none refused: flow control slows the client;
- request bodies against the server-wide budget (--max-body-memory 2 MiB):
  24 connections x 8 POSTs of 1 MB never finished, sent as far as the
  windows allow: 503 for what does not fit, the server's memory bounded;
- a body over --max-body: 413 as soon as its Content-Length says so, or at
  the byte past the limit, then RST_STREAM NO_ERROR; the window is not
  opened further;
- 120 cookie fields (a browser's cookies): 200, not 431; a HEAD refused
  with 431 has no body; a Host naming another authority than :authority:
  400; a :path of 70 KB, past what nghttp2's HPACK decoder takes in one
  field (and past the header list size the server advertised): GOAWAY
  COMPRESSION_ERROR for that connection, and the server serves the next;
- a slow reader (--idle-timeout 2): 20 files asked for with the windows
  shut, then one byte of window every 0.2 s: closed under the minimum rate,
  and its descriptors given back;
- files held by answers whose windows are shut, under RLIMIT_NOFILE 256:
  6 connections x 100 streams: at most 16 files per connection and a
  quarter of the limit over the server; no 403 (503 past the bound), and
  the server still takes connections and answers.

usage: h2_limits_test.py HTTP_SERVER
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import os
import random
import select
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions

from h2peer import (COMPRESSION_ERROR, DATA, END_STREAM, HEADERS, INITIAL_WINDOW_SIZE, MIB,
                    NO_ERROR, RST_STREAM,
                    WAIT, WINDOW_UPDATE, Conn, Server, check, continuation_frame, data_frame, fail,
                    headers_frame,
                    request_block,
                    still_serves, summary, wait_until, window_update_frame)

TMP = os.environ.get("TEST_TMPDIR", "/tmp")


def make_root():
    root = os.path.join(TMP, "h2-limits-root")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.write(os.urandom(8 * MIB))
    return root


class H2Client:
    """A conforming client (python3-h2) that uploads as fast as the server's
    windows allow: pump() sends what the windows take, read() handles what
    came. streams[id]: status, body (received), ended, reset, left (the
    upload still to send, or None)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.streams = {}
        self.closed = False
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data and not self.closed:
            try:
                self.sock.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                self.closed = True

    def handshake(self):
        """The server's SETTINGS, and its acknowledgement of ours."""
        got = set()
        deadline = time.monotonic() + WAIT
        while got != {"settings", "ack"} and time.monotonic() < deadline:
            for event in self.read(deadline - time.monotonic()):
                if isinstance(event, h2.events.RemoteSettingsChanged):
                    got.add("settings")
                elif isinstance(event, h2.events.SettingsAcknowledged):
                    got.add("ack")
        check(got == {"settings", "ack"}, "no SETTINGS exchange within %d s" % WAIT)

    def start(self, method, path, body=None, declare=True, finish=True):
        """Opens a stream; `body` is sent by pump(), ending the stream when
        `finish`; Content-Length is sent when `declare` (the full length,
        `declare` itself when it is an int)."""
        sid = self.conn.get_next_available_stream_id()
        headers = [(":method", method), (":scheme", "http"), (":authority", "127.0.0.1"),
                   (":path", path)]
        if body is not None and declare:
            length = declare if isinstance(declare, int) and declare is not True else len(body)
            headers.append(("content-length", str(length)))
        self.conn.send_headers(sid, headers, end_stream=body is None)
        self.streams[sid] = {"status": None, "body": bytearray(), "ended": False, "reset": None,
                             "left": memoryview(body) if body is not None else None,
                             "finish": finish}
        self.flush()
        return sid

    def pump(self):
        """Sends as much of each upload as the windows allow, a frame per
        stream in turn (round robin, starting one further each call, as a
        client with a writer per request shares the connection); true if
        anything was sent."""
        moved = False
        order = list(self.streams.items())
        self.turn = (getattr(self, "turn", 0) + 1) % max(1, len(order))
        for sid, st in order[self.turn:] + order[:self.turn]:
            left = st["left"]
            if left is None or st["reset"] is not None or (not left and not st["finish"]):
                continue
            try:
                n = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size,
                        len(left))
                if n == 0 and len(left) > 0:
                    continue
                last = n == len(left) and st["finish"]
                self.conn.send_data(sid, left[:n].tobytes(), end_stream=last)
                st["left"] = None if last else left[n:]
                moved = True
            except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                st["left"] = None
        self.flush()
        return moved

    def read(self, timeout):
        """Reads what comes within `timeout` (once); returns the events."""
        if self.closed:
            return []
        readable, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not readable:
            return []
        try:
            data = self.sock.recv(1 << 20)
        except (ConnectionResetError, socket.timeout):
            data = b""
        if not data:
            self.closed = True
            return []
        events = self.conn.receive_data(data)
        for event in events:
            self.event(event)
        self.flush()
        return events

    def event(self, event):
        st = self.streams.get(getattr(event, "stream_id", None))
        if isinstance(event, h2.events.ResponseReceived):
            st["status"] = dict(event.headers)[":status"]
        elif isinstance(event, h2.events.DataReceived):
            st["body"] += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            st["ended"] = True
        elif isinstance(event, h2.events.StreamReset):
            st["reset"] = event.error_code
            st["left"] = None

    def close(self):
        self.sock.close()


def multiplexed_uploads_case(server):
    """64 requests in flight on one connection, 40 of them POSTs to /echo of
    up to 1 MiB, half without Content-Length: all 200, bodies echoed."""
    what = "64 multiplexed requests, 40 uploads of up to 1 MiB"
    client = H2Client(server.port)
    client.handshake()
    rng = random.Random(43)
    posts = {}
    for i in range(64):
        if i % 8 < 5:
            body = os.urandom(rng.randint(1, MIB))
            sid = client.start("POST", "/echo", body, declare=i % 2 == 0)
            posts[sid] = body
        else:
            client.start("GET", "/hello")
    deadline = time.monotonic() + 3 * WAIT
    while time.monotonic() < deadline and not all(
            st["ended"] or st["reset"] is not None for st in client.streams.values()):
        client.pump()
        client.read(0.05)
        check(not client.closed, "%s: the server closed the connection" % what)
    statuses = {}
    for sid, st in client.streams.items():
        statuses[st["status"]] = statuses.get(st["status"], 0) + 1
        check(st["ended"] and st["reset"] is None,
              "%s: stream %d not answered whole: %s, reset %s" % (what, sid, st["status"],
                                                                 st["reset"]))
        if sid in posts:
            check(bytes(st["body"]) == posts[sid], "%s: stream %d: %d bytes back of %d" % (
                what, sid, len(st["body"]), len(posts[sid])))
    check(statuses == {"200": 64}, "%s: statuses %s" % (what, statuses))
    print("  %s: %s" % (what, statuses))
    client.close()


def body_budget_case(server):
    """24 connections x 8 POSTs declaring 1 MB, each sent but for its last
    byte, as far as the windows allow, against --max-body-memory 2 MiB."""
    what = "24 x 8 unfinished 1 MB uploads against a 2 MiB body budget"
    before = server.rss()
    clients = []
    for _ in range(24):
        client = H2Client(server.port)
        client.handshake()
        for _ in range(8):
            client.start("POST", "/echo", b"u" * 999999, declare=1000000, finish=False)
        clients.append(client)
    peak = before
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        moved = False
        for client in clients:
            moved = client.pump() or moved
        socks = [c.sock for c in clients if not c.closed]
        readable, _, _ = select.select(socks, [], [], 0.1)
        for client in clients:
            if client.sock in readable:
                moved = bool(client.read(0)) or moved
        peak = max(peak, server.rss())
        if not moved:
            break
    statuses = {}
    for client in clients:
        check(not client.closed, "%s: a connection was closed" % what)
        for st in client.streams.values():
            statuses[st["status"]] = statuses.get(st["status"], 0) + 1
    grown = peak - before
    print("  %s: statuses %s, the server grew by %.1f MiB" % (what, statuses, grown / MIB))
    check(statuses.get("503", 0) > 0, "%s: no 503: %s" % (what, statuses))
    check(set(statuses) <= {"503", None}, "%s: statuses %s" % (what, statuses))
    check(grown < 32 * MIB, "%s: the server grew by %d MiB" % (what, grown // MIB))
    for client in clients:
        client.close()


def frames_of(conn, stream):
    return [f for f in conn.frames if f.stream == stream]


def granted(conn, stream):
    """WINDOW_UPDATE increments the server sent for `stream`."""
    return sum(int.from_bytes(f.payload, "big") & 0x7fffffff
               for f in frames_of(conn, stream) if f.kind == WINDOW_UPDATE)


def early_413_case(server):
    """A Content-Length over --max-body (1 MiB): 413 and RST_STREAM NO_ERROR
    with no byte of the body sent; then a body without Content-Length: 413
    at the byte past the limit, and no window opened after it."""
    what = "a 10 MiB Content-Length"
    conn = Conn(server.port)
    conn.send(headers_frame(1, request_block("/echo", "POST", [("content-length", "10485760")]),
                            end_stream=False))
    conn.read_until(lambda f: f.stream == 1 and f.kind == RST_STREAM, what)
    response = conn.response(1)
    check(response["status"] == "413" and response["ended"] and response["reset"] == NO_ERROR,
          "%s: %s (%s)" % (what, response, summary(conn.frames)))
    what = "2 MiB without Content-Length"
    conn.send(headers_frame(3, request_block("/echo", "POST"), end_stream=False))
    sent = 0
    deadline = time.monotonic() + WAIT
    # Send as far as the windows go: the server answers once a byte passes
    # the limit.
    while conn.response(3)["reset"] is None and time.monotonic() < deadline:
        allowed = 65536 + granted(conn, 3) - sent
        if allowed > 0 and sent < 2 * MIB:
            n = min(allowed, 16384)
            conn.send(data_frame(3, b"x" * n, end_stream=False))
            sent += n
        conn.read_for(0.01)
    response = conn.response(3)
    check(response["status"] == "413" and response["reset"] == NO_ERROR,
          "%s: %s after %d bytes (%s)" % (what, response, sent, summary(conn.frames)))
    check(sent <= MIB + 65536 + 16384, "%s: %d bytes taken" % (what, sent))
    answered_at = next(i for i, f in enumerate(conn.frames) if f.stream == 3 and f.kind == HEADERS)
    later = [f for f in conn.frames[answered_at:] if f.stream == 3 and f.kind == WINDOW_UPDATE]
    check(not later, "%s: the window opened after the 413: %s" % (what, later))
    print("  %s: 413 and RST_STREAM NO_ERROR after %d bytes" % (what, sent))
    conn.close()


def split_block(stream, block, size=16384):
    """A header block ending its stream, as HEADERS and CONTINUATION frames."""
    pieces = [block[i:i + size] for i in range(0, len(block), size)]
    frames = [headers_frame(stream, pieces[0], end_headers=len(pieces) == 1)]
    for i, piece in enumerate(pieces[1:], 2):
        frames.append(continuation_frame(stream, piece, end_headers=i == len(pieces)))
    return b"".join(frames)


def small_cases(server):
    """Cookie crumbs, a refused HEAD, Host against :authority."""
    conn = Conn(server.port)
    cookies = [("cookie", "c%d=%s" % (i, "v" * 20)) for i in range(120)]
    conn.send(headers_frame(1, request_block("/hello", extra=cookies)))
    fillers = [("x-filler-%03d" % i, "v" * 1000) for i in range(70)]
    conn.send(split_block(3, request_block("/hello", "HEAD", extra=fillers)))
    conn.send(headers_frame(5, request_block("/hello", extra=[("host", "elsewhere.example")])))
    conn.send(headers_frame(7, request_block("/hello", extra=[("host", "127.0.0.1:80")])))
    pending = {1, 3, 5, 7}

    def all_ended(f):
        if f.kind in (DATA, HEADERS) and f.flags & END_STREAM:
            pending.discard(f.stream)
        return not pending

    conn.read_until(all_ended, "cookies, HEAD, Host")
    cookie, head, other, same = (conn.response(s) for s in (1, 3, 5, 7))
    check(cookie["status"] == "200", "120 cookie fields: %s" % cookie)
    check(head["status"] == "431" and head["body"] == b"" and
          not any(f.kind == DATA for f in frames_of(conn, 3)),
          "a HEAD refused with 431: %s (%s)" % (head, frames_of(conn, 3)))
    check(other["status"] == "400", "a Host naming another authority: %s" % other)
    check(same["status"] == "200", "a Host naming the same authority: %s" % same)
    print("  120 cookie fields: 200; a refused HEAD: 431 without a body; another Host: 400")
    conn.close()

    conn = Conn(server.port)
    conn.send(split_block(1, request_block("/" + "p" * 70000)))
    check(conn.read_to_close(), "a :path of 70 KB: the connection was not closed")
    goaway = conn.goaway()
    check(goaway is not None and goaway.error_code() == COMPRESSION_ERROR,
          "a :path of 70 KB: %s" % summary(conn.frames))
    conn.close()
    still_serves(server, "a :path of 70 KB")
    print("  a :path of 70 KB: GOAWAY COMPRESSION_ERROR, and the next connection is served")


def slow_reader_case(server):
    """--idle-timeout 2: 20 GETs of 8 MiB with the windows shut, then one
    byte of window every 0.2 s (moving, far under 1024 bytes a second)."""
    what = "a window opened a byte every 0.2 s"
    base = server.fds()
    before = server.rss()
    conn = Conn(server.port, settings=[(INITIAL_WINDOW_SIZE, 0)])
    conn.send(b"".join(headers_frame(s, request_block("/big.bin")) for s in range(1, 41, 2)))
    start = time.monotonic()
    held = 0
    grown = 0
    while time.monotonic() - start < WAIT:
        held = max(held, server.fds() - base)
        grown = max(grown, server.rss() - before)
        if not conn.send(window_update_frame(1, 1) + window_update_frame(0, 1)):
            break
        if not conn.read_for(0.2):
            break
    took = time.monotonic() - start
    check(conn.closed or conn.send_failed, "%s: still open after %d s (%s)" % (
        what, WAIT, summary(conn.frames)))
    conn.close()
    back = wait_until(lambda: server.fds() <= base)
    check(back is not None, "%s: %d descriptors still held after the close" % (
        what, server.fds() - base))
    check(held <= 16 + 1, "%s: %d descriptors held (16 files at most, and the socket)" % (
        what, held))
    check(grown < 16 * MIB, "%s: the server grew by %d MiB" % (what, grown // MIB))
    print("  %s: closed after %.1f s, %s; at most %d descriptors held, all given back" % (
        what, took, conn.goaway() or "no GOAWAY", held))


def fd_case(server):
    """RLIMIT_NOFILE 256: 6 connections x 100 GETs of a file, windows shut."""
    what = "6 x 100 file answers held, RLIMIT_NOFILE 256"
    base = server.fds()
    conns = []
    for _ in range(6):
        conn = Conn(server.port, settings=[(INITIAL_WINDOW_SIZE, 0)])
        conn.send(b"".join(headers_frame(s, request_block("/big.bin")) for s in range(1, 201, 2)))
        conns.append(conn)

    def answered():
        for conn in conns:
            conn.read_for(0.01)
        return sum(1 for c in conns for f in c.frames if f.kind == HEADERS) >= 6 * 16

    check(wait_until(answered) is not None, "%s: fewer than 96 answers begun (%s)" % (
        what, [summary(c.frames) for c in conns][:2]))
    statuses = {}
    for conn in conns:
        for f in conn.frames:
            if f.kind == HEADERS:
                status = dict(f.headers)[":status"]
                statuses[status] = statuses.get(status, 0) + 1
    held = server.fds() - base
    print("  %s: statuses %s, %d descriptors held" % (what, statuses, held))
    check(set(statuses) <= {"200", "503"}, "%s: statuses %s" % (what, statuses))
    check(statuses.get("200", 0) <= 64, "%s: %d files open" % (what, statuses.get("200", 0)))
    check(held <= 64 + len(conns), "%s: %d descriptors held" % (what, held))
    still_serves(server, what)
    for conn in conns:
        conn.close()
    check(wait_until(lambda: server.fds() <= base) is not None,
          "%s: %d descriptors still held after the close" % (what, server.fds() - base))


def run_backend(binary, backend, root):
    server = Server(binary, backend, "--h2c", "--root", root, "--idle-timeout", "30")
    for name, case in [("small cases", small_cases), ("early 413", early_413_case),
                       ("multiplexed uploads", multiplexed_uploads_case)]:
        case(server)
        still_serves(server, name)
        print("ok: %s: %s" % (backend, name), flush=True)
    server.stop()
    budget = Server(binary, backend, "--h2c", "--max-body-memory", str(2 * MIB))
    body_budget_case(budget)
    still_serves(budget, "the body budget")
    budget.stop()
    print("ok: %s: the body budget" % backend, flush=True)
    slow = Server(binary, backend, "--h2c", "--root", root, "--idle-timeout", "2")
    slow_reader_case(slow)
    still_serves(slow, "a slow reader")
    slow.stop()
    print("ok: %s: a slow reader" % backend, flush=True)
    files = Server(binary, backend, "--h2c", "--root", root, "--idle-timeout", "30", nofile=256)
    fd_case(files)
    files.stop()
    print("ok: %s: files under RLIMIT_NOFILE" % backend, flush=True)


def main():
    if len(sys.argv) != 2:
        fail("usage: h2_limits_test.py HTTP_SERVER")
    root = make_root()
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        run_backend(sys.argv[1], backend, root)


if __name__ == "__main__":
    main()
