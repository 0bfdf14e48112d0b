"""Shared by the HTTP/2 script tests of tests/net/http2.

- Server: examples/http:http_server on an ephemeral loopback port, its memory
  (VmRSS) read from /proc, stopped with SIGTERM.
- Conn: a raw HTTP/2 client connection (plain, or TLS with ALPN h2). Frames
  are written and parsed by hand with struct, so that a test can misbehave in
  ways a conforming library refuses to; the server's header blocks are decoded
  with python3-hpack.
- fetch(): one ordinary request with python3-h2, a conforming client written
  by others: "the server still serves" after each attack.

Every wait is bounded; nothing sleeps to synchronise (wait_until polls a
condition up to a deadline).
"""

import atexit
import os
import re
import resource
import select
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time

import h2.config
import h2.connection
import h2.events
import hpack

WAIT = 20  # seconds: the bound on every wait
MIB = 1024 * 1024
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# Frame types (RFC 9113 section 6).
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY = range(8)
WINDOW_UPDATE, CONTINUATION = 8, 9
FRAME_NAMES = ["DATA", "HEADERS", "PRIORITY", "RST_STREAM", "SETTINGS", "PUSH_PROMISE", "PING",
               "GOAWAY", "WINDOW_UPDATE", "CONTINUATION"]
# Flags.
END_STREAM = ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8
PRIORITY_FLAG = 0x20
# Error codes (section 7).
ERROR_NAMES = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
               "SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM",
               "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
               "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]
NO_ERROR, PROTOCOL_ERROR, REFUSED_STREAM, CANCEL = 0x0, 0x1, 0x7, 0x8
COMPRESSION_ERROR, ENHANCE_YOUR_CALM = 0x9, 0xB
# SETTINGS identifiers (section 6.5.2).
HEADER_TABLE_SIZE, ENABLE_PUSH, MAX_CONCURRENT_STREAMS = 0x1, 0x2, 0x3
INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE, MAX_HEADER_LIST_SIZE = 0x4, 0x5, 0x6
MAX_WINDOW = 2**31 - 1


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def error_name(code):
    return ERROR_NAMES[code] if code < len(ERROR_NAMES) else "0x%x" % code


def wait_until(predicate, timeout=WAIT, step=0.05):
    """Polls predicate() until it is true or `timeout` seconds pass; returns
    the seconds it took, or None on timeout."""
    start = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            return None
        time.sleep(step)


# ---- frames ------------------------------------------------------------------

def frame(kind, flags, stream, payload=b""):
    return struct.pack("!I", len(payload))[1:] + struct.pack("!BBI", kind, flags, stream) + payload


def settings_frame(pairs=(), ack=False):
    payload = b"".join(struct.pack("!HI", ident, value) for ident, value in pairs)
    return frame(SETTINGS, ACK if ack else 0, 0, payload)


def ping_frame(data=b"pingpong", ack=False):
    return frame(PING, ACK if ack else 0, 0, data)


def rst_frame(stream, code):
    return frame(RST_STREAM, 0, stream, struct.pack("!I", code))


def window_update_frame(stream, increment):
    return frame(WINDOW_UPDATE, 0, stream, struct.pack("!I", increment))


def data_frame(stream, payload=b"", end_stream=True):
    return frame(DATA, END_STREAM if end_stream else 0, stream, payload)


def headers_frame(stream, block, end_stream=True, end_headers=True):
    flags = (END_STREAM if end_stream else 0) | (END_HEADERS if end_headers else 0)
    return frame(HEADERS, flags, stream, block)


def continuation_frame(stream, fragment, end_headers=False):
    return frame(CONTINUATION, END_HEADERS if end_headers else 0, stream, fragment)


# ---- HPACK by hand (RFC 7541): exact bytes, no dynamic table unless asked ----

def hpack_int(value, prefix_bits, first_byte):
    """`value` in an N-bit prefix integer whose first byte carries `first_byte`'s
    high bits (section 5.1)."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first_byte | value])
    out = bytearray([first_byte | limit])
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def hpack_string(text):
    raw = text.encode() if isinstance(text, str) else text
    return hpack_int(len(raw), 7, 0x00) + raw  # no Huffman


def hpack_literal(name, value, indexed=False):
    """A literal field with a new name: 0x40 adds it to the peer's dynamic
    table (incremental indexing), 0x00 leaves the table alone."""
    return bytes([0x40 if indexed else 0x00]) + hpack_string(name) + hpack_string(value)


def hpack_indexed(index):
    return hpack_int(index, 7, 0x80)


def hpack_table_size_update(size):
    return hpack_int(size, 5, 0x20)


def request_block(path, method="GET", extra=(), scheme="http"):
    """A request's header block in literals without indexing, so it leaves the
    server's dynamic table untouched whatever else the connection sent."""
    fields = [(":method", method), (":scheme", scheme), (":authority", "127.0.0.1"),
              (":path", path)] + list(extra)
    return b"".join(hpack_literal(name, value) for name, value in fields)


