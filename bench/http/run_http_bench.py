#!/usr/bin/env python3
"""libnet's HTTP server (examples/http:http_server) against nginx, measured with wrk.

For every scenario, each repetition runs every server once, interleaved
(nginx, libnet-epoll, libnet-uring, nginx, ...). Every run starts a fresh
server pinned to CPU 0 and runs `wrk -t1 --latency` pinned to CPU 1. Reported
per cell: median req/s (min-max), wrk's p99 latency, the server's CPU time per
100k requests (every thread of every process of the server's tree, over the
wrk run), TCP connections accepted per request (/proc/net/snmp), and wrk's
error counts.

Output: progress on stderr; markdown tables on stdout; one CSV row per run in
--out (default ./http-results/).

  bench/http/run_http_bench.py                       # all servers, all scenarios, 10 s x 3
  bench/http/run_http_bench.py --quick               # 3 s x 1, a smoke run
  bench/http/run_http_bench.py --servers nginx --scenarios hello,close
  bench/http/run_http_bench.py --binary path/to/http_server

Comparing two builds: --baseline-binary PATH (an http_server built from an
earlier commit) adds a twin, libnet-epoll@base / libnet-uring@base, for each
selected libnet server; it runs next to its current twin in every
repetition, the pair's order alternating between repetitions (use an even
--reps), and the tables gain the ratios now/base of req/s and of server CPU
per 100k requests:

  git worktree add /tmp/base REV
  (cd /tmp/base && bazel build --config=opt //examples/http:http_server)
  bench/http/run_http_bench.py --servers libnet-epoll,libnet-uring --reps 4 \\
      --baseline-binary /tmp/base/bazel-bin/examples/http/http_server
  git worktree remove /tmp/base

HTTPS: --tls serves every scenario over TLS 1.2/1.3 (the same certificate,
made for the run, for nginx and libnet; OpenSSL's defaults on both sides, so
TLS 1.3 with TLS_AES_256_GCM_SHA384 and X25519); wrk connects with https.
In the close scenarios every request is a new TLS connection with a full
handshake (wrk keeps no sessions).

  bench/http/run_http_bench.py --tls --scenarios hello,close

Needs nginx (Debian's nginx-light) and wrk: `apt-get install -y nginx-light wrk`
or tools/setup.sh.
"""

import argparse
import csv
import datetime
import filecmp
import http.client
import os
import platform
import re
import resource
import secrets
import shlex
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import benchlib  # noqa: E402  (bench/benchlib.py)
import make_test_certs  # noqa: E402  (tools/make_test_certs.py)
from benchlib import (BASE_SUFFIX, children_cpu_s, cpu_model, find_tool,  # noqa: E402
                      first_line, fmt_dur, log, loopback_up, machine_cpu_s, netns_available,
                      pinned, port_is_free, process_tree, tcp_opens, tree_cpu, wait_idle)

NOFILE = 20000
# Runs during which other processes (or the hypervisor) took more than this
# share of the CPUs are flagged in the tables.
OTHER_LOAD_NOTE = 0.05
SERVER_CPU = 0
CLIENT_CPU = 1
HELLO_BODY = b"hello world\n"
FILES = {"1k.bin": 1024, "148k.bin": 148 * 1024}

ALL_SERVERS = ["nginx", "libnet-epoll", "libnet-uring"]
# With --threads: the libnet servers in the other accept mode (hand-over:
# the main loop accepts and hands connections to the I/O loops; on io_uring
# ring to ring, or with -handover-queue through the I/O loop's queue as on
# epoll), to run next to the default per-loop ones; ask for them by name in
# --servers.
HANDOVER_SERVERS = ["libnet-epoll-handover", "libnet-uring-handover",
                    "libnet-uring-handover-queue"]
# examples/http:coro_http_server, the same server as one coroutine per
# connection (net/coro/), against the callback one.
CORO_SERVERS = ["libnet-coro-epoll", "libnet-coro-uring"]
SHORT = {"nginx": "nginx", "libnet-epoll": "epoll", "libnet-uring": "uring",
         "libnet-epoll-handover": "epoll-ho", "libnet-uring-handover": "uring-ho",
         "libnet-uring-handover-queue": "uring-hoq",
         "libnet-coro-epoll": "coro-epoll", "libnet-coro-uring": "coro-uring"}
# --baseline-binary: each libnet server gets a twin, named with
# benchlib.BASE_SUFFIX, that runs the baseline build.

GROUPS = {
    "hello": "Keep-alive GET /hello (12-byte body)",
    "close": "New connection per request: GET /hello with `Connection: close`",
    "static": "Static files, keep-alive",
    "short404": "Short connections (a new connection per request, `Connection: close`): "
                "a 404",
    "short1k": "Short connections (a new connection per request, `Connection: close`): "
               "a 1 KiB static file",
    "handshake": "TLS handshakes, one connection at a time (`openssl s_time -www /hello`, "
                 "HTTP/1.0): full (-new) and resumed from a ticket (-reuse); --tls only",
}
# Paths answered 404 by every server: their non-2xx responses are the
# expected answer, not errors.
NOT_FOUND = "/missing"

# name -> (group, path, wrk connections, one connection per request)
SCENARIOS = {
    "hello-10": ("hello", "/hello", 10, False),
    "hello-100": ("hello", "/hello", 100, False),
    "hello-1000": ("hello", "/hello", 1000, False),
    "close-100": ("close", "/hello", 100, True),
    "close-1000": ("close", "/hello", 1000, True),
    "static-1k": ("static", "/1k.bin", 100, False),
    "static-148k": ("static", "/148k.bin", 100, False),
}
# openssl s_time instead of wrk: one connection at a time, each a TLS
# handshake (full, or resumed from the first connection's ticket) and one
# HTTP/1.0 request.
SCENARIOS["stime-new"] = ("handshake", "/hello", 1, True)
SCENARIOS["stime-reuse"] = ("handshake", "/hello", 1, True)
for _c in (1, 8, 100, 500, 5000):
    SCENARIOS["short404-%d" % _c] = ("short404", NOT_FOUND, _c, True)
    SCENARIOS["short1k-%d" % _c] = ("short1k", "/1k.bin", _c, True)


# Set by --tls: the tables say HTTPS.
TLS_RUN = False


class RunError(RuntimeError):
    pass


# ---------------------------------------------------------------- environment


