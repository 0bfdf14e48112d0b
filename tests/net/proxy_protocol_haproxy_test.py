"""http_server behind haproxy (send-proxy and send-proxy-v2), on each backend.

Through haproxy, GET /client-address answers the address of the client that
connected to haproxy (bound to 127.0.0.2), port included, for v1 and v2, over
HTTP/1.1 and HTTP/2 (curl, prior knowledge). A
forged "PROXY TCP4 9.9.9.9 ..." line sent directly is answered 400 and never
believed, by a server without the option and by one whose trusted proxies
do not include the sender; a malformed header to a server with the option
closes the connection, with a log line saying why. A bad --trusted-proxy is
refused with exit status 2.

Usage: proxy_protocol_haproxy_test.py HTTP_SERVER
"""

import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

FORGED = b"PROXY TCP4 9.9.9.9 9.9.9.9 1111 80\r\n"
CLIENT_IP = "127.0.0.2"
IO_TIMEOUT = 20  # seconds for one exchange (a bound, not a wait)


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


class Server:
    """An http_server on an ephemeral port, its output collected."""

    def __init__(self, binary, backend, extra):
        self.proc = subprocess.Popen(
            [binary, "--address", "127.0.0.1", "--port", "0", "--backend", backend] + extra,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines = []
        self.port = None
        deadline = time.monotonic() + 10
        fd = self.proc.stdout.fileno()
        pending = b""
        while self.port is None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                fail("http_server did not start: %r" % self.lines)
            chunk = os.read(fd, 4096)
            if not chunk:
                fail("http_server exited: %r" % self.lines)
            pending += chunk
            *done, pending = pending.split(b"\n")
            for line in done:
                self.lines.append(line.decode(errors="replace"))
                m = re.search(r"listening on 127\.0\.0\.1:(\d+)", self.lines[-1])
                if m:
                    self.port = int(m.group(1))
        self.lines.append(pending.decode(errors="replace"))
        # The rest of its output, read on (it must never block on a full pipe).
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self):
        for line in self.proc.stdout:
            self.lines.append(line.decode(errors="replace").rstrip("\n"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                fail("http_server did not stop on SIGTERM")
        self.reader.join(timeout=5)

    def log_has(self, pattern, timeout=5):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(re.search(pattern, line) for line in self.lines):
                return True
            time.sleep(0.02)
        return False


def exchange(port, data, source=None):
    """Sends data, reads to EOF (5 s bound); returns (reply, local port)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Generous: under ThreadSanitizer on a loaded 2-core machine a first
    # request through haproxy was seen to take more than 5 s.
    s.settimeout(IO_TIMEOUT)
    try:
        if source:
            s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        local_port = s.getsockname()[1]
        s.sendall(data)
        reply = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            reply += chunk
        return reply, local_port
    finally:
        s.close()


def get(path):
    return ("GET %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n" % path).encode()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_haproxy(workdir, server_port):
    """haproxy with a send-proxy and a send-proxy-v2 frontend: (proc, v1, v2).

    Its ports are picked free and may be taken by someone else before it
    binds them: it then exits, and is started again on others."""
    for _ in range(5):
        v1, v2 = free_port(), free_port()
        if v1 == v2:
            continue
        config = os.path.join(workdir, "haproxy.cfg")
        with open(config, "w") as f:
            f.write("""global
    maxconn 100
defaults
    mode tcp
    timeout connect 5s
    timeout client 10s
    timeout server 10s
frontend v1
    bind 127.0.0.1:%d
    default_backend b1
backend b1
    server s 127.0.0.1:%d send-proxy
frontend v2
    bind 127.0.0.1:%d
    default_backend b2
backend b2
    server s 127.0.0.1:%d send-proxy-v2
""" % (v1, server_port, v2, server_port))
        proc = subprocess.Popen(["haproxy", "-db", "-f", config],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and proc.poll() is None:
            ready = True
            for port in (v1, v2):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                except OSError:
                    ready = False
            # Still running after both answer: its own sockets.
            if ready and proc.poll() is None:
                return proc, v1, v2
            time.sleep(0.05)
        proc.kill()
        proc.wait()
    fail("haproxy did not start")


def body_of(reply):
    head, _, body = reply.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0], body.decode(errors="replace")


def check_through_haproxy(server, workdir):
    proc, v1, v2 = start_haproxy(workdir, server.port)
    try:
        for name, port in (("send-proxy", v1), ("send-proxy-v2", v2)):
            reply, local_port = exchange(port, get("/client-address"), source=CLIENT_IP)
            status, body = body_of(reply)
            if b" 200 " not in status + b" ":
                fail("%s: %r" % (name, reply))
            if body != "%s:%d\n" % (CLIENT_IP, local_port):
                fail("%s: server saw %r, the client is %s:%d" % (name, body, CLIENT_IP, local_port))
            # HTTP/2 (prior knowledge) sees the same through the header.
            r = subprocess.run(["curl", "-sS", "--max-time", str(IO_TIMEOUT), "--http2-prior-knowledge",
                                "--interface", CLIENT_IP, "-w", " %{http_version}",
                                "http://127.0.0.1:%d/client-address" % port],
                               capture_output=True, timeout=IO_TIMEOUT + 5)
            if not re.fullmatch(r"127\.0\.0\.2:\d+\n 2", r.stdout.decode(errors="replace")):
                fail("%s over HTTP/2: %r %r" % (name, r.stdout, r.stderr))
    finally:
        proc.kill()
        proc.wait()


def check_forged_not_believed(server, what):
    reply, _ = exchange(server.port, FORGED + get("/client-address"), source=CLIENT_IP)
    status, _ = body_of(reply)
    if not status.startswith(b"HTTP/1.1 400"):
        fail("%s: forged header answered %r, want 400" % (what, reply))
    if b"9.9.9.9" in reply:
        fail("%s: forged address believed: %r" % (what, reply))


def check_rejected_counted(server, want):
    """The scrape (with a header of its own) counts `want` rejected headers."""
    from prometheus_client.parser import text_string_to_metric_families
    header = b"PROXY TCP4 127.0.0.3 127.0.0.1 4000 80\r\n"
    status, body = body_of(exchange(server.port, header + get("/metrics"))[0])
    if not status.startswith(b"HTTP/1.1 200"):
        fail("metrics scrape answered %r" % status)
    rejected = 0
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name == "libnet_proxy_protocol_rejected_total":
                rejected += sample.value
    if rejected != want:
        fail("libnet_proxy_protocol_rejected_total is %r, want %d" % (rejected, want))


def run_backend(binary, backend, workdir):
    with_option = Server(binary, backend, ["--proxy-protocol", "--h2c", "--metrics-path", "/metrics"])
    try:
        check_through_haproxy(with_option, workdir)
        reply, _ = exchange(with_option.port, b"PROXY TCP4 9.9.9.9 nowhere 1 2\r\n" + get("/"))
        if reply:
            fail("malformed header answered %r" % reply)
        if not with_option.log_has(r"WARN.*127\.0\.0\.1:\d+ closed: PROXY protocol: v1: bad address"):
            fail("no log line for the malformed header: %r" % with_option.lines)
        check_rejected_counted(with_option, 1)
    finally:
        with_option.stop()

    without = Server(binary, backend, [])
    try:
        check_forged_not_believed(without, "without --proxy-protocol")
    finally:
        without.stop()

    untrusted = Server(binary, backend, ["--trusted-proxy", "10.0.0.0/8,192.0.2.1"])
    try:
        check_forged_not_believed(untrusted, "from an untrusted peer")
        reply, local_port = exchange(untrusted.port, get("/client-address"), source=CLIENT_IP)
        if body_of(reply)[1] != "%s:%d\n" % (CLIENT_IP, local_port):
            fail("direct client with a trusted list: %r" % reply)
    finally:
        untrusted.stop()


def main():
    binary = sys.argv[1]
    if not shutil.which("haproxy"):
        fail("haproxy is needed (tools/setup.sh installs it)")
    for bad in ("10.0.0.0/33", "proxy.example", "10.0.0.1,"):
        r = subprocess.run([binary, "--port", "0", "--trusted-proxy", bad],
                           capture_output=True, timeout=10)
        if r.returncode != 2 or b"--trusted-proxy" not in r.stderr:
            fail("--trusted-proxy %s: exit %d, %r" % (bad, r.returncode, r.stderr))
    with tempfile.TemporaryDirectory() as workdir:
        for backend in ("epoll", "uring"):
            run_backend(binary, backend, workdir)
            print("ok: %s" % backend, flush=True)
    print("PASS")


if __name__ == "__main__":
    main()