class Frame:
    """A frame received from the server; `headers` holds the decoded header
    list on the frame that ended a header block."""

    def __init__(self, kind, flags, stream, payload):
        self.kind, self.flags, self.stream, self.payload = kind, flags, stream, payload
        self.headers = None

    def error_code(self):
        """The error code of a GOAWAY or RST_STREAM."""
        offset = 4 if self.kind == GOAWAY else 0
        return struct.unpack_from("!I", self.payload, offset)[0]

    def settings(self):
        return dict(struct.unpack_from("!HI", self.payload, i)
                    for i in range(0, len(self.payload), 6))

    def __repr__(self):
        name = FRAME_NAMES[self.kind] if self.kind < len(FRAME_NAMES) else "type%d" % self.kind
        text = "%s(stream %d, flags 0x%x, %d bytes" % (name, self.stream, self.flags,
                                                       len(self.payload))
        if self.kind == GOAWAY:
            last = struct.unpack_from("!I", self.payload)[0] & MAX_WINDOW
            text += ", last stream %d, %s, debug %r" % (last, error_name(self.error_code()),
                                                        self.payload[8:100])
        elif self.kind == RST_STREAM:
            text += ", " + error_name(self.error_code())
        elif self.kind == SETTINGS:
            text += ", %s" % self.settings()
        elif self.headers is not None:
            text += ", %s" % self.headers[:6]
        return text + ")"


def summary(frames, limit=12):
    """What the server sent, for failure messages: the count of each frame
    type, then the frames that matter most (GOAWAY, RST_STREAM, the last ones)."""
    counts = {}
    for f in frames:
        name = FRAME_NAMES[f.kind] if f.kind < len(FRAME_NAMES) else str(f.kind)
        counts[name] = counts.get(name, 0) + 1
    notable = [f for f in frames if f.kind in (GOAWAY, RST_STREAM)][:limit]
    return "counts %s; GOAWAY/RST %s; last %s" % (counts, notable, frames[-3:])


# ---- a raw connection --------------------------------------------------------

def tls_context(ca_file, alpn=("h2",)):
    context = ssl.create_default_context(cafile=ca_file)
    context.set_alpn_protocols(list(alpn))
    return context


