#!/usr/bin/env python3
"""WebSocket echo: libnet's ws_echo_server (epoll, io_uring) against Boost.Beast.

Every cell (connections x message size x deflate) runs each server once per
repetition, the servers' order rotating between repetitions: a fresh server
pinned to CPU 0 with one thread, and bench/websocket:ws_load pinned to CPU 1
for --warmup + --seconds. ws_load keeps one message in flight per connection
(request/response: send, wait for the whole echo, send again) and marks its
measured window on stdout; the server's CPU time (utime+stime of
/proc/PID/stat, every thread) is read at both marks.

Reported per cell, median of --runs (min-max): messages/s (ws_load's count
over the window), the server's CPU µs per message, ws_load's p99 latency,
the ratios to Beast of messages/s and of CPU per message, and ws_load's own
CPU µs per message (read the same way: it should stay well under the
server's, or the client is what is measured).

Servers (--servers): libnet-epoll, libnet-uring
(examples/websocket:ws_echo_server --backend epoll|uring) and beast
(bench/websocket:beast_ws_echo_server). Deflate runs offer
permessage-deflate with both no_context_takeover parameters and send
compressible text (a JSON-like line repeated); libnet's server sends messages
under 64 bytes uncompressed, Beast compresses every message.

  bench/websocket/run_ws_bench.py                    # every cell, 5 s x 3 runs (about 20 min)
  bench/websocket/run_ws_bench.py --quick            # 1 s x 1 run, a smoke run
  bench/websocket/run_ws_bench.py --servers beast --conns 1,100 --sizes 32 --deflate off
  bench/websocket/run_ws_bench.py --no-build --bindir /path/to/bazel-bin

Without --no-build it runs `bazel build --config=opt` of the three programs
and takes them from that configuration's bazel-bin; with --no-build from
--bindir (default: the worktree's bazel-bin), under their package paths.
Binaries are copied away first, so that a build cannot swap them mid-run; a
server whose binary is missing is left out with a warning. Before any
measurement every server echoes each size once under ws_load --verify; a
server that fails is not measured.

By default the runs happen in a private network namespace (its own
loopback); --no-netns uses the machine's. Output: progress on stderr, the
markdown table on stdout, --csv FILE adds one row per run.
"""

import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import benchlib  # noqa: E402  (bench/benchlib.py)
from benchlib import log  # noqa: E402

PROG = "run_ws_bench"
SERVER_CPU = 0
CLIENT_CPU = 1
NETNS_ENV = "LIBNET_WS_BENCH_NETNS"

BINARIES = {
    "libnet": "examples/websocket/ws_echo_server",
    "beast": "bench/websocket/beast_ws_echo_server",
    "ws_load": "bench/websocket/ws_load",
}
TARGETS = {
    "libnet": "//examples/websocket:ws_echo_server",
    "beast": "//bench/websocket:beast_ws_echo_server",
    "ws_load": "//bench/websocket:ws_load",
}
# --threads 0: libnet serves everything on its main thread, as Beast does on
# its one io_context.
LIBNET_ARGS = ["--address", "127.0.0.1", "--threads", "0", "--backend"]
# server name -> (binary, extra arguments)
SERVERS = {
    "libnet-epoll": ("libnet", LIBNET_ARGS + ["epoll"]),
    "libnet-uring": ("libnet", LIBNET_ARGS + ["uring"]),
    "beast": ("beast", ["--threads", "1"]),
}
DEFLATE = {"off": False, "on": True}


class RunError(RuntimeError):
    pass


