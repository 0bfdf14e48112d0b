#!/usr/bin/env python3
"""What the loops' metrics cost the ping-pong server, in CPU per message.

Runs pingpong_server with its loops' timings off (--no-loop-timings) and on
(the default), interleaved (off on, on off, off on, ...), each run a fresh
server pinned to CPU 0 and pingpong_client pinned to CPU 1 (when there are
two CPUs and taskset), for every backend asked for, and reports the
server's CPU time per message echoed: utime + stime from /proc/PID/stat,
read when the client prints START and STOP (its measured window), divided
by the messages of its RESULT line. Prints, per backend, the median of
each side (min-max), and the ratio of the medians on/off; then one
machine-readable line per backend:

  RESULT backend=epoll runs=6 off_us_per_msg=1.234 on_us_per_msg=1.240 ratio=1.005

The byte counters of TcpServer are always on: to weigh them too, give
--server-off a pingpong_server built without this change (the timings
switch is then not passed to it), e.g. an optimized build of main:

  bazel build --config=opt //pingpong:pingpong_server //pingpong:pingpong_client
  bench/metrics/run_metrics_cost.py --bindir bazel-bin/pingpong --runs 10

Run it on a quiet machine: the issue's bound is 1%, below the noise of a
machine where anything else runs. --quick (one short run a side, for the
test) checks that the script works and says nothing about the cost.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import benchlib  # noqa: E402  (bench/benchlib.py: the "listening on" line)

TICKS = os.sysconf("SC_CLK_TCK")


def log(message):
    print(message, file=sys.stderr, flush=True)


def cpu_seconds(pid):
    """utime + stime of pid (all its threads), in seconds; None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # After the command's ")": state is field 3, utime 14 and stime 15.
    return (int(fields[11]) + int(fields[12])) / TICKS


def pinned(cpu, argv):
    if cpu is None or shutil.which("taskset") is None or (os.cpu_count() or 1) < 2:
        return argv
    return ["taskset", "-c", str(cpu)] + argv


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_once(server_argv, client, backend, args):
    """Server CPU microseconds per message of one run."""
    server = subprocess.Popen(pinned(0, server_argv + ["127.0.0.1", "0", "0"]),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        port = benchlib.wait_listening(server, 10)
        if port is None:
            raise RuntimeError("server did not start: %s" % server.stderr.read()[-500:])
        cli = subprocess.Popen(pinned(1, [client, "--backend", backend, "127.0.0.1", str(port),
                                          "1", str(args.blocksize), str(args.sessions),
                                          str(args.seconds)]),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        start = end = result = None
        for line in cli.stdout:
            line = line.strip()
            if line == "START":
                start = cpu_seconds(server.pid)
            elif line == "STOP":
                end = cpu_seconds(server.pid)
            elif line.startswith("RESULT"):
                result = dict(kv.split("=", 1) for kv in line.split()[1:])
        cli.wait(timeout=args.seconds + 60)
        if cli.returncode != 0 or result is None or start is None or end is None:
            raise RuntimeError("client failed (%s): %s" % (cli.returncode,
                                                           cli.stderr.read()[-500:]))
    finally:
        stop(server)
    messages = int(result["messages"]) if "messages" in result else \
        int(result["bytes"]) // args.blocksize
    if messages == 0:
        raise RuntimeError("no message was echoed")
    return (end - start) * 1e6 / messages


def spread(values):
    return "%.3f (%.3f-%.3f)" % (statistics.median(values), min(values), max(values))


def measure(backend, args):
    server = os.path.join(args.bindir, "pingpong_server")
    client = os.path.join(args.bindir, "pingpong_client")
    sides = {
        "off": ([args.server_off] if args.server_off else
                [server, "--no-loop-timings"]) + ["--backend", backend],
        "on": [server, "--backend", backend],
    }
    results = {"off": [], "on": []}
    for rep in range(args.runs):
        order = ("off", "on") if rep % 2 == 0 else ("on", "off")
        for side in order:
            us = run_once(sides[side], client, backend, args)
            results[side].append(us)
            log("%s run %d/%d %s: %.3f us/msg" % (backend, rep + 1, args.runs, side, us))
    off, on = statistics.median(results["off"]), statistics.median(results["on"])
    ratio = on / off if off > 0 else float("nan")
    print("%s: server CPU us/message, median (min-max) of %d runs: off %s, on %s, on/off %.4f"
          % (backend, args.runs, spread(results["off"]), spread(results["on"]), ratio))
    print("RESULT backend=%s runs=%d off_us_per_msg=%.4f on_us_per_msg=%.4f ratio=%.4f"
          % (backend, args.runs, off, on, ratio), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bindir", default="bazel-bin/pingpong",
                        help="where pingpong_server and pingpong_client are (an optimized "
                        "build: bazel build --config=opt //pingpong:all)")
    parser.add_argument("--server-off", default="",
                        help="a pingpong_server to run as the 'off' side instead of this one "
                        "with --no-loop-timings (a build without metrics)")
    parser.add_argument("--backends", default="epoll,uring")
    parser.add_argument("--runs", type=int, default=6, help="runs of each side (default 6)")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--blocksize", type=int, default=16384)
    parser.add_argument("--quick", action="store_true",
                        help="one 1 s run a side, 10 sessions: checks that it works")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.seconds, args.sessions = 1, 1, 10
    # The client takes whole seconds.
    args.seconds = max(1, int(round(args.seconds)))
    for backend in args.backends.split(","):
        try:
            measure(backend, args)
        except RuntimeError as e:
            print("FAILED %s: %s" % (backend, e))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
