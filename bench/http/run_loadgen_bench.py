#!/usr/bin/env python3
"""libnet's HTTP load generator (bench/http:loadgen) against wrk, on nginx.

Both clients load the same nginx (one worker pinned to CPU 0, set up as in
run_http_bench.py: nginx.conf.in and its web root), each pinned to CPU 1 with
one thread: keep-alive GET /hello (a 12-byte body) over --conns connections
(default 100) for --seconds. Each repetition runs every client once against
a fresh nginx, the clients' order rotating between repetitions.

Reported per client, median of --runs (min-max): requests/s, the client's own
CPU µs per request (its utime+stime from os.wait4's rusage over its whole
run, divided by the requests it completed), p99 latency, errors, and the
ratios loadgen/wrk of requests/s and of CPU per request (CPU below 1:
loadgen is cheaper). Then one pool-reuse run, `loadgen -c 10 -n 10000 URL`
per backend, showing the connections it opened and the requests that reused
one.

Clients (--clients): wrk, loadgen-epoll, loadgen-uring (loadgen --backend
epoll|uring).

  bench/http/run_loadgen_bench.py                 # 10 s x 3 runs (about 2 minutes)
  bench/http/run_loadgen_bench.py --quick         # 2 s x 1 run, a smoke run
  bench/http/run_loadgen_bench.py --clients wrk,loadgen-uring --runs 5
  bench/http/run_loadgen_bench.py --no-build --bindir /path/to/bazel-bin

Without --no-build it runs `bazel build --config=opt //bench/http:loadgen`
and takes it from that configuration's bazel-bin; with --no-build from
--bindir (default: the worktree's bazel-bin). By default it runs in a
private network namespace; --no-netns uses the machine's loopback. Needs
nginx (nginx-light) and wrk. Output: progress on stderr, markdown on stdout.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_http_bench as hb  # noqa: E402  (bench/http/run_http_bench.py: nginx, wrk output)
import benchlib  # noqa: E402  (bench/benchlib.py, on sys.path through run_http_bench)
from benchlib import log  # noqa: E402

ROOT = hb.ROOT
PROG = "run_loadgen_bench"
SERVER_CPU = 0
CLIENT_CPU = 1
NETNS_ENV = "LIBNET_LOADGEN_BENCH_NETNS"
LOADGEN = "bench/http/loadgen"
CLIENTS = ["wrk", "loadgen-epoll", "loadgen-uring"]
PATH = "/hello"


class RunError(RuntimeError):
    pass


def parse_args():
    p = benchlib.arg_parser(__doc__)
    p.add_argument("--clients", default=",".join(CLIENTS))
    p.add_argument("--conns", type=int, default=100)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--pool-conns", type=int, default=10, help="loadgen -c of the pool run")
    p.add_argument("--pool-requests", type=int, default=10000, help="loadgen -n of the pool run")
    p.add_argument("--quick", action="store_true", help="2 s x 1 run")
    p.add_argument("--bindir", default=os.path.join(ROOT, "bazel-bin"),
                   help="where loadgen is with --no-build (default: bazel-bin)")
    p.add_argument("--no-build", action="store_true", help="use --bindir as it is")
    p.add_argument("--no-netns", action="store_true", help="use the machine's loopback")
    args = p.parse_args()
    if args.quick:
        args.seconds, args.runs = 2, 1
    args.clients = [c for c in args.clients.split(",") if c]
    unknown = [c for c in args.clients if c not in CLIENTS]
    if unknown or not args.clients:
        p.error("--clients: unknown %s (known: %s)" % (",".join(unknown), ",".join(CLIENTS)))
    if min(args.conns, args.seconds, args.runs, args.pool_conns, args.pool_requests) < 1:
        p.error("counts and durations must be positive")
    return args


def find_programs(args, tmp):
    """{"wrk", "nginx", "loadgen"} -> path; exits if wrk or nginx is missing.
    Without loadgen (not built yet) only wrk is measured."""
    tools = {"wrk": benchlib.find_tool("wrk"), "nginx": benchlib.find_tool("nginx")}
    missing = [pkg for name, pkg in (("wrk", "wrk"), ("nginx", "nginx-light"))
               if tools[name] is None]
    hb.exit_if_missing(PROG, missing)
    if any(c.startswith("loadgen") for c in args.clients):
        bindir = args.bindir
        if not args.no_build:
            bindir = benchlib.bazel_build_opt(ROOT, ["//bench/http:loadgen"])
        copied = benchlib.copy_binaries(bindir or args.bindir, {"loadgen": LOADGEN}, tmp)
        if "loadgen" in copied:
            tools["loadgen"] = copied["loadgen"]
        else:
            log("warning: no %s under %s: measuring wrk only" % (LOADGEN, bindir or args.bindir))
            args.clients = [c for c in args.clients if not c.startswith("loadgen")]
    if not args.clients:
        sys.exit("%s: no client to measure" % PROG)
    return tools


def nginx_context(tmp, tools):
    """What run_http_bench.Server needs to start nginx (one worker) on the
    web root run_http_bench.py serves."""
    ctx = {"tmp": tmp, "nginx": tools["nginx"], "threads": 0, "server_cpus": str(SERVER_CPU),
           "nginx_dir": os.path.join(tmp, "nginx")}
    os.makedirs(ctx["nginx_dir"], exist_ok=True)
    with open(os.path.join(HERE, "nginx.conf.in")) as f:
        ctx["nginx_template"] = f.read()
    ctx["www"], _ = hb.make_www(ctx)
    return ctx


def run_client(argv, limit, out_path):
    """Runs argv pinned to CLIENT_CPU; returns (exit status, stdout, its CPU
    seconds from wait4's rusage)."""
    with open(out_path, "w") as out:
        proc = subprocess.Popen(benchlib.pinned(CLIENT_CPU, argv), stdout=out,
                                stderr=subprocess.STDOUT)
    killer = threading.Timer(limit, lambda: proc.send_signal(signal.SIGKILL))
    killer.start()
    try:
        # taskset execs the client: the rusage is the client's own.
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        killer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path, errors="replace") as f:
        text = f.read()
    return proc.returncode, text, usage.ru_utime + usage.ru_stime