def raise_nofile():
    """preexec_fn of every child: the 1000-connection runs need more fds."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < NOFILE:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
            return
        except (ValueError, OSError):
            pass  # not privileged: go as high as the hard limit allows
    want = NOFILE if hard == resource.RLIM_INFINITY else min(NOFILE, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def short(name):
    """The name in table headers: epoll, epoll@base, nginx."""
    stem = name.removesuffix(BASE_SUFFIX)
    return SHORT[stem] + name[len(stem):]


# ------------------------------------------------------------- /proc sampling


# --------------------------------------------------------------------- servers


class Server:
    """One running server process, pinned to SERVER_CPU."""

    unannounced_warned = False

    def __init__(self, name, ctx, port, prefix=()):
        self.name = name
        self.ctx = ctx
        self.port = port
        self.prefix = list(prefix)  # a wrapper such as strace, run under taskset
        self.proc = None
        self.logpath = os.path.join(ctx["tmp"], "%s-%d.log" % (name, port))

    def start(self):
        ctx = self.ctx
        if self.name == "nginx":
            conf = os.path.join(ctx["nginx_dir"], "nginx-%d.conf" % self.port)
            with open(conf, "w") as f:
                f.write(ctx["nginx_template"]
                        .replace("@DIR@", ctx["nginx_dir"])
                        .replace("@ROOT@", ctx["www"])
                        .replace("@PORT@", str(self.port))
                        .replace("@NOFILE@", str(NOFILE))
                        .replace("@LISTEN_SSL@", " ssl" if ctx.get("tls") else "")
                        .replace("@SSL@", nginx_ssl(ctx))
                        .replace("@WORKERS@", str(max(1, ctx["threads"]))))
            argv = [ctx["nginx"], "-p", ctx["nginx_dir"], "-c", conf]
        else:
            stem = self.name.removesuffix(BASE_SUFFIX)
            coro = stem in CORO_SERVERS
            binary = ctx["binary"] if stem == self.name else ctx["baseline"]
            if coro:
                binary = os.path.join(ctx["tmp"], "coro_http_server")
            argv = [binary, "--port", str(self.port), "--threads", str(ctx["threads"]),
                    "--backend", "uring" if "-uring" in stem else "epoll", "--root", ctx["www"]]
            if ctx.get("tls"):
                argv += ["--tls-cert", ctx["tls"]["cert"], "--tls-key", ctx["tls"]["key"]]
            if ctx["threads"] > 0 and not coro:
                argv += ["--accept",
                         "hand-over-queue" if stem.endswith("-handover-queue") else
                         "hand-over" if stem.endswith("-handover") else ctx["accept"]]
                if stem == self.name:
                    # Connections per loop, printed at exit (a baseline
                    # build may not know the flag).
                    argv += ["--loop-stats", "1"]
        # Output goes to a file, not a pipe: a chatty server can never block on
        # a full pipe, and the file is there to quote when something fails.
        with open(self.logpath, "w") as out:
            self.proc = subprocess.Popen(pinned(ctx["server_cpus"], self.prefix + argv), stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         preexec_fn=raise_nofile)
        self.wait_ready()

    def loop_stats(self):
        """[(connections, ring hand-overs)] per loop, from the lines that
        http_server --loop-stats 1 prints at exit; [] without them."""
        try:
            with open(self.logpath, errors="replace") as f:
                text = f.read()
        except OSError:
            return []
        return [(int(m.group(2)), int(m.group(3))) for m in
                re.finditer(r"^http_server loop (\d+): (\d+) connections, (\d+) handed over",
                            text, re.M)]

    def output(self, tail=600):
        try:
            with open(self.logpath, errors="replace") as f:
                text = f.read()
        except OSError:
            return ""
        return text[-tail:].strip()

    def wait_ready(self, limit=10.0):
        """Until the server accepts a connection. libnet's http_server also
        announces `listening on 127.0.0.1:PORT`; the port it names is used.
        The port asked for was free before the start (free_port), so a
        connection to it reaches this server even if the line never shows
        (an unflushed stdout, say)."""
        deadline = time.time() + limit
        announced = self.name == "nginx"
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RunError("%s exited with status %s at start: %s" %
                               (self.name, self.proc.returncode, self.output()))
            if not announced:
                m = re.search(r"listening on [\d.]+:(\d+)", self.output(10000))
                if m and int(m.group(1)) != 0:
                    self.port = int(m.group(1))
                    announced = True
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
            except OSError:
                time.sleep(0.02)
                continue
            if not announced and not Server.unannounced_warned:
                Server.unannounced_warned = True
                log("warning: %s accepts connections but printed no 'listening on' line "
                    "(stdout not flushed?)" % self.name)
            return
        raise RunError("%s did not accept connections on port %d within %.0f s%s: %s" %
                       (self.name, self.port, limit,
                        "" if announced else " (no 'listening on' line)", self.output()))

    def stop(self):
        """SIGTERM, then SIGKILL after 10 s. Returns a warning or None."""
        if self.proc is None or self.proc.poll() is not None:
            rc = None if self.proc is None else self.proc.returncode
            return None if rc in (None, 0) else "%s had exited with status %s" % (self.name, rc)
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            # The whole tree: a worker outlives a SIGKILLed nginx master.
            for pid in process_tree(self.proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            self.proc.wait()
            return "%s ignored SIGTERM for 10 s and was killed" % self.name
        if rc < 0:
            return "%s was killed by signal %d (it does not handle SIGTERM)" % (self.name, -rc)
        if rc != 0:
            return "%s exited with status %d on SIGTERM" % (self.name, rc)
        return None


def nginx_ssl(ctx):
    tls = ctx.get("tls")
    if not tls:
        return ""
    return ("ssl_certificate %s; ssl_certificate_key %s; ssl_protocols TLSv1.2 TLSv1.3;" %
            (tls["cert"], tls["key"]))


def make_certs(ctx):
    """The run's certificates (tools/make_test_certs.py), readable by nginx's
    worker."""
    d = os.path.join(ctx["tmp"], "tls")
    paths = make_test_certs.make(d)
    for name in os.listdir(d):
        os.chmod(os.path.join(d, name), 0o644)
    os.chmod(d, 0o755)
    return paths


def client_connection(server, port):
    tls = server.ctx.get("tls")
    if not tls:
        return http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    context = ssl.create_default_context(cafile=tls["ca"])
    return http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=context)


def precheck(server, files):
    """Fetches /hello and both files once and compares them byte for byte,
    then checks that Connection: close closes. Returns (errors, warnings);
    errors disqualify the server."""
    errors, warnings = [], []
    precheck_bodies(server, files, errors, warnings)
    precheck_close(server, errors, warnings)
    return errors, warnings


def precheck_bodies(server, files, errors, warnings):
    """/hello and the files, byte for byte, on one keep-alive connection."""
    port = server.port
    # All three on one keep-alive connection (http.client reconnects only
    # after a response that says `Connection: close`).
    conn = client_connection(server, port)
    try:
        for path, want in [("/hello", HELLO_BODY)] + [("/" + n, d) for n, d in files.items()]:
            try:
                conn.request("GET", path)
                resp = conn.getresponse()
                body = resp.read()
            except (OSError, http.client.HTTPException) as e:
                errors.append("GET %s: %s: %s" % (path, type(e).__name__, e))
                conn.close()
                conn = client_connection(server, port)
                continue
            if resp.status != 200:
                errors.append("GET %s: status %d" % (path, resp.status))
            elif body != want:
                at = next((i for i, (a, b) in enumerate(zip(body, want)) if a != b),
                          min(len(body), len(want)))
                errors.append("GET %s: body differs from the file at byte %d (%d bytes, "
                              "expected %d)" % (path, at, len(body), len(want)))
            if resp.getheader("Content-Length") is None:
                # wrk miscounts responses without it on Connection: close.
                warnings.append("GET %s: no Content-Length" % path)
            if path == "/hello":
                ctype = resp.getheader("Content-Type") or ""
                if not ctype.startswith("text/plain"):
                    warnings.append("GET /hello: Content-Type %r, expected text/plain" % ctype)
    finally:
        conn.close()


def precheck_close(server, errors, warnings):
    """Connection: close must make the server close: the close-100 scenario
    depends on it (wrk reconnects only when the response says close)."""
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as plain:
            s = plain
            if server.ctx.get("tls"):
                context = ssl.create_default_context(cafile=server.ctx["tls"]["ca"])
                s = context.wrap_socket(plain, server_hostname="127.0.0.1")
            s.sendall(b"GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = b""
            s.settimeout(3)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200") or body != HELLO_BODY:
                errors.append("GET /hello with Connection: close: unexpected response %r" %
                              data[:200])
            elif not re.search(rb"(?im)^connection:\s*close", head):
                warnings.append("response to Connection: close lacks `Connection: close`")
    except (socket.timeout, ssl.SSLError) as e:
        if isinstance(e, ssl.SSLError) and "EOF" in str(e):
            pass  # the server closed after its response without close_notify
        else:
            errors.append("GET /hello with Connection: close: server kept the connection open")
    except OSError as e:
        errors.append("GET /hello with Connection: close: %s" % e)


# ------------------------------------------------------------------------ wrk

UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def to_ms(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        raise RunError("cannot read wrk latency %r" % text)
    return float(m.group(1)) * UNITS_MS[m.group(2)]


def parse_wrk(out):
    r = {}
    m = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h)", out, re.M)
    if not m:
        raise RunError("no request count in wrk output: %s" % out[-400:])
    r["requests"] = int(m.group(1))
    r["duration_s"] = to_ms(m.group(2) + m.group(3)) / 1e3
    m = re.search(r"^Requests/sec:\s*([\d.]+)", out, re.M)
    if not m:
        raise RunError("no Requests/sec in wrk output: %s" % out[-400:])
    r["rps"] = float(m.group(1))
    m = re.search(r"^\s*Latency\s+\S+\s+\S+\s+(\S+)", out, re.M)
    if not m:
        raise RunError("no latency line in wrk output: %s" % out[-400:])
    r["max_ms"] = to_ms(m.group(1))
    dist = out.split("Latency Distribution", 1)
    if len(dist) < 2:
        raise RunError("no latency distribution in wrk output (was --latency passed?)")
    for pct in ("50", "90", "99"):
        m = re.search(r"^\s*%s(?:\.0+)?%%\s+(\S+)" % pct, dist[1], re.M)
        if not m:
            raise RunError("no p%s in wrk output" % pct)
        r["p%s_ms" % pct] = to_ms(m.group(1))
    r.update(err_connect=0, err_read=0, err_write=0, err_timeout=0, non2xx=0)
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        r.update(err_connect=int(m.group(1)), err_read=int(m.group(2)),
                 err_write=int(m.group(3)), err_timeout=int(m.group(4)))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        r["non2xx"] = int(m.group(1))
    r["errors"] = sum(r[k] for k in ("err_connect", "err_read", "err_write", "err_timeout",
                                     "non2xx"))
    return r


def expect_not_found(r):
    """A 404 scenario: every response must be non-2xx (wrk counts them), and
    those are not errors; any 2xx would be."""
    r["errors"] -= r["non2xx"]
    if r["non2xx"] != r["requests"]:
        r["errors"] += abs(r["requests"] - r["non2xx"])


def stime_argv(ctx, port, scenario, seconds):
    return ["openssl", "s_time", "-connect", "127.0.0.1:%d" % port,
            "-new" if scenario == "stime-new" else "-reuse", "-time", str(seconds),
            "-www", SCENARIOS[scenario][1], "-CAfile", ctx["tls"]["ca"]]


def parse_stime(out):
    """s_time's "N connections in T real seconds" line; no latencies."""
    found = re.findall(r"^(\d+) connections in (\d+) real seconds", out, re.M)
    if not found:
        raise RunError("no connection count in s_time output: %s" % out[-400:])
    count, real = (int(v) for v in found[-1])
    nan = float("nan")
    return dict(requests=count, duration_s=float(real), rps=count / real if real else nan,
                max_ms=nan, p50_ms=nan, p90_ms=nan, p99_ms=nan, err_connect=0, err_read=0,
                err_write=0, err_timeout=0, non2xx=0, errors=0)


