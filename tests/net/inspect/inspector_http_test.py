#!/usr/bin/env python3
"""http_server --inspect-path: the inspector over HTTP/1.1, end to end.

On each backend, with two I/O threads: three keep-alive clients that each
made one request are listed by /debug/connections with their peers and
byte counts (and the asking connection too); /debug/loops lists two loops
whose connections add up; a profile taken under load for a second is read
by google-pprof (exit 0, the loop threads' functions listed); a second
profile while one runs is refused with 409 and the reason (and so is
SIGUSR1's, with a WARN line), the first still answered; a bad length is
400, POST 405; /debug/loops answers over HTTP/2 too (--h2c). Without --inspect-path the paths are the handler's (404).
Bad flags exit 2 with the reason.

usage: inspector_http_test.py HTTP_SERVER
"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_signal_test import Server, fail  # noqa: E402

REQUEST = b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"


def read_answer(sock):
    """One HTTP/1.1 answer with Content-Length: (status, head+body bytes, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            fail("connection closed before an answer's head")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    match = re.search(rb"content-length: *(\d+)", head, re.I)
    length = int(match.group(1)) if match else 0
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            fail("connection closed inside an answer's body")
        body += chunk
    status = int(head.split(b" ", 2)[1])
    return status, len(head) + 4 + length, body[:length]


def get(port, target, method="GET", timeout=30):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"%s %s HTTP/1.1\r\nHost: x\r\n\r\n" % (method.encode(), target.encode()))
        status, _, body = read_answer(s)
        return status, body


def check_listings(server):
    clients = []
    for _ in range(3):
        c = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        c.sendall(REQUEST)
        status, size, _ = read_answer(c)
        if status != 200:
            fail("/hello answered %d" % status)
        clients.append((c, size))
    # Both listings on one keep-alive connection: 4 connections in each.
    asker = socket.create_connection(("127.0.0.1", server.port), timeout=30)

    def ask(target):
        asker.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % target.encode())
        status, _, body = read_answer(asker)
        return status, body

    status, body = ask("/debug/connections")
    text = body.decode()
    if status != 200 or not text.startswith("4 connections, 4 listed (at most 10000 are)\n"):
        fail("/debug/connections: %d\n%s" % (status, text))
    rows = {}
    for line in text.splitlines()[2:]:
        fields = line.split()
        rows[fields[0]] = fields
    for c, size in clients:
        peer = "%s:%d" % c.getsockname()
        row = rows.get(peer)
        if row is None:
            fail("%s not listed:\n%s" % (peer, text))
        if row[2] != str(len(REQUEST)) or row[3] != str(size) or row[4] != "0":
            fail("%s: want bytes in %d, out %d, queued 0: %s" % (peer, len(REQUEST), size, row))
        if row[5] not in ("http/0", "http/1"):
            fail("%s: loop %s" % (peer, row[5]))
    status, body = ask("/debug/loops")
    text = body.decode()
    counts = [int(n) for n in re.findall(r"^http loop [01]: thread \d+, backend \w+, "
                                         r"connections (\d+),", text, re.M)]
    if status != 200 or not text.startswith("2 loops\n") or len(counts) != 2 or sum(counts) != 4:
        fail("/debug/loops: %d\n%s" % (status, text))
    for c, _ in clients:
        c.close()
    asker.close()


