"""Helpers shared by the benchmark scripts (bench/http/run_http_bench.py,
bench/http/run_ab_bench.py, bench/http/slow_upload_rss.py,
bench/memory/conn_memory.py, bench/memory/slow_reader_rss.py,
bench/tls/half_open_rss.py, bench/roundtrip/run_roundtrip.py and
pingpong/run_tables.py): progress lines, the machine's description, CPU
pinning, /proc sampling (CPU time, RSS, TCP counters), ports, starting and
stopping servers, the order of interleaved runs, and the private network
namespace; bench/websocket/run_ws_bench.py, bench/http/run_loadgen_bench.py
and bench/udp/run_udp_bench.py also use the rotated runs and the report
and scaffolding helpers at the end.

Each script puts this directory on sys.path (they are run as plain files,
`python3 bench/http/run_http_bench.py ...`, not as a package):

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import benchlib
"""

import argparse
import datetime
import fcntl
import os
import platform
import random
import re
import resource
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

# --baseline-*: a twin of NAME, named with this suffix, runs the baseline build.
BASE_SUFFIX = "@base"

CLK_TCK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------- output


def log(msg):
    """A progress line on stderr (stdout carries the results)."""
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def fmt_dur(s):
    s = int(round(s))
    return "%dm%02ds" % (s // 60, s % 60)


# --------------------------------------------------------------- environment


def find_tool(name):
    """The path of a program, or None. nginx lives in /usr/sbin, which a
    non-root PATH often lacks."""
    path = shutil.which(name)
    if path is None:
        for d in ("/usr/sbin", "/sbin", "/usr/local/sbin"):
            candidate = os.path.join(d, name)
            if os.access(candidate, os.X_OK):
                return candidate
    return path


def first_line(argv):
    """The first line a program prints (a version, say), or "unknown"."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = (r.stdout + r.stderr).strip()
    return text.splitlines()[0].strip() if text else "unknown"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def pinned(cpu, argv):
    """argv run under `taskset -c CPU` (CPU: taskset's list syntax)."""
    return ["taskset", "-c", str(cpu)] + argv


def pinned_if_possible(cpu, argv):
    """pinned(), or argv unchanged when cpu is None or there is no taskset."""
    if cpu is None or shutil.which("taskset") is None:
        return argv
    return pinned(cpu, argv)


# ----------------------------------------------------------- interleaved runs


def with_twins(names, twinned):
    """names with NAME@base right after every NAME for which twinned(NAME)."""
    out = []
    for name in names:
        out.append(name)
        if twinned(name):
            out.append(name + BASE_SUFFIX)
    return out


def twin_order(names, rep):
    """The order of repetition rep (from 0): names as listed, each twin pair
    together, the pair's order alternating (now, base in even repetitions;
    base, now in odd ones). Over an even number of repetitions each build
    goes first equally often, so what runs just before a pair, and drift
    within it, fall on both alike. Alternating rather than random keeps a
    run reproducible and balances the order exactly, not only on average."""
    order = []
    for name in names:
        stem = name.removesuffix(BASE_SUFFIX)
        if stem != name and stem in names:
            continue  # placed with its twin
        pair = [name]
        if name + BASE_SUFFIX in names:
            pair.append(name + BASE_SUFFIX)
        order += pair[::-1] if rep % 2 else pair
    return order


def rotated(units, rep):
    """units in the order of repetition rep (from 0): rotated by rep, so that
    each goes first as often as the others over len(units) repetitions."""
    k = rep % len(units)
    return units[k:] + units[:k]


def rotated_runs(runs, combos, units):
    """(rep, combo, unit, done, total) for every unit in every combo, runs
    times, the units' order rotating from one repetition to the next; done
    counts from 1 to total."""
    total = runs * len(combos) * len(units)
    done = 0
    for rep in range(runs):
        for combo in combos:
            for unit in rotated(units, rep):
                done += 1
                yield rep, combo, unit, done, total


def eta(started, done, total):
    """The time left at the pace so far, as fmt_dur() writes it."""
    return fmt_dur((time.time() - started) / done * (total - done))


# ------------------------------------------------------------- /proc sampling


def read_stat(pid):
    """(ppid, utime+stime ticks) from /proc/PID/stat, or None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    fields = data[data.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[11]) + int(fields[12])


def process_tree(root):
    """root and all its descendants (nginx: master and worker)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = read_stat(int(name))
        if st is not None:
            children.setdefault(st[0], []).append(int(name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return sorted(tree)


def thread_cpu_ns(pid):
    """Time on CPU of every thread of pid, in ns (schedstat); 0 if it is gone."""
    total = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def tree_cpu(root):
    """(pids, CPU ns from schedstat, CPU s from utime+stime) of root's tree."""
    pids = process_tree(root)
    ns, ticks = 0, 0
    for pid in pids:
        ns += thread_cpu_ns(pid)
        st = read_stat(pid)
        if st is not None:
            ticks += st[1]
    return pids, ns, ticks / CLK_TCK


def wait_idle(root, limit=3.0):
    """Waits (bounded) until the server tree uses under 1% of a CPU, so that a
    sample taken now holds all the work of what came before."""
    deadline = time.time() + limit
    _, prev, _ = tree_cpu(root)
    while time.time() < deadline:
        time.sleep(0.1)
        _, now, _ = tree_cpu(root)
        if now - prev < 1_000_000:
            return True
        prev = now
    return False


def machine_cpu_s():
    """(busy, stolen): CPU seconds of all CPUs, from /proc/stat. Stolen is
    time the hypervisor gave to other guests while this one wanted to run."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq) / CLK_TCK, steal / CLK_TCK


def children_cpu_s():
    """CPU seconds of this process's waited-for children (wrk, ab)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def tcp_opens():
    """(ActiveOpens, PassiveOpens) of this network namespace."""
    with open("/proc/net/snmp") as f:
        lines = [l.split() for l in f if l.startswith("Tcp:")]
    row = dict(zip(lines[0][1:], lines[1][1:]))
    return int(row["ActiveOpens"]), int(row["PassiveOpens"])


def wait_machine_quiet(limit, max_load):
    """Watches the machine in half-second windows, with the server idle and
    the load generator not started, until one window has the CPUs under
    max_load (a share) busy and no TCP connection opened, or for at most
    limit seconds (one window if 0). Returns (seconds waited, quiet?,
    connections/s of the last window): other processes' connections would
    count in the run's conn/req."""
    start = time.time()
    ncpu = os.cpu_count() or 1
    while True:
        (b0, _), (_, p0) = machine_cpu_s(), tcp_opens()
        time.sleep(0.5)
        (b1, _), (_, p1) = machine_cpu_s(), tcp_opens()
        quiet = (b1 - b0) / (0.5 * ncpu) < max_load and p1 == p0
        if quiet or time.time() - start >= limit:
            return time.time() - start, quiet, (p1 - p0) / 0.5


def status_kib(pid, field="VmRSS"):
    """A KiB field of /proc/PID/status (VmRSS, VmHWM, ...)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError("no %s for pid %d" % (field, pid))


def rss_kib(pid):
    return status_kib(pid, "VmRSS")


# --------------------------------------------------------------------- ports


def port_is_free(port):
    """True if nothing listens on 127.0.0.1:port (TIME_WAIT leftovers do not
    count: the servers set SO_REUSEADDR, and so does this probe)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(low=20000, high=32768):
    """A port in [low, high) that nothing listens on now, tried at random.
    Benchmark servers stay below 32768, out of the ephemeral range, where
    another program's outgoing connections take their local ports."""
    for _ in range(200):
        port = random.randrange(low, high)
        if port_is_free(port):
            return port
    raise RuntimeError("no free port in %d..%d" % (low, high - 1))


# ------------------------------------------------------------------- servers


def wait_listening(proc, limit):
    """The port of the "listening on ADDR:PORT" line that proc prints on its
    stdout pipe within limit seconds, or None (no such line, or it exited).
    Reads the raw pipe: a buffered reader would hide a second line that
    arrived with the first from select()."""
    seen = b""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
        match = re.search(rb"listening on \[?[0-9a-fA-F.:]+\]?:(\d+)", seen)
        if match:
            return int(match.group(1))
    return None


def start_server(argv, limit=20, cpu=0, env=None):
    """Starts a server that prints "listening on ADDR:PORT" (pinned to cpu
    when taskset is there; stderr dropped). Returns (proc, port); stops it
    and raises RuntimeError if no such line comes within limit seconds."""
    proc = subprocess.Popen(pinned_if_possible(cpu, argv), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    port = wait_listening(proc, limit)
    if port is None:
        stop_process(proc)
        raise RuntimeError("%s printed no listening line" % os.path.basename(argv[0]))
    return proc, port


def stop_process(proc, limit=10):
    """SIGTERM, then SIGKILL after limit seconds; waits for the exit."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------- network namespace
#
# A private network namespace gives a run its own loopback and its own
# /proc/net/snmp, so that connection counts cover the benchmark's
# connections only, not those of whatever else runs on the machine. Its TCP
# sysctls start from the kernel's defaults, the same values a stock Debian
# host has.


def netns_available():
    try:
        r = subprocess.run(["unshare", "--net", "true"], stderr=subprocess.DEVNULL)
        return r.returncode == 0
    except OSError:
        return False


def run_in_netns(ctx, script, netns_env, baseline_env):
    """Runs `script` again, with the same arguments, in a new network
    namespace; it finds the temp dir and the binary in `netns_env`, and the
    baseline's copy in `baseline_env`."""
    env = dict(os.environ)
    env[netns_env] = "%s:%s" % (ctx["tmp"], ctx.get("binary", ""))
    if ctx.get("baseline"):
        env[baseline_env] = ctx["baseline"]
    child = subprocess.Popen(["unshare", "--net", "--", sys.executable, script] + sys.argv[1:],
                             env=env)
    # Ctrl-C reaches the child too (same process group): let it stop its
    # server and finish; a SIGTERM sent to this process alone is passed on.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
    return child.wait()


def loopback_up():
    """ip link set lo up, without needing iproute2."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = fcntl.ioctl(s, siocgifflags, struct.pack("16sH22x", b"lo", 0))
        flags = struct.unpack("16sH22x", ifreq)[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))


# ----------------------------------------------------- script scaffolding
#
# What bench/websocket/run_ws_bench.py and bench/http/run_loadgen_bench.py
# share: descriptors for 1000 connections, the re-run inside a private
# network namespace, the Bazel build and the copy of its binaries, the
# report's machine line and median cells; and for those and
# bench/udp/run_udp_bench.py, the command line's parser and lists.


def arg_parser(doc):
    """The parser of a script whose docstring is doc: its first line the
    description, all after the second line the epilog, as written."""
    return argparse.ArgumentParser(description=doc.split("\n")[0],
                                   formatter_class=argparse.RawDescriptionHelpFormatter,
                                   epilog=doc.split("\n", 2)[2])


def split_list(parser, option, text, known):
    """The comma-separated items of an option's text; a parser error if one
    is not in known or there is none."""
    items = [x for x in text.split(",") if x]
    unknown = [x for x in items if x not in known]
    if unknown or not items:
        parser.error("%s: unknown %s (known: %s)" % (option, ",".join(unknown), ",".join(known)))
    return items


def raise_nofile():
    """Raises this process's RLIMIT_NOFILE to its hard limit; children
    (servers, load clients) inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def reexec_in_netns(script, env_name, wanted):
    """Runs script again, with the same arguments, in a new network namespace
    (its own loopback) when wanted and possible, and returns its exit
    status; None when this process should do the work itself (already inside
    one, not wanted, or unshare refused). Inside, the loopback is brought up."""
    if os.environ.get(env_name) is not None:
        loopback_up()
        return None
    if not wanted or not netns_available():
        return None
    env = dict(os.environ, **{env_name: "1"})
    child = subprocess.Popen(["unshare", "--net", "--", sys.executable, script] + sys.argv[1:],
                             env=env)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
    return child.wait()


def bazel_build_opt(root, targets):
    """bazel build --config=opt TARGETS in root; returns bazel-bin of that
    configuration, or None if the build failed."""
    log("building: bazel build --config=opt " + " ".join(targets))
    if subprocess.run(["bazel", "build", "--config=opt"] + targets, cwd=root).returncode != 0:
        return None
    return subprocess.run(["bazel", "info", "--config=opt", "bazel-bin"], cwd=root, check=True,
                          capture_output=True, text=True).stdout.strip()


def copy_binaries(bindir, relpaths, tmp):
    """Copies bindir/REL for every REL in relpaths (name -> REL) into tmp, so
    that a build elsewhere cannot swap them mid-run; returns name -> copied
    path for those that exist."""
    paths = {}
    for name, rel in relpaths.items():
        src = os.path.join(bindir, rel)
        if os.access(src, os.X_OK):
            paths[name] = os.path.join(tmp, name)
            shutil.copy2(src, paths[name])
    return paths


def machine_lines(script):
    """The report's header lines: CPU model, kernel, date, command."""
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return ["- Machine: %s, nproc %d" % (cpu_model(), len(os.sched_getaffinity(0))),
            "- Kernel: %s" % platform.release(),
            "- Date: %s" % date,
            "- Command: `%s`" % " ".join(shlex.quote(a) for a in [script] + sys.argv[1:])]


def median(values):
    """The median of the values that are not NaN; NaN if there are none."""
    values = sorted(v for v in values if v == v)
    if not values:
        return float("nan")
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def ratio(a, b):
    """a / b to two decimals, "-" where either is NaN or b is not positive."""
    return "%.2f" % (a / b) if a == a and b == b and b > 0 else "-"


def median_cell(values, fmt="%.0f"):
    """"median (min–max)" of the values, the median alone for one, "-" for none."""
    values = sorted(v for v in values if v == v)
    if not values:
        return "-"
    med = median(values)
    if len(values) == 1:
        return fmt % med
    return "%s (%s–%s)" % (fmt % med, fmt % values[0], fmt % values[-1])