def wrk_argv(ctx, port, scenario, seconds):
    if scenario.startswith("stime"):
        return stime_argv(ctx, port, scenario, seconds)
    _, path, conns, close = SCENARIOS[scenario]
    argv = [ctx["wrk"], "-t1", "-c%d" % conns, "-d%ds" % seconds, "--latency"]
    if close:
        argv += ["-H", "Connection: close"]
    scheme = "https" if ctx.get("tls") else "http"
    return argv + ["%s://127.0.0.1:%d%s" % (scheme, port, path)]


def run_once(ctx, server_name, scenario, seconds, port):
    server = Server(server_name, ctx, port)
    notes = []
    try:
        server.start()
        bg_conn_rate = wait_before_run(ctx, server, notes)
        before = sample(server.proc.pid)
        argv = pinned(ctx["client_cpus"], wrk_argv(ctx, server.port, scenario, seconds))
        try:
            w = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60,
                               preexec_fn=raise_nofile)
        except subprocess.TimeoutExpired:
            raise RunError("wrk did not finish within %d s" % (seconds + 60))
        # Closing 1000 connections takes the server a moment after wrk exits;
        # that work belongs to the run.
        if not wait_idle(server.proc.pid):
            notes.append("server still busy 3 s after wrk exited")
        # wrk is the only child reaped in between (taskset execs it).
        after = sample(server.proc.pid)
        if w.returncode != 0:
            raise RunError("wrk exited with status %d: %s" %
                           (w.returncode, (w.stdout + w.stderr).strip()[-400:]))
        if server.proc.poll() is not None:
            raise RunError("%s died during the run (status %s): %s" %
                           (server_name, server.proc.returncode, server.output()))
        if before["pids"] != after["pids"]:
            notes.append("server processes changed during the run (%s -> %s): CPU is partial" %
                          (before["pids"], after["pids"]))
        r = parse_stime(w.stdout) if scenario.startswith("stime") else parse_wrk(w.stdout)
        if SCENARIOS[scenario][1] == NOT_FOUND:
            expect_not_found(r)
    finally:
        warning = server.stop()
    if warning:
        notes.append(warning)
    add_run_metrics(r, server, before, after)
    r["bg_conn_rate"] = bg_conn_rate
    r["notes"] = "; ".join(notes)
    return r


