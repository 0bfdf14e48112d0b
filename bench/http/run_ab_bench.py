#!/usr/bin/env python3
"""What a short connection costs the server: nginx and libnet's http_server
(examples/http:http_server, --threads 0, epoll and io_uring) under ApacheBench.

ab without -k sends every request on a new TCP connection (HTTP/1.0, no
keep-alive), so a run measures accept, one request, one response and the
close. For every concurrency (--concurrency) and repetition (--reps) each
server runs once, the servers interleaved and their order rotated from one
repetition to the next; every run starts a fresh server on a fresh port,
pinned to CPU 0, and runs `ab -n N -c C http://127.0.0.1:PORT/hello` pinned
to CPU 1. Reported: req/s, mean and p99 latency (ab's), and the server's CPU
time over the run (utime+stime from /proc/PID/stat, every thread; for nginx
the master and the worker) per 100k requests, also as a ratio to nginx in
the same repetition.

  bench/http/run_ab_bench.py                    # 3 servers x c 100,1000 x 3 reps, 50k requests each
  bench/http/run_ab_bench.py --quick            # 5k requests x 1 rep, a smoke run
  bench/http/run_ab_bench.py --perf --close-probe
  bench/http/run_ab_bench.py --servers nginx,libnet-uring --concurrency 100 -n 100000

--perf adds one run per server and concurrency under `perf record -e
cpu-clock -g -p PID` (the length of the ab run) and splits the server's CPU
into the kernel, the program, libc, libstdc++ and the rest (`perf report
--sort dso`); the reports are saved in --out. --close-probe looks at how
each server ends a short connection: which side sends the first FIN and
which side is left with the TIME_WAIT sockets after an ab run.

--baseline-binary PATH (an http_server of an earlier build) adds
libnet-epoll@base / libnet-uring@base twins and now/base ratios, as in
run_http_bench.py.

The servers, the network namespace, the pinning and the pre-check come from
run_http_bench.py. Needs ab (apache2-utils) and nginx (nginx-light), which
tools/setup.sh installs, and with --perf, perf (apt-get install -y linux-perf).
"""

import argparse
import csv
import datetime
import os
import platform
import re
import select
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402  (bench/benchlib.py)
import run_http_bench as hb  # noqa: E402  (bench/http/run_http_bench.py)
from benchlib import fmt_dur, log  # noqa: E402
from run_http_bench import RunError, Server  # noqa: E402

ROOT = hb.ROOT
PROG = "run_ab_bench"
ALL_SERVERS = hb.ALL_SERVERS
BASE_SUFFIX = benchlib.BASE_SUFFIX
PATH = "/hello"
# The request ab sends without -k (HTTP/1.0, no Connection header): the
# pre-check and the close probe send exactly this.
AB_REQUEST = ("GET %s HTTP/1.0\r\nHost: 127.0.0.1:%%d\r\nUser-Agent: ApacheBench/2.3\r\n"
              "Accept: */*\r\n\r\n" % PATH)
PERF_FREQ = 4999
PERF_TOP_SYMBOLS = 25
# The close probe's ab run.
PROBE_CONCURRENCY = 100
PROBE_MAX_REQUESTS = 20000
NETNS_ENV = "LIBNET_ABBENCH_NETNS"
NETNS_BASELINE_ENV = "LIBNET_ABBENCH_NETNS_BASELINE"


# ------------------------------------------------------------------------- ab


def parse_ab(out):
    def number(pattern, required=True):
        m = re.search(pattern, out, re.M)
        if m:
            return float(m.group(1))
        if required:
            raise RunError("ab output without %r: %s" % (pattern, out[-400:]))
        return None

    r = {"requests": int(number(r"^Complete requests:\s+(\d+)")),
         "failed": int(number(r"^Failed requests:\s+(\d+)")),
         # Printed only when there are any.
         "non2xx": int(number(r"^Non-2xx responses:\s+(\d+)", False) or 0),
         "write_errors": int(number(r"^Write errors:\s+(\d+)", False) or 0),
         "doc_length": int(number(r"^Document Length:\s+(\d+) bytes")),
         "time_s": number(r"^Time taken for tests:\s+([\d.]+) seconds"),
         "rps": number(r"^Requests per second:\s+([\d.]+)"),
         # The first "Time per request" line: per request, not divided by -c.
         "mean_ms": number(r"^Time per request:\s+([\d.]+) \[ms\] \(mean\)$")}
    m = re.search(r"^Failed requests:.*\n\s+\(Connect: (\d+), Receive: (\d+), Length: (\d+), "
                  r"Exceptions: (\d+)\)", out, re.M)
    r["failed_detail"] = ("connect %s, receive %s, length %s, exceptions %s" % m.groups()
                          if m else "")
    dist = out.split("Percentage of the requests served within a certain time", 1)
    if len(dist) < 2:
        raise RunError("ab output without the latency percentiles")
    for pct in ("50", "99", "100"):
        m = re.search(r"^\s*%s%%\s+(\d+)" % pct, dist[1], re.M)
        if not m:
            raise RunError("ab output without its %s%% line" % pct)
        r["max_ms" if pct == "100" else "p%s_ms" % pct] = float(m.group(1))
    problems = []
    if r["failed"]:
        problems.append("%d failed requests (%s)" % (r["failed"], r["failed_detail"]))
    if r["non2xx"]:
        problems.append("%d non-2xx responses" % r["non2xx"])
    if r["write_errors"]:
        problems.append("%d write errors" % r["write_errors"])
    if r["doc_length"] != len(hb.HELLO_BODY):
        problems.append("document length %d, expected %d" % (r["doc_length"], len(hb.HELLO_BODY)))
    r["ab_problems"] = "; ".join(problems)
    return r


