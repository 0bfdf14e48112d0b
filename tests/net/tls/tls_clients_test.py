#!/usr/bin/env python3
"""Real TLS clients against the example servers, on each backend.

openssl s_client and curl (clients no one here wrote) against echo_server and
http_server with --tls-cert/--tls-key, using certificates made at test time
by make_test_pki:
  - s_client echoes 2 MiB of random bytes through echo_server, every byte
    checked, and ends with close_notify;
  - curl --cacert gets /hello and a 3 MiB static file (checked byte for byte)
    over one keep-alive connection, with ALPN http/1.1;
  - curl without the CA refuses the server (exit 60, certificate problem);
  - TLS 1.0 and 1.1 ClientHellos are refused with a protocol_version alert,
    TLS 1.2 and 1.3 are served;
  - a TLS 1.2 renegotiation attempt is refused ("no renegotiation");
  - a session saved by one s_client is resumed by the next (tickets);
  - the server still answers after all of it, and exits 0 on SIGTERM.

usage: tls_clients_test.py MAKE_TEST_PKI ECHO_SERVER HTTP_SERVER
"""

import os
import re
import signal
import subprocess
import sys
import threading

TMP = os.environ.get("TEST_TMPDIR", "/tmp")
TIMEOUT = 60


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def start(argv):
    log = open(os.path.join(TMP, os.path.basename(argv[0]) + ".log"), "a")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
    for line in proc.stdout:
        m = re.search(r"listening on \S+:(\d+)$", line.strip())
        if m:
            return proc, int(m.group(1))
    fail("%s did not start" % argv[0])


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(TIMEOUT)
    if rc != 0:
        fail("server exited %d on SIGTERM" % rc)


def s_client(port, args, stdin=b"", timeout=TIMEOUT):
    argv = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port] + args
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout)


def echo_through_s_client(port, pki):
    data = os.urandom(2 * 1024 * 1024)
    proc = subprocess.Popen(
        ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-CAfile", pki + "/ca.pem",
         "-verify_return_error", "-quiet", "-no_ign_eof",
         "-nocommands"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def feed():
        proc.stdin.write(data)
        proc.stdin.flush()

    writer = threading.Thread(target=feed)
    writer.start()
    got = bytearray()
    timer = threading.Timer(TIMEOUT, proc.kill)
    timer.start()
    while len(got) < len(data):
        chunk = proc.stdout.read1(65536)
        if not chunk:
            break
        got += chunk
    timer.cancel()
    writer.join()
    proc.stdin.close()  # s_client sends close_notify and exits
    rc = proc.wait(TIMEOUT)
    if rc != 0:
        fail("s_client exited %d after the echo" % rc)
    if bytes(got) != data:
        fail("s_client echo: %d of %d bytes came back intact" % (len(got), len(data)))


def check_echo(backend, tools, pki):
    proc, port = start([tools["echo"], "--address", "127.0.0.1", "--port", "0",
                        "--backend", backend, "--tls-cert", pki + "/server.pem",
                        "--tls-key", pki + "/server.key"])
    try:
        echo_through_s_client(port, pki)
    finally:
        stop(proc)


def curl(args):
    return subprocess.run(["curl", "-sS", "--max-time", str(TIMEOUT)] + args,
                          capture_output=True, timeout=TIMEOUT + 5)


def check_http(backend, tools, pki):
    root = os.path.join(TMP, "tls-root-" + backend)
    os.makedirs(root, exist_ok=True)
    contents = os.urandom(3 * 1024 * 1024)
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.write(contents)
    proc, port = start([tools["http"], "--address", "127.0.0.1", "--port", "0",
                        "--backend", backend, "--root", root,
                        "--tls-cert", pki + "/server.pem", "--tls-key", pki + "/server.key"])
    base = "https://localhost:%d" % port
    try:
        out_file = os.path.join(TMP, "big.out")
        # HTTP/1.1 over TLS (the server offers h2 first; tests/net/http2
        # covers HTTP/2 over TLS).
        r = curl(["-v", "--http1.1", "--cacert", pki + "/ca.pem", base + "/hello", "-o", "-",
                  base + "/big.bin", "-o", out_file])
        if r.returncode != 0:
            fail("curl --cacert failed: " + r.stderr.decode(errors="replace")[-2000:])
        if not r.stdout.startswith(b"hello world\n"):
            fail("curl /hello: %r" % r.stdout[:100])
        with open(out_file, "rb") as f:
            if f.read() != contents:
                fail("curl: the 3 MiB static file differs")
        verbose = r.stderr.decode(errors="replace")
        if "ALPN: server accepted http/1.1" not in verbose:
            fail("no ALPN http/1.1 in curl's handshake:\n" + verbose[-2000:])
        if "Re-using existing connection" not in verbose:
            fail("curl did not keep the connection alive:\n" + verbose[-2000:])

        r = curl([base + "/hello"])
        if r.returncode != 60:
            fail("curl without the CA: exit %d, expected 60 (untrusted)" % r.returncode)

        for version in ("-tls1", "-tls1_1"):
            r = s_client(port, [version, "-cipher", "DEFAULT@SECLEVEL=0"], b"")
            text = (r.stdout + r.stderr).decode(errors="replace")
            if r.returncode == 0 or "alert protocol version" not in text:
                fail("%s was not refused with protocol_version:\n%s" % (version, text[-1500:]))
        request = b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        for version in ("-tls1_2", "-tls1_3"):
            r = s_client(port, [version, "-CAfile", pki + "/ca.pem", "-verify_return_error",
                                "-ign_eof"], request)
            if b"hello world" not in r.stdout:
                fail("%s was not served:\n%s" % (version, r.stdout.decode(errors="replace")[-1500:]))

        # "R" at the start of a line makes s_client renegotiate (TLS 1.2).
        r = s_client(port, ["-tls1_2", "-CAfile", pki + "/ca.pem"], b"R\n")
        text = (r.stdout + r.stderr).decode(errors="replace")
        if "RENEGOTIATING" not in text or "no renegotiation" not in text:
            fail("renegotiation was not refused:\n" + text[-1500:])

        session = os.path.join(TMP, "session-%s.pem" % backend)
        r = s_client(port, ["-CAfile", pki + "/ca.pem", "-sess_out", session, "-ign_eof"],
                     request)
        if not re.search(rb"^New, TLSv1\.3", r.stdout, re.M):
            fail("first session not new:\n" + r.stdout.decode(errors="replace")[-1500:])
        r = s_client(port, ["-CAfile", pki + "/ca.pem", "-sess_in", session, "-ign_eof"],
                     request)
        if not re.search(rb"^Reused, TLSv1\.3", r.stdout, re.M):
            fail("session not resumed:\n" + r.stdout.decode(errors="replace")[-1500:])

        r = curl(["--cacert", pki + "/ca.pem", base + "/hello"])
        if r.returncode != 0 or r.stdout != b"hello world\n":
            fail("the server stopped answering after the hostile clients")
    finally:
        stop(proc)


def main():
    if len(sys.argv) != 4:
        fail("usage: tls_clients_test.py MAKE_TEST_PKI ECHO_SERVER HTTP_SERVER")
    make_pki, echo, http = sys.argv[1:]
    pki = os.path.join(TMP, "pki")
    os.makedirs(pki, exist_ok=True)
    subprocess.run([make_pki, pki], check=True, timeout=TIMEOUT)
    tools = {"echo": echo, "http": http}
    backends = os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split()
    for backend in backends:
        check_echo(backend, tools, pki)
        check_http(backend, tools, pki)
        print("ok: " + backend)


if __name__ == "__main__":
    main()