def wait_before_run(ctx, server, notes):
    """Waits for the server to be idle and the machine quiet (bounded);
    returns the background connection rate of the last window."""
    if not wait_idle(server.proc.pid):
        notes.append("server not idle before the run")
    waited, quiet, bg_conn_rate = benchlib.wait_machine_quiet(ctx["quiet_wait"], OTHER_LOAD_NOTE)
    if not quiet and ctx["quiet_wait"] > 0:
        log("  the machine stayed busy for %.0f s; measuring anyway" % waited)
    elif waited > 1:
        log("  waited %.0f s for other processes to leave the machine" % waited)
    return bg_conn_rate


def sample(pid):
    """The counters a run is measured by, at one moment: the server tree's
    CPU time, the machine's, wrk's (a reaped child), and TCP opens."""
    pids, ns, ticks = tree_cpu(pid)
    (busy, steal), wrk, wall = machine_cpu_s(), children_cpu_s(), time.time()
    active, passive = tcp_opens()
    return {"pids": pids, "ns": ns, "ticks": ticks, "busy": busy, "steal": steal, "wrk": wrk,
            "wall": wall, "active": active, "passive": passive}


def add_run_metrics(r, server, before, after):
    """Adds to wrk's numbers r what the samples around the run say."""
    # Counted over the server's life: its start-up checks' few connections
    # are in it too.
    loops = server.loop_stats()
    r["loop_conns"] = "/".join(str(c) for c, _ in loops)
    r["ring_handovers"] = sum(h for _, h in loops) if loops else ""
    r["server_cpu_s"] = (after["ns"] - before["ns"]) / 1e9
    r["server_cpu_s_ticks"] = after["ticks"] - before["ticks"]
    r["cpu_per_100k"] = (r["server_cpu_s"] / r["requests"] * 1e5 if r["requests"]
                         else float("nan"))
    # Under 100% the server waited for wrk: req/s is then wrk's limit.
    r["server_busy"] = (r["server_cpu_s"] / r["duration_s"] if r["duration_s"]
                        else float("nan"))
    r["active_opens"] = after["active"] - before["active"]
    r["passive_opens"] = after["passive"] - before["passive"]
    r["conn_per_req"] = r["passive_opens"] / r["requests"] if r["requests"] else float("nan")
    # Whatever else ran on the machine during the run, as a share of all
    # CPUs: what is busy, less the server and wrk (all three tick-based).
    r["wrk_cpu_s"] = after["wrk"] - before["wrk"]
    other = (after["busy"] - before["busy"]) - r["server_cpu_s_ticks"] - r["wrk_cpu_s"]
    cpu_wall = (after["wall"] - before["wall"]) * (os.cpu_count() or 1)
    r["other_load"] = max(0.0, other) / cpu_wall
    r["steal"] = (after["steal"] - before["steal"]) / cpu_wall


# --------------------------------------------------------------------- output


def fmt_rps(v):
    return "%.1fk" % (v / 1e3) if v >= 1e3 else "%.0f" % v


def med_cell(values, fmt):
    if not values:
        return "-"
    m = statistics.median(values)
    if len(values) == 1:
        return fmt(m)
    return "%s (%s–%s)" % (fmt(m), fmt(min(values)), fmt(max(values)))


def ratio(a, b):
    return "%.2f" % (a / b) if a is not None and b is not None and b > 0 else "-"


def load_text(r):
    """'other 22%, steal 6%' for a run that shared the CPUs, else ''."""
    parts = []
    if r["other_load"] > OTHER_LOAD_NOTE:
        parts.append("other %.0f%%" % (100 * r["other_load"]))
    if r["steal"] > OTHER_LOAD_NOTE:
        parts.append("steal %.0f%%" % (100 * r["steal"]))
    if r["bg_conn_rate"] > 0:
        parts.append("other processes opening %.0f TCP connections/s just before, counted "
                     "in conn/req" % r["bg_conn_rate"])
    return ", ".join(parts)


def loop_cell(runs):
    """The loops' shares of the connections, in %, and the share handed over
    ring to ring, summed over the runs: '50/50, ring 100'."""
    totals, ring = [], 0
    for r in runs:
        counts = [int(c) for c in r.get("loop_conns", "").split("/") if c]
        if not counts:
            continue
        totals = [a + b for a, b in zip(totals, counts)] if totals else counts
        ring += int(r.get("ring_handovers") or 0)
    if not totals or not sum(totals):
        return "-"
    return "%s, ring %.0f" % ("/".join("%.1f" % (100 * c / sum(totals)) for c in totals),
                              100 * ring / sum(totals))


def markdown_table(group, scenarios, servers, results):
    lines = ["### %s%s" % ("HTTPS: " if TLS_RUN else "", GROUPS[group]), ""]
    others = [s for s in servers if s != "nginx"] if "nginx" in servers else []
    twins = [s for s in servers if s + BASE_SUFFIX in servers]
    with_loops = [s for s in servers if any(r.get("loop_conns") for sc in scenarios
                                            for r in results.get((sc, s), []))]
    header = table_header(servers, others, twins, with_loops)
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    failed = []
    for sc in scenarios:
        row = table_row(sc, servers, others, twins, with_loops, results, failed)
        lines.append("| " + " | ".join(row) + " |")
    if failed:
        lines.append("")
        lines += ["- " + f for f in failed]
    lines.append("")
    return "\n".join(lines)


def table_header(servers, others, twins, with_loops):
    header = ["scenario", "conns"]
    header += ["%s req/s" % s for s in servers]
    header += ["%s/nginx" % short(s) for s in others]
    header += ["%s now/base" % short(s) for s in twins]
    header += ["p50 ms %s" % s for s in servers]
    header += ["p99 ms %s" % s for s in servers]
    header += ["max ms %s" % s for s in servers]
    header += ["server CPU s/100k %s" % s for s in servers]
    header += ["CPU %s/nginx" % short(s) for s in others]
    header += ["CPU %s now/base" % short(s) for s in twins]
    header += ["conn/req (%s)" % ", ".join(short(s) for s in servers),
               "errors (%s)" % ", ".join(short(s) for s in servers)]
    if with_loops:
        header.append("conns per loop %%, ring-handed %% (%s)" %
                      ", ".join(short(s) for s in with_loops))
    return header


