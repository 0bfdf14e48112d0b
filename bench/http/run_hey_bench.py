#!/usr/bin/env python3
"""Short connections under hey: nginx against libnet's http_server (epoll, io_uring).

zy-http publishes its numbers with hey (github.com/rakyll/hey) and
`-disable-keepalive`: every request a new TCP connection (Go sends
`Connection: close`, the server closes after the answer), at concurrency 1 to
5000, for a missing object (a 404) and for a 1 KiB file. This script makes
that table for nginx (one worker) and `http_server --threads 0` on both
backends: for every object, concurrency and repetition each server runs once,
interleaved and their order rotated between repetitions, a fresh server on a
fresh port for each run, pinned to CPU 0, and `hey -z S -c C
-disable-keepalive URL` pinned to CPU 1. Reported: req/s, hey's average and
p99 latency, the ratios to nginx (taken repetition by repetition, then the
median), the 1 KiB file's rate as a share of the same server's 404 rate, and
the server's CPU per request (every thread of the server's processes).

  bench/http/run_hey_bench.py                   # 2 objects x 6 concurrencies x 3 servers x 3 reps
  bench/http/run_hey_bench.py --quick           # 1 s x 1 rep, a smoke run
  bench/http/run_hey_bench.py --concurrency 100 --objects 404 --seconds 5 --reps 5

hey is the version tools/hey/go.mod pins, built by tools/go_tool.sh into
.cache/hey/bin (the first build needs the Go module proxy), or --hey PATH.
The servers, the private network namespace, the pinning, the quiet wait, the
web root and the byte-exact pre-check come from run_http_bench.py; the
interleaving and the @base twins (--baseline-binary) from run_ab_bench.py.
Needs nginx (nginx-light) and Go (golang-go), which tools/setup.sh installs.
"""

import csv
import datetime
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import shutil
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402  (bench/benchlib.py)
import run_ab_bench as ab  # noqa: E402  (bench/http/run_ab_bench.py)
import run_http_bench as hb  # noqa: E402  (bench/http/run_http_bench.py)
from benchlib import fmt_dur, log  # noqa: E402
from run_http_bench import RunError, Server  # noqa: E402

ROOT = hb.ROOT
PROG = "run_hey_bench"
ALL_SERVERS = hb.ALL_SERVERS
BASE_SUFFIX = benchlib.BASE_SUFFIX
# object name -> (path, expected status, expected body size)
OBJECTS = {"404": (hb.NOT_FOUND, 404, None), "1k": ("/1k.bin", 200, hb.FILES["1k.bin"])}
CONCURRENCY = "1,8,50,100,500,5000"
NETNS_ENV = "LIBNET_HEYBENCH_NETNS"
NETNS_BASELINE_ENV = "LIBNET_HEYBENCH_NETNS_BASELINE"
CSV_FIELDS = ["date", "object", "server", "concurrency", "rep", "seconds", "port", "requests",
              "responses_ok", "statuses", "errors", "size_per_request", "duration_s", "rps",
              "avg_ms", "p50_ms", "p99_ms", "max_ms", "server_cpu_s", "cpu_us_per_request",
              "wakeups_per_request", "server_busy", "hey_cpu_s", "other_load", "steal",
              "problems", "error", "notes"]


# ------------------------------------------------------------------------ hey


def parse_hey(out, status, size):
    """hey's summary as a dict; `problems` lists what makes the run invalid:
    any error, any status but the expected one, a wrong body size."""
    def secs(pattern):
        m = re.search(pattern, out, re.M)
        if not m:
            raise RunError("hey output without %r: %s" % (pattern, out[-400:]))
        return float(m.group(1))

    r = {"duration_s": secs(r"^\s*Total:\s+([\d.]+) secs"),
         "rps": secs(r"^\s*Requests/sec:\s+([\d.]+)"),
         "avg_ms": secs(r"^\s*Average:\s+([\d.]+) secs") * 1e3,
         "max_ms": secs(r"^\s*Slowest:\s+([\d.]+) secs") * 1e3,
         "p50_ms": secs(r"^\s*50% in ([\d.]+) secs") * 1e3,
         "p99_ms": secs(r"^\s*99% in ([\d.]+) secs") * 1e3}
    m = re.search(r"^\s*Size/request:\s+(\d+) bytes", out, re.M)
    r["size_per_request"] = int(m.group(1)) if m else 0
    statuses = {int(c): int(n) for c, n in re.findall(r"^\s*\[(\d{3})\]\s+(\d+) responses",
                                                      out, re.M)}
    errors = out.split("Error distribution:", 1)
    r["errors"] = (sum(int(n) for n in re.findall(r"^\s*\[(\d+)\]\s", errors[1], re.M))
                   if len(errors) > 1 else 0)
    r["statuses"] = " ".join("%d:%d" % kv for kv in sorted(statuses.items()))
    r["responses_ok"] = statuses.get(status, 0)
    r["requests"] = sum(statuses.values()) + r["errors"]
    problems = []
    if r["errors"]:
        problems.append("%d errors: %s" % (r["errors"], errors[1].strip()[:300]))
    if r["responses_ok"] != sum(statuses.values()):
        problems.append("statuses %s, expected only %d" % (r["statuses"], status))
    if size is not None and r["size_per_request"] != size:
        problems.append("%d bytes per response, expected %d" % (r["size_per_request"], size))
    if not r["responses_ok"]:
        problems.append("no response")
    r["problems"] = "; ".join(problems)
    return r


