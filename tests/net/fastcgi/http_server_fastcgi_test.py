#!/usr/bin/env python3
"""http_server --fastcgi-pass against a php-fpm of its own, end to end, on
both backends: the CGI variables PHP sees (with the real addresses), a
10 MiB POST checked by hash, status and fields from PHP, keep-alive after a
FastCGI answer, 100 MiB streamed to a slow reader with the server's resident
memory bounded, HTTPS (HTTPS=on), HTTP/2 with prior knowledge, php-fpm killed mid-answer (the client sees
the chunked body cut short, never its last chunk; the next request is 502). Request bodies
streamed to FCGI_STDIN (a php-fpm that reads php://input as it comes): a 200 MiB POST hashed by
PHP with the server's resident memory bounded, a script that sleeps before reading holds the
client back, php-fpm killed mid-upload is a 502 (or the answer cut off), never a hang.

usage: http_server_fastcgi_test.py HTTP_SERVER MAKE_TEST_CERTS_PY
"""

import hashlib
import os
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

import h2.config
import h2.connection
import h2.events

PHP_FPM = "/usr/sbin/php-fpm8.2"
STARTUP_TIMEOUT = 20
IO_TIMEOUT = 20
BIG_MIB = 100
# The server's resident memory may grow by this much while it streams
# BIG_MIB to a reader that lags: a few back-pressure marks and buffers.
RSS_GROWTH_LIMIT = 48 * 1024 * 1024

SCRIPTS = {
    "env.php": "<?php header('Content-Type: text/plain');\n"
               "foreach ($_SERVER as $k => $v) if (is_string($v)) echo \"$k=$v\\n\";\n",
    "post.php": "<?php $d = file_get_contents('php://input'); echo strlen($d), ' ', md5($d);\n",
    "headers.php": "<?php http_response_code(418); header('X-Test: yes');\n"
                   "setcookie('a', '1'); setcookie('b', '2'); echo 'teapot';\n",
    "big.php": "<?php $c = str_repeat('x', 65536);\n"
               "for ($i = 0; $i < 16 * (int)$_GET['mb']; $i++) echo $c;\n",
    "upload.php": "<?php $h = hash_init('md5'); $n = 0; $in = fopen('php://input', 'rb');\n"
                  "if (isset($_GET['sleep'])) usleep(1000 * (int)$_GET['sleep']);\n"
                  "while (($d = fread($in, 1 << 20)) !== '' && $d !== false)\n"
                  "{ $n += strlen($d); hash_update($h, $d); }\n"
                  "echo $n, ' ', hash_final($h);\n",
    "ticker.php": "<?php for ($i = 0; $i < 3000; $i++) { echo \"tick $i\\n\"; flush();\n"
                  "usleep(20000); }\n",
}


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