def table_row(sc, servers, others, twins, with_loops, results, failed):
    """The cells of scenario sc; what went wrong in its runs goes to failed."""
    _, path, conns, _ = SCENARIOS[sc]
    runs = {s: results.get((sc, s), []) for s in servers}
    ok = {s: [r for r in runs[s] if "error" not in r] for s in servers}
    med = {s: (statistics.median([r["rps"] for r in ok[s]]) if ok[s] else None)
           for s in servers}
    cpu = {s: (statistics.median([r["cpu_per_100k"] for r in ok[s]]) if ok[s] else None)
           for s in servers}
    row = ["%s `%s`" % (sc, path), str(conns)]
    row += [med_cell([r["rps"] for r in ok[s]], fmt_rps) for s in servers]
    row += [ratio(med[s], med["nginx"]) for s in others]
    row += [ratio(med[s], med[s + BASE_SUFFIX]) for s in twins]
    row += [med_cell([r["p50_ms"] for r in ok[s]], lambda v: "%.2f" % v) for s in servers]
    row += [med_cell([r["p99_ms"] for r in ok[s]], lambda v: "%.2f" % v) for s in servers]
    row += [med_cell([r["max_ms"] for r in ok[s]], lambda v: "%.0f" % v) for s in servers]
    row += [med_cell([r["cpu_per_100k"] for r in ok[s]], lambda v: "%.2f" % v)
            for s in servers]
    row += [ratio(cpu[s], cpu["nginx"]) for s in others]
    row += [ratio(cpu[s], cpu[s + BASE_SUFFIX]) for s in twins]
    row.append(", ".join("%.3f" % statistics.median([r["conn_per_req"] for r in ok[s]])
                         if ok[s] else "-" for s in servers))
    errs = []
    for s in servers:
        total = sum(r["errors"] for r in ok[s])
        errs.append(("**%d**" % total) if total else "0")
        failed += run_problems(sc, s, runs[s])
    row.append(", ".join(errs))
    if with_loops:
        row.append(", ".join(loop_cell(ok[s]) for s in with_loops))
    return row


def run_problems(sc, s, runs):
    """The lines under a table about server s's runs of scenario sc."""
    problems = []
    for i, r in enumerate(runs, 1):
        if "error" in r:
            problems.append("%s %s run %d failed: %s" % (sc, s, i, r["error"]))
        elif r["errors"]:
            problems.append("%s %s run %d: wrk reported connect %d, read %d, write %d, "
                            "timeout %d, non-2xx/3xx %d" %
                            (sc, s, i, r["err_connect"], r["err_read"], r["err_write"],
                             r["err_timeout"], r["non2xx"]))
        if r.get("notes"):
            problems.append("%s %s run %d: %s" % (sc, s, i, r["notes"]))
    loaded = ["%d (%s)" % (i, load_text(r)) for i, r in enumerate(runs, 1)
              if "error" not in r and load_text(r)]
    if loaded:
        problems.append("%s %s: other work on the machine during run%s %s" %
                        (sc, s, "s" if len(loaded) > 1 else "", ", ".join(loaded)))
    return problems


# ------------------------------------------------------------ system calls

# Calls a loop makes once per turn, shared by the connections of that turn.
PER_TURN_CALLS = ("epoll_wait", "io_uring_enter")
SYSCALL_RUN_SECONDS = 3
SYSCALL_RUN_CONNS = 100


def count_syscalls(ctx, name, port):
    """Runs NAME under `strace -f -c` while wrk makes short connections
    (GET /hello, `Connection: close`) for a few seconds; returns
    ({syscall: calls}, completed requests). The server's start and stop
    are in the counts too: a few hundred calls against tens of thousands."""
    summary = os.path.join(ctx["tmp"], "strace-%s-%d.txt" % (name, port))
    server = Server(name, ctx, port, prefix=["strace", "-f", "-qq", "-c", "-o", summary])
    try:
        server.start()
        argv = pinned(ctx["client_cpus"],
                      [ctx["wrk"], "-t1", "-c%d" % SYSCALL_RUN_CONNS,
                       "-d%ds" % SYSCALL_RUN_SECONDS, "-H", "Connection: close",
                       "http://127.0.0.1:%d/hello" % server.port])
        w = subprocess.run(argv, capture_output=True, text=True,
                           timeout=SYSCALL_RUN_SECONDS + 60, preexec_fn=raise_nofile)
        m = re.search(r"^\s*(\d+) requests in", w.stdout, re.M)
        if w.returncode != 0 or not m:
            raise RunError("wrk failed under strace: %s" % (w.stdout + w.stderr)[-300:])
        requests = int(m.group(1))
    finally:
        # The traced server is strace's child (nginx: its master, which
        # stops the worker); strace writes the summary when it exits.
        if server.proc is not None and server.proc.poll() is None:
            for pid in process_tree(server.proc.pid):
                if pid != server.proc.pid:
                    try:
                        os.kill(pid, signal.SIGTERM)
                    except OSError:
                        pass
                    break
            try:
                server.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.stop()
    calls = {}
    with open(summary) as f:
        for line in f:
            fields = line.split()
            if (len(fields) >= 5 and re.fullmatch(r"[\d.]+", fields[0]) and fields[3].isdigit()
                    and fields[-1] != "total"):
                calls[fields[-1]] = int(fields[3])
    return calls, requests


def syscall_table(ctx, servers, next_port):
    lines = ["### System calls per request (a new connection per request, %d connections, "
             "`strace -f -c` over a %d s wrk run)" % (SYSCALL_RUN_CONNS, SYSCALL_RUN_SECONDS), "",
             "| server | per request | without %s | calls made at least once per 50 requests |" %
             " / ".join(PER_TURN_CALLS), "|---|---|---|---|"]
    for name in servers:
        log("system calls: %s under strace" % name)
        try:
            calls, requests = count_syscalls(ctx, name, next_port())
        except (RunError, OSError, subprocess.SubprocessError) as e:
            lines.append("| %s | failed: %s | | |" % (name, e))
            continue
        per = {k: v / requests for k, v in calls.items()}
        total = sum(per.values())
        own = sum(v for k, v in per.items() if k not in PER_TURN_CALLS)
        shown = ", ".join("%s %.2f" % (k, v) for k, v in sorted(per.items(), key=lambda kv: -kv[1])
                          if v >= 0.02)
        lines.append("| %s | %.2f | %.2f | %s |" % (name, total, own, shown))
    lines.append("")
    return "\n".join(lines)


# One row per run. server_cpu_s is from schedstat (ns), server_cpu_s_ticks
# the same from utime+stime (clock ticks), kept as a cross-check.
CSV_FIELDS = ["date", "scenario", "group", "path", "conns", "connection_close", "server",
              "rep", "seconds", "requests", "duration_s", "rps", "p50_ms", "p90_ms", "p99_ms", "max_ms",
              "server_cpu_s", "server_cpu_s_ticks", "cpu_per_100k", "server_busy",
              "wrk_cpu_s", "other_load", "steal", "bg_conn_rate", "passive_opens",
              "active_opens", "conn_per_req", "loop_conns", "ring_handovers", "err_connect",
              "err_read", "err_write", "err_timeout", "non2xx", "error", "notes"]


# ----------------------------------------------------------------------- main


