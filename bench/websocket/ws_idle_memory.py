#!/usr/bin/env python3
"""WebSocket server memory after large messages: RSS before, at the peak, and idle.

N connections each send one message of S bytes (zeros: 16 MiB compresses to
about 16 KB with permessage-deflate) at once, wait for its echo, and stay
open and idle. The server's RSS is read before the connections open, at its
peak (VmHWM, the kernel's high-water mark of the process) and once the
connections are idle (the smallest value seen while it settles: the loop
hands freed heap back to the system within about a second), then again
after they have closed. Servers: examples/websocket's ws_echo_server (the
callback API) and examples/http's coro_http_server (GET /ws, the coroutine
API), each with and without --deflate / --ws-deflate, on each backend.

  bazel build --config=opt //examples/websocket:ws_echo_server //examples/http:coro_http_server
  bench/websocket/ws_idle_memory.py [--bindir bazel-bin] [--connections 40] [--size 16777216]
      [--servers ws_echo_server,ws_echo_server-deflate,coro_http_server,coro_http_server-deflate]
      [--backends epoll,uring] [--settle 4] [--cpu N] [--max-idle-per-connection BYTES]

Output: one line per server and backend, "key=value" pairs (KiB, and the
idle growth per connection in bytes). With --max-idle-per-connection it
exits 1 when a server's idle growth per connection is larger (the test
suite's tests/net/websocket:ws_idle_memory_test runs it so).
Uses Debian's python3-websockets (run it with /usr/bin/python3).
"""

import asyncio
import os
import sys
import time

import websockets

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib  # noqa: E402  (bench/benchlib.py)

WAIT = 60  # seconds: every wait is bounded

SERVERS = {
    # name: (binary under --bindir, extra flags, URL path)
    "ws_echo_server": ("examples/websocket/ws_echo_server", [], "/echo"),
    "ws_echo_server-deflate": ("examples/websocket/ws_echo_server", ["--deflate"], "/echo"),
    "coro_http_server": ("examples/http/coro_http_server", [], "/ws"),
    "coro_http_server-deflate": ("examples/http/coro_http_server", ["--ws-deflate"], "/ws"),
}


def server_env():
    env = dict(os.environ)
    # Under AddressSanitizer freed blocks wait in its quarantine, resident:
    # RSS would show the quarantine, not what the server holds.
    env["ASAN_OPTIONS"] = ":".join(x for x in [env.get("ASAN_OPTIONS", ""),
                                                "quarantine_size_mb=0"] if x)
    return env


async def open_idle(url, count, size, deflate):
    """count connections, each echoing one size-byte message at once; returns
    them open (the caller closes them)."""
    compression = "deflate" if deflate else None
    sockets = await asyncio.gather(*(
        websockets.connect(url, compression=compression, max_size=None, ping_interval=None,
                           open_timeout=WAIT, close_timeout=WAIT) for _ in range(count)))
    message = bytes(size)

    async def echo(ws):
        await ws.send(message)
        reply = await asyncio.wait_for(ws.recv(), WAIT)
        if len(reply) != size or reply.count(0) != size:
            raise RuntimeError("echo of %d bytes came back as %d bytes" % (size, len(reply)))

    await asyncio.gather(*(echo(ws) for ws in sockets))
    return sockets


async def settled_rss(pid, settle):
    """The lowest RSS (KiB) seen over settle seconds."""
    lowest = benchlib.rss_kib(pid)
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        lowest = min(lowest, benchlib.rss_kib(pid))
    return lowest


async def phases(pid, url, args, deflate):
    """RSS (KiB) at the peak, idle, and after the close."""
    sockets = await open_idle(url, args.connections, args.size, deflate)
    peak = benchlib.status_kib(pid, "VmHWM")
    idle = await settled_rss(pid, args.settle)
    await asyncio.gather(*(ws.close() for ws in sockets))
    return peak, idle, await settled_rss(pid, args.settle)


def measure(args, name, backend):
    relpath, flags, path = SERVERS[name]
    argv = [os.path.join(args.bindir, relpath), "--address", "127.0.0.1", "--port", "0",
            "--backend", backend] + flags
    proc, port = benchlib.start_server(argv, WAIT, cpu=args.cpu, env=server_env())
    try:
        before = benchlib.rss_kib(proc.pid)
        url = "ws://127.0.0.1:%d%s" % (port, path)
        peak, idle, closed = asyncio.run(phases(proc.pid, url, args, "deflate" in name))
    finally:
        benchlib.stop_process(proc)
    per_connection = (idle - before) * 1024 // args.connections
    print("server=%s backend=%s connections=%d size=%d rss_before_kib=%d rss_peak_kib=%d "
          "rss_idle_kib=%d rss_closed_kib=%d idle_growth_per_connection=%d" %
          (name, backend, args.connections, args.size, before, peak, idle, closed,
           per_connection), flush=True)
    return per_connection


def main():
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--bindir", default="bazel-bin")
    parser.add_argument("--connections", type=int, default=40)
    parser.add_argument("--size", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--backends", default="epoll,uring")
    parser.add_argument("--cpu", default=None, help="pin the server to this CPU (taskset)")
    parser.add_argument("--settle", type=float, default=4.0,
                        help="seconds the idle RSS is watched for its lowest value")
    parser.add_argument("--max-idle-per-connection", type=int, default=None)
    args = parser.parse_args()
    servers = benchlib.split_list(parser, "--servers", args.servers, list(SERVERS))
    backends = benchlib.split_list(parser, "--backends", args.backends, ["epoll", "uring"])
    benchlib.raise_nofile()
    worst = 0
    for name in servers:
        for backend in backends:
            grown = measure(args, name, backend)
            if args.max_idle_per_connection is not None and grown > args.max_idle_per_connection:
                print("FAIL: %s on %s holds %d bytes per idle connection (at most %d)" %
                      (name, backend, grown, args.max_idle_per_connection), file=sys.stderr)
                worst = 1
    return worst


if __name__ == "__main__":
    sys.exit(main())
