#!/usr/bin/env python3
"""System calls per short connection (accept, one request, close), per backend.

Runs examples/http's http_server under `strace -f -c` twice per backend: once
idle (start, SIGTERM) and once serving CONNECTIONS short connections (GET
/hello with `Connection: close`, CONCURRENCY at a time, every response checked
byte for byte). The difference, divided by CONNECTIONS, is what one connection
costs. Asserted:

- io_uring: no system call of its own per connection but one shutdown (the
  FIN, from the send's completion: an IORING_OP_SHUTDOWN always runs on the
  ring's worker thread): accept, file-table registration, receive, send and
  close all go through the ring. The only other calls are io_uring_enter,
  one per loop turn, shared by all the connections of that turn (printed,
  not asserted: how many connections share a turn depends on timing).
- epoll: no more than accept4, one epoll_ctl (ADD; no DEL before close), one
  read, one send, one shutdown (the FIN right behind the answer, not at the
  end of the loop's turn) and one close per connection, plus accept4's EAGAIN and
  epoll_wait once per loop turn (printed); nothing else (getsockname,
  getpeername, eventfd writes).

An old build fails this (getsockname, getpeername and io_uring_register per
connection on io_uring; epoll_ctl DEL and getsockname on epoll).

usage: short_connection_syscalls_test.py HTTP_SERVER
"""

import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import socket

CONNECTIONS = 1000
CONCURRENCY = 20
STARTUP_TIMEOUT = 30
EXIT_TIMEOUT = 60
REQUEST = b"GET /hello HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
BODY = b"hello world\n"

# Calls a loop makes once per turn, shared by whatever was ready in it.
PER_TURN = {"io_uring_enter", "epoll_wait"}
# Per connection, at most (epoll): the calls themselves, with a margin only
# for accept4's EAGAIN, which ends each batch of accepts.
EPOLL_LIMITS = {"accept4": 1.5, "epoll_ctl": 1.0, "read": 1.0, "sendto": 1.0, "shutdown": 1.0,
                "close": 1.0}
# Per connection, at most (io_uring).
URING_LIMITS = {"shutdown": 1.0}
# Anything per connection beyond those must stay under this: a call made for
# every connection shows up as 1.0.
STRAY_LIMIT = 0.05


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def skip(message):
    print("SKIP: " + message)
    sys.exit(0)


def start(server, backend, summary):
    env = dict(os.environ, LIBNET_POLLER=backend)
    # LeakSanitizer cannot run under ptrace.
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    argv = ["strace", "-f", "-qq", "-c", "-o", summary, server, "--address", "127.0.0.1",
            "--port", "0", "--threads", "0", "--backend", backend]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)
    ready, _, _ = select.select([proc.stdout], [], [], STARTUP_TIMEOUT)
    line = proc.stdout.readline() if ready else ""
    match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
    if not match:
        proc.kill()
        _, err = proc.communicate()
        if backend == "uring" and "io_uring" in err:
            skip("http_server cannot run on io_uring here: " + err.strip()[-300:])
        fail("%s: no listening line within %ds: %r %s" % (backend, STARTUP_TIMEOUT, line, err))
    return proc, int(match.group(1))


def server_pid(wrapper_pid):
    """The http_server process under strace (its only child)."""
    for _ in range(100):
        try:
            with open("/proc/%d/task/%d/children" % (wrapper_pid, wrapper_pid)) as f:
                children = f.read().split()
        except OSError:
            children = []
        if children:
            return int(children[0])
    fail("http_server process not found under strace")


def one_request(port, errors):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            s.sendall(REQUEST)
            got = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        head, _, body = got.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200 ") or body != BODY:
            errors.append("bad response: %r" % got[:200])
    except OSError as e:
        errors.append("connection failed: %s" % e)


def drive(port):
    errors = []
    per_worker = CONNECTIONS // CONCURRENCY

    def worker():
        for _ in range(per_worker):
            one_request(port, errors)

    threads = [threading.Thread(target=worker) for _ in range(CONCURRENCY)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        fail("%d of %d requests failed, first: %s" % (len(errors), CONNECTIONS, errors[0]))


def run(server, backend, tmp, traffic):
    summary = os.path.join(tmp, "strace.%s.%s" % (backend, "traffic" if traffic else "idle"))
    proc, port = start(server, backend, summary)
    if traffic:
        drive(port)
    os.kill(server_pid(proc.pid), signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("%s: http_server did not exit within %ds of SIGTERM" % (backend, EXIT_TIMEOUT))
    if proc.returncode != 0:
        fail("%s: traced http_server exited %d: %s" % (backend, proc.returncode, err[-500:]))
    return counts(summary)


def counts(summary):
    """{syscall: calls} from an strace -c summary."""
    out = {}
    with open(summary) as f:
        for line in f:
            fields = line.split()
            # "% time  seconds  usecs/call  calls  [errors]  syscall"
            if (len(fields) >= 5 and re.fullmatch(r"[\d.]+", fields[0]) and fields[3].isdigit()
                    and fields[-1] != "total"):
                out[fields[-1]] = int(fields[3])
    if not out:
        fail("strace wrote no summary in " + summary)
    return out


def per_connection(server, backend, tmp):
    idle = run(server, backend, tmp, traffic=False)
    busy = run(server, backend, tmp, traffic=True)
    per = {name: (busy.get(name, 0) - idle.get(name, 0)) / CONNECTIONS
           for name in set(busy) | set(idle)}
    shown = ", ".join("%s %.2f" % (n, v) for n, v in sorted(per.items(), key=lambda kv: -kv[1])
                      if v >= 0.005)
    total = sum(v for v in per.values() if v > 0)
    print("%s: %.2f system calls per connection (%s)" % (backend, total, shown))
    return per


def main():
    if len(sys.argv) != 2:
        fail("usage: short_connection_syscalls_test.py HTTP_SERVER")
    server = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        uring = per_connection(server, "uring", tmp)
        epoll = per_connection(server, "epoll", tmp)
    problems = []
    for name, value in uring.items():
        if name not in PER_TURN and value > URING_LIMITS.get(name, 0) + STRAY_LIMIT:
            problems.append("uring: %.2f %s per connection; every per-connection operation "
                            "but the FIN must go through the ring" % (value, name))
    for name, value in epoll.items():
        if name in PER_TURN:
            continue
        limit = EPOLL_LIMITS.get(name, STRAY_LIMIT)
        if value > limit + STRAY_LIMIT:
            problems.append("epoll: %.2f %s per connection (at most %.1f)" % (value, name, limit))
    for name in ("accept4", "epoll_ctl", "close"):
        if epoll.get(name, 0) < 0.9:
            problems.append("epoll: only %.2f %s per connection: did the connections reach the "
                            "server?" % (epoll.get(name, 0), name))
    if uring.get("io_uring_enter", 0) <= 0:
        problems.append("uring: no io_uring_enter while serving: was it on io_uring?")
    if problems:
        fail("; ".join(problems))
    print("PASS: %d short connections per backend, every response checked" % CONNECTIONS)


if __name__ == "__main__":
    main()