def build(ctx, names):
    """Builds examples/http's `names` (http_server, coro_http_server) and
    copies them into the run's directory; returns their paths."""
    targets = ["//examples/http:" + n for n in names]
    log("building: bazel build --config=opt " + " ".join(targets))
    r = subprocess.run(["bazel", "build", "--config=opt"] + targets, cwd=ROOT)
    if r.returncode != 0:
        sys.exit("run_http_bench: building %s failed; pass --binary PATH for a prebuilt "
                 "http_server, or --servers nginx" % " ".join(targets))
    # bazel-bin follows the last build's configuration: copy the binary so
    # that a build elsewhere cannot swap it during the run.
    out = subprocess.run(["bazel", "info", "--config=opt", "bazel-bin"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()
    paths = []
    for name in names:
        paths.append(os.path.join(ctx["tmp"], name))
        shutil.copy2(os.path.join(out, "examples", "http", name), paths[-1])
    return paths


def make_www(ctx):
    www = os.path.join(ctx["tmp"], "www")
    os.mkdir(www)
    files = {}
    for name, size in FILES.items():
        data = secrets.token_bytes(size)
        with open(os.path.join(www, name), "wb") as f:
            f.write(data)
        os.chmod(os.path.join(www, name), 0o644)
        files[name] = data
    # nginx's worker runs as nobody when the master is root: everything on
    # the way to the files must be world-readable.
    os.chmod(www, 0o755)
    os.chmod(ctx["tmp"], 0o755)
    return www, files


def parse_list(text, known, what, aliases=None):
    out = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        expanded = (aliases or {}).get(item, [item])
        for x in expanded:
            if x not in known:
                sys.exit("run_http_bench: unknown %s %r (known: %s)" %
                         (what, x, ", ".join(list(known) + list(aliases or {}))))
            if x not in out:
                out.append(x)
    if not out:
        sys.exit("run_http_bench: no %s selected" % what)
    return out


def add_machine_arguments(ap, client, port_base, out_name, out_what):
    """The options every HTTP benchmark here takes for where it runs: CPU
    pinning, ports, the quiet wait, the network namespace and the output
    directory. `client` names the load generator in the help texts."""
    ap.add_argument("--server-cpus", default=str(SERVER_CPU),
                    help="CPUs the server is pinned to, taskset's list (default %d)" % SERVER_CPU)
    ap.add_argument("--client-cpus", default=str(CLIENT_CPU),
                    help="CPUs %s is pinned to (default %d)" % (client, CLIENT_CPU))
    ap.add_argument("--port-base", type=int, default=port_base,
                    help="first server port; each run takes the next one (default %d; keep "
                    "below 32768, the ephemeral range %s connects from)" % (port_base, client))
    ap.add_argument("--quiet-wait", type=float, default=15,
                    help="before each run, wait up to this many seconds for other processes "
                    "to leave the CPUs and stop opening TCP connections (default 15; 0: do "
                    "not wait)")
    ap.add_argument("--shared-netns", action="store_true",
                    help="stay in the machine's network namespace (default: a private one "
                    "when root, so that the kernel counts only this benchmark's connections)")
    ap.add_argument("--out", default=os.path.join(ROOT, out_name),
                    help="directory for %s (default ./%s)" % (out_what, out_name))
    ap.add_argument("--nice", type=int, default=0, metavar="N",
                    help="run the servers and %s at nice -N (1-20, needs root): on a machine "
                    "that other jobs keep busy, they then get their CPUs nearly as on a quiet "
                    "one (default 0: unchanged)" % client)


def apply_nice(prog, args):
    """--nice N: this process, and so every server and client it starts,
    at nice -N; the CFS weight of nice -19 is about 70 times that of nice 0,
    so compilers running beside a benchmark take a few percent of its CPUs
    instead of most of them."""
    if not args.nice:
        return
    if not 1 <= args.nice <= 20:
        sys.exit("%s: --nice takes 1 to 20" % prog)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -args.nice)
    except OSError as e:
        sys.exit("%s: --nice %d: %s (needs root or CAP_SYS_NICE)" % (prog, args.nice, e))
    # With autogroups (kernel.sched_autogroup_enabled) a process's nice
    # counts only within its session's group, and the groups share the CPUs
    # by their own nice: a compiler started by another session is another
    # group. The benchmark's group gets the same value.
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(-args.nice))
    except OSError:
        pass


def argument_parser():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tls", action="store_true",
                    help="every server over TLS 1.2/1.3 (https), the same certificate for all")
    ap.add_argument("--seconds", type=int, help="seconds per wrk run (default 10; --quick 3)")
    ap.add_argument("--reps", type=int, help="runs per server and scenario (default 3; --quick 1)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 3 s x 1 rep")
    ap.add_argument("--servers", default=",".join(ALL_SERVERS),
                    help="comma-separated, in run order: " + ", ".join(ALL_SERVERS) +
                    " (default), " + ", ".join(CORO_SERVERS) + " (the coroutine server), "
                    "and with --threads " + ", ".join(HANDOVER_SERVERS))
    ap.add_argument("--scenarios", default="hello,close,static",
                    help="comma-separated scenarios (%s) or groups (%s)" %
                    (", ".join(SCENARIOS), ", ".join(GROUPS)))
    ap.add_argument("--binary", help="a prebuilt http_server (default: build it with Bazel)")
    ap.add_argument("--coro-binary",
                    help="with --binary: a prebuilt coro_http_server, for libnet-coro-*")
    ap.add_argument("--baseline-binary", metavar="PATH",
                    help="an http_server of an earlier build: adds libnet-epoll@base / "
                    "libnet-uring@base next to each selected libnet server, and now/base "
                    "ratios (see above)")
    ap.add_argument("--threads", type=int, default=0,
                    help="http_server --threads (default 0: one loop thread accepts and serves, "
                    "as nginx's single worker does)")
    ap.add_argument("--accept", choices=["per-loop", "hand-over", "hand-over-queue"],
                    default="per-loop",
                    help="http_server --accept, with --threads (default per-loop)")
    ap.add_argument("--syscalls", action="store_true",
                    help="after the tables, run each server once more under strace -f -c "
                    "with short connections and print the system calls per request")
    add_machine_arguments(ap, "wrk", 21000, "http-results", "the CSV")
    return ap


def exit_if_missing(prog, missing):
    """Exits naming the Debian packages to install, if any is missing."""
    if missing:
        sys.exit("%s: missing %s; install with:\n  apt-get update && apt-get install -y %s\n"
                 "(or run tools/setup.sh)" % (prog, ", ".join(missing), " ".join(missing)))


def check_cpus(prog, args, client):
    """Exits unless --server-cpus and --client-cpus name CPUs this process
    may run on."""
    cpus = set()
    for text in (args.server_cpus, args.client_cpus):
        try:
            cpus |= {int(c) for c in text.split(",")}
        except ValueError:
            sys.exit("%s: %r is not a list of CPU numbers" % (prog, text))
    if not cpus <= os.sched_getaffinity(0):
        sys.exit("%s: needs CPUs %s (server) and %s (%s), has %s" %
                 (prog, args.server_cpus, args.client_cpus, client,
                  sorted(os.sched_getaffinity(0))))


