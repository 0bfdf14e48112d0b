#!/usr/bin/env python3
"""libnet's resolver against Boost.Asio's and a getaddrinfo thread pool.

Every peer resolves --count names (host0.bench.test, host1.bench.test, ...,
each asked once, so that no cache answers) with --inflight lookups at once,
against one dnsmasq that answers every *.bench.test name itself. Each
repetition runs every peer once per in-flight level, side by side (the
peers' order rotating between repetitions); dnsmasq is pinned to CPU 0 and
the peer to CPU 1.

Peers (--peers):
  libnet-epoll, libnet-uring  bench/dns:resolve_bench --server ADDR:53 --backend B
  asio                        bench/dns:asio_resolve_bench (ip::tcp::resolver's
                              async_resolve: getaddrinfo on asio's hidden thread)
  getaddrinfo-pool            bench/dns:getaddrinfo_pool_bench --threads 4

Reported per cell, median of --runs (min-max): lookups/s, the peer's CPU
per lookup (its whole process, utime+stime, every thread), its thread count
at the end, failed lookups, dnsmasq's CPU per lookup (how many queries a
lookup costs the server shows here), and the ratios libnet/asio and
libnet/getaddrinfo-pool of the medians.

getaddrinfo, and asio through it, read /etc/resolv.conf, which names no
port, so the whole run happens inside `unshare --mount --net`: a private
network namespace whose loopback has port 53 free for dnsmasq (on
--dns-address, default 127.0.53.1), and a private mount namespace in which
/etc/resolv.conf ("nameserver ADDR", "options attempts:2 timeout:1"),
/etc/nsswitch.conf ("hosts: files dns") and /etc/hosts (localhost only)
are bind-mounted over the machine's. Nothing outside the namespaces
changes. Not root: the namespaces are made with --map-root-user.
--no-netns keeps the machine's network (dnsmasq on --dns-address:53 must be
free there) and only the mount namespace.

  bazel build --config=opt //bench/dns:all
  bench/dns/run_dns_bench.py                   # 10,000 lookups at 1 and 100 in flight, 3 runs
  bench/dns/run_dns_bench.py --quick           # 1,000 lookups, 1 run
  bench/dns/run_dns_bench.py --peers asio,getaddrinfo-pool --count 200

Binaries come from --bindir (default: the worktree's bazel-bin) under their
package paths, or --resolve-bench for libnet's; they are copied away at the
start. A peer whose binary is missing is left out with a warning. Needs
dnsmasq (Debian's dnsmasq-base) and unshare (util-linux).

Output: progress on stderr; a markdown table on stdout; --csv FILE adds one
row per run.
"""

import argparse
import csv
import datetime
import os
import platform
import random
import shlex
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import benchlib  # noqa: E402  (bench/benchlib.py)
from benchlib import log  # noqa: E402

DNSMASQ_CPU = 0
CLIENT_CPU = 1
NAMESPACE_ENV = "LIBNET_DNS_BENCH_NS"
DOMAIN = "bench.test"
ANSWER_V4 = "10.0.0.1"
ANSWER_V6 = "fd00::1"

# name -> path under --bindir
BINARIES = {
    "resolve_bench": "bench/dns/resolve_bench",
    "asio_resolve_bench": "bench/dns/asio_resolve_bench",
    "getaddrinfo_pool_bench": "bench/dns/getaddrinfo_pool_bench",
}

