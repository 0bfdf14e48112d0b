"""coro_http_server drains on SIGTERM (TcpServer::drain through the drain token).

argv: SERVER BACKEND THREADS [SERVER FLAG...]. Three connections are open when SIGTERM comes:
a keep-alive one idle for longer than the drain grace (200 ms), which must be
closed at once; a WebSocket on /ws, which must get a close frame with 1001
(going away); and a slow upload (a POST whose headers and half of whose body
have been sent), which must be answered in full with Connection: close once
the rest of the body comes. New connections are refused, the server says it
is draining 3 connections and exits 0 well within --drain-timeout.
Then, on a fresh server: an upload that never completes holds the drain until
a second SIGTERM, which closes it at once (exit 0).
"""

import signal
import socket
import struct
import subprocess
import sys
import time

failures = []
DRAIN_TIMEOUT = 10


def check(what, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else " " + str(detail)))
    if not ok:
        failures.append(what)


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.settimeout(5)
    return sock


def read_head(sock, data=b""):
    """Reads up to the end of a response head; returns (head, what follows it)."""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed inside a response head: %r" % data)
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def read_response(sock):
    """One response with a Content-Length; returns (head, body)."""
    head, body = read_head(sock)
    length = 0
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed inside a body")
        body += chunk
    return head, body


def closed_by_server(sock):
    """Whether the peer closes (end of file, or a reset) within the socket's timeout."""
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def has_header(head, name, value):
    return any(line.lower().replace(" ", "") == "%s:%s" % (name, value)
               for line in head.split("\r\n")[1:])


def open_websocket(port):
    sock = connect(port)
    sock.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                 b"Sec-WebSocket-Version: 13\r\n\r\n")
    head, rest = read_head(sock)
    check("WebSocket upgrade", head.startswith("HTTP/1.1 101"), head)
    return sock, rest


def websocket_close_code(sock, data):
    """Reads the server's close frame; answers it (masked); returns its code."""
    while len(data) < 4:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    if data[0] != 0x88:
        return None
    code = struct.unpack(">H", data[2:4])[0]
    mask = b"\x01\x02\x03\x04"
    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(data[2:4]))
    sock.sendall(bytes([0x88, 0x82]) + mask + payload)
    return code


def refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return False
    except ConnectionRefusedError:
        return True


def drain_with_connections(proc, port, name):
    idle = connect(port)
    idle.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
    head, body = read_response(idle)
    check(name + " keep-alive answer", head.startswith("HTTP/1.1 200") and body == b"hello world\n")
    ws, ws_rest = open_websocket(port)
    # Past the drain grace, so that `idle` is closed at once: a precondition
    # of the case, not synchronisation.
    time.sleep(0.3)
    upload = connect(port)
    # An answer first: the server has taken the connection (it is counted).
    upload.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
    read_response(upload)
    upload.sendall(b"POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    line = proc.stdout.readline()
    check(name + " says it is draining 3 connections",
          line.strip() == "coro_http_server draining 3 connections", line)
    check(name + " idle keep-alive connection closed at once",
          closed_by_server(idle) and time.monotonic() - started < 2)
    code = websocket_close_code(ws, ws_rest)
    check(name + " WebSocket closed with 1001", code == 1001, code)
    check(name + " WebSocket connection closed after the close handshake", closed_by_server(ws))
    check(name + " new connections refused", refused(port))
    upload.sendall(b"67890")
    head, body = read_response(upload)
    check(name + " upload in flight answered with Connection: close",
          head.startswith("HTTP/1.1 200") and has_header(head, "connection", "close")
          and body == b"hello world\n", head)
    check(name + " upload connection closed after its answer", closed_by_server(upload))
    return started


def second_signal(proc, port, name):
    stuck = connect(port)
    stuck.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
    read_response(stuck)  # the server has taken the connection
    stuck.sendall(b"POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
    proc.send_signal(signal.SIGTERM)
    line = proc.stdout.readline()
    check(name + " says it is draining 1 connection",
          line.strip() == "coro_http_server draining 1 connections", line)
    stuck.settimeout(0.5)
    check(name + " an upload in flight holds the drain", not closed_by_server(stuck))
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    stuck.settimeout(5)
    check(name + " second SIGTERM closes it", closed_by_server(stuck))
    return started


def run_server(argv, name, scenario):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError("server did not start: %r" % line)
        started = scenario(proc, int(line.rsplit(":", 1)[1]), name)
        code = proc.wait(timeout=DRAIN_TIMEOUT + 5)
        elapsed = time.monotonic() - started
        check(name + " exits 0 well within the drain deadline",
              code == 0 and elapsed < DRAIN_TIMEOUT / 2, "exit %s after %.1f s" % (code, elapsed))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main():
    server, backend, threads, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    name = "coro_http_server (%s, %s threads%s)" % (backend, threads, "".join(" " + f for f in flags))
    argv = [server, "--backend", backend, "--threads", threads, "--port", "0", "--address",
            "127.0.0.1", "--drain-timeout", str(DRAIN_TIMEOUT)] + flags
    run_server(argv, name, drain_with_connections)
    run_server(argv, name + " twice", second_signal)
    if failures:
        print("FAILED: %s" % ", ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