def parse_loadgen(text):
    m = re.search(r"requests: (\d+)\s+seconds: ([\d.]+)\s+requests/s: ([\d.]+)", text)
    lat = re.search(r"latency_us: p50 ([\d.]+)\s+p90 ([\d.]+)\s+p99 ([\d.]+)\s+max ([\d.]+)",
                    text)
    err = re.search(r"errors: (\d+)\s+connections_opened: (\d+)\s+reused: (\d+)", text)
    if not (m and lat and err):
        raise RunError("unexpected loadgen output: %s" % text[-400:])
    return dict(requests=int(m.group(1)), rps=float(m.group(3)), p50_ms=float(lat.group(1)) / 1e3,
                p99_ms=float(lat.group(3)) / 1e3, errors=int(err.group(1)),
                opened=int(err.group(2)), reused=int(err.group(3)))


def client_argv(tools, client, args, url):
    if client == "wrk":
        return [tools["wrk"], "-t1", "-c%d" % args.conns, "-d%ds" % args.seconds, "--latency",
                url]
    return [tools["loadgen"], "-c", str(args.conns), "-d", str(args.seconds), "-t", "1",
            "--backend", client.split("-")[1], url]


def run_once(ctx, tools, args, client):
    server = hb.Server("nginx", ctx, benchlib.free_port())
    try:
        server.start()
        url = "http://127.0.0.1:%d%s" % (server.port, PATH)
        status, text, cpu_s = run_client(client_argv(tools, client, args, url),
                                         args.seconds + 60, os.path.join(ctx["tmp"], "client.out"))
    except hb.RunError as e:
        raise RunError(str(e))
    finally:
        server.stop()
    if status != 0:
        raise RunError("%s exited %d: %s" % (client, status, text[-400:]))
    try:
        r = hb.parse_wrk(text) if client == "wrk" else parse_loadgen(text)
    except hb.RunError as e:
        raise RunError(str(e))
    r["cpu_us"] = cpu_s * 1e6 / r["requests"] if r["requests"] else float("nan")
    return r


def run_all(ctx, tools, args):
    results = {}
    for _, _, client, done, total in benchlib.rotated_runs(args.runs, [None], args.clients):
        try:
            r = run_once(ctx, tools, args, client)
        except RunError as e:
            log("[%d/%d] %s: FAILED: %s" % (done, total, client, e))
            continue
        results.setdefault(client, []).append(r)
        log("[%d/%d] %s: %.0f req/s, %.2f µs client CPU/req, p99 %.2f ms, %d errors" %
            (done, total, client, r["rps"], r["cpu_us"], r["p99_ms"], r["errors"]))
    return results


