#!/usr/bin/env python3
"""libnet's UDP echo server against Boost.Asio's and the library-free floor.

For every cell (datagram size x flows x mode) each repetition runs every
server once, side by side (the servers' order rotating between
repetitions): a fresh server pinned to CPU 0, the load client pinned to CPU
1 for --seconds, then SIGTERM to the server, which prints what it counted.

  oneway  the server runs with --sink (counts, echoes nothing) and the client
          sends as fast as the kernel takes datagrams: one-way datagrams/s is
          what the server received over the client's sending time.
  echo    every flow keeps --window datagrams in flight (1: ping-pong): echo
          round trips/s is the client's count.

Reported per cell, median of --runs (min-max): the rate, the server's CPU
per datagram (utime+stime of /proc/PID/stat over the run, the server's
drain of its backlog included, divided by the datagrams it received), loss
(oneway: sent but never received by the server; echo: the client's lost
count), and the ratios libnet/asio and libnet/floor of the medians.

Servers (--servers): libnet-epoll, libnet-uring (examples/udp:udp_echo_server
--backend epoll|uring), asio (bench/udp:asio_udp_echo_server), floor
(bench/udp:floor_udp_echo_server: recvmmsg/sendmmsg batches, one thread).
The client (--client): floor (bench/udp:floor_udp_client, the default, so
that the benchmark does not measure a client's limits) or libnet
(examples/udp:udp_echo_client, --client-backend epoll|uring).

  bazel build --config=opt //bench/udp:all //examples/udp:all
  bench/udp/run_udp_bench.py                  # 5 s x 3 runs, all cells (about 9 minutes)
  bench/udp/run_udp_bench.py --quick          # 1 s x 1 run, a smoke run
  bench/udp/run_udp_bench.py --servers asio,floor --sizes 64 --flows 1 --modes echo
  bench/udp/run_udp_bench.py --client libnet --client-backend uring

Binaries are taken from --bindir (default: the worktree's bazel-bin) under
their package paths, or from --libnet-server/--libnet-client, and copied
away at the start so that a build cannot swap them mid-run. A server whose
binary is missing is left out with a warning.

By default the runs happen in a private network namespace (its own
loopback, nothing else's datagrams in its /proc/net/snmp, whose UDP
RcvbufErrors the tables report as kernel receive-buffer drops);
--no-netns uses the machine's loopback.

Output: progress on stderr; markdown tables on stdout; --csv FILE adds one
row per run.
"""

import csv
import datetime
import os
import platform
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import benchlib  # noqa: E402  (bench/benchlib.py)
from benchlib import log  # noqa: E402

SERVER_CPU = 0
CLIENT_CPU = 1
NETNS_ENV = "LIBNET_UDP_BENCH_NETNS"

# name -> path under --bindir
BINARIES = {
    "libnet_server": "examples/udp/udp_echo_server",
    "libnet_client": "examples/udp/udp_echo_client",
    "asio_server": "bench/udp/asio_udp_echo_server",
    "floor_server": "bench/udp/floor_udp_echo_server",
    "floor_client": "bench/udp/floor_udp_client",
}

# server name -> (binary, extra arguments)
SERVERS = {
    "libnet-epoll": ("libnet_server", ["--backend", "epoll"]),
    "libnet-uring": ("libnet_server", ["--backend", "uring"]),
    "asio": ("asio_server", []),
    "floor": ("floor_server", []),
}
LIBNET_SERVERS = ["libnet-epoll", "libnet-uring"]


