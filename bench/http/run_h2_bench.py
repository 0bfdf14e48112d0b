#!/usr/bin/env python3
"""HTTP/2: libnet's http_server (epoll, io_uring) against nginx, under h2load.

Every cell (mode x streams per connection x file) runs each server once per
repetition, the servers' order rotating between repetitions: a fresh server
pinned to CPU 0 with one event loop (http_server --threads 0; nginx with one
worker), and `h2load -t 1 -c CONNS -m STREAMS -D SECONDS --warm-up-time W`
pinned to CPU 1, fetching one file over and over. Both servers serve the same
directory, made for the run: a 14-byte file and a 16 KiB file of random bytes.
Modes: tls (h2 over TLS, chosen by ALPN; the same certificate, made for the
run, for both servers) and h2c (cleartext HTTP/2 with prior knowledge:
http_server --h2c, nginx `listen ... http2` without ssl).

The server's CPU time (utime+stime of /proc/PID/stat of every process of its
tree: nginx's master and worker) and h2load's are read when h2load says its
measured window starts and when it says the window is over.

Reported per cell, median of --runs (min-max): requests/s (h2load's count
over the window), the server's CPU µs per request, the server's and h2load's
share of their CPU over the window (an h2load near 100% means the client
limited the rate, and only the CPU per request compares the servers), and the
ratios libnet/nginx of requests/s and of CPU per request (CPU below 1: libnet
is cheaper). A run counts only if h2load negotiated the expected protocol (h2
or h2c), exited 0, reports 0 failed, 0 errored and 0 timed out, every
response 2xx, and the bytes it received per response fit the file's size;
otherwise it is an error, listed under the table, and the exit status is 1.
Before any measurement every server serves each file once to nghttp in each
mode, compared byte for byte; a server that fails is not measured.

  bench/http/run_h2_bench.py                      # 8 cells x 3 servers, 5 s x 3 runs (~10 min)
  bench/http/run_h2_bench.py --quick              # 1 s x 1 run, a smoke run (~1.5 min)
  bench/http/run_h2_bench.py --modes h2c --streams 100 --files 16384 --runs 5
  bench/http/run_h2_bench.py --no-build --bindir /path/to/bazel-bin
  bench/http/run_h2_bench.py --binary /path/to/http_server
  bench/http/run_h2_bench.py --baseline-binary /tmp/base/bazel-bin/examples/http/http_server

Without --no-build or --binary it runs `bazel build --config=opt
//examples/http:http_server` and takes it from that configuration's
bazel-bin; with --no-build from --bindir (default: the worktree's bazel-bin);
--binary names an http_server directly. The binary is copied away first, so
that a build cannot swap it mid-run. --baseline-binary PATH (an http_server
of an earlier build) adds a twin NAME@base for each libnet server, run right
next to it in every repetition (the pair's order alternating: use an even
--runs), and the rows gain now/base ratios.

By default the runs happen in a private network namespace (its own
loopback) when the script may make one; --no-netns uses the machine's.
Needs h2load and nghttp (nghttp2-client) and an nginx built with
--with-http_v2_module (Debian 12's nginx, which nginx-light depends on).
Output: progress on stderr; on stdout the markdown table, then one line per
row, `RESULT key=value ...`; --csv FILE adds one row per run.
"""

import csv
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_http_bench as hb  # noqa: E402  (bench/http/run_http_bench.py: nginx set-up, certs)
import benchlib  # noqa: E402  (bench/benchlib.py, on sys.path through run_http_bench)
from benchlib import BASE_SUFFIX, log  # noqa: E402

ROOT = hb.ROOT
PROG = "run_h2_bench"
SERVER_CPU = 0
CLIENT_CPU = 1
NETNS_ENV = "LIBNET_H2_BENCH_NETNS"
HTTP_SERVER = "examples/http/http_server"
SERVERS = ["nginx", "libnet-epoll", "libnet-uring"]
MODES = ["tls", "h2c"]
# The protocol h2load must report for each mode ("Application protocol: ...");
# anything else (http/1.1 after a failed ALPN, say) measures the wrong thing.
PROTOCOL = {"tls": "h2", "h2c": "h2c"}
# Headers and frame headers per response: well under this many bytes.
MAX_OVERHEAD = 1024
# h2load's markers around the measured window (lines on its stdout, which it
# flushes as it goes).
WINDOW_START = "Main benchmark duration is started"
WINDOW_END = "Main benchmark duration is over"


