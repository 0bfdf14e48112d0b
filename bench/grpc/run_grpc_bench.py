#!/usr/bin/env python3
"""Unary gRPC calls under ghz: greeter servers side by side (grpc++, grpc-go, libnet).

ghz (github.com/bojand/ghz, the client of the community grpc_bench) calls
helloworld.Greeter.SayHello with grpc_bench's string_100B request (a name of
100 bytes) for a fixed time, over C connections with C calls in flight
(`--connections C --concurrency C`), with and without TLS. Each server runs
pinned to CPU 0 (taskset), ghz pinned to CPU 1 (`--cpus 1`); a fresh server
for every run; for every repetition each (connections, TLS) cell runs every
server once, interleaved, their order rotated between repetitions. Reported
as medians over the repetitions: calls/s, p50 and p99 latency (ghz's), and the
server's CPU per call (utime + stime of /proc/PID/stat, all its threads,
before and after the run), with the ratios to the first server, and how busy
the server's and ghz's CPUs were (ghz near 100%: the client set the rate).

  bench/grpc/run_grpc_bench.py                        # all four greeters, 10 s x 3 reps
  bench/grpc/run_grpc_bench.py --quick                # 2 s x 1 rep, a smoke run
  bench/grpc/run_grpc_bench.py --nice 19 --seconds 20 --reps 5
  bench/grpc/run_grpc_bench.py --server libnet-epoll \\
      'bazel-bin/examples/grpc/greeter_server --backend epoll'

Servers are given by command line (`--server NAME COMMAND`, repeatable; the
first is the baseline of the ratios); COMMAND gets `--port 0` and, for TLS,
`--tls-cert FILE --tls-key FILE` appended, must print "listening on
ADDR:PORT" and serve helloworld.Greeter; leading VAR=VALUE words set its
environment. Without --server: grpc++ 1.51 on its callback API
(//bench/grpc:grpcpp_greeter_server), grpc-go (tools/grpc_go_greeter,
GOMAXPROCS=1) and libnet's examples/grpc/greeter_server on each backend with
one loop (--threads 0), the C++ ones built with --config=opt. ghz and the grpc-go greeter are the
versions their tools/*/go.mod pin, built by tools/go_tool.sh (the first build
needs the Go module proxy). A fresh test certificate is made for the TLS runs.
"""

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bench", "http"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import benchlib  # noqa: E402  (bench/benchlib.py)
import make_test_certs  # noqa: E402  (tools/make_test_certs.py)
import run_http_bench as hb  # noqa: E402  (bench/http/run_http_bench.py: --nice)
from benchlib import log, median  # noqa: E402

PROG = "run_grpc_bench"
PROTO = os.path.join(ROOT, "examples", "grpc", "protos", "helloworld.proto")
CALL = "helloworld.Greeter.SayHello"
# grpc_bench's string_100B: a HelloRequest whose name is 100 bytes.
REQUEST = json.dumps({"name": "x" * 100})
SERVER_CPU, CLIENT_CPU = 0, 1


def pinned_version(name, module):
    """The version of module that tools/NAME/go.mod requires."""
    with open(os.path.join(ROOT, "tools", name, "go.mod")) as f:
        for line in f:
            words = line.split()
            if module in words:
                return words[words.index(module) + 1]
    return "unknown"