def check_binaries(prog, args, servers):
    """Exits if --binary or --baseline-binary is unusable; returns servers,
    with the @base twins when there is a baseline."""
    libnet = [s for s in servers if s.startswith("libnet")]
    if libnet and args.binary and not os.access(args.binary, os.X_OK):
        sys.exit("%s: --binary %s is not an executable file" % (prog, args.binary))
    if not args.baseline_binary:
        return servers
    if not libnet:
        sys.exit("%s: --baseline-binary needs libnet-epoll or libnet-uring in --servers" % prog)
    if not os.access(args.baseline_binary, os.X_OK):
        sys.exit("%s: --baseline-binary %s is not an executable file" %
                 (prog, args.baseline_binary))
    return benchlib.with_twins(servers, lambda name: name.startswith("libnet"))


def main():
    ap = argument_parser()
    args = ap.parse_args()
    apply_nice("run_http_bench", args)

    seconds = args.seconds or (3 if args.quick else 10)
    reps = args.reps or (1 if args.quick else 3)
    servers = parse_list(args.servers, ALL_SERVERS + HANDOVER_SERVERS + CORO_SERVERS, "server")
    groups = {g: [s for s in SCENARIOS if SCENARIOS[s][0] == g] for g in GROUPS}
    scenarios = parse_list(args.scenarios, SCENARIOS, "scenario", groups)
    scenarios = [s for s in SCENARIOS if s in scenarios]  # table order
    if not args.tls and any(s.startswith("stime") for s in scenarios):
        ap.error("the handshake scenarios (stime-*) need --tls")

    global TLS_RUN
    TLS_RUN = args.tls
    ctx = {"threads": args.threads, "quiet_wait": args.quiet_wait,
           "server_cpus": args.server_cpus, "client_cpus": args.client_cpus,
           "accept": args.accept}
    missing = []
    ctx["wrk"] = find_tool("wrk")
    if ctx["wrk"] is None:
        missing.append("wrk")
    if "nginx" in servers:
        ctx["nginx"] = find_tool("nginx")
        if ctx["nginx"] is None:
            missing.append("nginx-light")
    if find_tool("taskset") is None:
        missing.append("util-linux")
    exit_if_missing("run_http_bench", missing)
    check_cpus("run_http_bench", args, "wrk")
    servers = check_binaries("run_http_bench", args, servers)

    if NETNS_ENV in os.environ:
        # The second half of run_in_netns: the parent made the temp dir and
        # the binaries, and removes them.
        ctx["tmp"], ctx["binary"] = os.environ[NETNS_ENV].split(":", 1)
        ctx["baseline"] = os.environ.get(NETNS_BASELINE_ENV)
        ctx["netns"] = True
        loopback_up()
        return bench(args, ctx, servers, scenarios, seconds, reps)
    return run_in_temp_dir(args, ctx, servers, scenarios, seconds, reps)


def copy_baseline(ctx, path, where):
    """Copies the --baseline-binary into the temp dir, under its own name (so
    perf tells the two builds apart), as build() copies: the path is often a
    baseline tree's bazel-bin, which a build there can re-point during the
    run. `where` names the report's @base columns or rows."""
    ctx["baseline"] = os.path.join(ctx["tmp"], "http_server-base")
    shutil.copy2(path, ctx["baseline"])
    if filecmp.cmp(ctx["binary"], ctx["baseline"], shallow=False):
        log("note: --baseline-binary is identical to the current http_server: the "
            "@base %s measure noise only" % where)


def run_in_temp_dir(args, ctx, servers, scenarios, seconds, reps):
    """Builds or copies the binaries into a temp dir, then benches, in a
    private network namespace when it can; removes the temp dir."""
    libnet = [s for s in servers if s.startswith("libnet")]
    ctx["tmp"] = tempfile.mkdtemp(prefix="libnet-httpbench-")
    try:
        coro = any(s in CORO_SERVERS for s in servers)
        if args.binary:
            ctx["binary"] = os.path.abspath(args.binary)
            if coro:
                if not args.coro_binary:
                    sys.exit("run_http_bench: with --binary, libnet-coro-* need --coro-binary")
                shutil.copy2(args.coro_binary, os.path.join(ctx["tmp"], "coro_http_server"))
        elif libnet:
            ctx["binary"] = build(ctx, ["http_server"] + (["coro_http_server"] if coro else []))[0]
        if args.baseline_binary:
            copy_baseline(ctx, args.baseline_binary, "columns")
        if not args.shared_netns:
            if netns_available():
                return benchlib.run_in_netns(ctx, os.path.abspath(__file__), NETNS_ENV,
                                             NETNS_BASELINE_ENV)
            log("note: cannot make a network namespace (needs root); conn/req counts every "
                "TCP connection opened on the machine during a run")
        ctx["netns"] = False
        return bench(args, ctx, servers, scenarios, seconds, reps)
    finally:
        shutil.rmtree(ctx["tmp"], ignore_errors=True)


# A private network namespace (benchlib.run_in_netns) gives the run its own
# /proc/net/snmp, so conn/req counts this benchmark's connections only.
NETNS_ENV = "LIBNET_HTTPBENCH_NETNS"
NETNS_BASELINE_ENV = "LIBNET_HTTPBENCH_NETNS_BASELINE"


def bench(args, ctx, servers, scenarios, seconds, reps):
    # SIGTERM unwinds like Ctrl-C: wrk is killed, the server stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("run_http_bench: stopped by SIGTERM"))
    if "nginx" in servers:
        ctx["nginx_dir"] = os.path.join(ctx["tmp"], "nginx")
        os.mkdir(ctx["nginx_dir"])
        with open(os.path.join(HERE, "nginx.conf.in")) as f:
            ctx["nginx_template"] = f.read()
    ctx["www"], files = make_www(ctx)
    if args.tls:
        ctx["tls"] = make_certs(ctx)
    meta = describe_run(ctx, servers)
    next_port = port_allocator(args.port_base)
    # Correctness first: a server that serves wrong bytes is not measured.
    skipped = precheck_all(ctx, servers, files, next_port)
    active = [s for s in servers if s not in skipped]
    t0 = time.time()
    results, csv_path = run_all(args, ctx, active, scenarios, seconds, reps, next_port)
    print_report(args, ctx, meta, servers, skipped, seconds, reps)
    for group in GROUPS:
        in_group = [s for s in scenarios if SCENARIOS[s][0] == group]
        if in_group and active:
            print(markdown_table(group, in_group, active, results))
    if args.syscalls and active:
        print(syscall_table(ctx, active, next_port))
    log("CSV: %s (%s total)" % (csv_path, fmt_dur(time.time() - t0)))
    failed = any("error" in r for runs in results.values() for r in runs)
    return 1 if skipped or failed else 0


