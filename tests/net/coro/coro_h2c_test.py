#!/usr/bin/python3
"""coro_http_server --h2c, end to end, on each backend.

Real clients: curl --http2-prior-knowledge (GET /hello and a 5 MiB file
byte-exact, 404, HEAD), nghttp (a file, and five on one connection),
h2load -n 2000 -c 4 -m 50 (every request answered 2xx), and HTTP/1.1 on the
same port (curl --http1.1 and a raw request).

A broken preface is answered GOAWAY PROTOCOL_ERROR, and an HTTP/1.1 request
line trickled past --header-timeout 408. Raw frames for the deadlines of
http2::serveConnection: a partial preface,
and a preface without the client's SETTINGS, are closed after
--header-timeout (the second with GOAWAY NO_ERROR); a client that sets
SETTINGS_INITIAL_WINDOW_SIZE 0 and keeps sending PINGs (which keep the
TcpServer's idle timeout away: only the stall deadline can close it) is
closed once no response byte has moved for --idle-timeout, and so is one
that opens its window but never reads (the connection stops reading past
its output limit, so the TcpServer's idle timeout may be the one that
fires: this checks the outcome). SIGTERM with an answer in flight: GOAWAY,
the answer completes, exit 0.

usage: coro_h2c_test.py CORO_HTTP_SERVER
Needs curl with HTTP/2, and nghttp and h2load (Debian: nghttp2-client).
"""

import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HEADER_TIMEOUT = 1
IDLE_TIMEOUT = 2
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0x4, 0x6, 0x7, 0x8
BIG = 5 * 1024 * 1024

failures = []


def check(what, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else " " + str(detail)))
    if not ok:
        failures.append(what)


def start(server, backend, root, threads, header_timeout=HEADER_TIMEOUT):
    argv = [server, "--h2c", "--backend", backend, "--threads", str(threads),
            "--port", "0", "--address", "127.0.0.1",
            "--root", root, "--header-timeout", str(header_timeout),
            "--idle-timeout", str(IDLE_TIMEOUT)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # "... listening on IP:PORT" (bounded by the test timeout)
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError("%s did not start: %s %s" % (server, line, proc.stderr.read()))
    return proc, int(line.rsplit(":", 1)[1])


def stop(proc, name):
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = None
    check("%s exits 0 on SIGTERM" % name, code == 0, "exit %s" % code)


def run(argv):
    return subprocess.run(argv, capture_output=True, timeout=60)


def curl(port, path, *extra):
    """(HTTP version, status, body) of one curl request."""
    out = tempfile.NamedTemporaryFile(dir=os.environ.get("TEST_TMPDIR"), delete=False).name
    result = run(["curl", "-s", "-o", out, "-w", "%{http_version} %{http_code}", *extra,
                  "http://127.0.0.1:%d%s" % (port, path)])
    with open(out, "rb") as f:
        body = f.read()
    os.unlink(out)
    version, _, status = result.stdout.decode().partition(" ")
    return version, status, body


def test_clients(port, name, root):
    with open(os.path.join(root, "big.bin"), "rb") as f:
        big = f.read()
    h2 = "--http2-prior-knowledge"
    check(name + " curl h2 GET /hello", curl(port, "/hello", h2) == ("2", "200", b"hello world\n"))
    check(name + " curl h2 5 MiB file byte-exact", curl(port, "/big.bin", h2) == ("2", "200", big))
    check(name + " curl h2 404", curl(port, "/missing", h2)[:2] == ("2", "404"))
    head = run(["curl", "-s", "-I", h2, "http://127.0.0.1:%d/big.bin" % port]).stdout.lower()
    check(name + " curl h2 HEAD: the length, no body",
          head.startswith(b"http/2 200") and b"content-length: %d\r\n" % BIG in head
          and head.endswith(b"\r\n\r\n"), head[:200])
    check(name + " HTTP/1.1 on the same port (curl)",
          curl(port, "/hello", "--http1.1") == ("1.1", "200", b"hello world\n"))
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    answer = recv_until_close(sock, time.monotonic() + 10)[0]
    check(name + " HTTP/1.1 on the same port (raw)",
          answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"\r\n\r\nhello world\n"))
    url = "http://127.0.0.1:%d" % port
    result = run(["nghttp", url + "/small.txt"])
    check(name + " nghttp GET a file", result.returncode == 0 and result.stdout == b"small\n",
          result.stderr[-300:])
    result = run(["nghttp", "-n", "-s", url + "/big.bin", url + "/hello", url + "/small.txt",
                  url + "/missing", url + "/tiny.txt"])
    codes = [line.split()[4] for line in result.stdout.decode().splitlines()
             if line.strip()[:1].isdigit()]
    check(name + " nghttp five streams on one connection",
          result.returncode == 0 and sorted(codes) == ["200"] * 4 + ["404"], result.stdout[-600:])
    result = run(["h2load", "-n", "2000", "-c", "4", "-m", "50", url + "/hello"])
    out = result.stdout.decode()
    check(name + " h2load -n 2000 -c 4 -m 50: all succeeded",
          result.returncode == 0 and "2000 succeeded, 0 failed, 0 errored" in out
          and "status codes: 2000 2xx" in out, out[-600:])


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) \
        + payload