def parse_args():
    p = benchlib.arg_parser(__doc__)
    p.add_argument("--bindir", default=os.path.join(ROOT, "bazel-bin"),
                   help="where the bazel-built binaries are (default: bazel-bin)")
    p.add_argument("--libnet-server", help="path of libnet's udp_echo_server")
    p.add_argument("--libnet-client", help="path of libnet's udp_echo_client")
    p.add_argument("--client", choices=["floor", "libnet"], default="floor")
    p.add_argument("--client-backend", choices=["epoll", "uring"], default="epoll",
                   help="--backend of the libnet client")
    p.add_argument("--servers", default=",".join(SERVERS))
    p.add_argument("--sizes", default="64,1200")
    p.add_argument("--flows", default="1,64")
    p.add_argument("--modes", default="oneway,echo")
    p.add_argument("--window", type=int, default=1, help="datagrams in flight per flow (echo)")
    p.add_argument("--gso", type=int, default=1,
                   help="oneway with --client libnet: datagrams per send (UDP_SEGMENT), so "
                        "that one client thread offers more than any server here takes")
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="1 s x 1 run")
    p.add_argument("--csv", help="write one row per run to this file")
    p.add_argument("--no-netns", action="store_true", help="use the machine's loopback")
    args = p.parse_args()
    if args.quick:
        args.seconds, args.runs = 1, 1
    args.servers = benchlib.split_list(p, "--servers", args.servers, SERVERS)
    args.modes = benchlib.split_list(p, "--modes", args.modes, ["oneway", "echo"])
    args.sizes = [int(x) for x in args.sizes.split(",")]
    args.flows = [int(x) for x in args.flows.split(",")]
    if args.runs < 1 or args.seconds <= 0 or args.window < 1:
        p.error("--runs, --seconds and --window must be positive")
    if args.gso > 1 and (args.client != "libnet" or args.modes != ["oneway"]):
        p.error("--gso needs --client libnet and --modes oneway")
    return args


def copy_binaries(args, tmp):
    """Copies the binaries the run needs into tmp; returns name -> path, and
    drops the servers (or stops, for the client) whose binary is missing."""
    sources = {name: os.path.join(args.bindir, rel) for name, rel in BINARIES.items()}
    if args.libnet_server:
        sources["libnet_server"] = args.libnet_server
    if args.libnet_client:
        sources["libnet_client"] = args.libnet_client
    paths = {}
    for name, src in sources.items():
        if os.access(src, os.X_OK):
            paths[name] = os.path.join(tmp, name)
            shutil.copy2(src, paths[name])
    client = "%s_client" % args.client
    if client not in paths:
        sys.exit("run_udp_bench.py: no %s client at %s (bazel build --config=opt "
                 "//bench/udp:all //examples/udp:all)" % (args.client, sources[client]))
    kept = []
    for server in args.servers:
        binary = SERVERS[server][0]
        if binary in paths:
            kept.append(server)
        else:
            log("warning: %s left out: no executable %s" % (server, sources[binary]))
    if not kept:
        sys.exit("run_udp_bench.py: no server binary found under %s" % args.bindir)
    args.servers = kept
    return paths


def free_udp_port():
    """A UDP port of 127.0.0.1 that nothing has bound now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def udp_snmp():
    """The Udp: counters of /proc/net/snmp (this network namespace's)."""
    with open("/proc/net/snmp") as f:
        lines = [line.split() for line in f if line.startswith("Udp:")]
    return {k: int(v) for k, v in zip(lines[0][1:], lines[1][1:])}


def parse_fields(line):
    """{"sent": "123", ...} from a "key=value key=value" line."""
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


class RunError(RuntimeError):
    pass


def start_server(argv, err_path):
    """Starts a server pinned to SERVER_CPU; returns (proc, port) once it has
    printed its "listening on" line."""
    err = open(err_path, "w")
    proc = subprocess.Popen(benchlib.pinned_if_possible(SERVER_CPU, argv), stdout=subprocess.PIPE,
                            stderr=err)
    err.close()
    port = benchlib.wait_listening(proc, 20)
    if port is None:
        benchlib.stop_process(proc)
        raise RunError("%s printed no listening line: %s" % (os.path.basename(argv[0]),
                                                             tail(err_path)))
    return proc, port


def tail(path, n=400):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:].strip()
    except OSError:
        return ""


def stop_server(proc, err_path):
    """SIGTERM; returns the counters of the server's stop line."""
    proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise RunError("server ignored SIGTERM for 10 s")
    for line in out.decode(errors="replace").splitlines():
        if line.startswith("received="):
            fields = parse_fields(line)
            return {k: int(fields[k]) for k in ("received", "bytes", "echoed", "dropped")}
    raise RunError("server printed no stop line (exit %s): %s" % (proc.returncode,
                                                                  tail(err_path)))


