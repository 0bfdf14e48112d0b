#!/usr/bin/env python3
"""SIGUSR1 starts and stops a CPU profile that google-pprof reads.

For http_server and coro_http_server, on each backend, with two I/O threads:
start it with --profile-dir in a fresh directory, send SIGUSR1, put it under
keep-alive GET /hello load for about a second, send SIGUSR1 again, and check
the INFO lines (started, then written, both with the file's path), that the
file is DIR/PROGRAM-PID-1.prof, and that `google-pprof --text BINARY FILE`
exits 0 and lists the loop threads' libnet functions. Then a second
SIGUSR1 pair makes PROGRAM-PID-2.prof, and SIGTERM still stops the server
(exit 0). Also: a --profile-dir that is not a directory exits 2 with the
reason.

usage: profile_signal_test.py HTTP_SERVER CORO_HTTP_SERVER
"""

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

STARTUP_TIMEOUT = 20
LINE_TIMEOUT = 20
EXIT_TIMEOUT = 30
LOAD_SECONDS = 1.0


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


class Server:
    """A server process whose stdout and stderr lines are read by threads."""

    def __init__(self, argv, env=None):
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.lines = queue.Queue()
        self.seen = []
        for stream in (self.proc.stdout, self.proc.stderr):
            threading.Thread(target=self._read, args=(stream,), daemon=True).start()
        match = self.wait_for(r"listening on [0-9.]+:(\d+)", STARTUP_TIMEOUT)
        self.port = int(match.group(1))

    def _read(self, stream):
        for line in stream:
            self.lines.put(line)

    def wait_for(self, pattern, timeout=LINE_TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.proc.kill()
                fail("%s: no line matching %r within %ds; saw:\n%s" %
                     (self.argv[0], pattern, timeout, "".join(self.seen)))
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("%s did not exit within %ds of SIGTERM" % (self.argv[0], EXIT_TIMEOUT))
        if status != 0:
            fail("%s exited %d after SIGTERM" % (self.argv[0], status))


def load(port, seconds):
    """Keep-alive GET /hello on two connections for `seconds`."""
    request = b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
    conns = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2)]
    deadline = time.monotonic() + seconds
    answers = 0
    while time.monotonic() < deadline:
        for c in conns:
            c.sendall(request * 8)
            got = b""
            while got.count(b"hello world\n") < 8:
                chunk = c.recv(65536)
                if not chunk:
                    fail("the server closed a keep-alive connection under load")
                got += chunk
            answers += 8
    for c in conns:
        c.close()
    return answers


def profile_once(server, binary, directory, n):
    name = os.path.basename(binary)
    expected = os.path.join(directory, "%s-%d-%d.prof" % (name, server.proc.pid, n))
    server.proc.send_signal(signal.SIGUSR1)
    started = server.wait_for(r"SIGUSR1: CPU profile started, to (\S+)").group(1)
    if os.path.realpath(started) != os.path.realpath(expected):
        fail("%s: profile %d went to %s, expected %s" % (name, n, started, expected))
    if load(server.port, LOAD_SECONDS) == 0:
        fail("%s answered nothing under load" % name)
    server.proc.send_signal(signal.SIGUSR1)
    written = server.wait_for(r"SIGUSR1: CPU profile written to (\S+)").group(1)
    if written != started:
        fail("%s: started %s but wrote %s" % (name, started, written))
    if not os.path.isfile(expected) or os.path.getsize(expected) == 0:
        fail("%s: no profile at %s" % (name, expected))
    pprof = subprocess.run(["google-pprof", "--text", binary, expected], capture_output=True,
                           text=True, timeout=120)
    if pprof.returncode != 0:
        fail("google-pprof exited %d on %s: %s" % (pprof.returncode, expected, pprof.stderr))
    if "Total: " not in pprof.stdout or "libnet::EventLoop::loop" not in pprof.stdout:
        fail("%s: the profile lists no loop thread's libnet function:\n%s" %
             (name, pprof.stdout[:4000]))


def check(binary, backend):
    with tempfile.TemporaryDirectory() as directory:
        server = Server([binary, "--address", "127.0.0.1", "--port", "0", "--threads", "2",
                         "--backend", backend, "--profile-dir", directory])
        profile_once(server, binary, directory, 1)
        profile_once(server, binary, directory, 2)
        server.stop()
    print("ok: %s --backend %s" % (os.path.basename(binary), backend))


def check_bad_directory(binary):
    proc = subprocess.run([binary, "--port", "0", "--profile-dir", "/nonexistent/dir"],
                          capture_output=True, text=True, timeout=30)
    if proc.returncode != 2 or "--profile-dir" not in proc.stderr:
        fail("%s --profile-dir /nonexistent/dir: exit %d, stderr %r" %
             (binary, proc.returncode, proc.stderr))


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    for binary in sys.argv[1:]:
        check_bad_directory(binary)
        for backend in ("epoll", "uring"):
            check(binary, backend)


if __name__ == "__main__":
    main()
