#!/usr/bin/env python3
"""/hello latency of http_server while 8 clients scrape /metrics at once.

The scenario of the issue: http_server --threads 4 --metrics-path /metrics;
8 scrapers in a loop (wrk -t1 -c8 on /metrics: 8 connections, each asking
again the moment it has its answer) while wrk -t1 -c4 --latency asks /hello.
Each run measures /hello twice on a fresh server: alone, then with the
scrapers going (started a second before, ending a second after). Binaries
(--server, and --base: a build to compare, e.g. one from before a change)
and backends are interleaved run by run. Prints per binary and backend the
medians over the runs of /hello's p50 and p99 (ms) alone and with scrapers,
and the scrapes answered per second; then one machine-readable line each:

  RESULT server=new backend=epoll runs=3 p50_idle_ms=0.27 p50_scraped_ms=0.31 ...

  bazel build --config=opt //examples/http:http_server
  bench/metrics/run_scrape_latency.py --server bazel-bin/examples/http/http_server \\
      --base /tmp/base/http_server --runs 3

Latency is what wrk reports (its coordinated-omission-free mode is not in
Debian's wrk 4.1): a loop that stalls shows in the percentiles directly.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import benchlib  # noqa: E402  (bench/benchlib.py: the "listening on" line)

THREADS = 4
SCRAPERS = 8
HELLO_CONNECTIONS = 4
UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def wrk(url, connections, seconds, latency):
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", url]
    if latency:
        argv.insert(1, "--latency")
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def percentile_ms(report, pct):
    m = re.search(rf"^\s+{pct}%\s+([0-9.]+)(us|ms|s)\s*$", report, re.M)
    if not m:
        raise RuntimeError(f"no {pct}% line in wrk's report:\n{report}")
    return float(m.group(1)) * UNIT_MS[m.group(2)]


def requests_per_s(report):
    m = re.search(r"Requests/sec:\s+([0-9.]+)", report)
    return float(m.group(1)) if m else 0.0


def one_run(server, backend, seconds):
    proc, port = benchlib.start_server(
        [server, "--address", "127.0.0.1", "--port", "0", "--backend", backend, "--threads",
         str(THREADS), "--metrics-path", "/metrics"], cpu=None)
    try:
        hello = f"http://127.0.0.1:{port}/hello"
        idle = wrk(hello, HELLO_CONNECTIONS, seconds, True).communicate()[0]
        scrapers = wrk(f"http://127.0.0.1:{port}/metrics", SCRAPERS, seconds + 2, False)
        time.sleep(1)  # the scrapers are going: a point in the load, not a wait for an event
        scraped = wrk(hello, HELLO_CONNECTIONS, seconds, True).communicate()[0]
        scrapes = scrapers.communicate()[0]
    finally:
        benchlib.stop_process(proc)
    return {"p50_idle_ms": percentile_ms(idle, 50), "p99_idle_ms": percentile_ms(idle, 99),
            "p50_scraped_ms": percentile_ms(scraped, 50),
            "p99_scraped_ms": percentile_ms(scraped, 99),
            "scrapes_per_s": requests_per_s(scrapes)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True, help="an optimized http_server")
    parser.add_argument("--base", help="another http_server to compare (e.g. before a change)")
    parser.add_argument("--backends", default="epoll,uring")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5, help="each /hello measurement")
    args = parser.parse_args()
    servers = [("new", args.server)] + ([("base", args.base)] if args.base else [])
    results = {}
    for run in range(args.runs):
        for name, binary in (servers if run % 2 == 0 else servers[::-1]):
            for backend in args.backends.split(","):
                r = one_run(binary, backend, args.seconds)
                benchlib.log(f"run {run + 1} {name} {backend}: {r}")
                results.setdefault((name, backend), []).append(r)
    print(f"| server | backend | /hello p50 alone | p50 with {SCRAPERS} scrapers | p99 alone | "
          "p99 with scrapers | scrapes/s |")
    print("|---|---|---|---|---|---|---|")
    for (name, backend), runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"| {name} | {backend} | {med['p50_idle_ms']:.2f} ms | {med['p50_scraped_ms']:.2f} ms"
              f" | {med['p99_idle_ms']:.2f} ms | {med['p99_scraped_ms']:.2f} ms"
              f" | {med['scrapes_per_s']:.0f} |")
        fields = " ".join(f"{k}={v:.3f}" for k, v in med.items())
        print(f"RESULT server={name} backend={backend} runs={len(runs)} {fields}")


if __name__ == "__main__":
    main()