def describe_run(ctx, servers):
    """What the report's header says about the machine and the tools."""
    # "wrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer"
    wrk_version = first_line([ctx["wrk"], "--version"]).split(" Copyright")[0]
    nginx_version = (first_line([ctx["nginx"], "-v"]).replace("nginx version: ", "")
                     if "nginx" in servers else "not run")
    machine = "%s, nproc %d" % (cpu_model(), len(os.sched_getaffinity(0)))
    kernel = platform.release()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join(shlex.quote(a) for a in ["bench/http/run_http_bench.py"] + sys.argv[1:])
    log("machine: %s; kernel %s; %s; nginx %s" % (machine, kernel, wrk_version, nginx_version))
    return {"wrk": wrk_version, "nginx": nginx_version, "machine": machine, "kernel": kernel,
            "date": date, "command": command}


def port_allocator(port_base, prog="run_http_bench"):
    """next_port(): the next free port from port_base on; each run gets a
    fresh one so that no run meets an earlier run's TIME_WAIT sockets."""
    port = port_base

    def next_port():
        nonlocal port
        for _ in range(2000):
            p = port
            port = port_base + (port + 1 - port_base) % 2000
            if port_is_free(p):
                return p
        sys.exit("%s: no free port in %d-%d" % (prog, port_base, port_base + 1999))

    return next_port


def precheck_all(ctx, servers, files, next_port):
    """{server: errors} of the servers whose pre-check failed."""
    skipped = {}
    for name in servers:
        server = Server(name, ctx, next_port())
        try:
            server.start()
            errors, warnings = precheck(server, files)
        except RunError as e:
            errors, warnings = [str(e)], []
        finally:
            warning = server.stop()
        if warning:
            warnings.append(warning)
        for w in warnings:
            log("pre-check %s: warning: %s" % (name, w))
        if errors:
            skipped[name] = errors
            log("pre-check %s: FAILED, not measured:\n  %s" % (name, "\n  ".join(errors)))
        else:
            log("pre-check %s: /hello, /1k.bin, /148k.bin byte-exact" % name)
    return skipped


def run_all(args, ctx, active, scenarios, seconds, reps, next_port):
    """Every run, one CSV row each; returns ({(scenario, server): [run]},
    the CSV's path)."""
    total = len(scenarios) * reps * len(active)
    per_run = seconds + 1.0
    log("libnet HTTP bench: %d scenarios x %d servers x %d reps = %d runs of %d s, about %s" %
        (len(scenarios), len(active), reps, total, seconds, fmt_dur(total * per_run)))

    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, "http_bench.csv")
    results = {}
    t0 = time.time()
    done = 0
    with open(csv_path, "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        out.writeheader()
        for sc in scenarios:
            group, path, conns, close = SCENARIOS[sc]
            for rep in range(1, reps + 1):
                # Interleaved: A B B@base C C@base, then A B@base B C@base C, ...
                for name in benchlib.twin_order(active, rep - 1):
                    elapsed = time.time() - t0
                    left = (elapsed / done * (total - done)) if done else total * per_run
                    log("[run %d/%d] %s %s rep %d/%d — elapsed %s, about %s left" %
                        (done + 1, total, sc, name, rep, reps, fmt_dur(elapsed), fmt_dur(left)))
                    r = logged_run(ctx, name, sc, seconds, next_port())
                    results.setdefault((sc, name), []).append(r)
                    row = dict(r, date=datetime.datetime.now().isoformat(timespec="seconds"),
                               scenario=sc, group=group, path=path, conns=conns,
                               connection_close=int(close), server=name, rep=rep,
                               seconds=seconds)
                    row.update((k, "%.4f" % v) for k, v in r.items() if isinstance(v, float))
                    out.writerow(row)
                    f.flush()
                    done += 1
    return results, csv_path


def logged_run(ctx, name, sc, seconds, port):
    """run_once(), its outcome logged; a failed run is {"error": why}."""
    try:
        r = run_once(ctx, name, sc, seconds, port)
        log("  %s req/s, p99 %.2f ms, server CPU %.2f s/100k req (busy %.0f%%), "
            "%.3f conn/req, other load %.0f%%, steal %.0f%%, background "
            "%.0f conn/s, %s" %
            (fmt_rps(r["rps"]), r["p99_ms"], r["cpu_per_100k"],
             100 * r["server_busy"], r["conn_per_req"], 100 * r["other_load"],
             100 * r["steal"], r["bg_conn_rate"],
             "ERRORS %d" % r["errors"] if r["errors"] else "no errors"))
        if r["notes"]:
            log("  note: " + r["notes"])
    except RunError as e:
        r = {"error": str(e)}
        log("  FAILED: %s" % e)
    return r


def print_report(args, ctx, meta, servers, skipped, seconds, reps):
    """The report's header: the machine, the tools, the method."""
    print("## libnet HTTP server vs nginx (wrk)\n")
    print("- Machine: %s" % meta["machine"])
    print("- Kernel: %s" % meta["kernel"])
    print("- Date: %s" % meta["date"])
    print("- wrk: %s; nginx: %s" % (meta["wrk"], meta["nginx"]))
    if any(s.startswith("libnet") for s in servers):
        print("- libnet: `%s --threads %d --backend epoll|uring`" %
              (args.binary or "//examples/http:http_server (--config=opt)", args.threads))
    if args.baseline_binary:
        print("- Baseline (@base): `%s`, same flags" % args.baseline_binary)
    print("- Command: `%s`" % meta["command"])
    print("- Network: %s" % ("a private network namespace (its own loopback; conn/req counts "
                              "this benchmark's connections only)" if ctx["netns"] else
                              "the machine's own namespace (conn/req counts every TCP "
                              "connection on the machine)"))
    for name, errors in skipped.items():
        print("- **%s not measured**: pre-check failed: %s" % (name, "; ".join(errors)))
    print("- Method: %d s per run, %s, servers interleaved within each repetition, a fresh "
          "server per run; server on CPU %s, `wrk -t1 --latency` on CPU %s. Server CPU = "
          "every thread of the server's process tree (/proc schedstat) from just before wrk "
          "starts until the server is idle after it. conn/req = TCP connections accepted "
          "(/proc/net/snmp PassiveOpens) per completed request. errors = wrk's socket errors "
          "+ non-2xx/3xx responses, summed over the runs. Runs during which other processes or "
          "the hypervisor took more than %.0f%% of the CPUs are listed under the tables." %
          (seconds, "median of %d (min–max)" % reps if reps > 1 else "1 run", args.server_cpus,
           args.client_cpus, 100 * OTHER_LOAD_NOTE))
    if args.baseline_binary:
        print("- Baseline: NAME@base is NAME run from the baseline binary, next to NAME in "
              "every repetition, the pair's order alternating between repetitions. now/base = "
              "ratio of the medians (req/s above 1 and CPU below 1: the current build is "
              "better).")
    print()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("run_http_bench: interrupted")
