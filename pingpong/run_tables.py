#!/usr/bin/env python3
"""Reproduces the ping-pong tables of the muduo book (ch. 6.5.1) with libnet.

Builds optimized binaries, runs each table cell several times with the
implementations interleaved (A B C A B C ...), and reports for every cell the
median MiB/s (min-max) and the server's CPU time per GiB echoed, measured from
/proc/PID/task/*/schedstat over exactly the client's measured window.

Output: progress on stderr; markdown tables on stdout; a CSV and an SVG chart
per table in --out.

  pingpong/run_tables.py                  # quick mode (about 9 minutes)
  pingpong/run_tables.py --mode full      # the full tables (10 s cells, 5 runs, 10000 sessions)
  pingpong/run_tables.py --tables backends
  pingpong/run_tables.py --tables coro    # coroutines vs callbacks vs asio-coro
  pingpong/run_tables.py --tables tls     # TLS: libnet vs Boost.Asio's ssl::stream

Comparing two builds: with --baseline-bindir DIR, every libnet implementation
in the selected tables (libnet-epoll, libnet-uring, server-epoll,
server-uring) gets a twin, NAME@base, that runs DIR's pingpong_server and
pingpong_client (the whole earlier build, client included) in the same cell
and repetition, right next to NAME. The tables gain, per libnet
implementation, the ratios now/base of the median MiB/s and of the median
server CPU s/GiB; the CSV has the @base rows; the charts draw the twins
dashed. DIR has the layout --bindir has: the binaries side by side under
their target names. Only pingpong_server and pingpong_client are read from
it, so the bazel-bin/pingpong of an optimized build will do; both are copied
away at the start, so a later build there cannot swap them mid-run:

  git worktree add /tmp/base REV
  (cd /tmp/base && bazel build --config=opt //pingpong:all)
  pingpong/run_tables.py --tables backends --reps 4 \\
      --baseline-bindir /tmp/base/bazel-bin/pingpong
  git worktree remove /tmp/base

Use an even --reps: the twins' order alternates between repetitions.
"""

import argparse
import atexit
import csv
import datetime
import filecmp
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import benchlib  # noqa: E402  (bench/benchlib.py)
import make_test_certs  # noqa: E402  (tools/make_test_certs.py)
from benchlib import BASE_SUFFIX, log  # noqa: E402

# name -> (bazel package, binary)
BINARIES = {
    "pingpong_server": ("pingpong", "pingpong_server"),
    "pingpong_client": ("pingpong", "pingpong_client"),
    "asio_pingpong_server": ("pingpong/asio", "asio_pingpong_server"),
    "asio_pingpong_client": ("pingpong/asio", "asio_pingpong_client"),
    "coro_pingpong_server": ("pingpong", "coro_pingpong_server"),
    "asio_coro_pingpong_server": ("pingpong/asio", "asio_coro_pingpong_server"),
    "asio_coro_pingpong_client": ("pingpong/asio", "asio_coro_pingpong_client"),
    "asio_ssl_pingpong_server": ("pingpong/asio", "asio_ssl_pingpong_server"),
    "asio_ssl_pingpong_client": ("pingpong/asio", "asio_ssl_pingpong_client"),
    "libevent_pingpong_server": ("pingpong/libevent", "libevent_pingpong_server"),
    "libevent_pingpong_client": ("pingpong/libevent", "libevent_pingpong_client"),
    "epoll_floor_server": ("pingpong/floor", "epoll_floor_server"),
    "uring_floor_server": ("pingpong/floor", "uring_floor_server"),
}

TLS_SERVER = ["--tls-cert", "@CERT@", "--tls-key", "@KEY@"]
TLS_CLIENT = ["--tls-ca", "@CA@"]
LIBNET_EPOLL_CLIENT = ["pingpong_client", "--backend", "epoll"]
LIBNET_URING_CLIENT = ["pingpong_client", "--backend", "uring"]

