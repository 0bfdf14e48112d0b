#!/usr/bin/env python3
"""Memory of the echo server under peers that send and never read.

For each backend: start examples/echo's echo_server (pinned to CPU 0, on a
free loopback port below 32768, its default --max-queued-output of 1 MiB), record its
VmRSS, connect PEERS clients that send as fast as they can for --seconds and
never read, sample VmRSS every 100 ms for the peak, close the peers, and
sample until RSS settles (bounded) for the level after. Prints one line per
run and, with --reps, medians:

  RESULT backend=uring peers=60 rss_before_kib=.. rss_peak_kib=..
         per_peer_kib=.. rss_after_kib=.. after_minus_before_kib=..

per_peer = (peak - before) / peers. With --reader-check a normal client then
checks that the server still echoes (exit 1 if not). The server is always
stopped (SIGTERM, then SIGKILL). Loopback only; every loop is bounded.

Two options shape the peers: --bytes-per-peer N makes each peer stop sending
after N bytes (0, the default: no limit; it still stays connected, unread,
until --seconds are up), and --client-rcvbuf N sets SO_RCVBUF on each peer's
socket before it connects (the kernel doubles it, and the window it offers
follows), so that the echo backs up in the server after a few KiB instead of
after the default receive buffer. The measurement "40 peers each sending
8 MiB with a 4 KiB client receive buffer" is

  slow_reader_rss.py --peers 40 --bytes-per-peer 8388608 --client-rcvbuf 4096

usage: slow_reader_rss.py [--server PATH] [--backends epoll,uring] [--peers N]
                          [--seconds S] [--bytes-per-peer N] [--client-rcvbuf N]
                          [--reps N] [--reader-check]
"""

import argparse
import os
import select
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib  # noqa: E402  (bench/benchlib.py)

CHUNK = b"x" * 65536
SETTLE_SECONDS = 10.0


def start_server(path, backend):
    return benchlib.start_server([path, "--address", "127.0.0.1", "--port",
                                  str(benchlib.free_port()), "--backend", backend])


def echoes(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"still there?\n")
        got = b""
        while len(got) < 13:
            chunk = s.recv(64)
            if not chunk:
                return False
            got += chunk
        return got == b"still there?\n"


def connect_peer(port, rcvbuf):
    """A non-blocking peer socket; SO_RCVBUF, if asked, is set before connect
    so that the window offered in the handshake already follows it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(5)
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        return s
    except BaseException:
        s.close()
        raise


def run_once(args, backend):
    proc, port = start_server(args.server, backend)
    try:
        pid = proc.pid
        # taskset execs the server: same pid.
        time.sleep(0.2)  # let start-up allocations land before the baseline
        before = benchlib.rss_kib(pid)
        peers = []
        for _ in range(args.peers):
            peers.append(connect_peer(port, args.client_rcvbuf))
        # Bytes each peer may still send (None: no limit).
        left = {s: (args.bytes_per_peer or None) for s in peers}
        peak = before
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            sending = [s for s in peers if left[s] is None or left[s] > 0]
            if sending:
                _, writable, _ = select.select([], sending, [], 0.1)
            else:
                writable = []
                time.sleep(0.1)
            for s in writable:
                chunk = CHUNK if left[s] is None else CHUNK[:min(len(CHUNK), left[s])]
                try:
                    sent = s.send(chunk)
                except (BlockingIOError, InterruptedError):
                    continue
                if left[s] is not None:
                    left[s] -= sent
            peak = max(peak, benchlib.rss_kib(pid))
        for s in peers:
            s.close()
        # Settled: no change of more than 256 KiB over a second, or the bound.
        after = benchlib.rss_kib(pid)
        settle_deadline = time.monotonic() + SETTLE_SECONDS
        last_change = time.monotonic()
        while time.monotonic() < settle_deadline:
            time.sleep(0.1)
            now = benchlib.rss_kib(pid)
            if abs(now - after) > 256:
                last_change = time.monotonic()
            after = now
            if time.monotonic() - last_change >= 3.0:
                break
        ok = echoes(port) if args.reader_check else True
    finally:
        benchlib.stop_process(proc)
    result = {
        "backend": backend, "peers": args.peers, "rss_before_kib": before,
        "rss_peak_kib": peak, "per_peer_kib": (peak - before) // args.peers,
        "rss_after_kib": after, "after_minus_before_kib": after - before,
    }
    return result, ok


def line(result, prefix="RESULT"):
    return prefix + " " + " ".join("%s=%s" % (k, v) for k, v in result.items())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default="bazel-bin/examples/echo/echo_server")
    ap.add_argument("--backends", default="epoll,uring")
    ap.add_argument("--peers", type=int, default=60)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--bytes-per-peer", type=int, default=0,
                    help="each peer stops sending after this many bytes (0: no limit)")
    ap.add_argument("--client-rcvbuf", type=int, default=0,
                    help="SO_RCVBUF of each peer, set before connect (0: the default)")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--reader-check", action="store_true")
    args = ap.parse_args()
    if not os.access(args.server, os.X_OK):
        ap.error("%s is not an executable (bazel build --config=opt //examples/echo:all)" %
                 args.server)
    if not 1 <= args.peers <= 5000 or not 0 < args.seconds <= 600 or not 1 <= args.reps <= 50:
        ap.error("--peers 1..5000, --seconds up to 600, --reps 1..50")
    if args.bytes_per_peer < 0 or not 0 <= args.client_rcvbuf <= 1 << 30:
        ap.error("--bytes-per-peer >= 0, --client-rcvbuf 0..2^30")
    backends = [b for b in args.backends.split(",") if b]
    runs = {b: [] for b in backends}
    failed = False
    for _ in range(args.reps):  # interleaved, so both see the same machine
        for backend in backends:
            result, ok = run_once(args, backend)
            runs[backend].append(result)
            print(line(result), flush=True)
            if not ok:
                print("FAIL: %s server stopped echoing after the peers left" % backend,
                      file=sys.stderr)
                failed = True
    if args.reps > 1:
        for backend in backends:
            keys = [k for k in runs[backend][0] if k.endswith("_kib")]
            median = dict(backend=backend, peers=args.peers)
            for k in keys:
                median[k] = int(statistics.median(r[k] for r in runs[backend]))
            print(line(median, "MEDIAN"), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