def client_command(args, paths, port, size, flows, mode):
    """The load client's argv for one cell."""
    argv = [paths["%s_client" % args.client], "--server", "127.0.0.1:%d" % port,
            "--flows", str(flows), "--size", str(size), "--mode", mode,
            "--seconds", "%g" % args.seconds]
    if mode == "echo":
        argv += ["--window", str(args.window)]
    if args.client == "libnet":
        argv += ["--backend", args.client_backend]
    if args.gso > 1:
        argv += ["--gso", str(args.gso), "--window", "256"]
    return argv


def run_once(args, paths, tmp, server, size, flows, mode):
    binary, extra = SERVERS[server]
    port = free_udp_port()
    server_argv = [paths[binary], "--port", str(port)] + extra
    if mode == "oneway":
        server_argv.append("--sink")
    client_argv = client_command(args, paths, port, size, flows, mode)
    err_path = os.path.join(tmp, "server.err")
    proc, _ = start_server(server_argv, err_path)
    try:
        snmp0 = udp_snmp()
        cpu0 = benchlib.read_stat(proc.pid)[1]
        try:
            client = subprocess.run(benchlib.pinned_if_possible(CLIENT_CPU, client_argv),
                                    capture_output=True, text=True, timeout=args.seconds + 60)
        except subprocess.TimeoutExpired:
            raise RunError("client ran past %g s" % (args.seconds + 60))
        lines = [l for l in client.stdout.splitlines() if l.startswith("sent=")]
        if client.returncode != 0 or not lines:
            raise RunError("client failed (exit %d): %s" % (client.returncode,
                                                           client.stderr.strip()[-400:]))
        result = parse_fields(lines[-1])
        # The server may still be working through its receive queue.
        benchlib.wait_idle(proc.pid, 2.0)
        st = benchlib.read_stat(proc.pid)
        if st is None or proc.poll() is not None:
            raise RunError("server exited during the run: %s" % tail(err_path))
        cpu_s = (st[1] - cpu0) / benchlib.CLK_TCK
        snmp1 = udp_snmp()
    except BaseException:
        benchlib.stop_process(proc)
        raise
    counters = stop_server(proc, err_path)

    sent = int(result["sent"])
    seconds = float(result["seconds"])
    received = counters["received"]
    if mode == "oneway":
        rate = received / seconds if seconds > 0 else float("nan")
        lost = max(0, sent - received)
    else:
        rate = float(result["round_trips_per_s"])
        lost = int(result["lost"])
    return dict(
        rate=rate,
        # No tick at all (a run far shorter than the default) is below
        # /proc's 10 ms resolution, not free: shown as "-".
        cpu_ns=cpu_s * 1e9 / received if received and cpu_s > 0 else float("nan"),
        cpu_s=cpu_s,
        loss_pct=100.0 * lost / sent if sent else float("nan"),
        sent=sent,
        server_received=received,
        server_dropped=counters["dropped"],
        client_seconds=seconds,
        truncated=int(result.get("truncated", 0)),
        corrupt=int(result.get("corrupt", 0)),
        rcvbuf_errors=snmp1.get("RcvbufErrors", 0) - snmp0.get("RcvbufErrors", 0),
    )


def fmt_rate(runs):
    if not runs:
        return "fail"
    rates = [r["rate"] for r in runs]
    text = "%.0f" % benchlib.median(rates)
    if len(rates) > 1:
        text += " (%.0f–%.0f)" % (min(rates), max(rates))
    return text


def fmt_num(value, spec="%.0f"):
    return spec % value if value == value else "-"