class RunError(RuntimeError):
    pass


def parse_args():
    p = benchlib.arg_parser(__doc__)
    p.add_argument("--servers", default=",".join(SERVERS))
    p.add_argument("--modes", default=",".join(MODES), help="tls, h2c, or both (default)")
    p.add_argument("--conns", type=int, default=10, help="h2load -c (default 10)")
    p.add_argument("--streams", default="10,100", help="h2load -m values (default 10,100)")
    p.add_argument("--files", default="14,16384", help="file sizes in bytes (default 14,16384)")
    p.add_argument("--seconds", type=float, help="measured window per run (default 5; --quick 1)")
    p.add_argument("--warmup", type=float,
                   help="seconds before the window (default 1; --quick 0.5)")
    p.add_argument("--runs", type=int, help="runs per server and cell (default 3; --quick 1)")
    p.add_argument("--quick", action="store_true", help="1 s x 1 run, 0.5 s warm-up")
    p.add_argument("--bindir", default=os.path.join(ROOT, "bazel-bin"),
                   help="where %s is with --no-build (default: bazel-bin)" % HTTP_SERVER)
    p.add_argument("--no-build", action="store_true", help="use --bindir as it is")
    p.add_argument("--binary", help="a prebuilt http_server (no build)")
    p.add_argument("--baseline-binary", metavar="PATH",
                   help="an http_server of an earlier build: adds NAME@base twins")
    p.add_argument("--csv", help="write one row per run to this file")
    p.add_argument("--no-netns", action="store_true", help="use the machine's loopback")
    args = p.parse_args()
    for name, normal, quick in (("seconds", 5, 1), ("warmup", 1, 0.5), ("runs", 3, 1)):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else normal)
    args.servers = benchlib.split_list(p, "--servers", args.servers, SERVERS)
    args.modes = benchlib.split_list(p, "--modes", args.modes, MODES)
    try:
        args.streams = [int(x) for x in args.streams.split(",")]
        args.files = [int(x) for x in args.files.split(",")]
    except ValueError:
        p.error("--streams and --files take comma-separated whole numbers")
    if (args.runs < 1 or args.seconds <= 0 or args.warmup < 0 or args.conns < 1
            or min(args.streams + args.files) < 1):
        p.error("--runs, --seconds, --conns, --streams and --files must be positive")
    if args.baseline_binary and not any(s.startswith("libnet") for s in args.servers):
        p.error("--baseline-binary needs libnet-epoll or libnet-uring in --servers")
    return args


# ---------------------------------------------------------------- programs


def find_tools(args):
    """{"h2load", "nghttp", "nginx"} -> path; exits naming the Debian
    packages if one is missing or nginx lacks HTTP/2."""
    tools = {name: benchlib.find_tool(name) for name in ("h2load", "nghttp", "taskset")}
    missing = [pkg for name, pkg in (("h2load", "nghttp2-client"), ("nghttp", "nghttp2-client"),
                                     ("taskset", "util-linux")) if tools[name] is None]
    if "nginx" in args.servers:
        tools["nginx"] = benchlib.find_tool("nginx")
        if tools["nginx"] is None:
            missing.append("nginx")
    hb.exit_if_missing(PROG, sorted(set(missing)))
    if "nginx" in args.servers:
        version = subprocess.run([tools["nginx"], "-V"], capture_output=True, text=True)
        if "--with-http_v2_module" not in version.stdout + version.stderr:
            sys.exit("%s: %s has no HTTP/2 (--with-http_v2_module); install Debian's nginx "
                     "(apt-get install -y nginx) or leave nginx out (--servers)" %
                     (PROG, tools["nginx"]))
    if not {SERVER_CPU, CLIENT_CPU} <= os.sched_getaffinity(0):
        sys.exit("%s: needs CPUs %d (server) and %d (h2load), has %s" %
                 (PROG, SERVER_CPU, CLIENT_CPU, sorted(os.sched_getaffinity(0))))
    return tools