class Load(threading.Thread):
    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.running = True

    def run(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as c:
            # One at a time: read_answer() keeps no bytes past the answer.
            while self.running:
                c.sendall(REQUEST)
                read_answer(c)


def check_profile(server, binary, directory):
    load = Load(server.port)
    load.start()
    status, body = get(server.port, "/debug/pprof/profile?seconds=1")
    load.running = False
    load.join(timeout=30)
    if status != 200 or not body:
        fail("profile: %d, %d bytes" % (status, len(body)))
    path = os.path.join(directory, "cpu.prof")
    with open(path, "wb") as f:
        f.write(body)
    pprof = subprocess.run(["google-pprof", "--text", binary, path], capture_output=True,
                           text=True, timeout=120)
    if pprof.returncode != 0 or "libnet::EventLoop::loop" not in pprof.stdout:
        fail("google-pprof exited %d:\n%s\n%s" % (pprof.returncode, pprof.stdout[:4000],
                                                   pprof.stderr))
    leftovers = os.listdir(os.path.join(directory, "tmp"))
    if leftovers:
        fail("the inspector left %s behind" % leftovers)


def check_one_at_a_time(server):
    first = {}

    def take():
        first["answer"] = get(server.port, "/debug/pprof/profile?seconds=3")

    t = threading.Thread(target=take)
    t.start()
    server.wait_for(r"inspector: CPU profile for 3 s to ")
    status, body = get(server.port, "/debug/pprof/profile?seconds=1")
    if status != 409 or b"already being taken" not in body:
        fail("a second profile: %d %r" % (status, body))
    server.proc.send_signal(signal.SIGUSR1)
    server.wait_for(r"SIGUSR1: no CPU profile: a CPU profile is already being taken")
    t.join(timeout=60)
    if first.get("answer", (0,))[0] != 200:
        fail("the first profile: %r" % (first.get("answer"),))
    for target, method, want in (("/debug/pprof/profile?seconds=0", "GET", 400),
                                 ("/debug/pprof/profile?seconds=301", "GET", 400),
                                 ("/debug/loops", "POST", 405),
                                 ("/debug/nothing", "GET", 404)):
        status, body = get(server.port, target, method)
        if status != want:
            fail("%s %s: %d, want %d: %r" % (method, target, status, want, body))


def check_http2(server):
    """The same paths over HTTP/2 (prior knowledge), through the same handler."""
    curl = subprocess.run(["curl", "-s", "--max-time", "30", "--http2-prior-knowledge",
                           "-w", "\n%{http_version} %{http_code}",
                           "http://127.0.0.1:%d/debug/loops" % server.port],
                          capture_output=True, text=True, timeout=60)
    if not curl.stdout.startswith("2 loops\n") or not curl.stdout.endswith("\n2 200"):
        fail("/debug/loops over HTTP/2: %r %r" % (curl.stdout, curl.stderr))


def check_flags(binary):
    for argv, reason in ((["--inspect-path", "debug"], "--inspect-path"),
                         (["--inspect-path", "/debug/"], "--inspect-path"),
                         (["--inspect-allow-remote"], "needs --inspect-path")):
        proc = subprocess.run([binary, "--port", "0"] + argv, capture_output=True, text=True,
                              timeout=30)
        if proc.returncode != 2 or reason not in proc.stderr:
            fail("%s: exit %d, stderr %r" % (argv, proc.returncode, proc.stderr))


def main():
    if len(sys.argv) != 2:
        fail(__doc__)
    binary = sys.argv[1]
    check_flags(binary)
    for backend in ("epoll", "uring"):
        with tempfile.TemporaryDirectory() as directory:
            base = [binary, "--address", "127.0.0.1", "--port", "0", "--threads", "2",
                    "--backend", backend, "--profile-dir", directory]
            # The server's own TMPDIR, where the profiles' directories are made.
            os.mkdir(os.path.join(directory, "tmp"))
            env = dict(os.environ, TMPDIR=os.path.join(directory, "tmp"))
            server = Server(base + ["--inspect-path", "/debug", "--h2c"], env)
            check_listings(server)
            check_http2(server)
            check_profile(server, binary, directory)
            check_one_at_a_time(server)
            server.stop()
            plain = Server(base)
            status, _ = get(plain.port, "/debug/loops")
            if status != 404:
                fail("without --inspect-path /debug/loops answered %d" % status)
            plain.stop()
        print("ok: --backend %s" % backend)


if __name__ == "__main__":
    main()