def run_ab(ctx, port, n, conc):
    argv = benchlib.pinned(ctx["client_cpus"], [ctx["ab"], "-q", "-n", str(n), "-c", str(conc),
                                                "http://127.0.0.1:%d%s" % (port, PATH)])
    try:
        w = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                           preexec_fn=hb.raise_nofile)
    except subprocess.TimeoutExpired:
        raise RunError("ab did not finish within 600 s")
    if w.returncode != 0:
        raise RunError("ab exited with status %d: %s" %
                       (w.returncode, (w.stdout + w.stderr).strip()[-400:]))
    return parse_ab(w.stdout)


def ab_precheck(server):
    """ab's own request must be answered with /hello's body and then closed
    by the server: ab without -k reads each response until the server
    closes, so a server that kept the connection open would stall every
    request for ab's 30 s timeout."""
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            s.sendall((AB_REQUEST % server.port).encode())
            data = read_to_eof(s, 3)
    except OSError as e:
        return ["HTTP/1.0 GET %s: %s" % (PATH, e)]
    if data is None:
        return ["HTTP/1.0 GET %s without keep-alive: the server kept the connection open" % PATH]
    head, _, body = data.partition(b"\r\n\r\n")
    if not re.match(rb"HTTP/1\.[01] 200", head) or body != hb.HELLO_BODY:
        return ["HTTP/1.0 GET %s: unexpected response %r" % (PATH, data[:200])]
    return []