def find_binaries(args, tmp):
    """Copies http_server (and the baseline's) into tmp; returns {"libnet",
    "base"} -> path. Exits if a libnet server is asked for and there is none."""
    if not any(s.startswith("libnet") for s in args.servers):
        return {}
    if args.binary:
        src = os.path.abspath(args.binary)
    else:
        bindir = args.bindir
        if not args.no_build:
            bindir = benchlib.bazel_build_opt(ROOT, ["//examples/http:http_server"])
            if bindir is None:
                sys.exit("%s: the build failed (--no-build --bindir DIR or --binary PATH for "
                         "a prebuilt one)" % PROG)
        src = os.path.join(bindir, HTTP_SERVER)
    paths = {}
    for name, path in (("libnet", src), ("base", args.baseline_binary)):
        if path is None:
            continue
        if not os.access(path, os.X_OK):
            sys.exit("%s: %s is not an executable file" % (PROG, path))
        paths[name] = os.path.join(tmp, "http_server" if name == "libnet" else
                                   "http_server-base")
        shutil.copy2(path, paths[name])
    return paths


def make_root(tmp, sizes):
    """The web root both servers serve: SIZE.bin of random bytes for every
    size; returns (its path, {size: bytes})."""
    www = os.path.join(tmp, "www")
    os.mkdir(www)
    files = {}
    for size in sizes:
        files[size] = secrets.token_bytes(size)
        with open(os.path.join(www, "%d.bin" % size), "wb") as f:
            f.write(files[size])
        os.chmod(os.path.join(www, "%d.bin" % size), 0o644)
    # nginx's worker runs as nobody when the master is root: everything on
    # the way to the files must be world-readable.
    os.chmod(www, 0o755)
    os.chmod(tmp, 0o755)
    return www, files


# ------------------------------------------------------------------ servers


def nginx_conf(ctx, mode, port):
    """nginx.conf.in, the HTTP/1.1 benchmark's configuration, with HTTP/2 on
    the listening socket (its keepalive_requests also bounds the requests of
    an HTTP/2 connection since nginx 1.19.7); returns the file's path."""
    path = os.path.join(ctx["nginx_dir"], "nginx-%d.conf" % port)
    tls = mode == "tls"
    with open(os.path.join(HERE, "nginx.conf.in")) as f:
        text = f.read()
    text = (text.replace("@DIR@", ctx["nginx_dir"]).replace("@ROOT@", ctx["www"])
            .replace("@PORT@", str(port)).replace("@NOFILE@", "4096").replace("@WORKERS@", "1")
            .replace("@LISTEN_SSL@", " ssl http2" if tls else " http2")
            .replace("@SSL@", hb.nginx_ssl({"tls": ctx["tls"]}) if tls else ""))
    with open(path, "w") as f:
        f.write(text)
    return path