class Conn:
    """One client connection to the server, speaking HTTP/2 frame by frame.

    Everything the server sends is kept in `frames`; `closed` becomes "eof"
    or "reset" once reading has reached the server's end of the stream, and
    `send_failed` is set when a write found the connection gone (what the
    server sent before is still read). SETTINGS from the server are
    acknowledged as they are read unless `ack_settings` is false (it is
    when the client sends no preface)."""

    def __init__(self, port, tls=None, rcvbuf=None, preface=True, settings=()):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:  # before connect(): the window scale is fixed by the handshake
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.settimeout(WAIT)
        sock.connect(("127.0.0.1", port))
        if tls:
            sock = tls.wrap_socket(sock, server_hostname="localhost")
            check(sock.selected_alpn_protocol() == "h2",
                  "ALPN chose %r, not h2" % sock.selected_alpn_protocol())
        self.sock = sock
        self.port = port
        self.buf = bytearray()
        self.frames = []
        self.closed = None
        self.send_failed = False
        self.ack_settings = preface  # a client without a preface stays silent
        self.decoder = hpack.Decoder()
        self.decoder.max_header_list_size = 1 << 20
        self.block = None  # (first frame, fragments) of a header block in progress
        if preface:
            self.send(PREFACE + settings_frame(settings))

    def close(self):
        self.sock.close()

    def send(self, data):
        """Sends everything; false if the server has gone."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.send_failed = True
            return False

    def request(self, stream, path, method="GET", end_stream=True, extra=()):
        return self.send(headers_frame(stream, request_block(path, method, extra), end_stream))

    def _fill(self, deadline):
        """Reads more bytes into buf; false once the server has closed."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError()
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(1 << 20)
        except ConnectionResetError:
            data, self.closed = b"", "reset"
        except ssl.SSLError as e:  # a TLS peer that vanished without close_notify
            data, self.closed = b"", "tls error: %s" % e
        if not data:
            self.closed = self.closed or "eof"
            return False
        self.buf += data
        return True

    def read_frame(self, timeout=WAIT):
        """The next frame, or None once the server has closed; raises
        TimeoutError when nothing complete arrives within `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            if len(self.buf) >= 9:
                length = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) >= 9 + length:
                    kind, flags, stream = struct.unpack_from("!BBI", self.buf, 3)
                    f = Frame(kind, flags, stream & MAX_WINDOW, bytes(self.buf[9:9 + length]))
                    del self.buf[:9 + length]
                    self._received(f)
                    return f
            if self.closed or not self._fill(deadline):
                return None

    def _received(self, f):
        self.frames.append(f)
        if f.kind == SETTINGS and not f.flags & ACK and self.ack_settings:
            self.send(settings_frame(ack=True))
        if f.kind == HEADERS:
            payload = f.payload
            pad = payload[0] if f.flags & PADDED else 0
            payload = payload[1 if f.flags & PADDED else 0:len(payload) - pad]
            if f.flags & PRIORITY_FLAG:
                payload = payload[5:]
            self.block = (f, [payload])
        elif f.kind == CONTINUATION and self.block:
            self.block[1].append(f.payload)
        if f.kind in (HEADERS, CONTINUATION) and f.flags & END_HEADERS and self.block:
            first, fragments = self.block
            first.headers = self.decoder.decode(b"".join(fragments), raw=False)
            self.block = None

    def read_until(self, predicate, what, timeout=WAIT):
        """Reads frames until one satisfies predicate(frame) and returns it;
        None if the server closes first. Fails the test, naming `what` and
        what the server sent, if `timeout` passes."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                f = self.read_frame(deadline - time.monotonic())
                if f is None or predicate(f):
                    return f
        except TimeoutError:
            fail("%s: nothing expected came within %d s; the server sent %s" % (
                what, timeout, summary(self.frames)))

    def read_to_close(self, timeout=WAIT):
        """Reads until the server closes; true if it did within `timeout`."""
        deadline = time.monotonic() + timeout
        try:
            while self.read_frame(deadline - time.monotonic()) is not None:
                pass
            return True
        except TimeoutError:
            return False

    def read_for(self, seconds):
        """Reads whatever comes for `seconds`; false once the server has closed."""
        deadline = time.monotonic() + seconds
        try:
            while self.read_frame(max(0.001, deadline - time.monotonic())) is not None:
                pass
            return False
        except TimeoutError:
            return True

    def goaway(self):
        """The first GOAWAY received, or None."""
        return next((f for f in self.frames if f.kind == GOAWAY), None)

    def pump(self, data, timeout=WAIT, read=True):
        """Writes `data` (a plain connection only) while reading whatever the
        server sends, when `read`; stops when all is written, the server has
        closed, or `timeout` passes. Returns the number of bytes written."""
        view, sent = memoryview(data), 0
        deadline = time.monotonic() + timeout
        self.sock.setblocking(False)
        try:
            while (sent < len(view) and not self.send_failed and not self.closed
                   and time.monotonic() < deadline):
                readable, writable, _ = select.select([self.sock] if read else [], [self.sock],
                                                      [], max(0.0, deadline - time.monotonic()))
                if readable:
                    self._fill(deadline)
                    self.sock.setblocking(False)  # _fill set a timeout
                if writable:
                    try:
                        sent += self.sock.send(view[sent:sent + 65536])
                    except (BrokenPipeError, ConnectionResetError):
                        self.send_failed = True
                    except BlockingIOError:
                        pass
        finally:
            self.sock.setblocking(True)
        return sent

    def server_closed(self):
        """Whether the server's side of this connection has closed (or shut
        down its writing), seen in /proc/net/tcp without reading: its socket
        has left ESTABLISHED, or is gone."""
        local = "0100007F:%04X" % self.port
        remote = "0100007F:%04X" % self.sock.getsockname()[1]
        with open("/proc/net/tcp") as table:
            for line in table:
                fields = line.split()
                if fields[1] == local and fields[2] == remote:
                    return fields[3] != "01"
        return True

    def response(self, stream):
        """{"status", "headers", "body", "ended", "reset"} of a stream from
        the frames read so far."""
        result = {"status": None, "headers": [], "body": b"", "ended": False, "reset": None}
        for f in self.frames:
            if f.stream != stream:
                continue
            if f.headers is not None:
                result["headers"] += f.headers
                result["status"] = result["status"] or dict(f.headers).get(":status")
            if f.kind == DATA:
                pad = f.payload[0] if f.flags & PADDED else 0
                result["body"] += f.payload[1 if f.flags & PADDED else 0:len(f.payload) - pad]
            if f.kind == RST_STREAM:
                result["reset"] = f.error_code()
            if f.kind in (DATA, HEADERS) and f.flags & END_STREAM:
                result["ended"] = True
        return result


