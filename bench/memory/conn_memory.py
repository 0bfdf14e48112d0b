#!/usr/bin/env python3
"""Server memory per connection: examples/echo's echo_server under two loads.

idle:  N connections each echo one 64-byte message, then stay open and idle;
       prints the server's RSS growth per connection (and RSS once they close).
storm: pingpong_client runs S sessions of B-byte ping-pong for T seconds;
       prints the server's RSS before, during (one second before the end) and
       one second after the client has gone.

Each server binary runs on each backend (LIBNET_POLLER, so that builds without
a --backend flag can be compared too), pinned to CPU 0, the clients to CPU 1.
Run from an optimized build:

  bazel build --config=opt //examples/echo:echo_server //pingpong:pingpong_client
  ulimit -n 20000
  bench/memory/conn_memory.py --server bazel-bin/examples/echo/echo_server \\
      --client bazel-bin/pingpong/pingpong_client [--server OTHER_BUILD ...] \\
      [--idle-connections 19000] [--storm none]

Output: one line per measurement, "key=value" pairs.
"""

import argparse
import os
import resource
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib  # noqa: E402  (bench/benchlib.py)

STARTUP_TIMEOUT = 20


class Server:
    def __init__(self, binary, backend):
        self.proc, self.port = benchlib.start_server(
            [binary, "--address", "127.0.0.1", "--port", "0"], STARTUP_TIMEOUT,
            env=dict(os.environ, LIBNET_POLLER=backend))

    def rss(self):
        return benchlib.rss_kib(self.proc.pid)

    def stop(self):
        benchlib.stop_process(self.proc)


def echo_once(sock, payload):
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        data = sock.recv(len(payload) - len(got))
        if not data:
            raise RuntimeError("server closed")
        got += data
    if got != payload:
        raise RuntimeError("bad echo")


def settle():
    time.sleep(0.5)  # let the server finish what the last client step started


def idle(binary, backend, count):
    server = Server(binary, backend)
    try:
        warm = socket.create_connection(("127.0.0.1", server.port))
        echo_once(warm, b"w" * 64)
        warm.close()
        settle()
        before = server.rss()
        socks = []
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", server.port))
            s.sendall(b"x" * 64)
            socks.append(s)
        for s in socks:
            got = b""
            while len(got) < 64:
                got += s.recv(64 - len(got))
        settle()
        held = server.rss()
        for s in socks:
            s.close()
        time.sleep(1.0)
        closed = server.rss()
    finally:
        server.stop()
    print("load=idle server=%s backend=%s connections=%d rss_before_kib=%d rss_idle_kib=%d "
          "per_connection_kib=%.2f rss_after_close_kib=%d"
          % (binary, backend, count, before, held, (held - before) / count, closed), flush=True)


def storm(binary, client, backend, sessions, blocksize, seconds):
    server = Server(binary, backend)
    try:
        before = server.rss()
        proc = subprocess.Popen(
            ["taskset", "-c", "1", client, "--backend", "epoll", "127.0.0.1", str(server.port),
             "1", str(blocksize), str(sessions), str(seconds)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        during = None
        result = ""
        for line in proc.stdout:
            if line.startswith("START"):
                time.sleep(max(seconds - 1, 0.5))
                during = server.rss()
            elif line.startswith("RESULT"):
                result = line.strip()
        proc.wait()
        time.sleep(1.0)
        after = server.rss()
    finally:
        server.stop()
    mibps = [kv.split("=")[1] for kv in result.split() if kv.startswith("mibps=")]
    print("load=storm server=%s backend=%s sessions=%d blocksize=%d rss_before_kib=%d "
          "rss_during_kib=%s rss_after_kib=%d mibps=%s"
          % (binary, backend, sessions, blocksize, before, during, after,
             mibps[0] if mibps else "?"), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", action="append", required=True,
                        help="echo_server binary (repeat to compare builds)")
    parser.add_argument("--client", required=True, help="pingpong_client binary")
    parser.add_argument("--idle-connections", type=int, default=19000,
                        help="the server and this script each hold one fd per "
                             "connection: up to ~19,500 under a 20,000 fd limit")
    parser.add_argument("--storm", action="append", default=None,
                        help="SESSIONS:BLOCKSIZE:SECONDS (default 1000:16384:5, "
                             "10000:16384:6); 'none' for the idle load only")
    args = parser.parse_args()
    storms = args.storm or ["1000:16384:5", "10000:16384:6"]
    storms = [spec for spec in storms if spec != "none"]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.idle_connections + 100:
        sys.exit("raise the fd limit first (ulimit -n 20000)")
    for backend in ("epoll", "uring"):
        for binary in args.server:
            idle(binary, backend, args.idle_connections)
            for spec in storms:
                sessions, blocksize, seconds = (int(x) for x in spec.split(":"))
                storm(binary, args.client, backend, sessions, blocksize, seconds)


if __name__ == "__main__":
    main()