def run_hey(ctx, port, obj, conc, seconds):
    path, status, size = OBJECTS[obj]
    argv = benchlib.pinned(ctx["client_cpus"], [
        ctx["hey"], "-z", "%gs" % seconds, "-c", str(conc), "-disable-keepalive",
        "http://127.0.0.1:%d%s" % (port, path)])
    try:
        w = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 120,
                           preexec_fn=hb.raise_nofile)
    except subprocess.TimeoutExpired:
        raise RunError("hey did not finish within %d s" % (seconds + 120))
    if w.returncode != 0:
        raise RunError("hey exited with status %d: %s" %
                       (w.returncode, (w.stdout + w.stderr).strip()[-400:]))
    return parse_hey(w.stdout, status, size)


# ----------------------------------------------------------------------- runs


def measure(ctx, name, obj, conc, seconds, port):
    """One hey run against a fresh server; returns the run's row."""
    server = Server(name, ctx, port)
    notes = []
    try:
        server.start()
        pid = server.proc.pid
        hb.wait_before_run(ctx, server, notes)
        pids0, tk0, _, _ = ab.server_cpu(pid)
        cs0 = ab.context_switches(pids0)
        (busy0, steal0), hey0, wall0 = (benchlib.machine_cpu_s(), benchlib.children_cpu_s(),
                                        time.time())
        r = run_hey(ctx, server.port, obj, conc, seconds)
        if not benchlib.wait_idle(pid):
            notes.append("server still busy 3 s after hey exited")
        pids1, tk1, _, _ = ab.server_cpu(pid)
        cs1 = ab.context_switches(pids1)
        (busy1, steal1), hey1, wall1 = (benchlib.machine_cpu_s(), benchlib.children_cpu_s(),
                                        time.time())
        if server.proc.poll() is not None:
            raise RunError("%s died during the run (status %s): %s" %
                           (name, server.proc.returncode, server.output()))
    finally:
        warning = server.stop()
    if warning:
        notes.append(warning)
    n = r["requests"] or float("nan")
    r["server_cpu_s"] = tk1 - tk0
    r["cpu_us_per_request"] = r["server_cpu_s"] / n * 1e6
    r["wakeups_per_request"] = (cs1 - cs0) / n
    # Under 1 the server waited for hey: req/s is then hey's limit.
    r["server_busy"] = r["server_cpu_s"] / r["duration_s"] if r["duration_s"] else float("nan")
    r["hey_cpu_s"] = hey1 - hey0
    cpu_wall = (wall1 - wall0) * (os.cpu_count() or 1)
    r["other_load"] = max(0.0, (busy1 - busy0) - r["server_cpu_s"] - r["hey_cpu_s"]) / cpu_wall
    r["steal"] = (steal1 - steal0) / cpu_wall
    r["notes"] = "; ".join(notes)
    return r