# Each implementation: its server and the client it is measured with (each
# library's own client, as in the book; the floors use libnet's client of the
# same backend, so libnet and its floor differ only in the server).
IMPLS = {
    "libnet-epoll": (["pingpong_server", "--backend", "epoll"], LIBNET_EPOLL_CLIENT),
    "libnet-uring": (["pingpong_server", "--backend", "uring"], LIBNET_URING_CLIENT),
    "asio": (["asio_pingpong_server"], ["asio_pingpong_client"]),
    # The coroutine layer (net/coro/): server and client written as one
    # coroutine per connection, against Boost.Asio's C++20 coroutines.
    "libnet-coro-epoll": (["coro_pingpong_server", "--backend", "epoll"],
                          LIBNET_EPOLL_CLIENT + ["--coro"]),
    "libnet-coro-uring": (["coro_pingpong_server", "--backend", "uring"],
                          LIBNET_URING_CLIENT + ["--coro"]),
    "asio-coro": (["asio_coro_pingpong_server"], ["asio_coro_pingpong_client"]),
    # TLS 1.3 over the same OpenSSL (net/tls/ against asio's ssl::stream);
    # @CERT@, @KEY@ and @CA@ are the run's certificates (make_certs).
    "libnet-tls-epoll": (["pingpong_server", "--backend", "epoll"] + TLS_SERVER,
                         LIBNET_EPOLL_CLIENT + TLS_CLIENT),
    "libnet-tls-uring": (["pingpong_server", "--backend", "uring"] + TLS_SERVER,
                         LIBNET_URING_CLIENT + TLS_CLIENT),
    "asio-ssl": (["asio_ssl_pingpong_server"] + TLS_SERVER,
                 ["asio_ssl_pingpong_client"] + TLS_CLIENT),
    "libevent": (["libevent_pingpong_server"], ["libevent_pingpong_client"]),
    "floor-epoll": (["epoll_floor_server"], LIBNET_EPOLL_CLIENT),
    "floor-uring": (["uring_floor_server"], LIBNET_URING_CLIENT),
    # Both libnet servers against the same (epoll) client: isolates the
    # server backend for the epoll-vs-io_uring comparison.
    "server-epoll": (["pingpong_server", "--backend", "epoll"], LIBNET_EPOLL_CLIENT),
    "server-uring": (["pingpong_server", "--backend", "uring"], LIBNET_EPOLL_CLIENT),
    # The floors against that same client, for the backends table.
    "sfloor-epoll": (["epoll_floor_server"], LIBNET_EPOLL_CLIENT),
    "sfloor-uring": (["uring_floor_server"], LIBNET_EPOLL_CLIENT),
}

# --baseline-bindir: these implementations get a twin, named with
# benchlib.BASE_SUFFIX, that runs the baseline build's binaries.
TWINNED = ["libnet-epoll", "libnet-uring", "server-epoll", "server-uring", "libnet-tls-epoll",
           "libnet-tls-uring"]
BASELINE_BINARIES = sorted({argv[0] for impl in TWINNED for argv in IMPLS[impl]})

NCPU = os.cpu_count() or 1


def table_specs(mode):
    full = mode == "full"
    return {
        "single16k": dict(
            title="Single thread, 16 KiB messages",
            impls=["libnet-epoll", "libnet-uring", "asio", "libevent", "floor-epoll", "floor-uring"],
            blocksizes=[16384],
            sessions=[1, 10, 100, 1000] + ([10000] if full else []),
            threads=[1],
            pinned=True,
        ),
        "single4k": dict(
            title="Single thread, 4096-byte messages (the book's fair re-run against libevent)",
            impls=["libnet-epoll", "libnet-uring", "libevent"],
            blocksizes=[4096],
            sessions=[1, 10, 100, 1000],
            threads=[1],
            pinned=True,
        ),
        "multi": dict(
            title="Multi-thread, 16 KiB messages (unpinned: client and server share the cores)",
            impls=["libnet-epoll", "libnet-uring", "asio"],
            blocksizes=[16384],
            sessions=[100, 1000],
            threads=list(range(1, min(4, NCPU) + 1)),
            pinned=False,
        ),
        "coro": dict(
            title="Coroutines vs callbacks, single thread, 16 KiB messages",
            impls=["libnet-epoll", "libnet-coro-epoll", "libnet-uring", "libnet-coro-uring",
                   "asio", "asio-coro"],
            blocksizes=[16384],
            sessions=[1, 10, 100, 1000] + ([10000] if full else []),
            threads=[1],
            pinned=True,
        ),
        "tls": dict(
            title="TLS 1.3 (AES-256-GCM), single thread, 16 KiB messages; handshakes not timed",
            impls=["libnet-tls-epoll", "libnet-tls-uring", "asio-ssl"],
            blocksizes=[16384],
            sessions=[1, 10, 100] + ([1000] if full else []),
            threads=[1],
            pinned=True,
        ),
        "backends": dict(
            title="libnet server on epoll vs io_uring (same epoll client)",
            impls=["server-epoll", "server-uring", "sfloor-epoll", "sfloor-uring"],
            blocksizes=[64, 1024, 4096, 16384],
            sessions=[1, 100, 1000],
            threads=[1],
            pinned=True,
        ),
    }


