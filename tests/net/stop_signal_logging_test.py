#!/usr/bin/env python3
"""SIGTERM stops a server that logs asynchronously (--log-dir) cleanly.

For echo_server and pingpong_server, on each backend, with two I/O threads:
start it with --log-dir in a fresh directory, make N connections that each
get one echo back, close half of them, put the other half under load (each
keeps up to 64 KiB of a per-connection byte pattern in flight and checks
every echoed byte), send SIGTERM mid-load, once echoes are flowing, and check
that the server exits with status 0 within a bounded time, that every loaded
connection was closed by the server (EOF or reset) with its echo intact up
to there, and that its log files hold exactly one line per connection for it
going up and one for it going down (echo_server's INFO "connection ... up/down" lines;
pingpong_server logs none per connection, so there the DEBUG lines of each
TcpConnection being created and destroyed are counted). A process killed by
the signal (status 143) loses the lines still buffered, and a connection
leaked at shutdown has no "destroyed" line.

Also: a log directory the server cannot write stops it at start (status 2).

usage: stop_signal_logging_test.py ECHO_SERVER PINGPONG_SERVER
"""

import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

CONNECTIONS = 200
STARTUP_TIMEOUT = 20
EXIT_TIMEOUT = 30  # a sanitizer build tears 200 connections down slowly
LOAD_IN_FLIGHT = 64 * 1024  # bytes sent and not yet echoed, per connection
LOAD_BEFORE_SIGNAL = 4 * 1024 * 1024  # echoed bytes (all connections) before SIGTERM


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def start(argv, env):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)
    # The first stdout line names the port: "... listening on 127.0.0.1:PORT ...".
    import select
    ready, _, _ = select.select([proc.stdout], [], [], STARTUP_TIMEOUT)
    line = proc.stdout.readline() if ready else ""
    match = re.search(r"listening on [0-9.]+:(\d+)", line)
    if not match:
        proc.kill()
        proc.wait()
        fail("%s printed no listening line within %ds: %r %s" %
             (argv[0], STARTUP_TIMEOUT, line, proc.stderr.read()))
    return proc, int(match.group(1))


def connect_and_echo(port, count):
    clients = []
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        message = b"hello %d\n" % i
        s.sendall(message)
        got = b""
        while len(got) < len(message):
            chunk = s.recv(len(message) - len(got))
            if not chunk:
                fail("connection %d closed before its echo" % i)
            got += chunk
        if got != message:
            fail("connection %d: echo %r, sent %r" % (i, got, message))
        clients.append(s)
    return clients


class Load(threading.Thread):
    """Echo traffic on `socks` until the server closes every one of them (or
    a deadline passes): each connection sends its own byte pattern, keeps at
    most LOAD_IN_FLIGHT bytes unanswered, and checks each echoed byte."""

    PATTERN_LEN = 4093  # prime: a shifted copy does not line up by chance

    def __init__(self, socks, deadline_seconds):
        super().__init__(daemon=True)
        self.socks = socks
        self.deadline = time.monotonic() + deadline_seconds
        self.sent = [0] * len(socks)
        self.received = [0] * len(socks)
        self.closed_by_server = [False] * len(socks)
        self.errors = []
        self.flowing = threading.Event()  # LOAD_BEFORE_SIGNAL bytes echoed
        self.streams = []
        for i in range(len(socks)):
            pattern = bytes((i * 31 + k * 7) % 251 for k in range(self.PATTERN_LEN))
            self.streams.append(pattern * (2 * 65536 // self.PATTERN_LEN + 2))

    def total_received(self):
        return sum(self.received)

    def _chunk(self, i, offset, length):
        start = offset % self.PATTERN_LEN
        return self.streams[i][start:start + length]

    def run(self):
        sel = selectors.DefaultSelector()
        for i, s in enumerate(self.socks):
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, i)
        open_count = len(self.socks)
        while open_count and time.monotonic() < self.deadline:
            for key, mask in sel.select(timeout=0.5):
                i, s = key.data, key.fileobj
                closed = False
                if mask & selectors.EVENT_READ:
                    try:
                        data = s.recv(65536)
                        if not data:
                            closed = True
                        elif data != self._chunk(i, self.received[i], len(data)):
                            self.errors.append("connection %d: echo differs at byte %d" %
                                               (i, self.received[i]))
                            closed = True
                        else:
                            self.received[i] += len(data)
                    except BlockingIOError:
                        pass
                    except (ConnectionResetError, BrokenPipeError):
                        closed = True
                if not closed and mask & selectors.EVENT_WRITE:
                    room = LOAD_IN_FLIGHT - (self.sent[i] - self.received[i])
                    if room > 0:
                        try:
                            self.sent[i] += s.send(self._chunk(i, self.sent[i], min(room, 65536)))
                        except BlockingIOError:
                            pass
                        except (ConnectionResetError, BrokenPipeError):
                            closed = True
                if closed:
                    self.closed_by_server[i] = True
                    sel.unregister(s)
                    open_count -= 1
                    continue
                full = self.sent[i] - self.received[i] >= LOAD_IN_FLIGHT
                events = selectors.EVENT_READ | (0 if full else selectors.EVENT_WRITE)
                if events != key.events:
                    sel.modify(s, events, i)
            if self.total_received() >= LOAD_BEFORE_SIGNAL:
                self.flowing.set()
        sel.close()


def log_lines(directory):
    lines = []
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), errors="replace") as f:
            lines.extend(f.read().splitlines())
    return lines