def measure_all(args, ctx, active, concs, next_port, out):
    """Every run, one CSV row each; returns {(object, conc, server): [run]}."""
    results = {}
    combos = [(obj, conc) for obj in args.objects for conc in concs]
    total = len(combos) * args.reps * len(active)
    t0, done = time.time(), 0
    for obj, conc in combos:
        for rep in range(args.reps):
            for name in ab.run_order(active, rep):
                left = ", about %s left" % benchlib.eta(t0, done, total) if done else ""
                done += 1
                log("[run %d/%d] %s c %d %s rep %d/%d%s" %
                    (done, total, obj, conc, name, rep + 1, args.reps, left))
                port = next_port()
                try:
                    r = measure(ctx, name, obj, conc, args.seconds, port)
                    log("  %s req/s, avg %.2f ms, p99 %.2f ms, server %.1f us/req (busy %.0f%%),"
                        " hey CPU %.0f%%, other load %.0f%%%s" %
                        (hb.fmt_rps(r["rps"]), r["avg_ms"], r["p99_ms"], r["cpu_us_per_request"],
                         100 * r["server_busy"], 100 * r["hey_cpu_s"] / r["duration_s"],
                         100 * r["other_load"], ", HEY: " + r["problems"] if r["problems"]
                         else ""))
                except RunError as e:
                    r = {"error": str(e)}
                    log("  FAILED: %s" % e)
                r["rep"] = rep + 1
                results.setdefault((obj, conc, name), []).append(r)
                row = dict(r, object=obj, server=name, concurrency=conc, seconds=args.seconds,
                           port=port, date=datetime.datetime.now().isoformat(timespec="seconds"))
                row.update((k, "%.4f" % v) for k, v in r.items() if isinstance(v, float))
                out.writerow(row)
    return results


# --------------------------------------------------------------------- output


def ok_runs(results, key):
    return [r for r in results.get(key, []) if "error" not in r and not r["problems"]]


def per_rep(results, a, b, field):
    """field of run a over field of run b, repetition by repetition."""
    by_rep = {r["rep"]: r for r in ok_runs(results, b)}
    return [r[field] / by_rep[r["rep"]][field] for r in ok_runs(results, a)
            if r["rep"] in by_rep and by_rep[r["rep"]][field] > 0]


def cell(values, fmt):
    return hb.med_cell(values, fmt)


def f2(v):
    return "%.2f" % v


def f1(v):
    return "%.1f" % v


def f0(v):
    return "%.0f" % v


def object_table(obj, concs, servers, results):
    """zy-http's table: concurrency x (req/s, average, p99) per server, and
    the ratios to nginx."""
    others = [s for s in servers if s != "nginx"]
    nginx = "nginx" in servers
    header = ["c"]
    for s in servers:
        header += ["%s req/s" % hb.short(s), "%s avg ms" % hb.short(s),
                   "%s p99 ms" % hb.short(s)]
    if nginx:
        header += ["%s/nginx req/s" % hb.short(s) for s in others]
        header += ["%s/nginx p99" % hb.short(s) for s in others]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for conc in concs:
        row = [str(conc)]
        for s in servers:
            ok = ok_runs(results, (obj, conc, s))
            row += [cell([r["rps"] for r in ok], hb.fmt_rps),
                    cell([r["avg_ms"] for r in ok], f2), cell([r["p99_ms"] for r in ok], f2)]
        if nginx:
            row += [cell(per_rep(results, (obj, conc, s), (obj, conc, "nginx"), "rps"), f2)
                    for s in others]
            row += [cell(per_rep(results, (obj, conc, s), (obj, conc, "nginx"), "p99_ms"), f2)
                    for s in others]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def cpu_table(objects, concs, servers, results):
    """Server CPU per request, busy share, wake-ups per request, the client's
    CPU, the other load, and (both objects run) the 1 KiB file's rate over
    the 404's."""
    header = ["object", "c", "server", "server CPU us/req", "CPU vs nginx", "server busy %",
              "wake-ups/req", "hey CPU %", "other load %"]
    both = "404" in objects and "1k" in objects
    if both:
        header.append("1k req/s / 404 req/s")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for obj in objects:
        for conc in concs:
            for s in servers:
                key = (obj, conc, s)
                ok = ok_runs(results, key)
                row = [obj, str(conc), s, cell([r["cpu_us_per_request"] for r in ok], f1),
                       cell(per_rep(results, key, (obj, conc, "nginx"), "cpu_us_per_request"), f2)
                       if s != "nginx" and "nginx" in servers else "-",
                       cell([100 * r["server_busy"] for r in ok], f0),
                       cell([r["wakeups_per_request"] for r in ok], f2),
                       cell([100 * r["hey_cpu_s"] / r["duration_s"] for r in ok], f0),
                       cell([100 * r["other_load"] for r in ok], f0)]
                if both:
                    row.append(cell(per_rep(results, ("1k", conc, s), ("404", conc, s), "rps"),
                                    f2) if obj == "1k" else "-")
                lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def problem_lines(results):
    notes = []
    for (obj, conc, name), runs in sorted(results.items(), key=lambda kv: str(kv[0])):
        for r in runs:
            what = r.get("error") or r.get("problems")
            where = "%s c %d %s rep %d" % (obj, conc, name, r["rep"])
            if what:
                notes.append("%s: **%s**" % (where, what))
            if r.get("notes"):
                notes.append("%s: %s" % (where, r["notes"]))
            if "error" not in r and max(r["other_load"], r["steal"]) > hb.OTHER_LOAD_NOTE:
                notes.append("%s: other work on the machine (other %.0f%%, steal %.0f%%)" %
                             (where, 100 * r["other_load"], 100 * r["steal"]))
    return notes