def build(bindir):
    targets = sorted({"//%s:%s" % pkg_bin for pkg_bin in BINARIES.values()})
    log("building: bazel build --config=opt " + " ".join(targets))
    subprocess.run(["bazel", "build", "--config=opt"] + targets, cwd=ROOT, check=True)
    # bazel-bin is a symlink that follows the last build's configuration:
    # copy the binaries so a later build cannot swap them mid-run.
    out = subprocess.run(["bazel", "info", "--config=opt", "bazel-bin"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()
    for name, (pkg, binary) in BINARIES.items():
        shutil.copy2(os.path.join(out, pkg, binary), os.path.join(bindir, name))


def copy_baseline(src):
    """Copies the binaries the @base twins run from src into a temp dir (the
    same reason as build(): src is often a bazel-bin that a build in the
    baseline tree can re-point mid-run). Returns the temp dir, or an error."""
    missing = [n for n in BASELINE_BINARIES if not os.access(os.path.join(src, n), os.X_OK)]
    if missing:
        return None, ("--baseline-bindir %s has no executable %s (it takes --bindir's layout: "
                      "the binaries side by side, as in bazel-bin/pingpong)" %
                      (src, " or ".join(missing)))
    dst = tempfile.mkdtemp(prefix="libnet-pingpong-base-")
    for name in BASELINE_BINARIES:
        shutil.copy2(os.path.join(src, name), os.path.join(dst, name))
    return dst, None


class CellError(RuntimeError):
    pass


# The certificates of the TLS table, made once per run
# (tools/make_test_certs.py).
CERTS = {}


def with_certs(argv):
    return [CERTS.get(a, a) for a in argv]


def run_once(bindir, impl, blocksize, sessions, threads, seconds, pinned, port):
    server_argv, client_argv = IMPLS[impl.removesuffix(BASE_SUFFIX)]
    server_threads = 0 if threads == 1 and impl.startswith(("libnet", "server")) else threads
    server = [os.path.join(bindir, server_argv[0])] + with_certs(server_argv[1:]) + [
        "127.0.0.1", str(port), str(server_threads)]
    client = [os.path.join(bindir, client_argv[0])] + with_certs(client_argv[1:]) + [
        "127.0.0.1", str(port), str(threads), str(blocksize), str(sessions), str(seconds)]
    srv = subprocess.Popen(benchlib.pinned_if_possible(0 if pinned else None, server),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if benchlib.wait_listening(srv, 10) is None:
            raise CellError("%s server did not start: %s" % (impl, srv.stderr.read()[-500:]))
        cli = subprocess.Popen(benchlib.pinned_if_possible(1 if pinned and NCPU > 1 else None,
                                                           client),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cpu_start = benchlib.thread_cpu_ns(srv.pid)
        cpu_stop = None
        result = None
        for out in cli.stdout:
            out = out.strip()
            if out == "START":
                cpu_start = benchlib.thread_cpu_ns(srv.pid)
            elif out == "STOP":
                cpu_stop = benchlib.thread_cpu_ns(srv.pid)
            elif out.startswith("RESULT"):
                result = dict(kv.split("=", 1) for kv in out.split()[1:])
        if cpu_stop is None:
            cpu_stop = benchlib.thread_cpu_ns(srv.pid)
        try:
            cli.wait(timeout=seconds + 120)
        except subprocess.TimeoutExpired:
            cli.kill()
            raise CellError("%s client hung" % impl)
        if cli.returncode != 0 or result is None:
            raise CellError("%s client failed (%s): %s" % (impl, cli.returncode,
                                                          cli.stderr.read()[-500:]))
    finally:
        benchlib.stop_process(srv)
    nbytes = int(result["bytes"])
    cpu_s = (cpu_stop - cpu_start) / 1e9
    gib = nbytes / 2**30
    return dict(
        mibps=float(result["mibps"]),
        bytes=nbytes,
        cpu_s=cpu_s,
        cpu_per_gib=cpu_s / gib if gib > 0 else float("nan"),
        us_per_msg=cpu_s * 1e6 / (nbytes / blocksize) if nbytes else float("nan"),
    )


def median_range(values):
    return statistics.median(values), min(values), max(values)


def svg_chart(path, title, series, xs, xlabel, ylabel):
    """A small line chart: one line per implementation, x as categories; a
    NAME@base twin is drawn dashed in NAME's color."""
    w, h, left, right, top, bottom = 720, 420, 70, 160, 40, 50
    ymax = max([v for vals in series.values() for v in vals if v == v] + [1]) * 1.1
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"]
    pw, ph = w - left - right, h - top - bottom

    def px(i):
        return left + (pw * i / max(1, len(xs) - 1) if len(xs) > 1 else pw / 2)

    def py(v):
        return top + ph - ph * v / ymax

    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'font-family="sans-serif" font-size="12">' % (w, h),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="%d" y="22" font-size="15">%s</text>' % (left, title)]
    for k in range(6):
        v = ymax * k / 5
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' %
                     (left, left + pw, py(v), py(v)))
        parts.append('<text x="%d" y="%.1f" text-anchor="end">%.0f</text>' %
                     (left - 6, py(v) + 4, v))
    for i, x in enumerate(xs):
        parts.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' %
                     (px(i), top + ph + 18, x))
    parts.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' %
                 (left + pw / 2, h - 8, xlabel))
    parts.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">%s'
                 '</text>' % (top + ph / 2, top + ph / 2, ylabel))
    color_of = {}
    for name in series:
        if not name.endswith(BASE_SUFFIX):
            color_of[name] = colors[len(color_of) % len(colors)]
    for n, (name, vals) in enumerate(series.items()):
        twin = name.removesuffix(BASE_SUFFIX)
        color = color_of.get(twin, colors[n % len(colors)])
        dash = ' stroke-dasharray="6,4"' if twin != name else ""
        pts = " ".join("%.1f,%.1f" % (px(i), py(v)) for i, v in enumerate(vals) if v == v)
        parts.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' %
                     (color, dash, pts))
        for i, v in enumerate(vals):
            if v == v:
                parts.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(i), py(v), color))
        ly = top + 16 * n + 10
        parts.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' %
                     (left + pw + 12, left + pw + 32, ly, ly, color, dash))
        parts.append('<text x="%d" y="%d">%s</text>' % (left + pw + 38, ly + 4, name))
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def ratio(a, b):
    return "%.2f" % (a / b) if a == a and b == b and b > 0 else "-"


