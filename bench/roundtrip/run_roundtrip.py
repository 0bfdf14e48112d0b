#!/usr/bin/env python3
"""Request/response round trips against libnet's echo examples.

A client sends a message, waits for all of it to come back, and repeats
(bench/roundtrip/roundtrip_client.cc): the pattern of an RPC or a simple
protocol, where a reply held back by Nagle's algorithm waiting for a delayed
ACK costs 40 ms. Every cell runs echo_server and coro_echo_server on both
backends with default socket options on the server; the client runs with
Nagle on and off (--nodelay), back to back and with a 1 ms pause between
round trips. Server on CPU 0, client on CPU 1.

Prints a markdown table per pause: median round trip (us), p99, the round
trips over 30 ms, and the time for all rounds; medians of --runs runs.

    bench/roundtrip/run_roundtrip.py [--runs 3] [--rounds 300] [--pause-rounds 1000]
        [--sizes 100,500,1400,8000,16384,40000] [--bindir DIR] [--baseline-bindir DIR]

--baseline-bindir DIR adds, in the same runs, the echo_server and
coro_echo_server found in DIR (an earlier build) as columns marked @base.
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import benchlib  # noqa: E402  (bench/benchlib.py)

SERVERS = ("echo_server", "coro_echo_server")
BACKENDS = ("epoll", "uring")


def build():
    subprocess.run(["bazel", "build", "--config=opt", "//examples/echo:echo_server",
                    "//examples/echo:coro_echo_server", "//bench/roundtrip:roundtrip_client"],
                   cwd=ROOT, check=True)
    return {
        "echo_server": os.path.join(ROOT, "bazel-bin/examples/echo/echo_server"),
        "coro_echo_server": os.path.join(ROOT, "bazel-bin/examples/echo/coro_echo_server"),
        "client": os.path.join(ROOT, "bazel-bin/bench/roundtrip/roundtrip_client"),
    }


def start_server(binary, backend):
    # Below the ephemeral range (32768+), so no client socket can take it.
    port = benchlib.free_port(21100, 21400)
    proc = subprocess.Popen(
        benchlib.pinned_if_possible(0, [binary, "--address", "127.0.0.1", "--port", str(port),
                                        "--backend", backend]),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"{binary} --backend {backend} did not start")


def run_client(client, port, size, rounds, nodelay, pause_us):
    argv = [client, "127.0.0.1", str(port), str(size), str(rounds), "--pause-us", str(pause_us)]
    if nodelay:
        argv.append("--nodelay")
    out = subprocess.run(benchlib.pinned_if_possible(1, argv), capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"roundtrip_client failed: {out.stderr.strip()}")
    line = next(l for l in out.stdout.splitlines() if l.startswith("RESULT "))
    return {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", line)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--pause-rounds", type=int, default=1000)
    ap.add_argument("--sizes", default="100,500,1400,8000,16384,40000")
    ap.add_argument("--bindir", help="take the binaries from here instead of building")
    ap.add_argument("--baseline-bindir", help="also run this earlier build's servers (@base)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.bindir:
        bins = {name: os.path.join(args.bindir, name) for name in SERVERS}
        bins["client"] = os.path.join(args.bindir, "roundtrip_client")
    else:
        bins = build()

    servers = [(name, bins[name]) for name in SERVERS]
    if args.baseline_bindir:
        servers += [(name + "@base", os.path.join(args.baseline_bindir, name)) for name in SERVERS]
    # results[(pause, size, nodelay, server, backend)] = list of runs
    results = {}
    for run in range(args.runs):
        for server, binary in servers:
            for backend in BACKENDS:
                proc, port = start_server(binary, backend)
                try:
                    for pause in (0, 1000):
                        rounds = args.pause_rounds if pause else args.rounds
                        for size in sizes:
                            for nodelay in (False, True):
                                r = run_client(bins["client"], port, size, rounds, nodelay, pause)
                                results.setdefault((pause, size, nodelay, server, backend),
                                                   []).append(r)
                finally:
                    proc.terminate()
                    proc.wait(timeout=10)
        print(f"run {run + 1} of {args.runs} done", file=sys.stderr)

    cols = [(s, b) for s, _ in servers for b in BACKENDS]
    for pause in (0, 1000):
        rounds = args.pause_rounds if pause else args.rounds
        print(f"\n### {rounds} round trips, {'1 ms pause between them' if pause else 'back to back'}"
              f" (median of {args.runs} runs: p50 us / p99 us / round trips over 30 ms"
              f"{'' if pause else ' / total s'})\n")
        print("| size | client | " + " | ".join(f"{s} {b}" for s, b in cols) + " |")
        print("|---|---|" + "---|" * len(cols))
        for size in sizes:
            for nodelay in (False, True):
                cells = []
                for server, backend in cols:
                    runs = results[(pause, size, nodelay, server, backend)]
                    med = lambda k: statistics.median(r[k] for r in runs)
                    cell = f"{med('p50_us'):.0f} / {med('p99_us'):.0f} / {med('over_30ms'):.0f}"
                    if not pause:
                        cell += f" / {med('total_s'):.3f}"
                    cells.append(cell)
                client = "NODELAY" if nodelay else "Nagle"
                print(f"| {size} | {client} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