def read_to_eof(s, timeout):
    """Everything until the peer's FIN, or None if it has not come within
    timeout seconds."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
    except socket.timeout:
        return None


# ----------------------------------------------------------------------- perf


class PerfRecorder:
    """`perf record -p PIDS`, started with its events disabled and switched on
    and off through its control FIFO, so that the samples cover exactly the
    window the server's CPU time is taken over. perf itself runs on the
    client CPUs, not the server's."""

    def __init__(self, ctx, pids, tag):
        self.ctx = ctx
        self.data = os.path.join(ctx["tmp"], "perf-%s.data" % tag)
        self.logpath = os.path.join(ctx["tmp"], "perf-%s.log" % tag)
        self.ctl_path = os.path.join(ctx["tmp"], "perf-%s.ctl" % tag)
        self.ack_path = os.path.join(ctx["tmp"], "perf-%s.ack" % tag)
        os.mkfifo(self.ctl_path)
        os.mkfifo(self.ack_path)
        argv = [ctx["perf"], "record", "-e", "cpu-clock", "-F", str(PERF_FREQ)]
        argv += [] if ctx["perf_flat"] else ["-g"]
        # -N: no copies of the binaries in ~/.debug; -D -1: start disabled.
        argv += ["-N", "-D", "-1", "--control", "fifo:%s,%s" % (self.ctl_path, self.ack_path),
                 "-p", ",".join(str(p) for p in pids), "-o", self.data]
        self.argv = argv
        # Opened before perf starts, both without blocking: perf opens the ack
        # FIFO for writing and would wait for a reader.
        self.ack = os.open(self.ack_path, os.O_RDONLY | os.O_NONBLOCK)
        with open(self.logpath, "w") as out:
            self.proc = subprocess.Popen(benchlib.pinned(ctx["client_cpus"], argv), stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.ctl = None
        deadline = time.time() + 10
        while self.ctl is None:
            try:
                self.ctl = os.open(self.ctl_path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    self.close()
                    raise RunError("perf record did not start: %s" % self.output())
                time.sleep(0.02)

    def output(self):
        try:
            with open(self.logpath, errors="replace") as f:
                return f.read().strip()[-400:]
        except OSError:
            return ""

    def command(self, cmd):
        os.write(self.ctl, (cmd + "\n").encode())
        got = b""
        deadline = time.time() + 10
        while b"ack" not in got:
            left = deadline - time.time()
            if left <= 0 or self.proc.poll() is not None:
                raise RunError("perf record did not acknowledge %r: %s" % (cmd, self.output()))
            ready, _, _ = select.select([self.ack], [], [], left)
            if ready:
                got += os.read(self.ack, 64)

    def enable(self):
        self.command("enable")

    def finish(self):
        """Disables the events and stops perf; it writes the data on SIGINT."""
        try:
            self.command("disable")
        finally:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.close()
        if "Captured and wrote" not in self.output() or not os.path.exists(self.data):
            raise RunError("perf record wrote no data: %s" % self.output())

    def close(self):
        for fd in (self.ctl, self.ack):
            if fd is not None:
                os.close(fd)
        self.ctl = self.ack = None


def perf_report(ctx, data, args, path):
    """`perf report --stdio ARGS` of data, written to path; returns the text."""
    argv = [ctx["perf"], "report", "-i", data, "--stdio"] + args
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RunError("%s failed: %s" % (" ".join(argv), r.stderr.strip()[-400:]))
    with open(path, "w") as f:
        f.write("# %s\n%s" % (" ".join(shlex.quote(a) for a in argv), r.stdout))
    return r.stdout


def perf_rows(text, counts=False):
    """(percent, rest of the line) for every sample line of a flat report;
    with counts (--show-nr-samples), (percent, samples, rest of the line)."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^\s+([\d.]+)%\s+" + (r"(\d+)\s+" if counts else "()") + r"(\S.*?)\s*$",
                     line)
        if m:
            rows.append((float(m.group(1)), int(m.group(2) or 0), m.group(3)))
    return rows if counts else [(p, rest) for p, _, rest in rows]


def split_by_dso(text, program):
    """{kernel, program, libc, libstdc++, other, user} percentages of a
    `--sort dso` report, and the largest of the other DSOs."""
    split = {"kernel": 0.0, "program": 0.0, "libc": 0.0, "libstdc++": 0.0, "other": 0.0}
    others, samples = [], 0
    for pct, count, dso in perf_rows(text, counts=True):
        samples += count
        if dso.startswith("[kernel") or dso == "[guest.kernel.kallsyms]":
            split["kernel"] += pct
        elif dso == program:
            split["program"] += pct
        elif dso.startswith("libc.so") or dso.startswith("libc-"):
            split["libc"] += pct
        elif dso.startswith("libstdc++"):
            split["libstdc++"] += pct
        else:
            split["other"] += pct
            others.append((pct, dso))
    split["user"] = split["program"] + split["libc"] + split["libstdc++"] + split["other"]
    split["others"] = ", ".join("%s %.1f" % (d, p) for p, d in sorted(others, reverse=True)[:3])
    split["samples"] = samples
    return split


def capabilities():
    try:
        with open("/proc/self/status") as f:
            m = re.search(r"^CapEff:\s+([0-9a-f]+)", f.read(), re.M)
        return int(m.group(1), 16) if m else 0
    except OSError:
        return 0


CAP_SYS_ADMIN, CAP_PERFMON = 21, 38


def perf_access():
    """Makes sure perf may sample the servers, kernel included. With
    CAP_PERFMON or CAP_SYS_ADMIN (root, usually) kernel.perf_event_paranoid
    does not apply; otherwise it is set to -1 when this process may (root
    without those capabilities). Returns (previous value to restore or None,
    a line for the output)."""
    path = "/proc/sys/kernel/perf_event_paranoid"
    with open(path) as f:
        level = int(f.read())
    caps = capabilities()
    if level <= -1:
        return None, "kernel.perf_event_paranoid is %d: perf may sample anything" % level
    if caps & (1 << CAP_PERFMON | 1 << CAP_SYS_ADMIN):
        return None, ("kernel.perf_event_paranoid is %d, left as it is: this process has "
                      "CAP_PERFMON/CAP_SYS_ADMIN, for which it does not apply" % level)
    try:
        with open(path, "w") as f:
            f.write("-1")
    except OSError:
        sys.exit("%s: --perf needs kernel samples: run as root, or first run\n"
                 "  sysctl kernel.perf_event_paranoid=-1" % PROG)
    log("set kernel.perf_event_paranoid=-1 (was %d); restored at the end" % level)
    return level, "set kernel.perf_event_paranoid=-1 for the run (was %d; restored)" % level


# ----------------------------------------------------------------------- runs


def server_cpu(pid):
    """(pids of the server's tree, CPU s from utime+stime over the tree, the
    same for the first process alone, CPU ns from schedstat). The first
    process is nginx's master or the whole libnet server; /proc/PID/stat of a
    process counts all its threads, live and exited."""
    pids, ns, ticks = benchlib.tree_cpu(pid)
    st = benchlib.read_stat(pid)
    return pids, ticks, (st[1] / benchlib.CLK_TCK if st else 0.0), ns


def context_switches(pids):
    """Voluntary context switches (the thread slept: a wake-up) summed over
    every thread of `pids`. A server that sleeps and wakes more often per
    request pays the scheduler's cost each time, which shows as kernel CPU."""
    total = 0
    for pid in pids:
        try:
            tasks = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tasks:
            try:
                with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                    for line in f:
                        if line.startswith("voluntary_ctxt_switches:"):
                            total += int(line.split()[1])
            except OSError:
                pass
    return total


def measure(ctx, name, conc, n, port, perf_tag=None):
    """One ab run against a fresh server; with perf_tag, under perf record.
    Returns the run's row."""
    server = Server(name, ctx, port)
    notes, recorder = [], None
    try:
        server.start()
        pid = server.proc.pid
        hb.wait_before_run(ctx, server, notes)
        if perf_tag:
            recorder = PerfRecorder(ctx, benchlib.process_tree(pid), perf_tag)
            recorder.enable()
        pids0, tk0, root0, ns0 = server_cpu(pid)
        cs0 = context_switches(pids0)
        (busy0, steal0), ab0 = benchlib.machine_cpu_s(), benchlib.children_cpu_s()
        wall0 = time.time()
        r = run_ab(ctx, server.port, n, conc)
        # The server may still be closing connections when ab exits: that
        # work belongs to the run.
        if not benchlib.wait_idle(pid):
            notes.append("server still busy 3 s after ab exited")
        pids1, tk1, root1, ns1 = server_cpu(pid)
        cs1 = context_switches(pids1)
        (busy1, steal1), ab1 = benchlib.machine_cpu_s(), benchlib.children_cpu_s()
        wall1 = time.time()
        if recorder:
            rec, recorder = recorder, None
            rec.finish()
            r.update(perf_split(ctx, name, rec.data, perf_tag))
        if server.proc.poll() is not None:
            raise RunError("%s died during the run (status %s): %s" %
                           (name, server.proc.returncode, server.output()))
        if pids0 != pids1:
            notes.append("server processes changed during the run (%s -> %s): CPU is partial" %
                         (pids0, pids1))
    finally:
        if recorder:
            recorder.proc.kill()
            recorder.proc.wait()
            recorder.close()
        warning = server.stop()
    if warning:
        notes.append(warning)
    r["server_cpu_s"] = tk1 - tk0
    r["root_cpu_s"] = root1 - root0
    r["server_cpu_s_sched"] = (ns1 - ns0) / 1e9
    r["cpu_per_100k"] = r["server_cpu_s"] / r["requests"] * 1e5 if r["requests"] else float("nan")
    r["wakeups_per_request"] = (cs1 - cs0) / r["requests"] if r["requests"] else float("nan")
    # Under 1 the server waited for ab: req/s is then ab's limit, not the server's.
    r["server_busy"] = r["server_cpu_s"] / r["time_s"] if r["time_s"] else float("nan")
    r["ab_cpu_s"] = ab1 - ab0
    cpu_wall = (wall1 - wall0) * (os.cpu_count() or 1)
    r["other_load"] = max(0.0, (busy1 - busy0) - r["server_cpu_s"] - r["ab_cpu_s"]) / cpu_wall
    r["steal"] = (steal1 - steal0) / cpu_wall
    r["notes"] = "; ".join(notes)
    return r


def program_dso(ctx, name):
    if name == "nginx":
        return os.path.basename(ctx["nginx"])
    return os.path.basename(ctx["baseline"] if name.endswith(BASE_SUFFIX) else ctx["binary"])


def perf_split(ctx, name, data, tag):
    out = ctx["out"]
    flat = ["--no-children", "-g", "none"]
    dso = perf_report(ctx, data, flat + ["--sort", "dso", "--show-nr-samples"],
                      os.path.join(out, "perf-%s-dso.txt" % tag))
    sym = perf_report(ctx, data, flat + ["--sort", "dso,sym"],
                      os.path.join(out, "perf-%s-dso_sym.txt" % tag))
    if not ctx["perf_flat"]:
        perf_report(ctx, data, ["--no-children", "--sort", "dso,sym", "--percent-limit", "1"],
                    os.path.join(out, "perf-%s-callgraph.txt" % tag))
    split = split_by_dso(dso, program_dso(ctx, name))
    r = {"perf_%s_pct" % k.replace("+", "x"): v for k, v in split.items()
         if isinstance(v, float)}
    r["perf_samples"] = split["samples"]
    r["perf_others"] = split["others"]
    r["perf_top"] = ["%6.2f%%  %s" % (p, rest) for p, rest in perf_rows(sym)[:PERF_TOP_SYMBOLS]]
    return r


def ss_sockets(ctx, args):
    """[(state, local port, peer port)] of `ss -Htan ARGS`; without a state
    filter ss prints the state first."""
    r = subprocess.run([ctx["ss"], "-Htan"] + args, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RunError("ss failed: %s" % r.stderr.strip())
    out = []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) < 4:
            continue
        local, peer = f[-2], f[-1]
        if not local[-1].isdigit():  # a process column after the addresses
            continue
        state = f[0] if not f[0].isdigit() else "TIME-WAIT"
        out.append((state, int(local.rsplit(":", 1)[1]), int(peer.rsplit(":", 1)[1])))
    return out


def tw_created():
    """TIME_WAIT sockets this network namespace has made (TcpExt TW of
    /proc/net/netstat), either end."""
    with open("/proc/net/netstat") as f:
        lines = [l.split() for l in f if l.startswith("TcpExt:")]
    return int(dict(zip(lines[0][1:], lines[1][1:]))["TW"])


def close_probe(ctx, name, n, port):
    """After an ab run at PROBE_CONCURRENCY: TIME_WAIT sockets with the
    server's port as the local end (the server's) and as the peer end (ab's).
    Then one connection with ab's request, kept open by the client after the
    response: a FIN from the server shows as end of file while the client
    still holds its socket (in CLOSE-WAIT)."""
    server = Server(name, ctx, port)
    try:
        server.start()
        benchlib.wait_idle(server.proc.pid)
        benchlib.wait_machine_quiet(ctx["quiet_wait"], hb.OTHER_LOAD_NOTE)
        tw0 = tw_created()
        r = run_ab(ctx, server.port, n, PROBE_CONCURRENCY)
        benchlib.wait_idle(server.proc.pid)
        r["tw_created"] = tw_created() - tw0
        tw = [s for s in ss_sockets(ctx, ["state", "time-wait"])
              if server.port in (s[1], s[2])]
        r["tw_server"] = sum(1 for s in tw if s[1] == server.port)
        r["tw_client"] = sum(1 for s in tw if s[2] == server.port)

        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            cport = s.getsockname()[1]
            s.sendall((AB_REQUEST % server.port).encode())
            try:
                data = read_to_eof(s, 3)
                r["first_fin"] = "server" if data is not None else "client"
            except ConnectionResetError:
                r["first_fin"] = "server (RST)"
            mine = [x for x in ss_sockets(ctx, ["( sport = :%d or dport = :%d )" % (cport, cport)])
                    if server.port in (x[1], x[2])]
            r["client_state_open"] = ",".join(x[0] for x in mine if x[1] == cport) or "gone"
            r["server_state_open"] = ",".join(x[0] for x in mine if x[1] == server.port) or "gone"
        time.sleep(0.2)
        after = [x for x in ss_sockets(ctx, ["( sport = :%d or dport = :%d )" % (cport, cport)])
                 if server.port in (x[1], x[2])]
        r["client_state_closed"] = ",".join(x[0] for x in after if x[1] == cport) or "gone"
        r["server_state_closed"] = ",".join(x[0] for x in after if x[1] == server.port) or "gone"
    finally:
        warning = server.stop()
    r["notes"] = warning or ""
    return r


# --------------------------------------------------------------------- output


def f2(v):
    return "%.2f" % v


def f1(v):
    return "%.1f" % v


def f0(v):
    return "%.0f" % v


def cell(values, fmt):
    return hb.med_cell([v for v in values if v is not None], fmt)


def ok_runs(results, conc, name):
    return [r for r in results.get((conc, name), []) if "error" not in r and not r["ab_problems"]]


def per_rep_ratios(results, conc, a, b, key):
    """key of a over key of b, repetition by repetition, where both ran."""
    by_rep = {r["rep"]: r for r in ok_runs(results, conc, b)}
    return [r[key] / by_rep[r["rep"]][key] for r in ok_runs(results, conc, a)
            if r["rep"] in by_rep and by_rep[r["rep"]][key] > 0]


def main_table(concs, servers, results):
    twins = any(s.endswith(BASE_SUFFIX) for s in servers)
    header = ["c", "server", "req/s", "req/s vs nginx", "mean ms", "p99 ms", "max ms",
              "server busy %", "server CPU s/100k", "CPU vs nginx", "wake-ups per request"]
    if twins:
        header += ["req/s now/base", "CPU now/base"]
    header.append("failed runs")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    notes = []
    for conc in concs:
        for name in servers:
            runs = results.get((conc, name), [])
            ok = ok_runs(results, conc, name)
            row = [str(conc), name, cell([r["rps"] for r in ok], hb.fmt_rps)]
            nginx = "nginx" in servers and name != "nginx"
            row.append(cell(per_rep_ratios(results, conc, name, "nginx", "rps"), f2)
                       if nginx else "-")
            row += [cell([r["mean_ms"] for r in ok], f2), cell([r["p99_ms"] for r in ok], f0),
                    cell([r["max_ms"] for r in ok], f0),
                    cell([100 * r["server_busy"] for r in ok], f0),
                    cell([r["cpu_per_100k"] for r in ok], f2)]
            row.append(cell(per_rep_ratios(results, conc, name, "nginx", "cpu_per_100k"), f2)
                       if nginx else "-")
            row.append(cell([r["wakeups_per_request"] for r in ok], f2))
            if twins:
                base = name + BASE_SUFFIX
                has = base in servers
                row.append(cell(per_rep_ratios(results, conc, name, base, "rps"), f2)
                           if has else "-")
                row.append(cell(per_rep_ratios(results, conc, name, base, "cpu_per_100k"), f2)
                           if has else "-")
            bad = len(runs) - len(ok)
            row.append("**%d of %d**" % (bad, len(runs)) if bad else "0")
            lines.append("| " + " | ".join(row) + " |")
            for r in runs:
                what = r.get("error") or r.get("ab_problems")
                if what:
                    notes.append("c %d %s rep %d: **%s**" % (conc, name, r["rep"], what))
                if r.get("notes"):
                    notes.append("c %d %s rep %d: %s" % (conc, name, r["rep"], r["notes"]))
                if "error" not in r and (r["other_load"] > hb.OTHER_LOAD_NOTE or
                                         r["steal"] > hb.OTHER_LOAD_NOTE):
                    notes.append("c %d %s rep %d: other work on the machine (other %.0f%%, "
                                 "steal %.0f%%)" % (conc, name, r["rep"], 100 * r["other_load"],
                                                    100 * r["steal"]))
    if notes:
        lines.append("")
        lines += ["- " + n for n in notes]
    return "\n".join(lines) + "\n"


def perf_table(concs, servers, results, perf_results):
    header = ["c", "server", "kernel %", "program %", "libc %", "libstdc++ %", "other %",
              "user space %", "largest other DSOs (%)", "samples", "CPU s/100k under perf",
              "CPU s/100k (measured runs)", "user-space CPU s/100k"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    notes = []
    for conc in concs:
        for name in servers:
            r = perf_results.get((conc, name))
            if r is None:
                continue
            if "error" in r:
                notes.append("c %d %s: perf run failed: %s" % (conc, name, r["error"]))
                continue
            ok = ok_runs(results, conc, name)
            cpu = statistics.median([x["cpu_per_100k"] for x in ok]) if ok else None
            user = r["perf_user_pct"] / 100 * cpu if cpu is not None else None
            lines.append("| " + " | ".join([
                str(conc), name, f1(r["perf_kernel_pct"]), f1(r["perf_program_pct"]),
                f1(r["perf_libc_pct"]), f1(r["perf_libstdcxx_pct"]), f1(r["perf_other_pct"]),
                f1(r["perf_user_pct"]), r["perf_others"] or "-", str(r["perf_samples"]),
                f2(r["cpu_per_100k"]), f2(cpu) if cpu is not None else "-",
                "%.3f" % user if user is not None else "-"]) + " |")
            if r["ab_problems"]:
                notes.append("c %d %s: ab under perf: **%s**" % (conc, name, r["ab_problems"]))
            if r["perf_kernel_pct"] == 0:
                notes.append("c %d %s: no kernel samples (is perf restricted?)" % (conc, name))
    if notes:
        lines.append("")
        lines += ["- " + n for n in notes]
    return "\n".join(lines) + "\n"


def probe_table(probes):
    header = ["server", "ab requests (c %d)" % PROBE_CONCURRENCY,
              "TIME_WAITs made (TcpExtTW)", "TIME_WAIT server side (local port = server's)",
              "TIME_WAIT client side (peer port = server's)", "keeps TIME_WAIT",
              "first FIN (one ab request)", "after the response: server / client socket",
              "after the client's close: server / client socket"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, r in probes:
        if "error" in r:
            lines.append("| %s | failed: %s |%s" % (name, r["error"], " |" * (len(header) - 2)))
            continue
        a, b = r["tw_server"], r["tw_client"]
        keeps = ("neither" if a + b == 0 else "server" if a > 10 * b else "client"
                 if b > 10 * a else "both")
        lines.append("| " + " | ".join([
            name, str(r["requests"]), str(r["tw_created"]), str(a), str(b), keeps,
            r["first_fin"],
            "%s / %s" % (r["server_state_open"], r["client_state_open"]),
            "%s / %s" % (r["server_state_closed"], r["client_state_closed"])]) + " |")
    return "\n".join(lines) + "\n"


CSV_FIELDS = ["date", "kind", "server", "concurrency", "rep", "n", "port", "requests",
              "failed", "failed_detail", "non2xx", "write_errors", "doc_length", "time_s",
              "rps", "mean_ms", "p50_ms", "p99_ms", "max_ms", "server_cpu_s", "root_cpu_s",
              "server_cpu_s_sched", "cpu_per_100k", "wakeups_per_request", "server_busy", "ab_cpu_s",
              "other_load", "steal",
              "perf_kernel_pct", "perf_program_pct", "perf_libc_pct", "perf_libstdcxx_pct",
              "perf_other_pct", "perf_user_pct", "perf_samples", "perf_others", "tw_created", "tw_server",
              "tw_client", "first_fin", "server_state_open", "client_state_open",
              "server_state_closed", "client_state_closed", "ab_problems", "error", "notes"]


# ----------------------------------------------------------------------- main


def run_order(servers, rep):
    """Repetition rep (from 0): the servers rotated by rep (nginx, epoll,
    uring; epoll, uring, nginx; ...), so that none always runs first or
    right after another; a server's @base twin stays next to it, the pair's
    order alternating between repetitions."""
    units = []
    for name in servers:
        if name.endswith(BASE_SUFFIX):
            continue
        pair = [name] + ([name + BASE_SUFFIX] if name + BASE_SUFFIX in servers else [])
        units.append(pair[::-1] if rep % 2 else pair)
    k = rep % len(units)
    return [s for unit in units[k:] + units[:k] for s in unit]


def build(ctx):
    target = "//examples/http:http_server"
    log("building: bazel build --config=opt " + target)
    if subprocess.run(["bazel", "build", "--config=opt", target], cwd=ROOT).returncode != 0:
        sys.exit("%s: building %s failed; pass --binary PATH for a prebuilt http_server, or "
                 "--servers nginx" % (PROG, target))
    # The opt configuration's own output directory: bazel-bin follows
    # whichever configuration was built last.
    out = subprocess.run(["bazel", "info", "--config=opt", "output_path"], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout.strip()
    path = os.path.join(ctx["tmp"], "http_server")
    shutil.copy2(os.path.join(out, "k8-opt", "bin", "examples", "http", "http_server"), path)
    return path


def parse_ints(text, what):
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        sys.exit("%s: %s: %r is not a comma-separated list of numbers" % (PROG, what, text))
    if not values or min(values) < 1:
        sys.exit("%s: %s: need positive numbers" % (PROG, what))
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--requests", type=int,
                    help="requests per ab run (default 50000; --quick 5000)")
    ap.add_argument("--concurrency", default="100,1000",
                    help="ab -c values, comma-separated (default 100,1000)")
    ap.add_argument("--reps", type=int, help="runs per server and concurrency (default 3; "
                    "--quick 1)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 5000 requests, 1 rep")
    ap.add_argument("--servers", default=",".join(ALL_SERVERS),
                    help="comma-separated subset of %s" % ",".join(ALL_SERVERS))
    ap.add_argument("--binary", help="a prebuilt http_server (default: build it with Bazel)")
    ap.add_argument("--baseline-binary", metavar="PATH",
                    help="an http_server of an earlier build: adds libnet-epoll@base / "
                    "libnet-uring@base and now/base ratios")
    ap.add_argument("--perf", action="store_true",
                    help="one more run per server and concurrency under perf record; prints "
                    "where the server's CPU goes (kernel, program, libc, libstdc++, other)")
    ap.add_argument("--perf-flat", action="store_true",
                    help="with --perf: record without call graphs (-g)")
    ap.add_argument("--close-probe", action="store_true",
                    help="per server: which side keeps TIME_WAIT after an ab run at c %d, "
                    "and which side sends the first FIN" % PROBE_CONCURRENCY)
    hb.add_machine_arguments(ap, "ab", 22000, "ab-results", "the CSV and the perf reports")
    args = ap.parse_args()

    hb.apply_nice(PROG, args)
    n = args.requests or (5000 if args.quick else 50000)
    reps = args.reps or (1 if args.quick else 3)
    concs = parse_ints(args.concurrency, "--concurrency")
    servers = parse_servers(args.servers)
    if args.port_base + 2000 > 32768 or args.port_base < 1024:
        sys.exit("%s: --port-base must be in 1024..30768: the ports above are ab's" % PROG)

    ctx = {"threads": 0, "accept": "per-loop", "quiet_wait": args.quiet_wait,
           "server_cpus": args.server_cpus, "client_cpus": args.client_cpus,
           "perf_flat": args.perf_flat, "out": os.path.abspath(args.out)}
    find_tools(args, ctx, servers)
    hb.check_cpus(PROG, args, "ab")
    servers = hb.check_binaries(PROG, args, servers)

    if NETNS_ENV in os.environ:
        ctx["tmp"], ctx["binary"] = os.environ[NETNS_ENV].split(":", 1)
        ctx["baseline"] = os.environ.get(NETNS_BASELINE_ENV)
        ctx["netns"] = True
        benchlib.loopback_up()
        return bench(args, ctx, servers, concs, n, reps)
    return run_in_temp_dir(args, ctx, servers, concs, n, reps)


def parse_servers(text):
    servers = []
    for s in (x.strip() for x in text.split(",")):
        if s and s not in ALL_SERVERS:
            sys.exit("%s: unknown server %r (known: %s)" % (PROG, s, ", ".join(ALL_SERVERS)))
        if s and s not in servers:
            servers.append(s)
    if not servers:
        sys.exit("%s: no server selected" % PROG)
    return servers


def find_tools(args, ctx, servers):
    """The programs the run needs, into ctx; exits naming the packages of
    those that are missing."""
    missing = []
    ctx["ab"] = benchlib.find_tool("ab")
    if ctx["ab"] is None:
        missing.append("apache2-utils")
    if "nginx" in servers:
        ctx["nginx"] = benchlib.find_tool("nginx")
        if ctx["nginx"] is None:
            missing.append("nginx-light")
    if benchlib.find_tool("taskset") is None:
        missing.append("util-linux")
    if args.perf:
        ctx["perf"] = benchlib.find_tool("perf")
        if ctx["perf"] is None:
            missing.append("linux-perf")
    if args.close_probe:
        ctx["ss"] = benchlib.find_tool("ss")
        if ctx["ss"] is None:
            missing.append("iproute2")
    hb.exit_if_missing(PROG, missing)


def run_in_temp_dir(args, ctx, servers, concs, n, reps):
    """Copies or builds the binaries into a temp dir, then benches, in a
    private network namespace when it can; removes the temp dir."""
    libnet = [s for s in servers if s.startswith("libnet")]
    ctx["tmp"] = tempfile.mkdtemp(prefix="libnet-abbench-")
    try:
        if args.binary:
            ctx["binary"] = os.path.join(ctx["tmp"], "http_server")
            shutil.copy2(args.binary, ctx["binary"])
        elif libnet:
            ctx["binary"] = build(ctx)
        if args.baseline_binary:
            hb.copy_baseline(ctx, args.baseline_binary, "rows")
        if not args.shared_netns:
            if benchlib.netns_available():
                return benchlib.run_in_netns(ctx, os.path.abspath(__file__), NETNS_ENV,
                                             NETNS_BASELINE_ENV)
            log("note: cannot make a network namespace (needs root); staying in the machine's")
        ctx["netns"] = False
        return bench(args, ctx, servers, concs, n, reps)
    finally:
        shutil.rmtree(ctx["tmp"], ignore_errors=True)


def bench(args, ctx, servers, concs, n, reps):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("%s: stopped by SIGTERM" % PROG))
    if "nginx" in servers:
        ctx["nginx_dir"] = os.path.join(ctx["tmp"], "nginx")
        os.makedirs(ctx["nginx_dir"], exist_ok=True)
        with open(os.path.join(HERE, "nginx.conf.in")) as f:
            ctx["nginx_template"] = f.read()
    ctx["www"], files = hb.make_www(ctx)
    os.makedirs(ctx["out"], exist_ok=True)

    ab_version = benchlib.first_line([ctx["ab"], "-V"]).replace("This is ", "")
    nginx_version = (benchlib.first_line([ctx["nginx"], "-v"]).replace("nginx version: ", "")
                     if "nginx" in servers else "not run")
    machine = "%s, nproc %d" % (benchlib.cpu_model(), len(os.sched_getaffinity(0)))
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join(shlex.quote(a) for a in ["bench/http/run_ab_bench.py"] + sys.argv[1:])
    log("machine: %s; kernel %s; %s; nginx %s" % (machine, platform.release(), ab_version,
                                                  nginx_version))
    restore_paranoid, perf_line = None, None
    if args.perf:
        restore_paranoid, perf_line = perf_access()
    try:
        return bench_runs(args, ctx, servers, concs, n, reps, files, {
            "ab": ab_version, "nginx": nginx_version, "machine": machine, "date": date,
            "command": command, "perf": perf_line})
    finally:
        if restore_paranoid is not None:
            with open("/proc/sys/kernel/perf_event_paranoid", "w") as f:
                f.write(str(restore_paranoid))


def bench_runs(args, ctx, servers, concs, n, reps, files, meta):
    # A fresh port for every run: no run meets an earlier run's TIME_WAIT
    # sockets (which the close probe counts).
    next_port = hb.port_allocator(args.port_base, PROG)
    # Correctness first: run_http_bench's byte-exact checks, then ab's own
    # request (HTTP/1.0, no keep-alive), which the server must answer and close.
    skipped = precheck_all(ctx, servers, files, next_port)
    active = [s for s in servers if s not in skipped]
    if not active:
        sys.exit("%s: no server passed the pre-check" % PROG)

    total = len(concs) * reps * len(active)
    extra = (len(concs) * len(active) if args.perf else 0) + (len(active) if args.close_probe
                                                             else 0)
    log("ab bench: %d concurrencies x %d servers x %d reps = %d runs of %d requests%s" %
        (len(concs), len(active), reps, total, n,
         " (+ %d perf/probe runs)" % extra if extra else ""))
    csv_path = os.path.join(ctx["out"], "ab_bench.csv")
    results, perf_results, probes = {}, {}, []
    t0 = time.time()
    with open(csv_path, "w", newline="") as f:
        runs = RunLog(f, t0, total + extra)
        measure_all(ctx, active, concs, n, reps, runs, next_port, results)
        if args.perf:
            perf_all(ctx, active, concs, n, runs, next_port, perf_results)
        if args.close_probe:
            probe_all(ctx, active, n, runs, next_port, probes)

    print_report(args, ctx, meta, active, skipped, concs, n, reps, results, perf_results, probes)
    log("CSV: %s (%s total)" % (csv_path, fmt_dur(time.time() - t0)))
    failed = any("error" in r or r.get("ab_problems") for runs in results.values() for r in runs)
    failed |= any("error" in r for r in perf_results.values())
    failed |= any("error" in r for _, r in probes)
    return 1 if skipped or failed else 0


def precheck_all(ctx, servers, files, next_port):
    """{server: errors} of the servers whose pre-check failed."""
    skipped = {}
    for name in servers:
        server = Server(name, ctx, next_port())
        try:
            server.start()
            errors, warnings = hb.precheck(server, files)
            errors += ab_precheck(server)
        except RunError as e:
            errors, warnings = [str(e)], []
        finally:
            warning = server.stop()
        for w in warnings + ([warning] if warning else []):
            log("pre-check %s: warning: %s" % (name, w))
        if errors:
            skipped[name] = errors
            log("pre-check %s: FAILED, not measured:\n  %s" % (name, "\n  ".join(errors)))
        else:
            log("pre-check %s: byte-exact, and closes after an HTTP/1.0 request" % name)
    return skipped


class RunLog:
    """The progress lines and the CSV rows of a series of runs."""

    def __init__(self, f, t0, total):
        self.f = f
        self.out = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        self.out.writeheader()
        self.t0, self.done, self.total = t0, 0, total

    def progress(self, what):
        elapsed = time.time() - self.t0
        left = (", about %s left" % fmt_dur(elapsed / self.done * (self.total - self.done))
                if self.done else "")
        log("[run %d/%d] %s — elapsed %s%s" % (self.done + 1, self.total, what,
                                               fmt_dur(elapsed), left))

    def record(self, r, **fields):
        """One CSV row for a finished run."""
        row = dict(r, date=datetime.datetime.now().isoformat(timespec="seconds"), **fields)
        row.update((k, "%.4f" % v) for k, v in r.items() if isinstance(v, float))
        self.out.writerow(row)
        self.f.flush()
        self.done += 1


def measure_all(ctx, active, concs, n, reps, runs, next_port, results):
    for conc in concs:
        for rep in range(1, reps + 1):
            for name in run_order(active, rep - 1):
                runs.progress("c %d %s rep %d/%d" % (conc, name, rep, reps))
                p = next_port()
                try:
                    r = measure(ctx, name, conc, n, p)
                    log("  %s req/s, mean %.2f ms, p99 %.0f ms, server CPU %.3f s/100k "
                        "req (busy %.0f%%), other load %.0f%%%s" %
                        (hb.fmt_rps(r["rps"]), r["mean_ms"], r["p99_ms"], r["cpu_per_100k"],
                         100 * r["server_busy"], 100 * r["other_load"],
                         ", AB: " + r["ab_problems"] if r["ab_problems"] else ""))
                except RunError as e:
                    r = {"error": str(e)}
                    log("  FAILED: %s" % e)
                r["rep"] = rep
                results.setdefault((conc, name), []).append(r)
                runs.record(r, kind="measure", server=name, concurrency=conc, n=n, port=p)


def perf_all(ctx, active, concs, n, runs, next_port, perf_results):
    for conc in concs:
        for name in active:
            runs.progress("c %d %s under perf record" % (conc, name))
            p = next_port()
            tag = "%s-c%d" % (name.replace("@", "-"), conc)
            try:
                r = measure(ctx, name, conc, n, p, perf_tag=tag)
                log("  kernel %.1f%%, program %.1f%%, libc %.1f%%, libstdc++ %.1f%%, "
                    "other %.1f%% (%d samples); %.3f s/100k under perf" %
                    (r["perf_kernel_pct"], r["perf_program_pct"], r["perf_libc_pct"],
                     r["perf_libstdcxx_pct"], r["perf_other_pct"], r["perf_samples"],
                     r["cpu_per_100k"]))
            except RunError as e:
                r = {"error": str(e)}
                log("  FAILED: %s" % e)
            perf_results[(conc, name)] = r
            runs.record(r, kind="perf", server=name, concurrency=conc, n=n, port=p)


def probe_all(ctx, active, n, runs, next_port, probes):
    probe_n = min(n, PROBE_MAX_REQUESTS)
    for name in active:
        runs.progress("%s close probe" % name)
        p = next_port()
        try:
            r = close_probe(ctx, name, probe_n, p)
            log("  TIME_WAIT: server side %d, client side %d; first FIN: %s" %
                (r["tw_server"], r["tw_client"], r["first_fin"]))
        except RunError as e:
            r = {"error": str(e)}
            log("  FAILED: %s" % e)
        probes.append((name, r))
        runs.record(r, kind="close-probe", server=name, concurrency=PROBE_CONCURRENCY,
                    n=probe_n, port=p)


def print_report(args, ctx, meta, active, skipped, concs, n, reps, results, perf_results,
                 probes):
    print("## Short connections: nginx vs libnet under ApacheBench (no keep-alive)\n")
    print("- Machine: %s" % meta["machine"])
    print("- Kernel: %s" % platform.release())
    print("- Date: %s" % meta["date"])
    print("- ab: %s; nginx: %s (one worker)" % (meta["ab"], meta["nginx"]))
    if any(s.startswith("libnet") for s in active):
        print("- libnet: `%s --threads 0 --backend epoll|uring`" %
              (args.binary or "//examples/http:http_server (--config=opt)"))
    if args.baseline_binary:
        print("- Baseline (@base): `%s`, same flags" % args.baseline_binary)
    print("- Command: `%s`" % meta["command"])
    print("- Network: %s" % ("a private network namespace" if ctx["netns"] else
                              "the machine's own namespace"))
    for name, errors in skipped.items():
        print("- **%s not measured**: pre-check failed: %s" % (name, "; ".join(errors)))
    print("- Method: `ab -n %d -c C http://127.0.0.1:PORT%s` (HTTP/1.0, a new TCP connection "
          "per request), %s, the servers interleaved and their order rotated between "
          "repetitions, a fresh server per run; server on CPU %s, ab on CPU %s. Server CPU = "
          "utime+stime of the server's processes (/proc/PID/stat, all threads; nginx's master "
          "and worker) from just before ab starts until the server is idle after it. "
          "Ratios are taken repetition by repetition (same repetition's nginx or @base run), "
          "then the median. ab reports latencies in whole ms." %
          (n, PATH, "median of %d (min–max)" % reps if reps > 1 else "1 run", args.server_cpus,
           args.client_cpus))
    print()
    print("### Throughput, latency, server CPU\n")
    print(main_table(concs, active, results))
    if args.perf:
        print("### Where the server's CPU goes (perf record -e cpu-clock -F %d%s, one run per "
              "server and concurrency)\n" % (PERF_FREQ, "" if args.perf_flat else " -g"))
        print("Shares of the server's samples by DSO (`perf report --no-children --sort dso`). "
              "user space = everything outside the kernel; user-space CPU s/100k = user space "
              "share x the median server CPU s/100k of the measured runs. %s. Full reports: "
              "`%s/perf-*.txt`.\n" % (meta["perf"], args.out))
        print(perf_table(concs, active, results, perf_results))
        print("#### Top %d symbols (`perf report --no-children --sort dso,sym`)\n" %
              PERF_TOP_SYMBOLS)
        for conc in concs:
            for name in active:
                r = perf_results.get((conc, name))
                if r and "error" not in r:
                    print("c %d, %s:\n\n```\n%s\n```\n" % (conc, name, "\n".join(r["perf_top"])))
    if args.close_probe:
        print("### Close sequence: who sends the first FIN, who keeps TIME_WAIT\n")
        print("After one `ab -c %d` run (a fresh server port), `ss -tan state time-wait`: "
              "sockets whose local port is the server's belong to the server, those whose peer "
              "port is the server's to ab. The active closer (first FIN) is the one left in "
              "TIME_WAIT. Then one connection sends ab's request and reads to end of file "
              "without closing: end of file while the client still holds its socket means the "
              "server's FIN came first; socket states from `ss` (server / client).\n" %
              PROBE_CONCURRENCY)
        print(probe_table(probes))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("%s: interrupted" % PROG)
