#!/usr/bin/env python3
"""Which side waits for what in a short-connection ab run: the counters of
both CPUs around one `ab -n N -c C` run per server.

For each server (nginx, http_server on epoll and io_uring, and any --variant
of http_server with extra flags), interleaved and rotated over --reps, one
fresh server pinned to CPU 0 and ab pinned to CPU 1, in a private network
namespace (as run_ab_bench.py). Around the run it reads:

- ab's own CPU per request (user, system) and how often it slept
  (voluntary context switches of the waited-for child: ab waiting for an
  answer), and CPU 1's idle and softirq time per request (/proc/stat);
- the server's CPU and wake-ups per request, and its system calls per
  request from `perf stat -e syscalls:sys_enter_*` on its pid (accept4,
  read/recvfrom, epoll_wait, io_uring_enter) and the CQEs it reaped
  (io_uring:io_uring_complete);
- the wake-ups issued on each CPU (sched:sched_waking counted per CPU with
  perf stat -a -A: a waking counted on CPU 1 is paid by ab's CPU) and the
  IPIs each CPU received (/proc/interrupts RES and CAL);
- NET_RX softirqs per CPU (/proc/softirqs) and the namespace's TcpExt
  TW, TWRecycled, ListenOverflows, TCPTimeWaitOverflow (/proc/net/netstat).

Other processes on the machine run on both CPUs too: the per-CPU counters
include them, so the "other load" of each run is printed beside them.

  bench/http/ab_wait_probe.py --binary BIN -n 20000 -c 100 --reps 3
  bench/http/ab_wait_probe.py --binary BIN --variant defer=--defer-accept
"""

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import shutil
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402
import run_ab_bench as ab  # noqa: E402
import run_http_bench as hb  # noqa: E402
from benchlib import log  # noqa: E402
from run_http_bench import RunError, Server  # noqa: E402

PROG = "ab_wait_probe"
NETNS_ENV = "LIBNET_ABPROBE_NETNS"
SERVER_EVENTS = ["syscalls:sys_enter_accept4", "syscalls:sys_enter_read",
                 "syscalls:sys_enter_recvfrom", "syscalls:sys_enter_epoll_wait",
                 "syscalls:sys_enter_io_uring_enter", "io_uring:io_uring_complete"]
# The server's last write of a response and the close that sends its FIN.
FIN_GAP_EVENTS = ["syscalls:sys_enter_sendto", "syscalls:sys_enter_writev",
                  "syscalls:sys_enter_write", "syscalls:sys_enter_shutdown",
                  "syscalls:sys_enter_close"]
TCPEXT = ["TW", "TWRecycled", "ListenOverflows", "TCPTimeWaitOverflow"]