def parse_args():
    p = benchlib.arg_parser(__doc__)
    p.add_argument("--servers", default=",".join(SERVERS))
    p.add_argument("--conns", default="1,100,1000")
    p.add_argument("--sizes", default="32,16384")
    p.add_argument("--deflate", default="off,on", help="off, on, or off,on")
    p.add_argument("--seconds", type=float, default=5, help="measured window per run")
    p.add_argument("--warmup", type=float, default=1, help="seconds before the window")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="1 s x 1 run, 0.5 s warm-up")
    p.add_argument("--bindir", default=os.path.join(ROOT, "bazel-bin"),
                   help="where the binaries are with --no-build (default: bazel-bin)")
    p.add_argument("--no-build", action="store_true", help="use --bindir as it is")
    p.add_argument("--csv", help="write one row per run to this file")
    p.add_argument("--no-netns", action="store_true", help="use the machine's loopback")
    args = p.parse_args()
    if args.quick:
        args.seconds, args.runs, args.warmup = 1, 1, 0.5
    args.servers = benchlib.split_list(p, "--servers", args.servers, SERVERS)
    args.deflate = benchlib.split_list(p, "--deflate", args.deflate, DEFLATE)
    try:
        args.conns = [int(x) for x in args.conns.split(",")]
        args.sizes = [int(x) for x in args.sizes.split(",")]
    except ValueError:
        p.error("--conns and --sizes take comma-separated whole numbers")
    if args.runs < 1 or args.seconds <= 0 or args.warmup < 0 or min(args.conns + args.sizes) < 1:
        p.error("--runs, --seconds, --conns and --sizes must be positive")
    return args


def find_binaries(args, tmp):
    """Builds (unless --no-build) and copies the binaries; drops the servers
    whose binary is missing. Returns name -> path."""
    bindir = args.bindir
    if not args.no_build:
        wanted = {"ws_load"} | {SERVERS[s][0] for s in args.servers}
        bindir = benchlib.bazel_build_opt(ROOT, [TARGETS[n] for n in sorted(wanted)])
        if bindir is None and "libnet" in wanted:
            log("warning: the build failed; retrying without libnet's ws_echo_server")
            bindir = benchlib.bazel_build_opt(ROOT, [TARGETS["beast"], TARGETS["ws_load"]])
        if bindir is None:
            sys.exit("%s: the build failed (--no-build --bindir DIR for prebuilt ones)" % PROG)
    paths = benchlib.copy_binaries(bindir, BINARIES, tmp)
    if "ws_load" not in paths:
        sys.exit("%s: no ws_load under %s" % (PROG, bindir))
    kept = []
    for server in args.servers:
        if SERVERS[server][0] in paths:
            kept.append(server)
        else:
            log("warning: %s left out: no %s" % (server, os.path.join(bindir,
                                                                    BINARIES[SERVERS[server][0]])))
    if not kept:
        sys.exit("%s: no server binary under %s" % (PROG, bindir))
    args.servers = kept
    return paths


def server_argv(paths, server, deflate):
    binary, extra = SERVERS[server]
    return [paths[binary], "--port", "0"] + extra + (["--deflate"] if deflate else [])


def load_argv(paths, port, conns, size, deflate, seconds, warmup, verify=False):
    argv = [paths["ws_load"], "--server", "127.0.0.1:%d" % port, "-c", str(conns),
            "-d", "%g" % seconds, "--size", str(size), "--warmup", "%g" % warmup]
    return argv + (["--deflate"] if deflate else []) + (["--verify"] if verify else [])


def start(paths, server, deflate):
    try:
        return benchlib.start_server(server_argv(paths, server, deflate), cpu=SERVER_CPU)
    except RuntimeError as e:
        raise RunError(str(e))


def stop(proc):
    """Stops the server; a run whose server did not exit 0 on SIGTERM fails."""
    benchlib.stop_process(proc)
    if proc.returncode != 0:
        raise RunError("server exited with status %s on SIGTERM" % proc.returncode)


def precheck(args, paths, server):
    """Every selected size and deflate mode, echoed under --verify; returns
    the problem or None."""
    for mode in args.deflate:
        proc, port = start(paths, server, DEFLATE[mode])
        try:
            for size in args.sizes:
                r = subprocess.run(load_argv(paths, port, 2, size, DEFLATE[mode], 0.2, 0, True),
                                   capture_output=True, text=True, timeout=60)
                if r.returncode != 0:
                    return "size %d, deflate %s: %s" % (size, mode, (r.stdout + r.stderr)[-400:])
        finally:
            stop(proc)
    return None