def short_name(impl):
    """'epoll' for libnet-epoll or server-epoll: a table has one of each."""
    return impl.split("-", 1)[1]


def markdown(name, spec, cells, mode, reps, seconds):
    lines = ["### %s" % spec["title"], ""]
    multi = len(spec["threads"]) > 1
    sizes = spec["blocksizes"]
    impls = spec["impls"]
    for blocksize in sizes:
        if len(sizes) > 1:
            lines += ["%d-byte messages:" % blocksize, ""]
        ratios, cpu_ratios = ratio_columns(impls)
        twins = [i for i in impls if i + BASE_SUFFIX in impls]
        header = ["sessions", "threads"] if multi else ["sessions"]
        header += ["%s MiB/s" % i for i in impls]
        header += ["%s/%s" % r for r in ratios]
        header += ["%s MiB/s now/base" % short_name(i) for i in twins]
        header += ["server CPU s/GiB: " + ", ".join(impls)]
        header += ["%s CPU now/base" % short_name(i) for i in twins]
        header += ["%s/%s CPU" % r for r in cpu_ratios]
        if name == "backends":
            header += ["server µs/msg: " + ", ".join(impls), "uring/epoll CPU per msg"]
            if "sfloor-uring" in impls:
                header += ["server-uring/sfloor-uring CPU", "server-epoll/sfloor-epoll CPU"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for sessions in spec["sessions"]:
            for threads in spec["threads"]:
                key = (blocksize, sessions, threads)
                row = table_row(name, impls, cells, key, multi, ratios, cpu_ratios, twins)
                lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    lines.append("%s mode: %d s per run, median of %d runs (min–max), implementations "
                 "interleaved; %s." % (mode, seconds, reps,
                                       "server on CPU 0, client on CPU 1" if spec["pinned"]
                                       else "unpinned"))
    if any(i.endswith(BASE_SUFFIX) for i in impls):
        lines.append("NAME@base: the same implementation built from --baseline-bindir (its "
                     "server and client), run next to NAME in every repetition, the pair's "
                     "order alternating between repetitions. now/base: ratio of the medians "
                     "(MiB/s above 1 and CPU below 1: the current build is better).")
    lines.append("")
    return "\n".join(lines)


def ratio_columns(impls):
    """The (a, b) pairs whose MiB/s ratio a/b, and whose CPU ratio, a table
    of impls shows."""
    ratios = []
    if "libnet-epoll" in impls and "asio" in impls:
        ratios.append(("libnet-epoll", "asio"))
    if "libnet-epoll" in impls and "libevent" in impls:
        ratios.append(("libnet-epoll", "libevent"))
    if "libnet-uring" in impls and "libnet-epoll" in impls:
        ratios.append(("libnet-uring", "libnet-epoll"))
    if "libnet-epoll" in impls and "floor-epoll" in impls:
        ratios.append(("libnet-epoll", "floor-epoll"))
    if "libnet-uring" in impls and "floor-uring" in impls:
        ratios.append(("libnet-uring", "floor-uring"))
    if "server-uring" in impls:
        ratios.append(("server-uring", "server-epoll"))
    for tls in ("libnet-tls-epoll", "libnet-tls-uring"):
        if tls in impls and "asio-ssl" in impls:
            ratios.append((tls, "asio-ssl"))
    for coro, anchor in (("libnet-coro-epoll", "libnet-epoll"),
                         ("libnet-coro-uring", "libnet-uring"),
                         ("libnet-coro-epoll", "asio-coro"),
                         ("libnet-coro-uring", "asio-coro")):
        if coro in impls and anchor in impls:
            ratios.append((coro, anchor))
    cpu_ratios = [(a, b) for a, b in (("libnet-coro-epoll", "libnet-epoll"),
                                      ("libnet-coro-uring", "libnet-uring"),
                                      ("libnet-tls-epoll", "asio-ssl"),
                                      ("libnet-tls-uring", "asio-ssl"))
                  if a in impls and b in impls]
    return ratios, cpu_ratios


def table_row(name, impls, cells, key, multi, ratios, cpu_ratios, twins):
    """The cells of one (blocksize, sessions, threads) row."""
    blocksize, sessions, threads = key
    row = [str(sessions)] + ([str(threads)] if multi else [])
    med = {}
    for impl in impls:
        runs = cells.get((impl, blocksize, sessions, threads), [])
        if not runs:
            row.append("-")
            med[impl] = None
            continue
        m, lo, hi = median_range([r["mibps"] for r in runs])
        med[impl] = dict(mibps=m,
                         cpu=statistics.median([r["cpu_per_gib"] for r in runs]),
                         us=statistics.median([r["us_per_msg"] for r in runs]))
        row.append("%.0f (%.0f–%.0f)" % (m, lo, hi) if len(runs) > 1 else "%.0f" % m)
    for a, b in ratios:
        row.append(ratio(med[a]["mibps"], med[b]["mibps"]) if med[a] and med[b] else "-")
    for i in twins:
        now, base = med[i], med[i + BASE_SUFFIX]
        row.append(ratio(now["mibps"], base["mibps"]) if now and base else "-")
    row.append(", ".join("%.2f" % med[i]["cpu"] if med[i] else "-" for i in impls))
    for i in twins:
        now, base = med[i], med[i + BASE_SUFFIX]
        row.append(ratio(now["cpu"], base["cpu"]) if now and base else "-")
    for a, b in cpu_ratios:
        row.append(ratio(med[a]["cpu"], med[b]["cpu"]) if med[a] and med[b] else "-")
    if name == "backends":
        row.append(", ".join("%.2f" % med[i]["us"] if med[i] else "-" for i in impls))
        e, u = med.get("server-epoll"), med.get("server-uring")
        row.append(ratio(u["us"], e["us"]) if e and u else "-")
        if "sfloor-uring" in impls:
            for lib, floor in (("server-uring", "sfloor-uring"),
                               ("server-epoll", "sfloor-epoll")):
                a, b = med.get(lib), med.get(floor)
                row.append(ratio(a["us"], b["us"]) if a and b else "-")
    return row


def machine_line():
    return "%s, %d CPUs, kernel %s, %s" % (benchlib.cpu_model(), NCPU, platform.release(),
                                          datetime.datetime.now(datetime.timezone.utc)
                                          .strftime("%Y-%m-%d %H:%M UTC"))


def argument_parser():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["quick", "full"], default="quick")
    ap.add_argument("--tables", default="single16k,single4k,multi,coro,tls",
                    help="comma-separated: single16k, single4k, multi, coro, tls, backends "
                    "(all but backends by default)")
    ap.add_argument("--seconds", type=int, help="seconds per run (quick 2, full 10)")
    ap.add_argument("--reps", type=int, help="runs per cell (quick 2, full 5)")
    ap.add_argument("--out", default=os.path.join(ROOT, "pingpong-results"),
                    help="directory for the CSV and SVG files")
    ap.add_argument("--no-build", action="store_true", help="use binaries already in --bindir")
    ap.add_argument("--bindir", help="where the binaries are (default: a fresh temp dir)")
    ap.add_argument("--baseline-bindir", metavar="DIR",
                    help="binaries of an earlier build, laid out as in --bindir (only "
                    "pingpong_server and pingpong_client are used, e.g. a bazel-bin/pingpong): "
                    "adds a NAME@base twin next to every libnet implementation and now/base "
                    "ratios; see above")
    return ap


