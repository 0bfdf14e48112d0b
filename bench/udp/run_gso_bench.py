#!/usr/bin/env python3
"""UDP GSO and GRO: what UDP_SEGMENT on the sender and UDP_GRO on the receiver
buy on loopback, with libnet's own programs.

For each backend (epoll, uring) x client GSO (1: off, --gso N) x server GRO
(off, on): udp_echo_server --sink (CPU 0) receives what udp_echo_client
--mode oneway (CPU 1) sends for --seconds. Reported: datagrams/s the server
received and the server's CPU time per datagram (utime+stime from
/proc/PID/stat), medians of --runs, the cells of one run side by side.

  bench/udp/run_gso_bench.py [--bindir DIR] [--size 1200] [--gso 32]
                             [--seconds 3] [--runs 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import benchlib  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def one_cell(args, backend, gso, gro):
    server = [os.path.join(args.bindir, "examples/udp/udp_echo_server"), "--address", "127.0.0.1",
              "--port", "0", "--sink", "--backend", backend] + (["--gro"] if gro else [])
    proc = subprocess.Popen(benchlib.pinned_if_possible(0, server), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError("udp_echo_server did not start: %r" % line)
    port = line.strip().rsplit(":", 1)[1]
    before = cpu_ticks(proc.pid)
    client = [os.path.join(args.bindir, "examples/udp/udp_echo_client"), "--server",
              "127.0.0.1:" + port, "--mode", "oneway", "--size", str(args.size), "--seconds",
              str(args.seconds), "--window", "64", "--backend", backend, "--gso", str(gso)]
    out = subprocess.run(benchlib.pinned_if_possible(1, client), capture_output=True, text=True,
                         check=True).stdout
    after = cpu_ticks(proc.pid)
    proc.terminate()
    rest, _ = proc.communicate(timeout=10)
    fields = dict(kv.split("=") for kv in rest.split() if "=" in kv)
    sent = dict(kv.split("=") for kv in out.split() if "=" in kv)
    received = int(fields["received"])
    seconds = float(sent["seconds"])
    cpu_us = (after - before) / TICK * 1e6 / max(received, 1)
    return received / seconds, cpu_us


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bindir", default="bazel-bin")
    p.add_argument("--size", type=int, default=1200)
    p.add_argument("--gso", type=int, default=32, help="datagrams per send with GSO on")
    p.add_argument("--seconds", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    cells = [(b, gso, gro) for b in ("epoll", "uring") for gso in (1, args.gso)
             for gro in (False, True)]
    results = {c: [] for c in cells}
    for run in range(args.runs):
        for cell in cells:
            results[cell].append(one_cell(args, *cell))
            benchlib.log("run %d %s gso=%d gro=%s: %.0f datagrams/s, %.3f us CPU/datagram" %
                         ((run + 1,) + cell + results[cell][-1]))
    print("## UDP GSO/GRO, %d-byte datagrams, one flow, one way (loopback)\n" % args.size)
    print("%s; %s UTC\n" % (benchlib.cpu_model(), time.strftime("%Y-%m-%d %H:%M", time.gmtime())))
    print("Command: `%s`\n" % " ".join(["bench/udp/run_gso_bench.py"] + sys.argv[1:]))
    print("| backend | client GSO | server GRO | datagrams/s | server CPU µs/datagram |")
    print("|---|---|---|---|---|")
    for cell in cells:
        rate = statistics.median(r[0] for r in results[cell])
        cpu = statistics.median(r[1] for r in results[cell])
        print("| %s | %s | %s | %.0f | %.3f |" % (cell[0], "%d/send" % cell[1] if cell[1] > 1
                                                   else "off", "on" if cell[2] else "off",
                                                   rate, cpu))
    print("\nMedians of %d runs of %d s; server on CPU 0, client on CPU 1." %
          (args.runs, args.seconds))


if __name__ == "__main__":
    main()