def markdown(args, cells, mode):
    servers = args.servers
    libnet = [s for s in servers if s in LIBNET_SERVERS]
    anchors = [a for a in ("asio", "floor") if a in servers]
    pairs = [(l, a) for l in libnet for a in anchors]
    what = "one-way datagrams/s (server)" if mode == "oneway" else "echo round trips/s (client)"
    lines = ["### UDP %s: %s" % (mode, what), ""]
    header = ["size", "flows"] + ["%s" % s for s in servers]
    header += ["%s/%s" % p for p in pairs]
    header += ["CPU ns/datagram: %s" % s for s in servers]
    header += ["%s/%s CPU" % p for p in pairs]
    header += ["loss %%: %s" % ", ".join(servers), "kernel rcvbuf drops: %s" % ", ".join(servers)]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for size in args.sizes:
        for flows in args.flows:
            runs = {s: cells.get((s, size, flows, mode), []) for s in servers}
            rate = {s: benchlib.median([r["rate"] for r in runs[s]]) for s in servers}
            cpu = {s: benchlib.median([r["cpu_ns"] for r in runs[s]]) for s in servers}
            row = [str(size), str(flows)] + [fmt_rate(runs[s]) for s in servers]
            row += [benchlib.ratio(rate[a], rate[b]) for a, b in pairs]
            row += [fmt_num(cpu[s]) for s in servers]
            row += [benchlib.ratio(cpu[a], cpu[b]) for a, b in pairs]
            row.append(", ".join(fmt_num(benchlib.median([r["loss_pct"] for r in runs[s]]), "%.2f")
                                 for s in servers))
            row.append(", ".join(fmt_num(benchlib.median([r["rcvbuf_errors"] for r in runs[s]]))
                                 for s in servers))
            lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    return "\n".join(lines)


def run_all(args, paths, tmp):
    """Every cell, every server, --runs times, the servers' order rotating."""
    cells = {}
    rows = []
    combos = [(size, flows, mode) for mode in args.modes for size in args.sizes
              for flows in args.flows]
    started = time.time()
    for rep, (size, flows, mode), server, done, total in benchlib.rotated_runs(
            args.runs, combos, args.servers):
        label = "%s %s %dB %d flows" % (server, mode, size, flows)
        try:
            r = run_once(args, paths, tmp, server, size, flows, mode)
        except RunError as e:
            log("[%d/%d] run %d %s: FAILED: %s" % (done, total, rep + 1, label, e))
            continue
        cells.setdefault((server, size, flows, mode), []).append(r)
        rows.append(dict(run=rep + 1, server=server, size=size, flows=flows, mode=mode, **r))
        log("[%d/%d] run %d %s: %.0f/s, %.0f ns CPU/datagram, loss %.2f%% "
            "(eta %s)" % (done, total, rep + 1, label, r["rate"], r["cpu_ns"], r["loss_pct"],
                          benchlib.eta(started, done, total)))
    return cells, rows


def report(args, cells, in_netns):
    """The markdown tables and how they were made, on stdout."""
    print("## UDP echo: libnet vs Boost.Asio vs the recvmmsg/sendmmsg floor\n")
    print("%s, %s, kernel %s, %d CPUs; %s UTC\n" % (
        platform.node(), benchlib.cpu_model(), platform.release(), os.cpu_count() or 1,
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M")))
    print("Command: `%s`\n" % " ".join(shlex.quote(a) for a in
                                       ["bench/udp/run_udp_bench.py"] + sys.argv[1:]))
    for mode in args.modes:
        print(markdown(args, cells, mode))
    print("Client: %s%s, %g s per run, median of %d runs (min–max), servers side by side; "
          "server on CPU %d, client on CPU %d%s. Echo: %d datagram(s) in flight per "
          "flow.%s CPU: server utime+stime per datagram it received. Loss: oneway, sent "
          "but not received by the server; echo, the client's lost count.\n" % (
              args.client, " (--backend %s)" % args.client_backend
              if args.client == "libnet" else "", args.seconds, args.runs, SERVER_CPU,
              CLIENT_CPU, ", private network namespace" if in_netns else "",
              args.window, " Client sends: %d datagrams per sendmsg (GSO)." % args.gso
              if args.gso > 1 else ""))


def main():
    args = parse_args()
    if (not args.no_netns and os.environ.get(NETNS_ENV) is None
            and benchlib.netns_available()):
        env = dict(os.environ, **{NETNS_ENV: "1"})
        child = subprocess.Popen(["unshare", "--net", "--", sys.executable,
                                  os.path.abspath(__file__)] + sys.argv[1:], env=env)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
        sys.exit(child.wait())
    in_netns = os.environ.get(NETNS_ENV) is not None
    if in_netns:
        benchlib.loopback_up()

    tmp = tempfile.mkdtemp(prefix="libnet-udp-bench-")
    try:
        paths = copy_binaries(args, tmp)
        cells, rows = run_all(args, paths, tmp)
        report(args, cells, in_netns)
        if args.csv and rows:
            with open(args.csv, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

if __name__ == "__main__":
    main()
