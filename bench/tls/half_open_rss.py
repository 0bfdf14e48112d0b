#!/usr/bin/env python3
"""Memory of an HTTPS server under half-open TLS handshakes, and after.

For each backend: make a throw-away certificate (openssl req), start
examples/http's http_server with it (pinned to CPU 0, a free loopback port
below 32768), record its VmRSS, open CONNS connections that each send
nothing (--mode none), the first half of a ClientHello (partial), or a whole
ClientHello and nothing after (full), wait until the server has taken them
all (RSS stops growing; bounded), record VmRSS (peak), close the clients,
then sample VmRSS for --settle seconds (the level after). Prints one line per
run and, with --reps, medians:

  RESULT backend=epoll mode=partial conns=5000 rss_before_kib=..
         rss_peak_kib=.. per_conn_kib=.. rss_after_kib=.. after_minus_before_kib=..

per_conn = (peak - before) / conns. The server is always stopped (SIGTERM,
then SIGKILL). Loopback only; every loop is bounded. The handshake timeout of
the server (10 s) must not close the connections before the peak is read:
the peak is taken as soon as the server's RSS is stable.

usage: half_open_rss.py [--server PATH] [--backends epoll,uring]
                        [--mode none|partial|full] [--conns N] [--reps N]
                        [--settle S]
"""

import argparse
import os
import resource
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib  # noqa: E402  (bench/benchlib.py)


def make_certificate(directory):
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "2", "-keyout", key, "-out", cert, "-subj", "/CN=localhost"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


def client_hello():
    """A real ClientHello, as Python's OpenSSL would send it."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def start_server(path, backend, cert, key):
    return benchlib.start_server([path, "--address", "127.0.0.1", "--port",
                                  str(benchlib.free_port()), "--backend", backend, "--tls-cert",
                                  cert, "--tls-key", key])


def wait_stable(pid, limit_seconds, step=0.2, quiet=3):
    """Samples RSS until it has not changed by more than 1% for `quiet`
    samples in a row (or the limit passes); returns the last sample."""
    last, same = benchlib.rss_kib(pid), 0
    deadline = time.monotonic() + limit_seconds
    while time.monotonic() < deadline and same < quiet:
        time.sleep(step)
        now = benchlib.rss_kib(pid)
        same = same + 1 if abs(now - last) <= max(64, last // 100) else 0
        last = now
    return last


def run(args, backend, cert, key, hello):
    proc, port = start_server(args.server, backend, cert, key)
    clients = []
    try:
        time.sleep(0.5)
        before = benchlib.rss_kib(proc.pid)
        payload = {"none": b"", "partial": hello[: len(hello) // 2], "full": hello}[args.mode]
        for _ in range(args.conns):
            s = socket.create_connection(("127.0.0.1", port))
            if payload:
                s.sendall(payload)
            clients.append(s)
        peak = wait_stable(proc.pid, 5.0)
        for s in clients:
            s.close()
        clients = []
        deadline = time.monotonic() + args.settle
        after = benchlib.rss_kib(proc.pid)
        while time.monotonic() < deadline:
            time.sleep(0.25)
            after = benchlib.rss_kib(proc.pid)
        return {
            "rss_before_kib": before,
            "rss_peak_kib": peak,
            "per_conn_kib": round((peak - before) / args.conns, 2),
            "rss_after_kib": after,
            "after_minus_before_kib": after - before,
        }
    finally:
        for s in clients:
            s.close()
        benchlib.stop_process(proc)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_server = os.path.join(here, "..", "..", "bazel-bin", "examples", "http", "http_server")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=default_server)
    parser.add_argument("--backends", default="epoll,uring")
    parser.add_argument("--mode", choices=["none", "partial", "full"], default="partial")
    parser.add_argument("--conns", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--settle", type=float, default=15.0)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.conns + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < want:
        sys.exit("needs %d fds" % want)
    hello = client_hello()
    with tempfile.TemporaryDirectory() as directory:
        cert, key = make_certificate(directory)
        for backend in args.backends.split(","):
            results = []
            for _ in range(args.reps):
                r = run(args, backend, cert, key, hello)
                results.append(r)
                print("RESULT backend=%s mode=%s conns=%d %s" % (
                    backend, args.mode, args.conns,
                    " ".join("%s=%s" % kv for kv in r.items())), flush=True)
            if args.reps > 1:
                print("MEDIAN backend=%s mode=%s conns=%d %s" % (
                    backend, args.mode, args.conns,
                    " ".join("%s=%s" % (k, statistics.median(r[k] for r in results))
                             for k in results[0])), flush=True)


if __name__ == "__main__":
    main()