def check(name, argv_for, up_pattern, down_pattern, level, backend):
    logdir = tempfile.mkdtemp(prefix="libnet-sigterm-", dir=os.environ.get("TEST_TMPDIR"))
    env = dict(os.environ, LIBNET_LOG_LEVEL=level)
    env.pop("LIBNET_POLLER", None)
    proc, port = start(argv_for(backend, logdir), env)
    try:
        clients = connect_and_echo(port, CONNECTIONS)
        for s in clients[: CONNECTIONS // 2]:
            s.close()
        load = Load(clients[CONNECTIONS // 2:], STARTUP_TIMEOUT + EXIT_TIMEOUT)
        load.start()
        if not load.flowing.wait(STARTUP_TIMEOUT):
            fail("%s/%s: only %d bytes echoed under load within %ds" %
                 (name, backend, load.total_received(), STARTUP_TIMEOUT))
        echoed_at_signal = load.total_received()
        proc.send_signal(signal.SIGTERM)
        try:
            status = proc.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            fail("%s/%s did not exit within %ds of SIGTERM" % (name, backend, EXIT_TIMEOUT))
        load.join(EXIT_TIMEOUT)
        if load.is_alive():
            fail("%s/%s: a loaded connection stayed open after the server exited" %
                 (name, backend))
        if load.errors:
            fail("%s/%s: %s" % (name, backend, "; ".join(load.errors[:5])))
        if not all(load.closed_by_server):
            fail("%s/%s: %d loaded connections not closed by the server" %
                 (name, backend, load.closed_by_server.count(False)))
        for s in clients[CONNECTIONS // 2:]:
            s.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if status != 0:
        fail("%s/%s exited %d after SIGTERM, want 0; stderr: %s" %
             (name, backend, status, proc.stderr.read()[-2000:]))
    lines = log_lines(logdir)
    ups = sum(1 for line in lines if re.search(up_pattern, line))
    downs = sum(1 for line in lines if re.search(down_pattern, line))
    if ups != CONNECTIONS or downs != CONNECTIONS:
        fail("%s/%s: %d up and %d down lines in %d log lines for %d connections" %
             (name, backend, ups, downs, len(lines), CONNECTIONS))
    print("%s/%s: SIGTERM after %d bytes echoed under load: exit 0, %d up and %d down lines" %
          (name, backend, echoed_at_signal, ups, downs))


def check_unwritable_log_dir(name, argv):
    """A log directory the server cannot create a file in (/proc: no new
    files there, even for root) stops it at start with status 2 and the
    reason, instead of serving with nowhere to log."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=STARTUP_TIMEOUT)
    except subprocess.TimeoutExpired:
        fail("%s kept running with --log-dir /proc" % name)
    if proc.returncode != 2 or "/proc" not in proc.stderr:
        fail("%s with --log-dir /proc: status %d, stderr %r (want 2 and the reason)" %
             (name, proc.returncode, proc.stderr))
    print("%s: --log-dir /proc refused with status 2" % name)


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    echo_server, pingpong_server = sys.argv[1:]
    check_unwritable_log_dir("echo_server", [echo_server, "--address", "127.0.0.1", "--port", "0",
                                             "--log-dir", "/proc"])
    check_unwritable_log_dir("pingpong_server",
                             [pingpong_server, "--log-dir", "/proc", "127.0.0.1", "0", "1"])
    backends = ["epoll", "uring"]
    for backend in backends:
        check("echo_server",
              lambda b, d: [echo_server, "--address", "127.0.0.1", "--port", "0",
                            "--threads", "2", "--backend", b, "--log-dir", d],
              r"INFO .*connection \S+ from \S+ up\b", r"INFO .*connection \S+ from \S+ down\b",
              "INFO", backend)
        check("pingpong_server",
              lambda b, d: [pingpong_server, "--backend", b, "--log-dir", d, "127.0.0.1", "0",
                            "2"],
              r"TcpConnection \S+ fd=\d+ created", r"TcpConnection \S+ fd=-?\d+ destroyed",
              "DEBUG", backend)
    print("PASS")


if __name__ == "__main__":
    main()