class PhpFpm:
    def __init__(self, directory, children, extra=""):
        self.sock = os.path.join(directory, "fpm.sock")
        conf = os.path.join(directory, "fpm.conf")
        with open(conf, "w") as f:
            f.write(f"[global]\nerror_log = {directory}/fpm.log\ndaemonize = no\n"
                    f"[www]\nlisten = {self.sock}\npm = static\npm.max_children = {children}\n"
                    "catch_workers_output = yes\nphp_admin_value[output_buffering] = 0\n"
                    "php_admin_value[post_max_size] = 64M\n" + extra)
            if os.geteuid() == 0:
                f.write("user = root\ngroup = root\n")
        self.proc = subprocess.Popen([PHP_FPM, "-n", "-R", "-F", "-y", conf],
                                     start_new_session=True, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(self.sock)
                s.close()
                return
            except OSError:
                time.sleep(0.02)
        self.kill()
        fail("php-fpm did not start")

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def start_server(server, backend, extra):
    argv = [server, "--address", "127.0.0.1", "--port", "0", "--backend", backend] + extra
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if match:
            return proc, int(match.group(1))
    proc.kill()
    fail(f"{backend}: http_server did not start")


def read_head(sock, data=b""):
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            fail(f"closed before a whole head: {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields.append((name.strip().lower(), value.strip()))
    return int(lines[0].split()[1]), fields, rest


def read_body(sock, fields, rest, sink=None):
    """The body (Content-Length or chunked): (body or its length, leftover,
    whether it ended properly)."""
    got = bytearray() if sink is None else None
    total = 0

    def take(data):
        nonlocal total
        total += len(data)
        if sink:
            sink(data)
        else:
            got.extend(data)

    def more():
        chunk = sock.recv(1 << 20)
        return chunk

    headers = dict(fields)
    if "content-length" in headers:
        length = int(headers["content-length"])
        while len(rest) < length:
            chunk = more()
            if not chunk:
                return (got if sink is None else total), b"", False
            rest += chunk
        take(rest[:length])
        return (bytes(got) if sink is None else total), rest[length:], True
    if headers.get("transfer-encoding") != "chunked":
        fail(f"neither Content-Length nor chunked: {fields}")
    while True:
        while b"\r\n" not in rest:
            chunk = more()
            if not chunk:
                return (bytes(got) if sink is None else total), b"", False
            rest += chunk
        line, _, rest = rest.partition(b"\r\n")
        size = int(line.split(b";")[0], 16)
        while len(rest) < size + 2:
            chunk = more()
            if not chunk:
                return (bytes(got) if sink is None else total), b"", False
            rest += chunk
        if size == 0:
            return (bytes(got) if sink is None else total), rest[2:], True
        take(rest[:size])
        rest = rest[size + 2:]


def request(sock, target, method="GET", body=b"", extra=""):
    head = f"{method} {target} HTTP/1.1\r\nHost: test.example:8080\r\n{extra}"
    if body:
        head += f"Content-Type: application/octet-stream\r\nContent-Length: {len(body)}\r\n"
    sock.sendall(head.encode() + b"\r\n" + body)
    status, fields, rest = read_head(sock)
    data, rest, whole = read_body(sock, fields, rest)
    if not whole:
        fail(f"{target}: answer cut short")
    return status, fields, data


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT)
    return sock


def variables(body):
    out = {}
    for line in body.decode().splitlines():
        name, eq, value = line.partition("=")
        if eq:
            out[name] = value
    return out


def check_basics(backend, port, root):
    sock = connect(port)
    local_port = sock.getsockname()[1]
    for _ in range(2):  # the second on the same keep-alive connection
        status, _, body = request(sock, "/env.php?q=1", extra="X-Custom: c\r\nProxy: evil\r\n")
        if status != 200:
            fail(f"{backend}: env.php {status} {body!r}")
        v = variables(body)
        expected = {"SCRIPT_FILENAME": root + "/env.php", "QUERY_STRING": "q=1",
                    "REQUEST_METHOD": "GET", "REQUEST_URI": "/env.php?q=1",
                    "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
                    "REMOTE_PORT": str(local_port), "SERVER_ADDR": "127.0.0.1",
                    "SERVER_PORT": str(port), "SERVER_NAME": "test.example",
                    "HTTP_HOST": "test.example:8080", "HTTP_X_CUSTOM": "c",
                    "DOCUMENT_ROOT": root, "REQUEST_SCHEME": "http"}
        for name, value in expected.items():
            if v.get(name) != value:
                fail(f"{backend}: {name}={v.get(name)!r}, expected {value!r}")
        if "HTTP_PROXY" in v or "HTTPS" in v:
            fail(f"{backend}: HTTP_PROXY or HTTPS passed on")
    body = os.urandom(10 * 1024 * 1024)
    status, _, answer = request(sock, "/post.php", "POST", body)
    if answer.decode() != f"{len(body)} {hashlib.md5(body).hexdigest()}":
        fail(f"{backend}: 10 MiB POST: {status} {answer[:200]!r}")
    status, fields, answer = request(sock, "/headers.php")
    cookies = [v for k, v in fields if k == "set-cookie"]
    lengths = [v for k, v in fields if k == "content-length"]
    if status != 418 or answer != b"teapot" or ("x-test", "yes") not in fields or \
            len(cookies) != 2 or lengths != ["6"]:
        fail(f"{backend}: headers.php: {status} {fields} {answer!r}")
    status, _, answer = request(sock, "/hello")
    if status != 200 or answer != b"hello world\n":
        fail(f"{backend}: /hello beside FastCGI: {status}")
    sock.close()


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def check_slow_reader(backend, port, pid):
    sock = connect(port)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    base = rss(pid)
    peak = base
    sock.sendall(f"GET /big.php?mb={BIG_MIB} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
    status, fields, rest = read_head(sock)
    seen = [0]

    def sink(data):
        nonlocal peak
        seen[0] += len(data)
        if seen[0] // (1 << 20) != (seen[0] - len(data)) // (1 << 20):
            peak = max(peak, rss(pid))
            time.sleep(0.005)  # the reader lags behind: php-fpm writes faster

    total, _, whole = read_body(sock, fields, rest, sink)
    sock.close()
    if status != 200 or not whole or total != BIG_MIB << 20:
        fail(f"{backend}: big.php: {status} whole={whole} {total} bytes")
    growth = peak - base
    print(f"{backend}: {BIG_MIB} MiB to a slow reader: server RSS {base >> 20} MiB -> "
          f"peak {peak >> 20} MiB")
    if SANITIZED:
        # ASan's quarantine keeps freed memory (256 MiB by default) and TSan
        # its shadow: RSS then says nothing about what the server holds.
        print(f"{backend}: sanitizer build, RSS not checked")
        return
    if growth > RSS_GROWTH_LIMIT:
        fail(f"{backend}: server RSS grew by {growth >> 20} MiB streaming {BIG_MIB} MiB")


def check_https(server, backend, root, fpm, certs):
    proc, port = start_server(server, backend, ["--root", root, "--fastcgi-pass", "unix:" + fpm.sock,
                                                "--tls-cert", certs["cert"],
                                                "--tls-key", certs["key"]])
    try:
        context = ssl.create_default_context(cafile=certs["ca"])
        context.check_hostname = False
        raw = connect(port)
        sock = context.wrap_socket(raw, server_hostname="localhost")
        status, _, body = request(sock, "/env.php")
        v = variables(body)
        if status != 200 or v.get("HTTPS") != "on" or v.get("REQUEST_SCHEME") != "https":
            fail(f"{backend}: HTTPS: {status} HTTPS={v.get('HTTPS')!r}")
        # A body streamed to php-fpm from TLS plaintext.
        body = os.urandom(3 * 1024 * 1024 + 5)
        status, _, answer = request(sock, "/post.php", "POST", body)
        if answer.decode() != f"{len(body)} {hashlib.md5(body).hexdigest()}":
            fail(f"{backend}: HTTPS POST: {status} {answer[:200]!r}")
        sock.close()
    finally:
        proc.kill()
        proc.wait()


def h2_send_body(conn, stream, body, sent):
    """Queues as much of `body` from `sent` on as the stream's window allows; the new offset."""
    while sent < len(body):
        room = min(conn.local_flow_control_window(stream), conn.max_outbound_frame_size,
                   len(body) - sent)
        if room <= 0:
            break
        conn.send_data(stream, body[sent:sent + room], end_stream=sent + room == len(body))
        sent += room
    return sent


def h2_request(port, path, method="GET", body=b""):
    """One request over h2c (prior knowledge), its body sent under flow control:
    (status, fields, body)."""
    sock = connect(port)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    stream = conn.get_next_available_stream_id()
    head = [(":method", method), (":path", path), (":scheme", "http"),
            (":authority", "test.example:8080")]
    if body:
        head.append(("content-length", str(len(body))))
    conn.send_headers(stream, head, end_stream=not body)
    fields, answer, sent = [], b"", 0
    while True:
        sent = h2_send_body(conn, stream, body, sent)
        sock.sendall(conn.data_to_send())
        data = sock.recv(65536)
        if not data:
            fail(f"h2 {path}: connection closed before the stream ended")
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                fields = [(k.decode(), v.decode()) for k, v in event.headers]
            elif isinstance(event, h2.events.DataReceived):
                answer += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, stream)
            elif isinstance(event, h2.events.StreamReset):
                fail(f"h2 {path}: stream reset ({event.error_code})")
            elif isinstance(event, h2.events.StreamEnded):
                sock.close()
                return int(dict(fields)[":status"]), fields, answer


def check_h2c(server, backend, root, fpm):
    proc, port = start_server(server, backend, ["--root", root, "--fastcgi-pass", "unix:" + fpm.sock,
                                                "--h2c"])
    try:
        status, _, body = h2_request(port, "/env.php?h=2")
        v = variables(body)
        if status != 200 or v.get("SERVER_PROTOCOL") != "HTTP/2.0" or v.get("QUERY_STRING") != "h=2":
            fail(f"{backend}: h2c env.php: {status} {v.get('SERVER_PROTOCOL')!r}")
        status, fields, body = h2_request(port, "/headers.php")
        cookies = [v for k, v in fields if k == "set-cookie"]
        if status != 418 or body != b"teapot" or len(cookies) != 2:
            fail(f"{backend}: h2c headers.php: {status} {fields} {body!r}")
        status, _, body = h2_request(port, "/big.php?mb=4")
        if status != 200 or len(body) != 4 << 20:
            fail(f"{backend}: h2c big.php: {status} {len(body)} bytes")
        # Streamed to php-fpm as the stream's DATA comes (the router's
        # kStreamedBody over HTTP/2), windows granted as FCGI_STDIN drains.
        upload = os.urandom(8 * 1024 * 1024 + 3)
        status, _, body = h2_request(port, "/post.php", "POST", upload)
        if status != 200 or body.decode() != f"{len(upload)} {hashlib.md5(upload).hexdigest()}":
            fail(f"{backend}: h2c POST: {status} {body[:200]!r}")
    finally:
        proc.kill()
        proc.wait()


def check_killed(backend, port, fpm):
    sock = connect(port)
    sock.sendall(b"GET /ticker.php HTTP/1.1\r\nHost: t\r\n\r\n")
    status, fields, rest = read_head(sock)
    if status != 200 or dict(fields).get("transfer-encoding") != "chunked":
        fail(f"{backend}: ticker.php: {status} {fields}")
    killed = [False]

    def sink(_):
        if not killed[0]:
            killed[0] = True
            fpm.kill()

    total, _, whole = read_body(sock, fields, rest, sink)
    sock.close()
    if whole or not killed[0]:
        fail(f"{backend}: php-fpm killed mid-answer, yet the answer ended properly ({total} bytes)")
    sock = connect(port)
    status, _, _ = request(sock, "/env.php")
    sock.close()
    if status != 502:
        fail(f"{backend}: after php-fpm died: {status}, expected 502")


UPLOAD_MIB = 200
# The server's resident memory may grow by this much while it streams
# UPLOAD_MIB to the application: stdinHighWater twice, a read, buffers.
UPLOAD_RSS_LIMIT = 32 * 1024 * 1024


def send_body(sock, total, seed, watch=None, stuck_after=None, digest=None):
    """Sends `total` pseudo-random bytes; returns (md5, bytes sent). With
    `stuck_after` (seconds), stops early once the socket has taken nothing
    for that long (the server holds the client back)."""
    block = hashlib.sha256(seed).digest() * (1 << 15)  # 1 MiB
    digest = digest or hashlib.md5()
    sent = 0
    sock.setblocking(False)
    try:
        while sent < total:
            piece = memoryview(block)[:min(len(block), total - sent)]
            offset = 0
            while offset < len(piece):
                wait = stuck_after if stuck_after is not None else IO_TIMEOUT
                _, writable, _ = select.select([], [sock], [], wait)
                if not writable:
                    if stuck_after is not None:
                        digest.update(piece[:offset])
                        return digest, sent + offset
                    fail(f"upload: the server took nothing for {IO_TIMEOUT} s")
                try:
                    offset += sock.send(piece[offset:])
                except BlockingIOError:
                    continue
            digest.update(piece)
            sent += len(piece)
            if watch:
                watch(sent)
    finally:
        sock.setblocking(True)
        sock.settimeout(IO_TIMEOUT)
    return digest, sent


def upload_head(path, total):
    return (f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\n"
            f"Content-Length: {total}\r\n\r\n").encode()


def check_uploads(server, backend, root, pid_of, port):
    """A 200 MiB POST, then a script that sleeps before reading."""
    pid = pid_of()
    sock = connect(port)
    total = UPLOAD_MIB << 20
    sock.sendall(upload_head("/upload.php", total))
    base = rss(pid)
    peak = [base]

    def watch(sent):
        if sent % (4 << 20) == 0:
            peak[0] = max(peak[0], rss(pid))

    digest, _ = send_body(sock, total, b"200", watch)
    status, fields, rest = read_head(sock)
    body, _, whole = read_body(sock, fields, rest)
    sock.close()
    if status != 200 or not whole or body.decode() != f"{total} {digest.hexdigest()}":
        fail(f"{backend}: {UPLOAD_MIB} MiB upload: {status} {body[:200]!r}")
    growth = peak[0] - base
    print(f"{backend}: {UPLOAD_MIB} MiB upload to php-fpm: server RSS {base >> 20} MiB -> "
          f"peak {peak[0] >> 20} MiB")
    if not SANITIZED and growth > UPLOAD_RSS_LIMIT:
        fail(f"{backend}: server RSS grew by {growth >> 20} MiB during a {UPLOAD_MIB} MiB upload")

    # PHP sleeps 2 s before it reads: the client is held back well short of
    # 64 MiB (socket buffers and the server's high-water marks), then done.
    sock = connect(port)
    total = 64 << 20
    sock.sendall(upload_head("/upload.php?sleep=2000", total))
    base = rss(pid)
    digest, sent = send_body(sock, total, b"64", stuck_after=0.5)
    held = rss(pid) - base
    if sent >= total:
        fail(f"{backend}: a script that sleeps before reading did not hold the client back")
    if not SANITIZED and held > UPLOAD_RSS_LIMIT:
        fail(f"{backend}: server RSS grew by {held >> 20} MiB while the application slept")
    print(f"{backend}: held back after {sent >> 20} MiB of {total >> 20} MiB")
    digest, more = send_body(sock, total - sent, b"64-rest", digest=digest)
    status, fields, rest = read_head(sock)
    body, _, whole = read_body(sock, fields, rest)
    sock.close()
    if status != 200 or not whole or body.decode() != f"{total} {digest.hexdigest()}":
        fail(f"{backend}: held-back upload: {status} {body[:200]!r} ({sent + more} sent)")


def check_client_leaving_mid_upload(backend, port):
    """A client that resets mid-upload: its upstream connection (the pool's
    only one) is closed, not handed to the next request mid-request."""
    for _ in range(2):
        sock = connect(port)
        sock.sendall(upload_head("/upload.php", 64 << 20))
        send_body(sock, 8 << 20, b"gone")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()
    sock = connect(port)
    status, _, body = request(sock, "/upload.php", "POST", b"after")
    sock.close()
    if status != 200 or body.decode() != f"5 {hashlib.md5(b'after').hexdigest()}":
        fail(f"{backend}: after clients left mid-upload: {status} {body[:200]!r}")


def check_killed_mid_upload(backend, port, fpm):
    sock = connect(port)
    total = 256 << 20
    sock.sendall(upload_head("/upload.php", total))
    killed = [False]

    def watch(sent):
        if sent >= (8 << 20) and not killed[0]:
            killed[0] = True
            fpm.kill()

    try:
        send_body(sock, total, b"kill", watch)
    except OSError:
        pass  # the server closed: it answered already
    try:
        status, _, _ = read_head(sock)
    except OSError:
        status = 0  # reset: the answer was cut off, never passed off as whole
    sock.close()
    if not killed[0] or status not in (0, 502):
        fail(f"{backend}: php-fpm killed mid-upload: {status}, expected 502")
    print(f"{backend}: php-fpm killed mid-upload: {status or 'cut off'}")


def run_uploads(server, backend, root):
    """Against a php-fpm that reads the body as it comes (no POST parsing,
    no post_max_size)."""
    directory = os.path.join(root, "uploads")
    os.mkdir(directory)
    fpm = PhpFpm(directory, 2, "php_admin_value[post_max_size] = 0\n"
                                "php_admin_flag[enable_post_data_reading] = off\n")
    proc, port = start_server(server, backend, ["--root", root, "--fastcgi-pass",
                                                "unix:" + fpm.sock, "--fastcgi-pool", "1"])
    try:
        check_uploads(server, backend, root, lambda: proc.pid, port)
        check_client_leaving_mid_upload(backend, port)
        check_killed_mid_upload(backend, port, fpm)
    finally:
        proc.kill()
        proc.wait()
        fpm.kill()


def run_backend(server, backend, certs_tool):
    root = tempfile.mkdtemp(prefix="libnet-fcgi-")
    try:
        for name, code in SCRIPTS.items():
            with open(os.path.join(root, name), "w") as f:
                f.write(code)
        fpm = PhpFpm(root, 4)
        proc, port = start_server(server, backend, ["--root", root, "--fastcgi-pass",
                                                    "unix:" + fpm.sock, "--fastcgi-pool", "2",
                                                    "--max-body", str(16 << 20)])
        try:
            check_basics(backend, port, root)
            check_slow_reader(backend, port, proc.pid)
            certs = make_certs(certs_tool, root)
            check_https(server, backend, root, fpm, certs)
            check_h2c(server, backend, root, fpm)
            check_killed(backend, port, fpm)
        finally:
            proc.kill()
            proc.wait()
            fpm.kill()
        run_uploads(server, backend, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{backend}: ok")


def make_certs(tool, root):
    directory = os.path.join(root, "certs")
    os.mkdir(directory)
    subprocess.run([sys.executable, tool, directory], check=True, stdout=subprocess.DEVNULL)
    return {"cert": os.path.join(directory, "server.pem"),
            "key": os.path.join(directory, "server.key"),
            "ca": os.path.join(directory, "ca.pem")}


SANITIZED = False


def main():
    global SANITIZED
    server, certs_tool = sys.argv[1], sys.argv[2]
    with open(server, "rb") as f:
        image = f.read()
    SANITIZED = b"__asan_init" in image or b"__tsan_init" in image
    if not os.access(PHP_FPM, os.X_OK):
        print(f"SKIP: {PHP_FPM} not installed (tools/setup.sh installs php8.2-fpm)")
        return
    for backend in ("epoll", "uring"):
        run_backend(server, backend, certs_tool)


if __name__ == "__main__":
    main()