def print_report(args, ctx, meta, active, skipped, concs, results):
    print("## Short connections: nginx vs libnet under hey -disable-keepalive\n")
    print("- Machine: %s; kernel %s" % (meta["machine"], platform.release()))
    print("- Date: %s" % meta["date"])
    print("- hey: %s; nginx: %s (one worker)" % (meta["hey"], meta["nginx"]))
    if any(s.startswith("libnet") for s in active):
        print("- libnet: `http_server --threads 0 --backend epoll|uring`%s" %
              (" (%s)" % args.binary if args.binary else ""))
    print("- Command: `%s`" % meta["command"])
    print("- Network: %s" % ("a private network namespace" if ctx["netns"] else
                              "the machine's own namespace"))
    for name, errors in skipped.items():
        print("- **%s not measured**: pre-check failed: %s" % (name, "; ".join(errors)))
    print("- Method: `hey -z %gs -c C -disable-keepalive URL`, %s, servers interleaved and "
          "their order rotated between repetitions, a fresh server per run; server on CPU %s, "
          "hey on CPU %s. Ratios are taken repetition by repetition, then the median. Server "
          "CPU = utime+stime of the server's processes from just before hey starts until the "
          "server is idle after it.\n" %
          (args.seconds, "median of %d (min–max)" % args.reps if args.reps > 1 else "1 run",
           args.server_cpus, args.client_cpus))
    for obj in args.objects:
        path, status, _ = OBJECTS[obj]
        print("### GET %s (%d)\n" % (path, status))
        print(object_table(obj, concs, active, results))
    print("### Server CPU per request, wake-ups, the client's CPU\n")
    print(cpu_table(args.objects, concs, active, results))
    notes = problem_lines(results)
    if notes:
        print("\n".join("- " + n for n in notes) + "\n")


# ----------------------------------------------------------------------- main