# peer -> (binary, extra arguments); @SERVER@ becomes dnsmasq's ADDR:PORT.
PEERS = {
    "libnet-epoll": ("resolve_bench", ["--server", "@SERVER@", "--backend", "epoll"]),
    "libnet-uring": ("resolve_bench", ["--server", "@SERVER@", "--backend", "uring"]),
    "asio": ("asio_resolve_bench", []),
    "getaddrinfo-pool": ("getaddrinfo_pool_bench", ["--threads", "@THREADS@"]),
}
LIBNET_PEERS = ["libnet-epoll", "libnet-uring"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    p.add_argument("--bindir", default=os.path.join(ROOT, "bazel-bin"),
                   help="where the bazel-built binaries are (default: bazel-bin)")
    p.add_argument("--resolve-bench", help="path of libnet's resolve_bench")
    p.add_argument("--peers", default=",".join(PEERS))
    p.add_argument("--count", type=int, default=10000, help="lookups per run")
    p.add_argument("--inflight", default="1,100", help="lookups in flight, comma-separated")
    p.add_argument("--threads", type=int, default=4, help="getaddrinfo-pool's threads")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="1,000 lookups, 1 run")
    p.add_argument("--dns-address", default="127.0.53.1",
                   help="the loopback address dnsmasq listens on, port 53")
    p.add_argument("--aaaa", action="store_true",
                   help="answer AAAA queries with %s too (default: A only, AAAA empty)" %
                   ANSWER_V6)
    p.add_argument("--attempts", type=int, default=2, help="resolv.conf's options attempts:")
    p.add_argument("--timeout", type=int, default=1, help="resolv.conf's options timeout:")
    p.add_argument("--csv", help="write one row per run to this file")
    p.add_argument("--no-netns", action="store_true",
                   help="keep the machine's network (only a private mount namespace)")
    args = p.parse_args()
    if args.quick:
        args.count, args.runs = 1000, 1
    peers = [x for x in args.peers.split(",") if x]
    unknown = [x for x in peers if x not in PEERS]
    if unknown or not peers:
        p.error("--peers: unknown %s (known: %s)" % (",".join(unknown), ",".join(PEERS)))
    args.peers = peers
    args.inflight = [int(x) for x in args.inflight.split(",")]
    if args.count < 1 or args.runs < 1 or min(args.inflight) < 1 or args.threads < 1:
        p.error("--count, --runs, --inflight and --threads must be positive")
    try:
        socket.inet_aton(args.dns_address)
    except OSError:
        p.error("--dns-address: want an IPv4 address, e.g. 127.0.53.1")
    return args


# ------------------------------------------------------------- namespaces


def reexec_in_namespaces(args):
    """Runs this script again, with the same arguments, in new mount (and
    network) namespaces; returns its exit status."""
    argv = ["unshare", "--mount", "--propagation", "private"]
    if not args.no_netns:
        argv.append("--net")
    if os.geteuid() != 0:
        argv.append("--map-root-user")
    argv += ["--", sys.executable, os.path.abspath(__file__)] + sys.argv[1:]
    child = subprocess.Popen(argv, env=dict(os.environ, **{NAMESPACE_ENV: "1"}))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
    return child.wait()


def bind_mount(src, dst):
    """Mounts file src over dst (in this mount namespace only); dst's symlink,
    if it is one, is followed, as the C library would."""
    target = os.path.realpath(dst)
    subprocess.run(["mount", "--bind", src, target], check=True)


def point_resolver_at(args, tmp):
    """Makes getaddrinfo in this mount namespace ask dnsmasq, through DNS."""
    files = {
        "/etc/resolv.conf": "nameserver %s\noptions attempts:%d timeout:%d\n" % (
            args.dns_address, args.attempts, args.timeout),
        "/etc/nsswitch.conf": "hosts: files dns\n",
        "/etc/hosts": "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
    }
    for dst, text in files.items():
        src = os.path.join(tmp, os.path.basename(dst))
        with open(src, "w") as f:
            f.write(text)
        bind_mount(src, dst)
    # A running nscd would answer getaddrinfo from its cache instead.
    for nscd in ("/var/run/nscd", "/run/nscd"):
        if os.path.isdir(nscd):
            empty = os.path.join(tmp, "no-nscd")
            os.makedirs(empty, exist_ok=True)
            subprocess.run(["mount", "--bind", empty, nscd], check=True)


# --------------------------------------------------------------- dnsmasq