def pool_runs(ctx, tools, args):
    """{backend: loadgen result} of `loadgen -c N -n M URL`, one per backend."""
    out = {}
    for client in [c for c in args.clients if c.startswith("loadgen")]:
        server = hb.Server("nginx", ctx, benchlib.free_port())
        try:
            server.start()
            url = "http://127.0.0.1:%d%s" % (server.port, PATH)
            argv = [tools["loadgen"], "-c", str(args.pool_conns), "-n", str(args.pool_requests),
                    "--backend", client.split("-")[1], url]
            status, text, _ = run_client(argv, 120, os.path.join(ctx["tmp"], "pool.out"))
            out[client] = parse_loadgen(text) if status == 0 else None
            if status != 0:
                log("pool run %s: loadgen exited %d: %s" % (client, status, text[-400:]))
        except (hb.RunError, RunError) as e:
            log("pool run %s: FAILED: %s" % (client, e))
        finally:
            server.stop()
    return out


def main_table(args, results):
    wrk = results.get("wrk", [])
    header = ["client", "requests/s", "client CPU µs/req", "p99 ms", "errors",
              "req/s vs wrk", "CPU/req vs wrk"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for client in args.clients:
        runs = results.get(client, [])
        row = [client, benchlib.median_cell([r["rps"] for r in runs]) if runs else "fail",
               benchlib.median_cell([r["cpu_us"] for r in runs], "%.2f"),
               benchlib.median_cell([r["p99_ms"] for r in runs], "%.2f"),
               str(sum(r["errors"] for r in runs))]
        for key in ("rps", "cpu_us"):
            a, b = benchlib.median([r[key] for r in runs]), benchlib.median([r[key] for r in wrk])
            row.append("%.2f" % (a / b) if client != "wrk" and a == a and b == b and b > 0
                       else "-")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def report(args, tools, results, pools, in_netns):
    print("## HTTP load generators: libnet's loadgen vs wrk (nginx)\n")
    print("\n".join(benchlib.machine_lines("bench/http/run_loadgen_bench.py")))
    print("- wrk: %s; nginx: %s" % (
        benchlib.first_line([tools["wrk"], "--version"]).split(" Copyright")[0],
        benchlib.first_line([tools["nginx"], "-v"]).replace("nginx version: ", "")))
    print("- Method: keep-alive GET %s (12-byte body), %d connections, one client thread on "
          "CPU %d, nginx with one worker on CPU %d (a fresh one per run)%s; %d s per run, "
          "median of %d runs (min–max), clients' order rotating. Client CPU = the client's "
          "utime+stime (wait4 rusage) per completed request.\n" %
          (PATH, args.conns, CLIENT_CPU, SERVER_CPU,
           ", private network namespace" if in_netns else "", args.seconds, args.runs))
    print(main_table(args, results))
    if pools:
        print("\nPool reuse: `loadgen -c %d -n %d URL`\n" % (args.pool_conns,
                                                              args.pool_requests))
        print("| client | requests | connections_opened | reused | errors |")
        print("|---|---|---|---|---|")
        for client, r in pools.items():
            print("| %s | %s |" % (client, " | ".join(
                ["fail"] * 4 if r is None else
                [str(r["requests"]), str(r["opened"]), str(r["reused"]), str(r["errors"])])))
    print()


def main():
    args = parse_args()
    status = benchlib.reexec_in_netns(os.path.abspath(__file__), NETNS_ENV, not args.no_netns)
    if status is not None:
        return status
    benchlib.raise_nofile()
    tmp = tempfile.mkdtemp(prefix="libnet-loadgen-bench-")
    try:
        tools = find_programs(args, tmp)
        ctx = nginx_context(tmp, tools)
        results = run_all(ctx, tools, args)
        pools = pool_runs(ctx, tools, args)
        report(args, tools, results, pools, os.environ.get(NETNS_ENV) is not None)
        failed = len(results) < len(args.clients) or any(v is None for v in pools.values())
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("%s: interrupted" % PROG)