def parse_load(out):
    m = re.search(r"^messages: (\d+)  seconds: ([\d.]+)  messages/s: ([\d.]+)$", out, re.M)
    lat = re.search(r"^latency_us: p50 ([\d.]+)  p99 ([\d.]+)$", out, re.M)
    err = re.search(r"^errors: (\d+)$", out, re.M)
    if not (m and lat and err):
        raise RunError("unexpected ws_load output: %s" % out[-400:])
    return dict(messages=int(m.group(1)), seconds=float(m.group(2)), rate=float(m.group(3)),
                p50_us=float(lat.group(1)), p99_us=float(lat.group(2)), errors=int(err.group(1)))


def cpu_ticks(pid):
    st = benchlib.read_stat(pid)
    return st[1] if st else None


def measure(argv, pid, limit, err_path):
    """Runs ws_load; samples the server's and ws_load's CPU ticks at its
    window marks. Returns (ws_load's stdout, server CPU seconds within the
    window, ws_load's)."""
    ticks = {}
    with open(err_path, "w") as err:
        client = subprocess.Popen(benchlib.pinned_if_possible(CLIENT_CPU, argv),
                                  stdout=subprocess.PIPE, stderr=err, text=True)
    out = []
    # ws_load bounds its own phases; this bounds a ws_load that hangs anyway.
    killer = threading.Timer(limit, client.kill)
    killer.start()
    try:
        for line in client.stdout:
            out.append(line)
            mark = line.strip()
            if mark in ("window: start", "window: end"):
                # taskset execs ws_load: the client's pid is ws_load's.
                ticks[mark] = (cpu_ticks(pid), cpu_ticks(client.pid))
        client.wait()
    finally:
        killer.cancel()
    text = "".join(out)
    with open(err_path) as f:
        problems = f.read().strip()
    if client.returncode != 0:
        raise RunError("ws_load exited %d: %s" % (client.returncode, (problems or text)[-400:]))
    if len(ticks) != 2 or None in ticks["window: start"] + ticks["window: end"]:
        raise RunError("server gone, or no window marks from ws_load")
    (s0, c0), (s1, c1) = ticks["window: start"], ticks["window: end"]
    return text, (s1 - s0) / benchlib.CLK_TCK, (c1 - c0) / benchlib.CLK_TCK


def run_once(args, paths, tmp, server, conns, size, mode):
    proc, port = start(paths, server, DEFLATE[mode])
    try:
        argv = load_argv(paths, port, conns, size, DEFLATE[mode], args.seconds, args.warmup)
        text, cpu_s, client_s = measure(argv, proc.pid, args.warmup + args.seconds + 60,
                              os.path.join(tmp, "ws_load.err"))
    finally:
        stop(proc)
    r = parse_load(text)
    # No tick at all in the window is below /proc's resolution, not free.
    r["cpu_us"] = cpu_s * 1e6 / r["messages"] if r["messages"] and cpu_s > 0 else float("nan")
    r["cpu_s"] = cpu_s
    # What the client needs per message: it must stay well below the server.
    r["client_us"] = client_s * 1e6 / r["messages"] if r["messages"] else float("nan")
    return r


def run_all(args, paths, tmp):
    """Every cell, every server, --runs times, the servers' order rotating."""
    cells, rows = {}, []
    combos = [(c, s, d) for d in args.deflate for s in args.sizes for c in args.conns]
    started = time.time()
    for rep, (conns, size, mode), server, done, total in benchlib.rotated_runs(
            args.runs, combos, args.servers):
        label = "%s c=%d %dB deflate %s" % (server, conns, size, mode)
        try:
            r = run_once(args, paths, tmp, server, conns, size, mode)
        except RunError as e:
            log("[%d/%d] run %d %s: FAILED: %s" % (done, total, rep + 1, label, e))
            continue
        cells.setdefault((server, conns, size, mode), []).append(r)
        rows.append(dict(run=rep + 1, server=server, conns=conns, size=size, deflate=mode, **r))
        log("[%d/%d] run %d %s: %.0f msg/s, %.2f µs CPU/msg (ws_load %.2f), p99 %.0f µs "
            "(eta %s)" % (done, total, rep + 1, label, r["rate"], r["cpu_us"], r["client_us"],
                          r["p99_us"], benchlib.eta(started, done, total)))
    return cells, rows


