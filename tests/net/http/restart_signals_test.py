#!/usr/bin/env python3
"""SIGTERM during a restart stops both generations gracefully; coro_http_server restarts too.

On epoll and io_uring, --threads 0 and 2:

1. http_server, the operator's race: an upload in flight, SIGHUP, SIGTERM
   GAP seconds later. Once both the successor's readiness and the SIGTERM
   have been handled, the rest of the upload is sent: it must be answered
   200 with the whole body echoed; the old process exits 0 after it has
   reaped the successor (its status printed: exit 0), and nothing listens
   on the port afterwards.
2. http_server, SIGTERM before the successor is ready: the successor is
   stopped (SIGSTOP) as soon as it listens, so it cannot report ready;
   the old process gets SIGTERM and stops listening; uploads (half sent)
   and whole GETs then connect and wait in the backlog that only the
   frozen successor still listens on; the old process's own upload
   completes, so its drain ends first. Then the successor goes on
   (SIGCONT): every upload and GET queued for it must be answered 200
   (nothing killed it), a line says the old process waited for it, it is
   told to drain once ready, both exit 0 and nothing listens.
3. coro_http_server on SIGHUP restarts (it exited 129 before): a request in
   flight on the old process is answered, the old process exits 0, the
   successor serves; and the same SIGHUP-then-SIGTERM race as in 1 stops
   both.

usage: restart_signals_test.py HTTP_SERVER CORO_HTTP_SERVER
"""

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

IO_TIMEOUT = 20      # any one wait for a line, an answer, an exit
GAP = 0.02           # SIGHUP to SIGTERM: the scenario's parameter, not a wait
UPLOAD = 1 << 20
READY_DELAY_MS = 2000
QUEUED_UPLOADS = 4
QUEUED_GETS = 8
HELLO = b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"


def fail(message):
    print("FAIL: " + message, file=sys.stderr, flush=True)
    sys.exit(1)


def wait_until(predicate, what, timeout=IO_TIMEOUT):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            fail(f"not within {timeout} s: {what}")
        time.sleep(0.005)


class Server:
    """A server process and every line that it and its successors print."""

    def __init__(self, argv):
        self.name = os.path.basename(argv[0])
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.pid = self.proc.pid
        self.lines = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.port = int(self.expect(r"listening on 127\.0\.0\.1:(\d+)$").group(1))

    def _read(self):
        for line in self.proc.stdout:
            print("  server: " + line.rstrip(), flush=True)
            with self.lock:
                self.lines.append(line.rstrip("\n"))

    def find(self, pattern, start=0):
        """(index, match) of the first line from `start` that matches, or (None, None)."""
        with self.lock:
            for i in range(start, len(self.lines)):
                m = re.search(pattern, self.lines[i])
                if m:
                    return i, m
        return None, None

    def count(self, pattern):
        with self.lock:
            return sum(1 for line in self.lines if re.search(pattern, line))

    def expect(self, pattern, start=0, timeout=IO_TIMEOUT):
        found = []

        def seen():
            i, m = self.find(pattern, start)
            if m:
                found.append(m)
            elif not self.reader.is_alive() and self.find(pattern, start)[1] is None:
                fail(f"{self.name} ended its output (exit status {self.proc.wait(IO_TIMEOUT)}) without a "
                     f"line matching '{pattern}'")
            return m is not None

        wait_until(seen, f"{self.name} printing a line matching '{pattern}'", timeout)
        return found[0]

    def expect_exit_zero(self, timeout=IO_TIMEOUT * 2):
        try:
            status = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail(f"{self.name} {self.pid} still runs {timeout} s on")
        if status != 0:
            fail(f"{self.name} {self.pid} exited {status}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def alive(pid):
    """Runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def listening_inodes(port):
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(fields[9])
        except FileNotFoundError:
            pass
    return inodes


def holds_listener(pid, port):
    inodes = listening_inodes(port)
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                return True
    except FileNotFoundError:
        pass
    return False


def expect_nothing_listens(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT).close()
    except ConnectionRefusedError:
        return
    fail(f"something still listens on port {port}")


def read_response(sock):
    """(status, headers, body) of one Content-Length response; raises OSError or EOFError."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError(f"closed before a whole response head ({len(data)} bytes)")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError(f"closed inside a response body ({len(body)} of {length} bytes)")
        body += chunk
    return int(lines[0].split()[1]), headers, body[:length]


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT)