def cpu_times():
    """{cpu: (busy s, idle s, softirq s)} for every CPU, from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            m = re.match(r"cpu(\d+) (.*)", line)
            if m:
                v = [int(x) / benchlib.CLK_TCK for x in m.group(2).split()]
                out[int(m.group(1))] = (sum(v[:3]) + v[5] + v[6], v[3] + v[4], v[6])
    return out


def per_cpu_counter(path, label):
    with open(path) as f:
        for line in f:
            f_ = line.split()
            if f_ and f_[0].rstrip(":") == label:
                return [int(x) for x in f_[1:] if x.isdigit()]
    return []


def tcpext():
    with open("/proc/net/netstat") as f:
        lines = [l.split() for l in f if l.startswith("TcpExt:")]
    row = dict(zip(lines[0][1:], lines[1][1:]))
    return {k: int(row.get(k, 0)) for k in TCPEXT}


def snapshot():
    return {"cpu": cpu_times(), "netrx": per_cpu_counter("/proc/softirqs", "NET_RX"),
            "res": per_cpu_counter("/proc/interrupts", "RES"),
            "cal": per_cpu_counter("/proc/interrupts", "CAL"), "tcp": tcpext(),
            "children": resource.getrusage(resource.RUSAGE_CHILDREN), "wall": time.time()}


def perf_stat(ctx, argv, tag):
    """(argv of perf stat writing CSV to a file, the file)."""
    path = os.path.join(ctx["tmp"], "stat-%s.csv" % tag)
    return [ctx["perf"], "stat", "-x", ",", "-o", path] + argv, path


def read_perf_stat(path):
    """{(event, cpu or None): count}."""
    out = {}
    with open(path) as f:
        for line in f:
            p = line.strip().split(",")
            if len(p) < 3 or line.startswith("#"):
                continue
            if p[0].startswith("CPU"):
                cpu, count, event = int(p[0][3:]), p[1], p[3]
            else:
                cpu, count, event = None, p[0], p[2]
            try:
                out[(event, cpu)] = out.get((event, cpu), 0) + int(float(count))
            except ValueError:
                pass
    return out


def start_counters(ctx, pid, tag):
    """perf stat on the server's threads and perf stat -a -A of wake-ups."""
    procs = []
    events = [e for e in SERVER_EVENTS if e in ctx["events"]]
    argv, srv = perf_stat(ctx, ["-e", ",".join(events), "-p",
                                ",".join(str(p) for p in benchlib.process_tree(pid))],
                          "srv-" + tag)
    procs.append(subprocess.Popen(benchlib.pinned(ctx["client_cpus"], argv),
                                  stderr=subprocess.DEVNULL))
    argv, wake = perf_stat(ctx, ["-a", "-A", "-e", "sched:sched_waking"], "wake-" + tag)
    procs.append(subprocess.Popen(benchlib.pinned(ctx["client_cpus"], argv),
                                  stderr=subprocess.DEVNULL))
    if ctx["perf_client"]:
        data = os.path.join(ctx["out"], "client-%s.data" % tag)
        argv = [ctx["perf"], "record", "-e", "cpu-clock", "-F", "4999", "-C",
                ctx["client_cpus"], "-o", data]
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
    if ctx["fin_gap"]:
        argv = [ctx["perf"], "record", "-e", ",".join(FIN_GAP_EVENTS), "-p",
                ",".join(str(p) for p in benchlib.process_tree(pid)), "-o",
                os.path.join(ctx["tmp"], "gap-%s.data" % tag)]
        procs.append(subprocess.Popen(benchlib.pinned(ctx["client_cpus"], argv),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(0.5)  # perf attaches before ab starts
    return procs, srv, wake


def stop_counters(procs):
    for p in procs:
        p.send_signal(2)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def probe(ctx, name, n, conc, port, tag):
    server = Server(name, ctx, port)
    try:
        server.start()
        pid = server.proc.pid
        hb.wait_before_run(ctx, server, [])
        procs, srv_path, wake_path = start_counters(ctx, pid, tag)
        pids0, tk0, _, _ = ab.server_cpu(pid)
        cs0 = ab.context_switches(pids0)
        s0 = snapshot()
        r = ab.run_ab(ctx, server.port, n, conc)
        benchlib.wait_idle(pid)
        s1 = snapshot()
        pids1, tk1, _, _ = ab.server_cpu(pid)
        cs1 = ab.context_switches(pids1)
        stop_counters(procs)
    finally:
        server.stop()
    d = derive(ctx, r, s0, s1, tk1 - tk0, cs1 - cs0, read_perf_stat(srv_path),
               read_perf_stat(wake_path))
    if ctx["fin_gap"]:
        d.update(fin_gaps(ctx, tag))
    return d


def fin_gaps(ctx, tag):
    """{fin_gap_p50_us, fin_gap_p90_us}: per connection, from the server's
    last write to an fd to its shutdown() or close() of that fd (when the FIN
    leaves), in
    microseconds; from `perf script` of the FIN_GAP_EVENTS record."""
    data = os.path.join(ctx["tmp"], "gap-%s.data" % tag)
    out = subprocess.run([ctx["perf"], "script", "-i", data, "-F", "time,event,trace"],
                         capture_output=True, text=True, timeout=300).stdout
    last_write, gaps = {}, []
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+):\s+syscalls:sys_enter_(\w+):\s+fd: (0x[0-9a-f]+)", line)
        if not m:
            continue
        t, call, fd = float(m.group(1)), m.group(2), int(m.group(3), 16)
        if call in ("close", "shutdown"):  # whichever sends the FIN first
            if fd in last_write:
                gaps.append((t - last_write.pop(fd)) * 1e6)
        else:
            last_write[fd] = t
    if not gaps:
        return {"fin_gap_p50_us": float("nan"), "fin_gap_p90_us": float("nan")}
    gaps.sort()
    return {"fin_gap_p50_us": gaps[len(gaps) // 2], "fin_gap_p90_us": gaps[len(gaps) * 9 // 10]}


def derive(ctx, r, s0, s1, server_cpu, server_cs, srv, wake):
    n = r["requests"]
    sc, cc = int(ctx["server_cpus"]), int(ctx["client_cpus"])
    d = {"rps": r["rps"], "p99_ms": r["p99_ms"], "server_us": server_cpu / n * 1e6,
         "server_wakeups": server_cs / n}
    c0, c1 = s0["children"], s1["children"]
    d["ab_user_us"] = (c1.ru_utime - c0.ru_utime) / n * 1e6
    d["ab_sys_us"] = (c1.ru_stime - c0.ru_stime) / n * 1e6
    d["ab_sleeps"] = (c1.ru_nvcsw - c0.ru_nvcsw) / n
    wall = s1["wall"] - s0["wall"]
    for cpu, tag in ((sc, "srvcpu"), (cc, "abcpu")):
        b0, i0, q0 = s0["cpu"][cpu]
        b1, i1, q1 = s1["cpu"][cpu]
        d[tag + "_idle"] = (i1 - i0) / wall
        d[tag + "_softirq_us"] = (q1 - q0) / n * 1e6
        d[tag + "_netrx"] = (s1["netrx"][cpu] - s0["netrx"][cpu]) / n
        d[tag + "_res_in"] = (s1["res"][cpu] - s0["res"][cpu]) / n
        d[tag + "_cal_in"] = (s1["cal"][cpu] - s0["cal"][cpu]) / n
        d[tag + "_wakings"] = wake.get(("sched:sched_waking", cpu), 0) / n
    total_busy = sum(s1["cpu"][c][0] - s0["cpu"][c][0] for c in s1["cpu"])
    d["other_load"] = max(0.0, total_busy - server_cpu - (c1.ru_utime + c1.ru_stime -
                                                          c0.ru_utime - c0.ru_stime)) / (
        wall * len(s1["cpu"]))
    for e in SERVER_EVENTS:
        d[e.split(":")[1].replace("sys_enter_", "")] = srv.get((e, None), 0) / n
    for k in TCPEXT:
        d["tw_" + k] = (s1["tcp"][k] - s0["tcp"][k]) / n
    return d


def report(results, names):
    keys = list(next(iter(v for v in results.values() if v))[0].keys())
    print("| metric | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for k in keys:
        cells = []
        for name in names:
            vals = [r[k] for r in results.get(name, [])]
            cells.append(("%.3g" % statistics.median(vals)) if vals else "-")
        print("| %s | %s |" % (k, " | ".join(cells)))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("-c", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--servers", default=",".join(hb.ALL_SERVERS))
    ap.add_argument("--perf-client", action="store_true",
                    help="also perf record -C CLIENT_CPU (flat) each run: ab's CPU, kernel "
                    "included; the data files and a --comm ab symbol report go to --out")
    ap.add_argument("--fin-gap", action="store_true",
                    help="also record the server's writes and closes (system call "
                    "tracepoints: epoll servers only) and report how long after its "
                    "response each connection's FIN left")
    ap.add_argument("--build", action="append", default=[], metavar="NAME=PATH",
                    help="also another http_server binary (epoll and io_uring), as NAME")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=FLAGS",
                    help="also http_server (epoll and io_uring) with these extra flags")
    hb.add_machine_arguments(ap, "ab", 26000, "ab-probe", "the perf data of --perf-client")
    args = ap.parse_args()
    hb.apply_nice(PROG, args)
    ctx = {"threads": 0, "accept": "per-loop", "quiet_wait": args.quiet_wait,
           "server_cpus": args.server_cpus, "client_cpus": args.client_cpus,
           "ab": benchlib.find_tool("ab"), "nginx": benchlib.find_tool("nginx"),
           "perf": benchlib.find_tool("perf"), "perf_client": args.perf_client,
           "fin_gap": args.fin_gap,
           "out": os.path.abspath(args.out)}
    os.makedirs(ctx["out"], exist_ok=True)
    if NETNS_ENV not in os.environ:
        ctx["tmp"] = tempfile.mkdtemp(prefix="libnet-abprobe-")
        try:
            shutil.copy2(args.binary, os.path.join(ctx["tmp"], "http_server"))
            return benchlib.run_in_netns(ctx, os.path.abspath(__file__), NETNS_ENV, "UNUSED_ENV")
        finally:
            shutil.rmtree(ctx["tmp"], ignore_errors=True)
    ctx["tmp"] = os.environ[NETNS_ENV].split(":", 1)[0]
    benchlib.loopback_up()
    return run(args, ctx)


def variant_servers(args, ctx, servers):
    """Variants run as wrapper scripts that add their flags."""
    out = list(servers)
    ctx["variants"] = {}
    for v, other in [(v, False) for v in args.variant] + [(v, True) for v in args.build]:
        label, value = v.split("=", 1)
        for backend in ("epoll", "uring"):
            out.append("libnet-%s+%s" % (backend, label))
        if other:
            path = os.path.join(ctx["tmp"], "http_server-" + label + "-bin")
            shutil.copy2(value, path)
            ctx["variants"][label] = (path, [])
        else:
            ctx["variants"][label] = (os.path.join(ctx["tmp"], "http_server"), value.split())
    return out


def run(args, ctx):
    listed = subprocess.run([ctx["perf"], "list", "tracepoint"], capture_output=True,
                            text=True).stdout
    ctx["events"] = [e for e in SERVER_EVENTS if e in listed]
    ctx["nginx_dir"] = os.path.join(ctx["tmp"], "nginx")
    os.makedirs(ctx["nginx_dir"], exist_ok=True)
    with open(os.path.join(HERE, "nginx.conf.in")) as f:
        ctx["nginx_template"] = f.read()
    ctx["www"], _ = hb.make_www(ctx)
    servers = variant_servers(args, ctx, [s for s in args.servers.split(",") if s])
    next_port = hb.port_allocator(args.port_base, PROG)
    results = {}
    for rep in range(args.reps):
        for name in benchlib.rotated(servers, rep):
            use_binary(ctx, name)
            log("rep %d %s" % (rep + 1, name))
            try:
                r = probe(ctx, name.split("+")[0], args.n, args.c, next_port(),
                          "%s-%d" % (name, rep))
            except RunError as e:
                log("  FAILED: %s" % e)
                continue
            log("  " + ", ".join("%s %.3g" % kv for kv in r.items()))
            if args.perf_client:
                client_report(ctx, "%s-%d" % (name, rep))
            results.setdefault(name, []).append(r)
    print("ab -n %d -c %d, medians of %d, per request unless noted" % (args.n, args.c, args.reps))
    report(results, servers)
    return 0


def client_report(ctx, tag):
    """The symbols of ab's samples on its CPU (its system calls and the
    softirqs that ran in its context), to --out/client-TAG.txt."""
    data = os.path.join(ctx["out"], "client-%s.data" % tag)
    r = subprocess.run([ctx["perf"], "report", "-i", data, "--stdio", "--comms", "ab",
                        "--sort", "sym", "--percent-limit", "0.3"],
                       capture_output=True, text=True, timeout=300)
    with open(os.path.join(ctx["out"], "client-%s.txt" % tag), "w") as f:
        f.write(r.stdout)


def use_binary(ctx, name):
    """ctx['binary'] for this server: http_server, or a wrapper adding a
    variant's flags."""
    ctx["binary"] = os.path.join(ctx["tmp"], "http_server")
    if "+" not in name:
        return
    label = name.split("+", 1)[1]
    binary, flags = ctx["variants"][label]
    wrapper = os.path.join(ctx["tmp"], "http_server-" + label)
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec %s \"$@\" %s\n" % (binary, " ".join(flags)))
    os.chmod(wrapper, 0o755)
    ctx["binary"] = wrapper


if __name__ == "__main__":
    sys.exit(main())
