#!/usr/bin/env python3
"""examples/echo's echo_server holds back a client that sends without reading.

On each backend: start echo_server (default --max-queued-output, 1 MiB), push
a byte stream at it from a client that never reads, until the client cannot
send for a second or 400 MB are out, and check that the server's resident
memory grew by less than BOUND while the client was stuck; then read the whole
echo back and check every byte (nothing was dropped while reading was paused)
and that the server still echoes.

The control, on epoll: with --max-queued-output 0 the same client pushes
CONTROL_BYTES without being stopped and the server's memory grows by more than
half of that, so the bound above is the back-pressure's doing.

usage: echo_backpressure_test.py ECHO_SERVER
"""

import os
import select
import socket
import subprocess
import sys
import time

FLOOD_LIMIT = 400 * 1024 * 1024  # what the attack sent
BOUND = 64 * 1024 * 1024  # RSS growth allowed while stuck (1 MiB queue, rings, buffers)
CONTROL_BYTES = 128 * 1024 * 1024
STALL_SECONDS = 1.0  # no byte could go for this long: the client is held back
# Without a limit the server never holds the client back, but a slow build of
# it (a sanitizer) can take a while to read: the control waits that long.
CONTROL_STALL_SECONDS = 15.0
STARTUP_TIMEOUT = 20
CHUNK = 64 * 1024
# The servers' log lines, kept for a failure's post-mortem.
LOG = open(os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "echo_server.log"), "a")


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


# Byte i of the test stream is i % 251 (no power-of-two period): any slice of
# up to CHUNK bytes starts somewhere in this block.
PATTERN = bytes(i % 251 for i in range(CHUNK + 251))


def chunk_at(offset, length):
    assert length <= CHUNK
    start = offset % 251
    return PATTERN[start:start + length]


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    fail("no VmRSS for pid %d" % pid)


class Server:
    def __init__(self, binary, backend, extra):
        self.proc = subprocess.Popen(
            [binary, "--address", "127.0.0.1", "--port", "0", "--backend", backend] + extra,
            stdout=subprocess.PIPE, stderr=LOG, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], STARTUP_TIMEOUT)
        if not ready:
            self.stop()
            fail("%s: echo_server printed nothing within %ds" % (backend, STARTUP_TIMEOUT))
        line = self.proc.stdout.readline().strip()
        if "listening on" not in line:
            self.stop()
            fail("%s: unexpected first line %r" % (backend, line))
        self.port = int(line.rsplit(":", 1)[1])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode


def connect(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


def flood(sock, limit, stall=STALL_SECONDS):
    """Sends the stream without reading; returns (bytes sent, held back): held
    back when no byte could go for `stall` seconds."""
    sent = 0
    while sent < limit:
        try:
            n = sock.send(chunk_at(sent, min(CHUNK, limit - sent)))
            sent += n
            continue
        except BlockingIOError:
            pass
        _, writable, _ = select.select([], [sock], [], stall)
        if not writable:
            return sent, True
    return sent, False


def read_back(sock, total, what):
    sock.setblocking(True)
    sock.settimeout(10)
    got = 0
    while got < total:
        data = sock.recv(min(CHUNK, total - got))
        if not data:
            fail("%s: the server closed after echoing %d of %d bytes" % (what, got, total))
        if data != chunk_at(got, len(data)):
            fail("%s: the echo differs within bytes %d..%d" % (what, got, got + len(data)))
        got += len(data)


def check_backend(binary, backend):
    server = Server(binary, backend, [])
    try:
        warm = connect(server.port)
        warm.setblocking(True)
        warm.sendall(b"warm up")
        if warm.recv(7) != b"warm up":
            fail("%s: no echo" % backend)
        warm.close()
        before = rss_bytes(server.proc.pid)
        sock = connect(server.port)
        sent, held = flood(sock, FLOOD_LIMIT)
        grown = rss_bytes(server.proc.pid) - before
        if not held:
            fail("%s: the client sent all %d bytes without being held back" % (backend, sent))
        if grown > BOUND:
            fail("%s: the server grew by %d bytes (bound %d) after %d bytes sent"
                 % (backend, grown, BOUND, sent))
        read_back(sock, sent, backend)
        sock.setblocking(True)
        sock.sendall(b"still there")
        reply = b""
        while len(reply) < 11:
            data = sock.recv(11 - len(reply))
            if not data:
                break
            reply += data
        if reply != b"still there":
            fail("%s: no echo after the flood (%r)" % (backend, reply))
        sock.close()
        print("ok: %s: held back after %.1f MB, server grew %.1f MB, every byte echoed"
              % (backend, sent / 1e6, grown / 1e6))
    finally:
        status = server.stop()
    if status != 0:
        fail("%s: echo_server exited %s after SIGTERM" % (backend, status))


def check_control(binary):
    server = Server(binary, "epoll", ["--max-queued-output", "0"])
    try:
        before = rss_bytes(server.proc.pid)
        sock = connect(server.port)
        sent, held = flood(sock, CONTROL_BYTES, CONTROL_STALL_SECONDS)
        grown = rss_bytes(server.proc.pid) - before
        if held or sent != CONTROL_BYTES:
            fail("control: held back after %d bytes without a limit" % sent)
        # The server may still be reading the tail out of its socket.
        deadline = time.monotonic() + 10
        while grown <= CONTROL_BYTES // 2 and time.monotonic() < deadline:
            time.sleep(0.05)
            grown = rss_bytes(server.proc.pid) - before
        if grown <= CONTROL_BYTES // 2:
            fail("control: the server grew by only %d bytes without a limit" % grown)
        sock.close()
        print("ok: control: without a limit the server grew %.1f MB" % (grown / 1e6))
    finally:
        server.stop()


def main():
    if len(sys.argv) != 2:
        fail("usage: echo_backpressure_test.py ECHO_SERVER")
    binary = sys.argv[1]
    check_control(binary)
    # Without io_uring the uring run falls back to epoll, and still must pass.
    for backend in ("epoll", "uring"):
        check_backend(binary, backend)


if __name__ == "__main__":
    main()