def dns_query(address, name, qtype=1, timeout=0.5):
    """(rcode, answer count) of one query, or None if no answer came."""
    qid = random.randrange(65536)
    packet = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        packet += bytes([len(label)]) + label.encode()
    packet += b"\0" + struct.pack("!HH", qtype, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        try:
            s.sendto(packet, (address, 53))
            reply = s.recv(4096)
        except OSError:
            return None
    rid, flags, _, ancount = struct.unpack("!HHHH", reply[:8])
    return (flags & 0xF, ancount) if rid == qid else None


def in_user_namespace():
    """True inside a user namespace (--map-root-user), where uid 0 is not the
    machine's root."""
    try:
        with open("/proc/self/uid_map") as f:
            return f.read().split() != ["0", "0", "4294967295"]
    except OSError:
        return False


def start_dnsmasq(args, dnsmasq, tmp):
    argv = [dnsmasq, "--no-daemon", "--no-resolv", "--no-hosts", "--no-poll",
            "--listen-address=%s" % args.dns_address, "--bind-interfaces", "--port=53",
            "--address=/%s/%s" % (DOMAIN, ANSWER_V4), "--cache-size=10000",
            "--pid-file=", "--log-facility=-"]
    if args.aaaa:
        argv.append("--address=/%s/%s" % (DOMAIN, ANSWER_V6))
    if in_user_namespace():
        # Only root is mapped there: dnsmasq cannot switch to its own user.
        argv.append("--user=root")
    err_path = os.path.join(tmp, "dnsmasq.err")
    with open(err_path, "w") as err:
        proc = subprocess.Popen(benchlib.pinned_if_possible(DNSMASQ_CPU, argv),
                                stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        answer = dns_query(args.dns_address, "host0." + DOMAIN)
        if answer == (0, 1):
            return proc
        time.sleep(0.1)
    benchlib.stop_process(proc)
    with open(err_path, errors="replace") as f:
        sys.exit("run_dns_bench.py: dnsmasq did not answer on %s:53: %s" % (
            args.dns_address, f.read()[-600:].strip()))


# ------------------------------------------------------------------- runs


class RunError(RuntimeError):
    pass


def copy_binaries(args, tmp):
    sources = {name: os.path.join(args.bindir, rel) for name, rel in BINARIES.items()}
    if args.resolve_bench:
        sources["resolve_bench"] = args.resolve_bench
    paths = {}
    for name, src in sources.items():
        if os.access(src, os.X_OK):
            paths[name] = os.path.join(tmp, name)
            shutil.copy2(src, paths[name])
    kept = []
    for peer in args.peers:
        binary = PEERS[peer][0]
        if binary in paths:
            kept.append(peer)
        else:
            log("warning: %s left out: no executable %s" % (peer, sources[binary]))
    if not kept:
        sys.exit("run_dns_bench.py: no peer binary found (bazel build --config=opt "
                 "//bench/dns:all)")
    args.peers = kept
    return paths


def parse_fields(line):
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def run_once(args, paths, dnsmasq_pid, peer, inflight):
    binary, extra = PEERS[peer]
    subst = {"@SERVER@": "%s:53" % args.dns_address, "@THREADS@": str(args.threads)}
    argv = [paths[binary], "--count", str(args.count), "--inflight", str(inflight)]
    argv += [subst.get(a, a) for a in extra]
    dns0 = benchlib.read_stat(dnsmasq_pid)[1]
    limit = 60 + args.count * 0.05
    try:
        r = subprocess.run(benchlib.pinned_if_possible(CLIENT_CPU, argv), capture_output=True,
                           text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise RunError("ran past %.0f s" % limit)
    st = benchlib.read_stat(dnsmasq_pid)
    if st is None:
        raise RunError("dnsmasq exited")
    lines = [l for l in r.stdout.splitlines() if l.startswith("lookups=")]
    if r.returncode != 0 or not lines:
        raise RunError("exit %d: %s" % (r.returncode, r.stderr.strip()[-400:]))
    f = parse_fields(lines[-1])
    lookups = int(f["lookups"])
    cpu_s = float(f["cpu_s"])
    return dict(
        lookups=lookups,
        failed=int(f["failed"]),
        rate=float(f["lookups_per_s"]),
        seconds=float(f["seconds"]),
        cpu_us=cpu_s * 1e6 / lookups if lookups else float("nan"),
        threads=int(f["threads"]),
        dnsmasq_us=(st[1] - dns0) / benchlib.CLK_TCK * 1e6 / lookups if lookups else float("nan"),
        first_error=r.stderr.strip().splitlines()[0] if int(f["failed"]) and r.stderr.strip()
        else "",
    )


def median(values):
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def fmt_range(values, spec="%.0f"):
    if not values:
        return "fail"
    text = spec % median(values)
    if len(values) > 1:
        text += " (%s–%s)" % (spec % min(values), spec % max(values))
    return text


def ratio(a, b):
    return "%.2f" % (a / b) if a == a and b == b and b > 0 else "-"


def markdown(args, cells):
    peers = args.peers
    anchors = [a for a in ("asio", "getaddrinfo-pool") if a in peers]
    pairs = [(l, a) for l in peers if l in LIBNET_PEERS for a in anchors]
    header = ["in flight", "peer", "lookups/s", "CPU µs/lookup", "threads", "failed",
              "dnsmasq µs/lookup"]
    header += ["%s/%s lookups/s" % p for p in pairs] + ["%s/%s CPU" % p for p in pairs]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for inflight in args.inflight:
        rate = {p: median([r["rate"] for r in cells.get((p, inflight), [])]) for p in peers}
        cpu = {p: median([r["cpu_us"] for r in cells.get((p, inflight), [])]) for p in peers}
        for n, peer in enumerate(peers):
            runs = cells.get((peer, inflight), [])
            row = [str(inflight), peer, fmt_range([r["rate"] for r in runs]),
                   fmt_range([r["cpu_us"] for r in runs], "%.1f"),
                   fmt_range([r["threads"] for r in runs], "%d") if runs else "-",
                   str(max(r["failed"] for r in runs)) if runs else "-",
                   "%.1f" % median([r["dnsmasq_us"] for r in runs]) if runs else "-"]
            # The ratios once per in-flight level, on its first row.
            row += [ratio(rate[a], rate[b]) if n == 0 else "" for a, b in pairs]
            row += [ratio(cpu[a], cpu[b]) if n == 0 else "" for a, b in pairs]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def run_all(args, paths, dnsmasq_pid):
    """Every peer at every in-flight level, --runs times, the peers' order rotating."""
    cells = {}
    rows = []
    total = len(args.peers) * len(args.inflight) * args.runs
    done = 0
    started = time.time()
    for rep in range(args.runs):
        for inflight in args.inflight:
            k = rep % len(args.peers)
            for peer in args.peers[k:] + args.peers[:k]:
                done += 1
                label = "run %d %s, %d in flight" % (rep + 1, peer, inflight)
                try:
                    r = run_once(args, paths, dnsmasq_pid, peer, inflight)
                except RunError as e:
                    log("[%d/%d] %s: FAILED: %s" % (done, total, label, e))
                    continue
                cells.setdefault((peer, inflight), []).append(r)
                rows.append(dict(run=rep + 1, peer=peer, inflight=inflight, **r))
                eta = (time.time() - started) / done * (total - done)
                log("[%d/%d] %s: %.0f lookups/s, %.1f µs CPU/lookup, %d threads, %d failed"
                    "%s (eta %s)" % (done, total, label, r["rate"], r["cpu_us"],
                                     r["threads"], r["failed"],
                                     " (%s)" % r["first_error"] if r["first_error"] else "",
                                     benchlib.fmt_dur(eta)))
    return cells, rows


def report(args, cells):
    """The markdown table and how it was made, on stdout."""
    print("## Resolver: libnet vs Boost.Asio's resolver vs a getaddrinfo pool\n")
    print("%s, %s, kernel %s, %d CPUs, %s; %s UTC\n" % (
        platform.node(), benchlib.cpu_model(), platform.release(), os.cpu_count() or 1,
        benchlib.first_line([benchlib.find_tool("dnsmasq"), "--version"]),
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M")))
    print("Command: `%s`\n" % " ".join(shlex.quote(a) for a in
                                       ["bench/dns/run_dns_bench.py"] + sys.argv[1:]))
    print(markdown(args, cells))
    print("%d lookups of distinct names per run, median of %d runs (min–max), peers side "
          "by side; dnsmasq on CPU %d (%s:53, *.%s -> %s%s), peer on CPU %d%s. CPU: the "
          "peer process's utime+stime over its lookups, every thread. threads: the "
          "peer's thread count at the end. getaddrinfo-pool: %d threads.\n" % (
              args.count, args.runs, DNSMASQ_CPU, args.dns_address, DOMAIN, ANSWER_V4,
              " and " + ANSWER_V6 if args.aaaa else ", AAAA empty", CLIENT_CPU,
              "" if args.no_netns else ", private network namespace", args.threads))


def main():
    args = parse_args()
    if os.environ.get(NAMESPACE_ENV) is None:
        if benchlib.find_tool("dnsmasq") is None:
            sys.exit("run_dns_bench.py: no dnsmasq (apt-get install dnsmasq-base)")
        if shutil.which("unshare") is None:
            sys.exit("run_dns_bench.py: no unshare (util-linux)")
        sys.exit(reexec_in_namespaces(args))

    tmp = tempfile.mkdtemp(prefix="libnet-dns-bench-")
    dnsmasq = None
    try:
        if not args.no_netns:
            benchlib.loopback_up()
        paths = copy_binaries(args, tmp)
        point_resolver_at(args, tmp)
        dnsmasq = start_dnsmasq(args, benchlib.find_tool("dnsmasq"), tmp)
        log("dnsmasq answers *.%s on %s:53" % (DOMAIN, args.dns_address))
        cells, rows = run_all(args, paths, dnsmasq.pid)
        report(args, cells)
        if args.csv and rows:
            with open(args.csv, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
    finally:
        if dnsmasq is not None:
            benchlib.stop_process(dnsmasq)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