def request(stream, path):
    """HEADERS (END_STREAM, END_HEADERS) for GET `path`: :method GET and
    :scheme http from the static table, :authority and :path as literals."""
    block = b"\x82\x86" + b"\x01\x01t" + bytes([0x04, len(path)]) + path.encode()
    return frame(0x1, 0x5, stream, block)


def frames(data):
    """The complete frames at the start of `data`, as (type, flags, payload)."""
    found = []
    while len(data) >= 9:
        length = int.from_bytes(data[:3], "big")
        if len(data) < 9 + length:
            break
        found.append((data[3], data[4], data[9:9 + length]))
        data = data[9 + length:]
    return found


def recv_until_close(sock, deadline, every=None, read=True):
    """Reads (if `read`) until the peer closes or `deadline`; sends `every`
    (bytes) each half second meanwhile. Returns what arrived and whether the
    connection ended."""
    data = b""
    next_send = time.monotonic()
    while time.monotonic() < deadline:
        if every is not None and time.monotonic() >= next_send:
            try:
                sock.sendall(every)
            except OSError:
                return data, True
            next_send += 0.5
        wait = max(0.0, min(deadline, next_send if every is not None else deadline)
                   - time.monotonic())
        if not read:
            time.sleep(wait)  # the client under test does not read: it only sends
            continue
        if not select.select([sock], [], [], wait)[0]:
            continue
        try:
            chunk = sock.recv(65536)
        except OSError:  # reset
            return data, True
        if not chunk:
            return data, True
        data += chunk
    return data, False


def goaway_code(data):
    codes = [struct.unpack(">II", p[:8])[1] for t, _, p in frames(data) if t == GOAWAY]
    return codes[0] if codes else None


def test_header_deadlines(port, name):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(PREFACE[:16])
    started = time.monotonic()
    data, closed = recv_until_close(sock, started + HEADER_TIMEOUT + 5)
    elapsed = time.monotonic() - started
    check(name + " closes a partial preface after the header timeout",
          closed and data == b"" and HEADER_TIMEOUT - 0.3 < elapsed, "%.2f s %r" % (elapsed, data))
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(PREFACE)
    started = time.monotonic()
    data, closed = recv_until_close(sock, started + HEADER_TIMEOUT + 5)
    elapsed = time.monotonic() - started
    check(name + " GOAWAY (NO_ERROR) and close for a preface without SETTINGS",
          closed and goaway_code(data) == 0 and HEADER_TIMEOUT - 0.3 < elapsed,
          "%.2f s %r" % (elapsed, data[:100]))