def start_nginx(ctx, mode, limit=10):
    """Starts nginx on a free port; returns (proc, port) once it accepts."""
    port = benchlib.free_port()
    argv = [ctx["nginx"], "-p", ctx["nginx_dir"], "-c", nginx_conf(ctx, mode, port)]
    proc = subprocess.Popen(benchlib.pinned(SERVER_CPU, argv), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RunError("nginx exited with status %s at start (see %s/error.log)" %
                           (proc.returncode, ctx["nginx_dir"]))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    benchlib.stop_process(proc)
    raise RunError("nginx did not accept connections on port %d within %d s" % (port, limit))


def libnet_argv(ctx, server, mode):
    stem = server.removesuffix(BASE_SUFFIX)
    binary = ctx["binaries"]["libnet" if stem == server else "base"]
    argv = [binary, "--port", "0", "--threads", "0", "--backend", stem.split("-")[1], "--root",
            ctx["www"]]
    if mode == "tls":
        return argv + ["--tls-cert", ctx["tls"]["cert"], "--tls-key", ctx["tls"]["key"]]
    return argv + ["--h2c"]


def start(ctx, server, mode):
    """A fresh server on CPU 0; returns (proc, port)."""
    if server == "nginx":
        return start_nginx(ctx, mode)
    try:
        return benchlib.start_server(libnet_argv(ctx, server, mode), cpu=SERVER_CPU)
    except RuntimeError as e:
        raise RunError(str(e))


def stop(proc, server):
    """Stops the server; one that does not exit 0 on SIGTERM fails the run."""
    benchlib.stop_process(proc)
    if proc.returncode != 0:
        raise RunError("%s exited with status %s on SIGTERM" % (server, proc.returncode))


def url(mode, port, size):
    return "%s://127.0.0.1:%d/%d.bin" % ("https" if mode == "tls" else "http", port, size)


def precheck(ctx, args, server):
    """Every file in every mode, fetched once with nghttp and compared byte
    for byte; returns the problem or None."""
    for mode in args.modes:
        proc, port = start(ctx, server, mode)
        try:
            for size in args.files:
                # nghttp speaks h2c with prior knowledge on http:// URLs and
                # does not verify certificates.
                # It prints the body alone, whatever the status.
                r = subprocess.run([ctx["tools"]["nghttp"], url(mode, port, size)],
                                   capture_output=True, timeout=30)
                if r.returncode != 0 or r.stdout != ctx["files"][size]:
                    return "%s, %d-byte file: nghttp exited %d with %d bytes%s %s" % (
                        mode, size, r.returncode, len(r.stdout),
                        "" if r.returncode else ", not the file's:",
                        " / ".join((r.stderr or r.stdout[:200]).decode(errors="replace")
                                   .strip()[-300:].splitlines()))
        finally:
            stop(proc, server)
    return None


# ------------------------------------------------------------------- h2load


def h2load_argv(ctx, args, mode, port, streams, size):
    # Durations in ms: h2load reads a bare number as seconds, and no fractions.
    return [ctx["tools"]["h2load"], "-t", "1", "-c", str(args.conns), "-m", str(streams),
            "-D", "%dms" % round(args.seconds * 1000),
            "--warm-up-time", "%dms" % round(args.warmup * 1000), url(mode, port, size)]


def cpu_s(pids):
    """utime+stime of the pids, in seconds; None if one is gone."""
    total = 0
    for pid in pids:
        st = benchlib.read_stat(pid)
        if st is None:
            return None
        total += st[1]
    return total / benchlib.CLK_TCK


def measure(argv, pids, limit):
    """Runs h2load on CLIENT_CPU; samples the server's CPU (pids), h2load's
    and the clock at its window marks. Returns (h2load's output, server CPU
    s, h2load CPU s, window s)."""
    client = subprocess.Popen(benchlib.pinned(CLIENT_CPU, argv), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    # h2load bounds its own phases; this bounds one that hangs anyway.
    killer = threading.Timer(limit, client.kill)
    killer.start()
    marks, out = {}, []
    try:
        for line in client.stdout:
            out.append(line)
            for mark in (WINDOW_START, WINDOW_END):
                if line.startswith(mark):
                    # taskset execs h2load: the client's pid is h2load's.
                    marks[mark] = (cpu_s(pids), cpu_s([client.pid]), time.monotonic())
        client.wait()
    finally:
        killer.cancel()
    text = "".join(out)
    if client.returncode != 0:
        raise RunError("h2load exited %d: %s" % (client.returncode, text.strip()[-400:]))
    if len(marks) != 2 or None in marks[WINDOW_START] + marks[WINDOW_END]:
        raise RunError("server gone, or no window marks from h2load: %s" % text.strip()[-400:])
    (s0, c0, t0), (s1, c1, t1) = marks[WINDOW_START], marks[WINDOW_END]
    return text, s1 - s0, c1 - c0, t1 - t0


def parse_h2load(text):
    proto = re.search(r"^Application protocol: (\S+)$", text, re.M)
    fin = re.search(r"^finished in \S+, ([\d.]+) req/s", text, re.M)
    req = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                    r"(\d+) failed, (\d+) errored, (\d+) timeout$", text, re.M)
    codes = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx$", text, re.M)
    # "traffic: 6.83MB (7160384) total, ...": the count of the window alone;
    # its "data" count also holds the warm-up's (h2load 1.52 never resets it).
    traffic = re.search(r"^traffic: \S+ \((\d+)\) total", text, re.M)
    if not (proto and fin and req and codes and traffic):
        raise RunError("unexpected h2load output: %s" % text.strip()[-400:])
    done, succeeded, failed, errored, timeout = (int(req.group(i)) for i in range(3, 8))
    return dict(protocol=proto.group(1), rps=float(fin.group(1)), requests=done,
                succeeded=succeeded, failed=failed, errored=errored, timeout=timeout,
                status_2xx=int(codes.group(1)),
                status_other=sum(int(codes.group(i)) for i in range(2, 5)),
                bytes=int(traffic.group(1)))


def check_run(r, mode, size, in_flight):
    """Raises RunError unless the run served what it should have. Up to
    in_flight (conns x streams) requests straddle each edge of the window:
    h2load counts one's status when its headers arrive, its completion when
    its last byte does, and its bytes as they arrive, so those counts may
    differ by as much."""
    problems = []
    if r["protocol"] != PROTOCOL[mode]:
        problems.append("protocol %s, expected %s" % (r["protocol"], PROTOCOL[mode]))
    if r["failed"] or r["errored"] or r["timeout"] or r["succeeded"] != r["requests"]:
        problems.append("%d failed, %d errored, %d timeout, %d of %d succeeded" %
                        (r["failed"], r["errored"], r["timeout"], r["succeeded"], r["requests"]))
    if r["status_other"] or abs(r["status_2xx"] - r["requests"]) > in_flight:
        problems.append("%d answered 2xx and %d 3xx/4xx/5xx, of %d requests done" %
                        (r["status_2xx"], r["status_other"], r["requests"]))
    low = max(0, r["requests"] - in_flight) * size
    high = (r["requests"] + in_flight) * (size + MAX_OVERHEAD)
    if not r["requests"]:
        problems.append("no request done")
    elif not low <= r["bytes"] <= high:
        problems.append("%d bytes received for %d responses of a %d-byte file (expected %d "
                        "to %d)" % (r["bytes"], r["requests"], size, low, high))
    if problems:
        raise RunError("; ".join(problems))


def run_once(ctx, args, server, mode, streams, size):
    proc, port = start(ctx, server, mode)
    try:
        # nginx's worker is up once nginx accepts: the tree is complete.
        pids = benchlib.process_tree(proc.pid)
        text, server_s, client_s, window = measure(
            h2load_argv(ctx, args, mode, port, streams, size), pids,
            args.warmup + args.seconds + 60)
    finally:
        stop(proc, server)
    r = parse_h2load(text)
    check_run(r, mode, size, args.conns * streams)
    nan = float("nan")
    # No tick at all in the window is below /proc's resolution, not free.
    r["cpu_us"] = server_s * 1e6 / r["requests"] if server_s > 0 else nan
    r["server_busy"] = server_s / window if window > 0 else nan
    r["client_busy"] = client_s / window if window > 0 else nan
    r["server_cpu_s"], r["window_s"] = server_s, window
    return r


# --------------------------------------------------------------------- runs


def order(args, rep):
    """The servers in repetition rep's order: rotated, each @base twin next
    to its libnet server, the pair's order alternating; those whose
    pre-check failed left out."""
    names = benchlib.rotated(args.servers, rep)
    if args.baseline_binary:
        names = benchlib.with_twins(names, lambda name: name.startswith("libnet"))
    return [s for s in benchlib.twin_order(names, rep) if s not in args.skipped]


def combos(args):
    return [(mode, streams, size) for mode in args.modes for size in args.files
            for streams in args.streams]


def run_all(ctx, args):
    """Every cell, every server, --runs times. Returns ({(server, mode,
    streams, size): [result]}, [failure line], [CSV row])."""
    cells, failures, rows = {}, [], []
    total = args.runs * len(combos(args)) * len(order(args, 0))
    done, started = 0, time.time()
    for rep in range(args.runs):
        for mode, streams, size in combos(args):
            for server in order(args, rep):
                done += 1
                label = "%s %s -c %d -m %d %d B" % (server, mode, args.conns, streams, size)
                try:
                    r = run_once(ctx, args, server, mode, streams, size)
                except (RunError, subprocess.TimeoutExpired) as e:
                    log("[%d/%d] run %d %s: FAILED: %s" % (done, total, rep + 1, label, e))
                    failures.append("run %d %s: %s" % (rep + 1, label, e))
                    continue
                cells.setdefault((server, mode, streams, size), []).append(r)
                rows.append(dict(run=rep + 1, server=server, mode=mode, conns=args.conns,
                                 streams=streams, size=size, **r))
                log("[%d/%d] run %d %s: %.0f req/s, %.2f µs server CPU/req, server %.0f%%, "
                    "h2load %.0f%% busy (eta %s)" %
                    (done, total, rep + 1, label, r["rps"], r["cpu_us"],
                     100 * r["server_busy"], 100 * r["client_busy"],
                     benchlib.eta(started, done, total)))
    return cells, failures, rows


# ------------------------------------------------------------------- report


def med(cells, key, value):
    return benchlib.median([r[value] for r in cells.get(key, [])])


def row_values(args, cells, server, cell):
    """The medians and ratios of one row, by RESULT key."""
    key = (server,) + cell
    runs = cells.get(key, [])
    nginx = ("nginx",) + cell
    v = {"runs": len(runs), "rps": med(cells, key, "rps"), "cpu_us": med(cells, key, "cpu_us"),
         "server_busy": med(cells, key, "server_busy"),
         "client_busy": med(cells, key, "client_busy")}
    libnet = server != "nginx" and "nginx" in args.servers
    v["rps_vs_nginx"] = benchlib.ratio(v["rps"], med(cells, nginx, "rps")) if libnet else "-"
    v["cpu_vs_nginx"] = benchlib.ratio(v["cpu_us"], med(cells, nginx, "cpu_us")) if libnet else "-"
    base = (server + BASE_SUFFIX,) + cell
    twinned = args.baseline_binary and server.startswith("libnet") and BASE_SUFFIX not in server
    v["rps_now_base"] = benchlib.ratio(v["rps"], med(cells, base, "rps")) if twinned else "-"
    v["cpu_now_base"] = benchlib.ratio(v["cpu_us"], med(cells, base, "cpu_us")) if twinned else "-"
    return v


def table(args, cells):
    """The markdown table and the RESULT lines, one row per server and cell."""
    header = ["mode", "conns", "streams", "file B", "server", "requests/s", "server CPU µs/req",
              "server busy %", "h2load busy %", "req/s vs nginx", "CPU/req vs nginx"]
    if args.baseline_binary:
        header += ["req/s now/base", "CPU/req now/base"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    results = []
    for mode, streams, size in combos(args):
        for server in order(args, 0):
            runs = cells.get((server, mode, streams, size), [])
            v = row_values(args, cells, server, (mode, streams, size))
            row = [mode, str(args.conns), str(streams), str(size), server,
                   benchlib.median_cell([r["rps"] for r in runs]) if runs else "fail",
                   benchlib.median_cell([r["cpu_us"] for r in runs], "%.2f"),
                   benchlib.median_cell([100 * r["server_busy"] for r in runs]),
                   benchlib.median_cell([100 * r["client_busy"] for r in runs]),
                   v["rps_vs_nginx"], v["cpu_vs_nginx"]]
            if args.baseline_binary:
                row += [v["rps_now_base"], v["cpu_now_base"]]
            lines.append("| " + " | ".join(row) + " |")
            results.append("RESULT mode=%s conns=%d streams=%d file=%d server=%s runs=%d "
                           "rps=%.0f cpu_us=%.3f server_busy=%.3f client_busy=%.3f "
                           "rps_vs_nginx=%s cpu_vs_nginx=%s rps_now_base=%s cpu_now_base=%s" %
                           (mode, args.conns, streams, size, server, v["runs"], v["rps"],
                            v["cpu_us"], v["server_busy"], v["client_busy"], v["rps_vs_nginx"],
                            v["cpu_vs_nginx"], v["rps_now_base"], v["cpu_now_base"]))
    return "\n".join(lines), results


def report(ctx, args, cells, skipped, failures, in_netns):
    print("## HTTP/2: libnet's http_server vs nginx (h2load)\n")
    print("\n".join(benchlib.machine_lines("bench/http/run_h2_bench.py")))
    tools = ctx["tools"]
    print("- h2load: %s; nginx: %s" % (
        benchlib.first_line([tools["h2load"], "--version"]),
        benchlib.first_line([tools["nginx"], "-v"]).replace("nginx version: ", "")
        if "nginx" in tools else "not run"))
    if ctx["binaries"]:
        print("- libnet: `%s --threads 0 --backend epoll|uring` (--h2c for h2c)" %
              (args.binary or "//examples/http:http_server (--config=opt)"))
    if args.baseline_binary:
        print("- Baseline (NAME@base): `%s`, same flags, next to NAME in every repetition, "
              "the pair's order alternating" % args.baseline_binary)
    for server, why in skipped.items():
        print("- **%s not measured**: pre-check failed: %s" % (server, why))
    print("- Method: `h2load -t 1 -c %d -m STREAMS -D %gs --warm-up-time %gs`, GET of a "
          "file of random bytes, on CPU %d; a fresh server per run on CPU %d with one event "
          "loop (nginx: one worker)%s; %s, the servers' order rotating. tls: h2 by ALPN, "
          "TLS 1.2/1.3, the same certificate; h2c: prior knowledge. "
          "Server CPU = utime+stime (/proc/PID/stat, every process of the server) over "
          "h2load's measured window, per request completed in it; busy = CPU time / window.\n" %
          (args.conns, args.seconds, args.warmup, CLIENT_CPU, SERVER_CPU,
           ", private network namespace" if in_netns else "",
           "median of %d runs (min–max)" % args.runs if args.runs > 1 else "1 run"))
    text, results = table(args, cells)
    print(text)
    if failures:
        print("\nFailed runs (not in the medians):\n")
        print("\n".join("- " + f for f in failures))
    print()
    print("\n".join(results))


# --------------------------------------------------------------------- main


def prepare(args, tmp):
    """The run's context: tools, binaries, web root, certificate, nginx's
    directory."""
    ctx = {"tools": find_tools(args)}
    ctx["binaries"] = find_binaries(args, tmp)
    ctx["www"], ctx["files"] = make_root(tmp, args.files)
    ctx["tls"] = hb.make_certs({"tmp": tmp})
    if "nginx" in ctx["tools"]:
        ctx["nginx"] = ctx["tools"]["nginx"]
        ctx["nginx_dir"] = os.path.join(tmp, "nginx")
        os.mkdir(ctx["nginx_dir"])
    return ctx


def prechecks(ctx, args):
    """{server: problem} of the servers that failed their pre-check (the
    @base twins are checked with their libnet server's name)."""
    skipped = {}
    for server in args.servers:
        for name in [server] + ([server + BASE_SUFFIX] if args.baseline_binary and
                                server.startswith("libnet") else []):
            try:
                why = precheck(ctx, args, name)
            except (RunError, subprocess.TimeoutExpired) as e:
                why = str(e)
            if why:
                skipped[name] = why
                log("pre-check %s: FAILED, not measured: %s" % (name, why))
            else:
                log("pre-check %s: every file byte-exact over %s" % (name, ", ".join(args.modes)))
    return skipped


def main():
    args = parse_args()
    status = benchlib.reexec_in_netns(os.path.abspath(__file__), NETNS_ENV, not args.no_netns)
    if status is not None:
        return status
    # SIGTERM unwinds like Ctrl-C: h2load is killed, the server stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("%s: stopped by SIGTERM" % PROG))
    benchlib.raise_nofile()
    tmp = tempfile.mkdtemp(prefix="libnet-h2-bench-")
    try:
        ctx = prepare(args, tmp)
        args.skipped = {}
        args.skipped = prechecks(ctx, args)
        cells, failures, rows = run_all(ctx, args) if order(args, 0) else ({}, [], [])
        report(ctx, args, cells, args.skipped, failures, os.environ.get(NETNS_ENV) is not None)
        if args.csv and rows:
            with open(args.csv, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
        return 1 if args.skipped or failures or not rows else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("%s: interrupted" % PROG)