class Upload:
    """A POST /echo whose body is half sent (on a connection served once, if `served`)."""

    def __init__(self, port, served=True):
        self.body = os.urandom(UPLOAD)
        self.sock = connect(port)
        if served:
            self.sock.sendall(HELLO)
            status, _, _ = read_response(self.sock)
            if status != 200:
                fail(f"/hello answered {status}")
        self.sock.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % UPLOAD +
                          self.body[:UPLOAD // 2])

    def finish(self, what):
        try:
            self.sock.sendall(self.body[UPLOAD // 2:])
            status, _, body = read_response(self.sock)
        except (OSError, EOFError) as e:
            fail(f"{what}: the upload in flight was cut: {e!r}")
        if status != 200 or body != self.body:
            fail(f"{what}: the upload was answered {status} with {len(body)} bytes")
        self.sock.close()


class SlowGet:
    """A GET /hello whose head is half sent, on a connection that has been served once."""

    def __init__(self, port):
        self.sock = connect(port)
        self.sock.sendall(HELLO)
        status, _, _ = read_response(self.sock)
        if status != 200:
            fail(f"/hello answered {status}")
        self.sock.sendall(b"GET /hello HTTP/1.1\r\nHo")

    def finish(self, what):
        try:
            self.sock.sendall(b"st: t\r\n\r\n")
            status, _, body = read_response(self.sock)
        except (OSError, EOFError) as e:
            fail(f"{what}: the request in flight was cut: {e!r}")
        if status != 200 or body != b"hello world\n":
            fail(f"{what}: answered {status} {body!r}")
        self.sock.close()


class QueuedGet:
    """A whole GET /hello sent on a new connection, its answer read later."""

    def __init__(self, port):
        self.sock = connect(port)
        self.sock.sendall(b"GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")

    def finish(self, what):
        try:
            status, _, body = read_response(self.sock)
        except (OSError, EOFError) as e:
            fail(f"{what}: a connection queued in the backlog was cut: {e!r}")
        if status != 200 or body != b"hello world\n":
            fail(f"{what}: a queued GET was answered {status} {body!r}")
        self.sock.close()


def both_handled(server, signal_line):
    """The successor's readiness and the operator's SIGTERM have both been handled."""
    ready = server.find(r"successor \d+ is serving|sent SIGTERM to successor")[1]
    # Before the fix, each of the two printed a "draining" line.
    stopped = server.find(signal_line)[1] or server.count(r" draining \d+ connections") >= 2
    return ready is not None and stopped


def expect_both_stopped(server, successor, what):
    server.expect_exit_zero()
    server.expect(rf"successor {successor} exited with status 0$")
    if alive(successor):
        fail(f"{what}: successor {successor} still runs after the old process exited")
    expect_nothing_listens(server.port)


def sighup_then_sigterm(binary, backend, threads, in_flight):
    what = f"{os.path.basename(binary)} {backend} --threads {threads}, SIGHUP then SIGTERM"
    print(f"== {what}", flush=True)
    server = Server([binary, "--address", "127.0.0.1", "--port", "0", "--backend", backend,
                     "--threads", str(threads)] + (["--max-body", str(2 * UPLOAD)]
                                                   if in_flight is Upload else []))
    try:
        request = in_flight(server.port)
        os.kill(server.pid, signal.SIGHUP)
        time.sleep(GAP)
        os.kill(server.pid, signal.SIGTERM)
        successor = int(server.expect(r"started successor (\d+)").group(1))
        wait_until(lambda: both_handled(server, r"SIGTERM during a restart"),
                   "the successor's readiness and the SIGTERM handled")
        request.finish(what)
        expect_both_stopped(server, successor, what)
    finally:
        server.kill()


def sigterm_before_ready(binary, backend, threads):
    what = f"http_server {backend} --threads {threads}, SIGTERM before the successor is ready"
    print(f"== {what}", flush=True)
    server = Server([binary, "--address", "127.0.0.1", "--port", "0", "--backend", backend,
                     "--threads", str(threads), "--max-body", str(2 * UPLOAD),
                     "--ready-delay", str(READY_DELAY_MS)])
    successor = None
    try:
        old_upload = Upload(server.port)
        os.kill(server.pid, signal.SIGHUP)
        successor = int(server.expect(r"started successor (\d+)").group(1))
        first = server.find(r"listening on")[0]
        server.expect(r"listening on", start=first + 1)  # the successor listens
        os.kill(successor, signal.SIGSTOP)
        os.kill(server.pid, signal.SIGTERM)
        wait_until(lambda: not holds_listener(server.pid, server.port),
                   "the old process closing its listening sockets")
        # Only the frozen successor listens: these wait in the backlog.
        queued = [Upload(server.port, served=False) for _ in range(QUEUED_UPLOADS)]
        queued += [QueuedGet(server.port) for _ in range(QUEUED_GETS)]
        old_upload.finish(what + " (the old process's upload)")
        # The old process has drained while the successor is not ready:
        # before the fix it exited here, killing the successor and resetting
        # every connection queued for it.
        wait_until(lambda: server.find(r"drained; waiting for successor")[1] is not None or
                   server.proc.poll() is not None, "the old process drained")
        if alive(successor):
            os.kill(successor, signal.SIGCONT)
        for request in queued:
            request.finish(what + " (queued for the successor)")
        server.expect(rf"sent SIGTERM to successor {successor}")
        expect_both_stopped(server, successor, what)
    finally:
        server.kill()
        if successor and alive(successor):
            os.kill(successor, signal.SIGKILL)
            os.kill(successor, signal.SIGCONT)


def coro_sighup(binary, backend, threads):
    what = f"coro_http_server {backend} --threads {threads}, SIGHUP"
    print(f"== {what}", flush=True)
    server = Server([binary, "--address", "127.0.0.1", "--port", "0", "--backend", backend,
                     "--threads", str(threads)])
    successor = None
    try:
        request = SlowGet(server.port)
        os.kill(server.pid, signal.SIGHUP)
        successor = int(server.expect(r"successor (\d+) is serving; stopping$").group(1))
        request.finish(what)
        server.expect_exit_zero()
        with connect(server.port) as sock:
            sock.sendall(HELLO)
            if read_response(sock)[0] != 200:
                fail(f"{what}: the successor did not answer /hello")
        os.kill(successor, signal.SIGTERM)
        wait_until(lambda: not alive(successor), "the successor exiting on SIGTERM")
        expect_nothing_listens(server.port)
    finally:
        server.kill()
        if successor and alive(successor):
            os.kill(successor, signal.SIGKILL)


def main():
    http_server, coro_http_server = sys.argv[1], sys.argv[2]
    for backend in ("epoll", "uring"):
        for threads in (0, 2):
            sighup_then_sigterm(http_server, backend, threads, Upload)
            sigterm_before_ready(http_server, backend, threads)
            coro_sighup(coro_http_server, backend, threads)
            sighup_then_sigterm(coro_http_server, backend, threads, SlowGet)
    print("PASS")


if __name__ == "__main__":
    main()
