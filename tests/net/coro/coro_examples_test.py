#!/usr/bin/env python3
"""The coroutine examples, end to end, on each backend (a real client each).

coro_echo_server: byte-exact echo (examples/echo/echo_client checks it), the
idle kick (a silent client is told "idle timeout" and disconnected), and a
clean exit on SIGTERM.

coro_http_server: GET /hello, a static file larger than a socket buffer
(byte-exact), 404 and 403, two pipelined requests answered in order, 400 for
a malformed request, 408 for headers trickled past --header-timeout, all of
10,000 pipelined requests answered (sent in one write), a bounded number of
fds held for 10,000 pipelined file requests, and a clean exit on SIGTERM.

usage: coro_examples_test.py ECHO_SERVER ECHO_CLIENT HTTP_SERVER
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

failures = []


def check(what, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else " " + detail))
    if not ok:
        failures.append(what)


def start(argv):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # "... listening on IP:PORT" (bounded by the test timeout)
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError("%s did not start: %s %s" % (argv[0], line, proc.stderr.read()))
    return proc, int(line.rsplit(":", 1)[1])


def stop(proc, name):
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = None
    check("%s exits 0 on SIGTERM" % name, code == 0, "exit %s" % code)


def recv_all(sock):
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.settimeout(10)
    return sock


def test_echo(server, client, backend):
    proc, port = start([server, "--backend", backend, "--port", "0", "--address", "127.0.0.1",
                        "--idle-timeout", "1"])
    name = "coro_echo_server (%s)" % backend
    try:
        result = subprocess.run([client, "--port", str(port), "--connections", "5", "--count", "50",
                                 "--message", "x" * 5000], capture_output=True, text=True,
                                timeout=60)
        check(name + " echoes byte-exact", result.returncode == 0, result.stderr[-300:])
        sock = connect(port)
        check(name + " kicks an idle client", recv_all(sock) == b"idle timeout\n")
    finally:
        stop(proc, name)


def http_get(port, path):
    sock = connect(port)
    sock.sendall(b"GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" % path.encode())
    response = recv_all(sock)
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def test_http(server, backend, root):
    proc, port = start([server, "--backend", backend, "--port", "0", "--address", "127.0.0.1",
                        "--root", root, "--header-timeout", "1"])
    name = "coro_http_server (%s)" % backend
    try:
        check(name + " GET /hello", http_get(port, "/hello") == (200, b"hello world\n"))
        with open(os.path.join(root, "big.bin"), "rb") as f:
            big = f.read()
        check(name + " sends a large file byte-exact", http_get(port, "/big.bin") == (200, big))
        check(name + " 404", http_get(port, "/missing")[0] == 404)
        check(name + " 403 outside the root", http_get(port, "/../etc/passwd")[0] == 403)
        sock = connect(port)
        sock.sendall(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
                     b"GET /small.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        both = recv_all(sock)
        check(name + " answers pipelined requests in order",
              both.count(b"200 OK") == 2 and both.index(b"hello world") < both.index(b"small"))
        sock = connect(port)
        sock.sendall(b"NOT HTTP\r\n\r\n")
        check(name + " 400 for a malformed request",
              recv_all(sock).startswith(b"HTTP/1.1 400"))
        sock = connect(port)
        sock.sendall(b"GET /hello HTTP/1.1\r\nHost: t\r\n")
        started = time.monotonic()
        answer = b""
        try:
            for _ in range(40):  # trickles a header every 0.1 s, past the 1 s deadline
                sock.sendall(b"X-Slow: 1\r\n")
                time.sleep(0.1)
        except OSError:
            pass
        answer = recv_all(sock)
        check(name + " 408 for headers trickled past the deadline",
              answer.startswith(b"HTTP/1.1 408") and time.monotonic() - started < 8, repr(answer[:40]))
    finally:
        stop(proc, name)


def open_fds(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return 0


def pipelined_burst(port, path, count, pid):
    """Sends `count` GETs of `path` in one write; returns how many answers
    arrived (reading until all have, or nothing comes for 5 s) and the most
    fds the server held meanwhile (sampled between reads)."""
    sock = connect(port)
    sock.settimeout(5)
    request = b"GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % path.encode()
    sock.sendall(request * count)
    data = b""
    answers = 0
    peak = open_fds(pid)
    try:
        while answers < count:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            answers = data.count(b"HTTP/1.1 200 OK")
            peak = max(peak, open_fds(pid))
    except socket.timeout:
        pass
    sock.close()
    return answers, peak


def test_http_pipelined_burst(server, backend, root):
    proc, port = start([server, "--backend", backend, "--port", "0", "--address", "127.0.0.1",
                        "--root", root])
    name = "coro_http_server (%s)" % backend
    try:
        # Answers queue past the write high-water mark while the rest of the
        # burst arrives: every request must still be answered.
        answers, _ = pipelined_burst(port, "/hello", 10000, proc.pid)
        check(name + " answers all of 10000 pipelined requests", answers == 10000,
              "%d answered" % answers)
        # Each queued file is an open fd: a burst of file requests must not
        # open one per request (the callback server holds ~14 here).
        answers, peak = pipelined_burst(port, "/tiny.txt", 10000, proc.pid)
        check(name + " answers all of 10000 pipelined file requests", answers == 10000,
              "%d answered" % answers)
        check(name + " holds a bounded number of fds for pipelined files", peak <= 64,
              "peak %d fds" % peak)
    finally:
        stop(proc, name)


def main():
    echo_server, echo_client, http_server = sys.argv[1:4]
    root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.write(os.urandom(3 * 1024 * 1024))
    with open(os.path.join(root, "small.txt"), "wb") as f:
        f.write(b"small\n")
    with open(os.path.join(root, "tiny.txt"), "wb") as f:
        f.write(b"t" * 100)
    for backend in ("epoll", "uring"):
        test_echo(echo_server, echo_client, backend)
        test_http(http_server, backend, root)
        test_http_pipelined_burst(http_server, backend, root)
    print("coro examples: %d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