def find_tools(args, ctx, servers):
    missing = []
    if "nginx" in servers:
        ctx["nginx"] = benchlib.find_tool("nginx")
        if ctx["nginx"] is None:
            missing.append("nginx-light")
    if benchlib.find_tool("taskset") is None:
        missing.append("util-linux")
    hb.exit_if_missing(PROG, missing)
    if args.hey:
        ctx["hey"] = os.path.abspath(args.hey)
    elif NETNS_ENV in os.environ:
        ctx["hey"] = os.path.join(os.environ[NETNS_ENV].split(":", 1)[0], "hey")
    else:
        r = subprocess.run([os.path.join(ROOT, "tools", "go_tool.sh"), "hey",
                            "github.com/rakyll/hey"], stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit("%s: could not build hey (tools/go_tool.sh); pass --hey PATH" % PROG)
        ctx["hey"] = r.stdout.strip()
    if not os.access(ctx["hey"], os.X_OK):
        sys.exit("%s: %s is not an executable" % (PROG, ctx["hey"]))


def argument_parser():
    ap = benchlib.arg_parser(__doc__)
    ap.add_argument("--concurrency", default=CONCURRENCY,
                    help="hey -c values, comma-separated (default %s)" % CONCURRENCY)
    ap.add_argument("--objects", default="404,1k",
                    help="404 (GET %s), 1k (GET /1k.bin, 1024 bytes); default both" %
                    hb.NOT_FOUND)
    ap.add_argument("--seconds", type=float, help="hey -z per run (default 3; --quick 1)")
    ap.add_argument("--reps", type=int, help="runs per cell and server (default 3; --quick 1)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 s x 1 rep")
    ap.add_argument("--servers", default=",".join(ALL_SERVERS),
                    help="comma-separated subset of %s" % ",".join(ALL_SERVERS))
    ap.add_argument("--binary", help="a prebuilt http_server (default: build it with Bazel)")
    ap.add_argument("--baseline-binary", metavar="PATH",
                    help="an http_server of an earlier build: adds libnet-*@base twins")
    ap.add_argument("--hey", help="a hey binary (default: tools/go_tool.sh builds the pinned one)")
    hb.add_machine_arguments(ap, "hey", 24000, "hey-results", "the CSV")
    return ap


def main():
    args = argument_parser().parse_args()
    hb.apply_nice(PROG, args)
    args.seconds = args.seconds or (1 if args.quick else 3)
    args.reps = args.reps or (1 if args.quick else 3)
    concs = ab.parse_ints(args.concurrency, "--concurrency")
    args.objects = [o.strip() for o in args.objects.split(",") if o.strip()]
    if not args.objects or any(o not in OBJECTS for o in args.objects):
        sys.exit("%s: --objects: a comma-separated list of %s" % (PROG, ", ".join(OBJECTS)))
    servers = ab.parse_servers(args.servers)
    if args.port_base + 2000 > 32768 or args.port_base < 1024:
        sys.exit("%s: --port-base must be in 1024..30768: the ports above are hey's" % PROG)
    ctx = {"threads": 0, "accept": "per-loop", "quiet_wait": args.quiet_wait,
           "server_cpus": args.server_cpus, "client_cpus": args.client_cpus,
           "out": os.path.abspath(args.out)}
    find_tools(args, ctx, servers)
    hb.check_cpus(PROG, args, "hey")
    servers = hb.check_binaries(PROG, args, servers)
    if NETNS_ENV in os.environ:
        ctx["tmp"], ctx["binary"] = os.environ[NETNS_ENV].split(":", 1)
        ctx["baseline"] = os.environ.get(NETNS_BASELINE_ENV)
        ctx["netns"] = True
        benchlib.loopback_up()
        return bench(args, ctx, servers, concs)
    return run_in_temp_dir(args, ctx, servers, concs)


def run_in_temp_dir(args, ctx, servers, concs):
    """Copies or builds the binaries (and hey) into a temp dir, then benches,
    in a private network namespace when it can; removes the temp dir."""
    ctx["tmp"] = tempfile.mkdtemp(prefix="libnet-heybench-")
    try:
        shutil.copy2(ctx["hey"], os.path.join(ctx["tmp"], "hey"))
        ctx["hey"] = os.path.join(ctx["tmp"], "hey")
        if args.binary:
            ctx["binary"] = os.path.join(ctx["tmp"], "http_server")
            shutil.copy2(args.binary, ctx["binary"])
        elif any(s.startswith("libnet") for s in servers):
            ctx["binary"] = ab.build(ctx)
        if args.baseline_binary:
            hb.copy_baseline(ctx, args.baseline_binary, "rows")
        if not args.shared_netns:
            if benchlib.netns_available():
                return benchlib.run_in_netns(ctx, os.path.abspath(__file__), NETNS_ENV,
                                             NETNS_BASELINE_ENV)
            log("note: cannot make a network namespace (needs root); staying in the machine's")
        ctx["netns"] = False
        return bench(args, ctx, servers, concs)
    finally:
        shutil.rmtree(ctx["tmp"], ignore_errors=True)


def bench(args, ctx, servers, concs):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("%s: stopped by SIGTERM" % PROG))
    if "nginx" in servers:
        ctx["nginx_dir"] = os.path.join(ctx["tmp"], "nginx")
        os.makedirs(ctx["nginx_dir"], exist_ok=True)
        with open(os.path.join(HERE, "nginx.conf.in")) as f:
            ctx["nginx_template"] = f.read()
    ctx["www"], files = hb.make_www(ctx)
    os.makedirs(ctx["out"], exist_ok=True)
    meta = {"hey": "rakyll/hey v0.1.4 (tools/hey/go.mod)" if not args.hey else args.hey,
            "nginx": (benchlib.first_line([ctx["nginx"], "-v"]).replace("nginx version: ", "")
                      if "nginx" in servers else "not run"),
            "machine": "%s, nproc %d" % (benchlib.cpu_model(), len(os.sched_getaffinity(0))),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(shlex.quote(a) for a in
                                ["bench/http/run_hey_bench.py"] + sys.argv[1:])}
    next_port = hb.port_allocator(args.port_base, PROG)
    skipped = hb.precheck_all(ctx, servers, files, next_port)
    active = [s for s in servers if s not in skipped]
    if not active:
        sys.exit("%s: no server passed the pre-check" % PROG)
    csv_path = os.path.join(ctx["out"], "hey_bench.csv")
    t0 = time.time()
    with open(csv_path, "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        out.writeheader()
        results = measure_all(args, ctx, active, concs, next_port, out)
    print_report(args, ctx, meta, active, skipped, concs, results)
    log("CSV: %s (%s total)" % (csv_path, fmt_dur(time.time() - t0)))
    failed = any("error" in r or r.get("problems") for runs in results.values() for r in runs)
    return 1 if skipped or failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("%s: interrupted" % PROG)