def go_tool(name, package):
    """The binary tools/go_tool.sh builds (or finds built) for tools/NAME."""
    done = subprocess.run([os.path.join(ROOT, "tools", "go_tool.sh"), name, package],
                          cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit("%s: tools/go_tool.sh %s %s failed" % (PROG, name, package))
    return done.stdout.strip()


def default_servers(tmp):
    """[(name, command)] of grpc++'s, grpc-go's and libnet's greeters (libnet
    on each backend, one loop), built now."""
    targets = {"grpcpp_greeter_server": "bench/grpc/grpcpp_greeter_server",
               "greeter_server": "examples/grpc/greeter_server"}
    bindir = benchlib.bazel_build_opt(ROOT, ["//" + os.path.dirname(rel) + ":" + name
                                             for name, rel in targets.items()])
    if bindir is None:
        sys.exit("%s: bazel build --config=opt of the greeters failed" % PROG)
    binaries = benchlib.copy_binaries(bindir, targets, tmp)
    go = go_tool("grpc_go_greeter", "libnet/tools/grpc_go_greeter")
    libnet = binaries["greeter_server"] + " --threads 0 --backend "
    return [("grpc++", binaries["grpcpp_greeter_server"]), ("grpc-go", "GOMAXPROCS=1 " + go),
            ("libnet-epoll", libnet + "epoll"), ("libnet-uring", libnet + "uring")]


def split_command(command):
    """(environment, argv) of a command whose leading VAR=VALUE words set
    its environment."""
    words = shlex.split(command)
    env = dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith("-"):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    return env, words


def ghz_argv(ghz, port, conns, seconds, certs):
    argv = benchlib.pinned(CLIENT_CPU, [
        ghz, "--cpus", "1", "--proto", PROTO, "--call", CALL, "-d", REQUEST,
        "--connections", str(conns), "--concurrency", str(conns), "--duration",
        "%gs" % seconds, "--format", "json"])
    if certs:
        argv += ["--cacert", certs["ca"]]
    else:
        argv += ["--insecure"]
    return argv + ["127.0.0.1:%d" % port]


# What ghz itself causes when --duration ends: the calls in flight are
# cancelled and fail on the connections ghz closes. Not the server's failures.
END_OF_RUN_ERRORS = ("use of closed network connection", "code = Canceled")


def parse_ghz(report):
    """calls/s, p50/p99 in ms and the call counts of ghz's JSON report;
    `errors` counts failed calls other than the end-of-run ones."""
    data = json.loads(report)
    latencies = {int(p["percentage"]): p["latency"] / 1e6
                 for p in data.get("latencyDistribution") or []}
    statuses = data.get("statusCodeDistribution") or {}
    errors = sum(n for text, n in (data.get("errorDistribution") or {}).items()
                 if not any(marker in text for marker in END_OF_RUN_ERRORS))
    return {"rps": data["rps"], "p50_ms": latencies.get(50, float("nan")),
            "p99_ms": latencies.get(99, float("nan")), "calls": data["count"],
            "ok": statuses.get("OK", 0), "errors": errors}


def measure(ghz, command, conns, certs, seconds):
    """One run: a fresh pinned server, ghz against it; ghz's numbers plus
    the server's CPU per call in microseconds."""
    env, argv = split_command(command)
    argv += ["--port", "0"]
    if certs:
        argv += ["--tls-cert", certs["cert"], "--tls-key", certs["key"]]
    proc, port = benchlib.start_server(argv, cpu=SERVER_CPU, env=env)
    try:
        before, ghz_before = benchlib.read_stat(proc.pid)[1], benchlib.children_cpu_s()
        done = subprocess.run(ghz_argv(ghz, port, conns, seconds, certs),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=seconds + 60)
        after, ghz_after = benchlib.read_stat(proc.pid)[1], benchlib.children_cpu_s()
    finally:
        benchlib.stop_process(proc)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError("ghz failed: " + done.stderr.strip()[-400:])
    result = parse_ghz(done.stdout)
    cpu_s = (after - before) / benchlib.CLK_TCK
    result["cpu_us_per_call"] = cpu_s / result["ok"] * 1e6 if result["ok"] else float("nan")
    # How busy each side's CPU was: a ghz near 100% means the client, not
    # the server, set the rate.
    result["server_busy"] = cpu_s / seconds
    result["ghz_busy"] = (ghz_after - ghz_before) / seconds
    return result


def run_all(args, ghz, servers, certs):
    """{(name, conns, tls): [result per rep]} over the interleaved runs."""
    cells = [(conns, tls) for conns in args.connections for tls in args.tls]
    names = [name for name, _ in servers]
    commands = dict(servers)
    results = {}
    total = args.reps * len(cells) * len(names)
    started = time.time()
    for rep, (conns, tls), name, done, total in benchlib.rotated_runs(args.reps, cells, names):
        try:
            result = measure(ghz, commands[name], conns, certs if tls else None, args.seconds)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            log("%s: %s c=%d %s rep %d: %s" % (PROG, name, conns, tls and "tls" or "h2c", rep, e))
            result = None
        results.setdefault((name, conns, tls), []).append(result)
        log("%s: %d/%d %s c=%d %s: %s (eta %s)" % (
            PROG, done, total, name, conns, "tls" if tls else "h2c",
            "%.0f calls/s" % result["rps"] if result else "failed",
            benchlib.eta(started, done, total)))
    return results


def med(runs, field):
    return median([r[field] for r in runs if r])


def report(args, servers, results):
    print("| server | connections | TLS | calls/s | vs %s | p50 ms | p99 ms | "
          "server CPU µs/call | vs %s | server busy | ghz busy | failed calls |"
          % (servers[0][0], servers[0][0]))
    # failed calls: summed over the repetitions, ghz's end-of-run ones aside.
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for conns in args.connections:
        for tls in args.tls:
            base = results[(servers[0][0], conns, tls)]
            for name, _ in servers:
                runs = results[(name, conns, tls)]
                ratio_rps = med(runs, "rps") / med(base, "rps")
                ratio_cpu = med(runs, "cpu_us_per_call") / med(base, "cpu_us_per_call")
                errors = sum(r["errors"] for r in runs if r)
                failed = sum(1 for r in runs if r is None)
                print("| %s | %d | %s | %.0f | %.2f | %.3f | %.3f | %.1f | %.2f | %.0f%% | %.0f%% "
                      "| %d%s |" % (
                          name, conns, "yes" if tls else "no", med(runs, "rps"), ratio_rps,
                          med(runs, "p50_ms"), med(runs, "p99_ms"), med(runs, "cpu_us_per_call"),
                          ratio_cpu, 100 * med(runs, "server_busy"), 100 * med(runs, "ghz_busy"),
                          errors, " (%d runs failed)" % failed if failed else ""))


def parse_args():
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--server", nargs=2, action="append", default=[],
                        metavar=("NAME", "COMMAND"), help="a greeter server (repeatable)")
    parser.add_argument("--connections", default="50,1",
                        help="ghz --connections (= --concurrency) values (default 50,1)")
    parser.add_argument("--tls", default="no,yes", help="no, yes or both (default no,yes)")
    parser.add_argument("--seconds", type=float, default=10, help="per run (default 10)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--quick", action="store_true", help="2 s x 1 rep")
    parser.add_argument("--nice", type=int, default=0,
                        help="run at nice -N (1-20, needs root), as run_hey_bench.py")
    parser.add_argument("--ghz", default=None, help="the ghz binary (default: tools/ghz)")
    args = parser.parse_args()
    args.connections = [int(c) for c in args.connections.split(",") if c]
    args.tls = [t == "yes" for t in benchlib.split_list(parser, "--tls", args.tls, ["no", "yes"])]
    if args.quick:
        args.seconds, args.reps = 2, 1
    return args


def main():
    args = parse_args()
    hb.apply_nice(PROG, args)
    ghz = args.ghz or go_tool("ghz", "github.com/bojand/ghz/cmd/ghz")
    with tempfile.TemporaryDirectory(prefix="grpc_bench.") as tmp:
        servers = args.server or default_servers(tmp)
        certs = make_test_certs.make(os.path.join(tmp, "certs"))
        results = run_all(args, ghz, servers, certs)
    print("\n".join(benchlib.machine_lines("bench/grpc/run_grpc_bench.py")))
    print("- ghz: %s; %s, %d rep(s) of %g s per cell, medians\n" % (
        "ghz " + pinned_version("ghz", "github.com/bojand/ghz"), "server on CPU 0, ghz on CPU 1",
        args.reps, args.seconds))
    report(args, servers, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