def test_first_bytes(port, name):
    """Not the preface: a broken one is HTTP/2's to refuse, an HTTP/1.1
    request line trickled past the header timeout is HTTP/1.1's 408."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"INVALID CONNECTION PREFACE\r\n\r\n")
    data, closed = recv_until_close(sock, time.monotonic() + 5)
    check(name + " GOAWAY (PROTOCOL_ERROR) and close for a broken preface",
          closed and goaway_code(data) == 1, data[:100])
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET /hel")
    started = time.monotonic()
    data, closed = recv_until_close(sock, started + HEADER_TIMEOUT + 5)
    elapsed = time.monotonic() - started
    # One deadline from the first byte, not a second one from the hand-over
    # to HTTP/1.1.
    check(name + " 408 for an HTTP/1.1 request line not complete in the header timeout",
          closed and data.startswith(b"HTTP/1.1 408")
          and HEADER_TIMEOUT - 0.3 < elapsed < 2 * HEADER_TIMEOUT - 0.3,
          "%.2f s %r" % (elapsed, data[:40]))


def test_stalls(port, name):
    ping = frame(PING, 0, 0, b"12345678")
    # Window 0: the answer's HEADERS go out, its DATA never can.
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 0x4, 0)) + request(1, "/big.bin"))
    started = time.monotonic()
    data, closed = recv_until_close(sock, started + IDLE_TIMEOUT + 6, every=ping)
    elapsed = time.monotonic() - started
    check(name + " closes a zero-window client after the idle timeout, PINGs or not",
          closed and goaway_code(data) == 0 and IDLE_TIMEOUT - 0.3 < elapsed
          and any(t == PING and f == 1 for t, f, _ in frames(data)), "%.2f s" % elapsed)
    # Windows wide open, a small receive buffer, and no reads: the server's
    # writes stop, 20 x 5 MiB cannot have moved.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    window = 2 ** 31 - 1
    sock.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 0x4, window))
                 + frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", window - 65535))
                 + b"".join(request(2 * i + 1, "/big.bin") for i in range(20)))
    started = time.monotonic()
    recv_until_close(sock, started + IDLE_TIMEOUT + 3, every=ping, read=False)
    data, closed = recv_until_close(sock, time.monotonic() + 10)
    check(name + " closes a client that does not read after the idle timeout",
          closed and len(data) < 20 * BIG // 2, "%d bytes, closed %s" % (len(data), closed))


def test_graceful_stop(server, backend, root):
    """SIGTERM with a 5 MiB answer in flight (held by the client's windows):
    GOAWAY (NO_ERROR, last stream 1), the answer completes, the connection
    closes and the server exits 0."""
    name = "coro_http_server --h2c (%s)" % backend
    proc, port = start(server, backend, root, 0, header_timeout=10)
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(PREFACE + frame(SETTINGS, 0, 0) + request(1, "/big.bin"))
    data, body, goaway, signalled, ended = b"", 0, None, False, False
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not ended:
        if not select.select([sock], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        try:
            chunk = sock.recv(65536)
        except OSError:  # reset
            break
        if not chunk:
            break
        data += chunk
        found = frames(data)
        data = data[sum(9 + len(p) for _, _, p in found):]
        for kind, flags, payload in found:
            if kind == GOAWAY:
                goaway = struct.unpack(">II", payload[:8])
            if kind == 0x0 and payload:  # DATA: the windows reopen by what it took
                body += len(payload)
                grant = struct.pack(">I", len(payload))
                try:
                    sock.sendall(frame(WINDOW_UPDATE, 0, 1, grant)
                                 + frame(WINDOW_UPDATE, 0, 0, grant))
                except OSError:  # reset: the loop's next read says so
                    pass
                if not signalled:  # the answer is in flight
                    proc.send_signal(signal.SIGTERM)
                    signalled = True
            ended = kind == 0x0 and flags & 0x1
    closed = recv_until_close(sock, time.monotonic() + 10)[1]
    sock.close()  # as a client does at the end of input: the server waits for it
    try:
        code = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = None
    check(name + " SIGTERM: GOAWAY (NO_ERROR, last stream 1), the answer in flight completes, "
          "close, exit 0", goaway == (1, 0) and body == BIG and ended and closed and code == 0,
          "goaway %s, %d bytes, ended %s, closed %s, exit %s" % (goaway, body, ended, closed, code))


def main():
    for tool in ("curl", "nghttp", "h2load"):
        if shutil.which(tool) is None:
            print("FAIL: %s is missing (Debian: curl, nghttp2-client)" % tool)
            return 1
    server = sys.argv[1]
    root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.write(os.urandom(BIG))
    with open(os.path.join(root, "small.txt"), "wb") as f:
        f.write(b"small\n")
    with open(os.path.join(root, "tiny.txt"), "wb") as f:
        f.write(b"t")
    # Everything on the main loop, and on two loop threads.
    for backend, threads in (("epoll", 0), ("uring", 2)):
        name = "coro_http_server --h2c (%s, %d threads)" % (backend, threads)
        proc, port = start(server, backend, root, threads)
        try:
            test_clients(port, name, root)
            test_header_deadlines(port, name)
            test_first_bytes(port, name)
            test_stalls(port, name)
        finally:
            stop(proc, name)
        test_graceful_stop(server, backend, root)
    print("coro h2c: %d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