def table(args, cells):
    header = ["server", "conns", "size", "deflate", "messages/s", "server CPU µs/msg",
              "p99 µs", "msgs/s vs Beast", "CPU/msg vs Beast", "ws_load CPU µs/msg"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for mode in args.deflate:
        for size in args.sizes:
            for conns in args.conns:
                beast = cells.get(("beast", conns, size, mode), [])
                b_rate = benchlib.median([r["rate"] for r in beast])
                b_cpu = benchlib.median([r["cpu_us"] for r in beast])
                for server in args.servers:
                    runs = cells.get((server, conns, size, mode), [])
                    rate = benchlib.median([r["rate"] for r in runs])
                    cpu = benchlib.median([r["cpu_us"] for r in runs])
                    row = [server, str(conns), str(size), mode,
                           benchlib.median_cell([r["rate"] for r in runs]) if runs else "fail",
                           benchlib.median_cell([r["cpu_us"] for r in runs], "%.2f"),
                           benchlib.median_cell([r["p99_us"] for r in runs]),
                           benchlib.ratio(rate, b_rate) if server != "beast" else "1",
                           benchlib.ratio(cpu, b_cpu) if server != "beast" else "1",
                           benchlib.median_cell([r["client_us"] for r in runs], "%.2f")]
                    lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def report(args, cells, skipped, in_netns):
    print("## WebSocket echo: libnet vs Boost.Beast (ws_load)\n")
    print("\n".join(benchlib.machine_lines("bench/websocket/run_ws_bench.py")))
    for server, why in skipped.items():
        print("- **%s not measured**: pre-check failed: %s" % (server, why))
    print("- Method: %g s window after %g s warm-up per run, median of %d runs (min–max), "
          "servers side by side, a fresh server per run with one thread on CPU %d, ws_load "
          "on CPU %d%s; one message in flight per connection. Server CPU = utime+stime of "
          "/proc/PID/stat over ws_load's window, per message echoed in it (ws_load's "
          "own the same way). Deflate: "
          "permessage-deflate, no context takeover either way, compressible text; libnet "
          "sends messages under 64 bytes uncompressed, Beast compresses all.\n" %
          (args.seconds, args.warmup, args.runs, SERVER_CPU, CLIENT_CPU,
           ", private network namespace" if in_netns else ""))
    print(table(args, cells))
    print()


def main():
    args = parse_args()
    status = benchlib.reexec_in_netns(os.path.abspath(__file__), NETNS_ENV, not args.no_netns)
    if status is not None:
        return status
    in_netns = os.environ.get(NETNS_ENV) is not None
    benchlib.raise_nofile()
    tmp = tempfile.mkdtemp(prefix="libnet-ws-bench-")
    try:
        paths = find_binaries(args, tmp)
        skipped = {}
        for server in args.servers:
            try:
                why = precheck(args, paths, server)
            except (RunError, subprocess.TimeoutExpired) as e:
                why = str(e)
            if why:
                skipped[server] = why
                log("pre-check %s: FAILED, not measured: %s" % (server, why))
        args.servers = [s for s in args.servers if s not in skipped]
        cells, rows = run_all(args, paths, tmp) if args.servers else ({}, [])
        report(args, cells, skipped, in_netns)
        if args.csv and rows:
            with open(args.csv, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
        return 1 if skipped or not rows else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("%s: interrupted" % PROG)