# ---- the server process ------------------------------------------------------

class Server:
    """examples/http:http_server on an ephemeral loopback port."""

    def __init__(self, binary, backend, *args, nofile=None):
        """`nofile`: the server's RLIMIT_NOFILE (soft and hard), if given."""
        self.log = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "http_server.log")
        log = open(self.log, "a")
        self.log_start = log.tell()
        self.argv = [binary, "--address", "127.0.0.1", "--port", "0", "--backend", backend,
                     *args]

        def limit_files():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=log,
                                     preexec_fn=limit_files)
        atexit.register(self.proc.kill)  # a failing check must not leave it running
        # Raw reads: the banner may follow another line (the kernel TLS note),
        # which a buffered readline() would take along unseen by select().
        deadline = time.monotonic() + WAIT
        out = b""
        while not re.search(rb"listening on \S+:(\d+)\n", out):
            ready, _, _ = select.select([self.proc.stdout], [], [],
                                        max(0.0, deadline - time.monotonic()))
            check(ready, "http_server did not start: %s" % " ".join(self.argv))
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            check(chunk, "http_server exited before listening: %s\n%s" % (
                " ".join(self.argv), self.log_output()))
            out += chunk
        self.port = int(re.search(rb"listening on \S+:(\d+)\n", out).group(1))

    def log_output(self):
        """The start of what this server wrote to stderr."""
        with open(self.log, errors="replace") as f:
            f.seek(self.log_start)
            return f.read(1500)

    def rss(self):
        """The server's resident memory in bytes."""
        with open("/proc/%d/status" % self.proc.pid) as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def fds(self):
        """The server's open file descriptors."""
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))

    def signal(self, signum=signal.SIGTERM):
        self.proc.send_signal(signum)

    def wait_exit(self):
        try:
            return self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("http_server did not exit within %d s of SIGTERM" % WAIT)

    def stop(self):
        self.signal()
        code = self.wait_exit()
        check(code == 0, "http_server exited with %d on SIGTERM" % code)


# ---- a conforming client -----------------------------------------------------

def fetch(port, path="/hello", tls=None, method="GET", body=None):
    """One request with python3-h2 on a new connection; returns (status,
    headers, body)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    if tls:
        sock = tls.wrap_socket(sock, server_hostname="localhost")
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    headers = [(":method", method), (":scheme", "https" if tls else "http"),
               (":authority", "127.0.0.1"), (":path", path)]
    conn.send_headers(1, headers, end_stream=body is None)
    if body is not None:
        conn.send_data(1, body, end_stream=True)  # fits the default 64 KiB window
    sock.sendall(conn.data_to_send())
    status, response_headers, received = None, [], bytearray()
    deadline = time.monotonic() + WAIT
    try:
        while time.monotonic() < deadline:
            data = sock.recv(65536)
            check(data, "the server closed before answering %s %s" % (method, path))
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    response_headers = [(k.decode(), v.decode()) for k, v in event.headers]
                    status = dict(response_headers)[":status"]
                elif isinstance(event, h2.events.DataReceived):
                    received += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, 1)
                elif isinstance(event, h2.events.StreamEnded):
                    return status, response_headers, bytes(received)
                elif isinstance(event, h2.events.StreamReset):
                    fail("%s %s was reset: %s" % (method, path, event.error_code))
            sock.sendall(conn.data_to_send())
        fail("no complete answer to %s %s within %d s" % (method, path, WAIT))
    finally:
        sock.close()


def still_serves(server, after, tls=None):
    """A fresh conforming connection gets GET /hello answered."""
    status, _, body = fetch(server.port, tls=tls)
    check(status == "200" and body == b"hello world\n",
          "after %s the server answered /hello with %s %r" % (after, status, body[:80]))