def main():
    ap = argument_parser()
    args = ap.parse_args()

    seconds = args.seconds or (10 if args.mode == "full" else 2)
    reps = args.reps or (5 if args.mode == "full" else 2)
    specs = table_specs(args.mode)
    names = [t.strip() for t in args.tables.split(",") if t.strip()]
    for n in names:
        if n not in specs:
            ap.error("unknown table %r" % n)

    basedir = None
    if args.baseline_bindir:
        basedir, error = copy_baseline(args.baseline_bindir)
        if error:
            ap.error(error)
        atexit.register(shutil.rmtree, basedir, True)
        specs = {n: dict(spec, impls=benchlib.with_twins(spec["impls"], TWINNED.__contains__))
                 for n, spec in specs.items()}

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 20000 if hard == resource.RLIM_INFINITY else min(20000, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

    if "tls" in names:
        certdir = tempfile.mkdtemp(prefix="libnet-pingpong-certs-")
        atexit.register(shutil.rmtree, certdir, True)
        paths = make_test_certs.make(certdir)
        CERTS.update({"@CERT@": paths["cert"], "@KEY@": paths["key"], "@CA@": paths["ca"]})

    bindir = args.bindir or tempfile.mkdtemp(prefix="libnet-pingpong-")
    if not args.no_build:
        build(bindir)
    os.makedirs(args.out, exist_ok=True)
    if basedir and all(os.path.isfile(os.path.join(bindir, n)) and
                       filecmp.cmp(os.path.join(bindir, n), os.path.join(basedir, n),
                                   shallow=False) for n in BASELINE_BINARIES):
        log("note: the baseline's %s are identical to --bindir's: the @base columns "
            "measure noise only" % " and ".join(BASELINE_BINARIES))

    t0 = time.time()
    results = run_plan(plan_cells(names, specs), names, specs, reps, seconds, bindir, basedir)

    print("## libnet ping-pong results\n")
    print("Machine: %s.  " % machine_line())
    print("Command: `%s`\n" % " ".join(["pingpong/run_tables.py"] + sys.argv[1:]))
    if basedir:
        print("Baseline (@base): %s from `%s`.\n" % (" and ".join(BASELINE_BINARIES),
                                                     os.path.abspath(args.baseline_bindir)))
    for name in names:
        spec = specs[name]
        cells = results[name]
        print(markdown(name, spec, cells, args.mode, reps, seconds))
        write_csv(args.out, name, cells)
        write_charts(args.out, name, spec, cells)
    log("CSV and SVG files in %s (%s total)" % (args.out, benchlib.fmt_dur(int(time.time() - t0))))


def plan_cells(names, specs):
    """[(table, blocksize, sessions, threads, impls)], one per cell."""
    plan = []
    for name in names:
        spec = specs[name]
        for blocksize in spec["blocksizes"]:
            for sessions in spec["sessions"]:
                for threads in spec["threads"]:
                    impls = [i for i in spec["impls"] if not (i == "libevent" and threads > 1)]
                    plan.append((name, blocksize, sessions, threads, impls))
    return plan


def run_plan(plan, names, specs, reps, seconds, bindir, basedir):
    """Runs every cell reps times; returns {table: {(impl, blocksize,
    sessions, threads): [run]}}."""
    total_runs = sum(len(p[4]) for p in plan) * reps
    est_run = seconds + 1.5
    log("libnet ping-pong: %d cells, %d runs of %d s, about %s" %
        (len(plan), total_runs, seconds, benchlib.fmt_dur(int(total_runs * est_run))))
    log("machine: " + machine_line())

    results = {name: {} for name in names}
    t0 = time.time()
    done = 0
    port = 20000
    for index, (name, blocksize, sessions, threads, impls) in enumerate(plan, 1):
        spec = specs[name]
        for rep in range(reps):
            # Interleaved: A A@base B B@base C, then A@base A B@base B C, ...
            for impl in benchlib.twin_order(impls, rep):
                port = 20000 + (port - 19999) % 12000
                elapsed = time.time() - t0
                eta = (elapsed / done * (total_runs - done)) if done else total_runs * est_run
                log("[cell %d/%d] %s %dB sessions=%d threads=%d %s run %d/%d — elapsed %s, "
                    "about %s left" % (index, len(plan), name, blocksize, sessions, threads, impl,
                                       rep + 1, reps, benchlib.fmt_dur(int(elapsed)),
                                       benchlib.fmt_dur(int(eta))))
                try:
                    r = run_once(basedir if impl.endswith(BASE_SUFFIX) else bindir, impl,
                                 blocksize, sessions, threads, seconds, spec["pinned"], port)
                    results[name].setdefault((impl, blocksize, sessions, threads), []).append(r)
                except CellError as e:
                    log("  failed: %s" % e)
                done += 1
    return results


def write_csv(out, name, cells):
    with open(os.path.join(out, "%s.csv" % name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["table", "impl", "blocksize", "sessions", "threads", "run", "mibps",
                    "bytes", "server_cpu_s", "server_cpu_s_per_gib", "server_us_per_msg"])
        for (impl, blocksize, sessions, threads), runs in sorted(cells.items()):
            for i, r in enumerate(runs):
                w.writerow([name, impl, blocksize, sessions, threads, i + 1, r["mibps"],
                            r["bytes"], "%.4f" % r["cpu_s"], "%.4f" % r["cpu_per_gib"],
                            "%.3f" % r["us_per_msg"]])


def write_charts(out, name, spec, cells):
    """One SVG chart per blocksize (and, with several thread counts, per
    session count)."""
    for blocksize in spec["blocksizes"]:
        multi = len(spec["threads"]) > 1
        xs = spec["threads"] if multi else spec["sessions"]
        fixed = spec["sessions"] if multi else [None]
        for s in fixed:
            series = {}
            for impl in spec["impls"]:
                vals = []
                for x in xs:
                    key = (impl, blocksize, s, x) if multi else (impl, blocksize, x, 1)
                    runs = cells.get(key)
                    vals.append(statistics.median([r["mibps"] for r in runs]) if runs
                                else float("nan"))
                series[impl] = vals
            suffix = ("-%dB" % blocksize if len(spec["blocksizes"]) > 1 else "") + (
                "-%dsessions" % s if multi else "")
            path = os.path.join(out, "%s%s.svg" % (name, suffix))
            svg_chart(path, "%s%s" % (spec["title"], " — %d sessions" % s if multi else ""),
                      series, xs, "threads" if multi else "sessions", "MiB/s")


if __name__ == "__main__":
    main()
