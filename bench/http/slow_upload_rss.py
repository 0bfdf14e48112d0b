#!/usr/bin/env python3
"""Memory of http_server under slow uploaders: N connections each announce a
body (Content-Length) and send only part of it, then hold the connection.

Starts the server, reads its VmRSS from /proc/PID/status before the
connections open and while they hold, and counts the answers the connections
got (503 for those refused by the body budget). One "# RESULT" line per run
on stdout; progress on stderr.

  bench/http/slow_upload_rss.py --binary bazel-bin/examples/http/http_server --backend epoll
  bench/http/slow_upload_rss.py --binary ... --backend uring --server-arg=--max-body-memory=0

Build the server with --config=opt first. Raises RLIMIT_NOFILE for itself and
the server (root, or a hard limit that allows it, is needed for 1000+).
"""

import argparse
import os
import resource
import selectors
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib  # noqa: E402  (bench/benchlib.py)


def start_server(args):
    cmd = [args.binary, "--address", "127.0.0.1", "--port", str(args.port),
           "--backend", args.backend] + args.server_arg
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if "listening" not in line:
        proc.kill()
        raise RuntimeError(f"server did not start: {' '.join(cmd)}: {line!r}")
    return proc


class Upload:
    def __init__(self, sock, head, body_part):
        self.sock = sock
        self.out = memoryview(head + body_part)
        self.received = b""
        self.eof = False

    def status(self):
        if not self.received.startswith(b"HTTP/1.1 "):
            return None
        return int(self.received[9:12])


def run(args):
    wanted = args.connections + 200
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(wanted, hard), max(wanted, hard)))

    server = start_server(args)
    try:
        time.sleep(0.2)  # let the loop settle before the baseline reading
        rss_before = benchlib.status_kib(server.pid, "VmRSS")
        sel, uploads = open_uploads(args)
        print(f"{args.connections} connections open", file=sys.stderr)
        sent_all, peak = send_all(sel, len(uploads), server.pid, args.timeout, rss_before)
        # Everything is sent (or refused); the server may still be reading
        # the tail out of its socket buffers: sample for a while.
        samples = hold(sel, server.pid, args.hold)
        rss_held = samples[-1]
        peak = max([peak] + samples)
        hwm = benchlib.status_kib(server.pid, "VmHWM")
        statuses = {}
        for u in uploads:
            st = u.status()
            statuses[st] = statuses.get(st, 0) + 1
        for u in uploads:
            u.sock.close()
        answered = " ".join(f"status_{k if k is not None else 'none'}={v}"
                            for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0])))
        print(f"# RESULT binary={args.binary} backend={args.backend} "
              f"connections={args.connections} announce={args.announce} sent={args.send} "
              f"all_sent={int(sent_all)} rss_before_kib={rss_before} rss_held_kib={rss_held} "
              f"rss_peak_kib={peak} vm_hwm_kib={hwm} {answered}")
    finally:
        benchlib.stop_process(server)


def open_uploads(args):
    """args.connections non-blocking uploads, registered for reading and
    writing."""
    head = (f"POST /upload HTTP/1.1\r\nHost: bench\r\n"
            f"Content-Length: {args.announce}\r\n\r\n").encode()
    body_part = b"u" * args.send
    sel = selectors.DefaultSelector()
    uploads = []
    for i in range(args.connections):
        s = socket.create_connection(("127.0.0.1", args.port))
        s.setblocking(False)
        u = Upload(s, head, body_part)
        uploads.append(u)
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, u)
    return sel, uploads


def send_all(sel, pending, pid, timeout, peak):
    """Sends every upload's bytes (or until timeout seconds pass), sampling
    the server's RSS; returns (all sent?, the peak RSS)."""
    start = time.monotonic()
    while pending > 0 and time.monotonic() - start < timeout:
        for key, events in sel.select(timeout=0.5):
            pending -= step(sel, key.data, events)
        peak = max(peak, benchlib.status_kib(pid, "VmRSS"))
    return pending == 0, peak


def step(sel, u, events):
    """Reads and writes what upload u can; returns 1 once it has nothing
    more to send."""
    done = 0
    if events & selectors.EVENT_READ and not u.eof:
        try:
            data = u.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            data = None
        except ConnectionError:
            data = b""
        if data == b"":
            u.eof = True
        elif data:
            u.received += data
    if events & selectors.EVENT_WRITE and u.out:
        try:
            n = u.sock.send(u.out)
            u.out = u.out[n:]
        except (BlockingIOError, InterruptedError):
            pass
        except ConnectionError:
            u.out = u.out[:0]
        if not u.out:
            done += 1
            sel.modify(u.sock, selectors.EVENT_READ, u)
    if u.eof:
        if u.out:
            done += 1
            u.out = u.out[:0]
        sel.unregister(u.sock)
    return done


def hold(sel, pid, seconds):
    """Reads the answers for `seconds`; returns the RSS samples taken."""
    samples = []
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        for key, events in sel.select(timeout=0.1):
            u = key.data
            try:
                data = u.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionError:
                data = b""
            if data == b"":
                u.eof = True
                sel.unregister(u.sock)
            else:
                u.received += data
        samples.append(benchlib.status_kib(pid, "VmRSS"))
    return samples


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", required=True, help="http_server to run")
    p.add_argument("--backend", default="epoll", choices=["epoll", "uring", "auto"])
    p.add_argument("--port", type=int, default=20500, help="server port (default 20500)")
    p.add_argument("--connections", type=int, default=1000)
    p.add_argument("--announce", type=int, default=1024 * 1024,
                   help="Content-Length each connection announces (default 1 MiB)")
    p.add_argument("--send", type=int, default=500 * 1000,
                   help="body bytes each connection sends (default 500 KB)")
    p.add_argument("--hold", type=float, default=3.0,
                   help="seconds to hold and sample after everything is sent (default 3)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="give up sending after this many seconds (default 120)")
    p.add_argument("--server-arg", action="append", default=[],
                   help="extra http_server argument, e.g. --server-arg=--max-body-memory=0")
    run(p.parse_args())


if __name__ == "__main__":
    main()
