#!/usr/bin/python3
"""gRPC streaming and memory: interop servers side by side (grpc++, libnet).

Three measurements against grpc.testing.TestService servers, each on a fresh
server pinned to CPU 0 (taskset), the client (Python grpcio 1.51, in this
process) pinned to CPU 1:

  oneway    StreamingOutputCall with --messages ResponseParameters of
            --size bytes per call, calls repeated for --seconds: messages/s
            and the server's CPU per message (utime + stime of /proc/PID/stat).
  pingpong  one FullDuplexCall, one --size request -> one --size response,
            round trips repeated for --seconds on that one stream: round
            trips/s, p50 per round trip, the server's CPU per round trip.
  memory    the server's VmRSS (/proc/PID/status) idle, then with --channels
            channels that each made one EmptyCall and stay open (one TCP
            connection each), then on a fresh server with --streams
            FullDuplexCalls open and idle (one round trip each, then
            nothing), 100 per connection: KiB per idle channel and per open
            stream above the idle server.

For every repetition each measurement runs every server once, their order
rotated between repetitions; reported as medians with the ratios to the first
server. The client is Python: in oneway and pingpong it, not the server, is
the bottleneck (see the busy columns), so the server's CPU per message is the
column that compares the servers.

  bench/grpc/run_grpc_stream_bench.py                  # grpc++ and libnet (epoll, uring)
  bench/grpc/run_grpc_stream_bench.py --quick          # 2 s x 1 rep, 200 channels/streams
  bench/grpc/run_grpc_stream_bench.py --nice 19 --reps 3

Servers by command line: `--server NAME COMMAND` (repeatable, the first is the
baseline); COMMAND gets `--port 0` appended and must print "listening on
ADDR:PORT". Without --server: //tests/grpc/peers:interop_server (grpc++ 1.51,
sync API) and libnet's //examples/grpc:interop_server with --threads 0 on each
backend, built with --config=opt.
"""

import asyncio
import os
import queue
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bench", "http"))
sys.path.insert(0, os.path.join(ROOT, "tests", "grpc", "peers"))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402  (bench/benchlib.py)
import grpc  # noqa: E402
import grpc_stubs  # noqa: E402  (tests/grpc/peers/grpc_stubs.py)
import run_http_bench as hb  # noqa: E402  (--nice)
from benchlib import log, median  # noqa: E402
from run_grpc_bench import split_command  # noqa: E402

PROG = "run_grpc_stream_bench"
SERVER_CPU, CLIENT_CPU = 0, 1
STREAMS_PER_CONNECTION = 100
# One TCP connection per channel: grpcio otherwise shares one subchannel
# between channels to the same target.
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]
# Time for the server to finish what a step started before its RSS is read.
SETTLE_S = 1.0
# How long the streams may take to open before the run counts as failed.
OPEN_LIMIT_S = 20.0


def default_servers(tmp):
    targets = {"grpcpp_interop_server": "tests/grpc/peers/interop_server",
               "libnet_interop_server": "examples/grpc/interop_server"}
    bindir = benchlib.bazel_build_opt(ROOT, ["//tests/grpc/peers:interop_server",
                                             "//examples/grpc:interop_server"])
    if bindir is None:
        sys.exit("%s: bazel build --config=opt of the interop servers failed" % PROG)
    binaries = benchlib.copy_binaries(bindir, targets, tmp)
    libnet = binaries["libnet_interop_server"] + " --threads 0 --backend "
    return [("grpc++", binaries["grpcpp_interop_server"]),
            ("libnet-epoll", libnet + "epoll"), ("libnet-uring", libnet + "uring")]


def method(channel, kind, name, pb, response):
    call = getattr(channel, kind)
    return call("/grpc.testing.TestService/" + name,
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=response.FromString)


def cpu_s(pid):
    return benchlib.read_stat(pid)[1] / benchlib.CLK_TCK


def oneway(pb, port, pid, args):
    """messages/s and the server's µs of CPU per message."""
    request = pb.messages_pb2.StreamingOutputCallRequest(
        response_parameters=[pb.messages_pb2.ResponseParameters(size=args.size)] * args.messages)
    with grpc.insecure_channel("127.0.0.1:%d" % port) as channel:
        call = method(channel, "unary_stream", "StreamingOutputCall", pb,
                      pb.messages_pb2.StreamingOutputCallResponse)
        for _ in call(request):  # connection up, first call warm
            pass
        count, start, cpu0, me0 = 0, time.time(), cpu_s(pid), time.process_time()
        while time.time() - start < args.seconds:
            for _ in call(request):
                count += 1
        elapsed, cpu, me = time.time() - start, cpu_s(pid) - cpu0, time.process_time() - me0
    return {"rate": count / elapsed, "cpu_us": cpu / count * 1e6, "p50_us": float("nan"),
            "server_busy": cpu / elapsed, "client_busy": me / elapsed}


def pingpong(pb, port, pid, args):
    """round trips/s, p50 µs per round trip, the server's µs per round trip."""
    request = pb.messages_pb2.StreamingOutputCallRequest(
        response_parameters=[pb.messages_pb2.ResponseParameters(size=args.size)],
        payload=pb.messages_pb2.Payload(body=b"x" * args.size))
    requests = queue.Queue()
    with grpc.insecure_channel("127.0.0.1:%d" % port) as channel:
        call = method(channel, "stream_stream", "FullDuplexCall", pb,
                      pb.messages_pb2.StreamingOutputCallResponse)
        responses = call(iter(requests.get, None))
        requests.put(request)
        next(responses)
        times, start, cpu0, me0 = [], time.time(), cpu_s(pid), time.process_time()
        while time.time() - start < args.seconds:
            t = time.perf_counter()
            requests.put(request)
            next(responses)
            times.append(time.perf_counter() - t)
        elapsed, cpu, me = time.time() - start, cpu_s(pid) - cpu0, time.process_time() - me0
        requests.put(None)
        for _ in responses:
            pass
    return {"rate": len(times) / elapsed, "cpu_us": cpu / len(times) * 1e6,
            "p50_us": median(times) * 1e6, "server_busy": cpu / elapsed,
            "client_busy": me / elapsed}


async def open_channels(pb, port, count):
    """count channels (one TCP connection each) to the server."""
    return [grpc.aio.insecure_channel("127.0.0.1:%d" % port, options=CHANNEL_OPTIONS)
            for _ in range(count)]


async def hold_channels(pb, port, count, pid):
    """The server's VmRSS with count channels open that made one EmptyCall
    each."""
    channels = await open_channels(pb, port, count)
    calls = [method(c, "unary_unary", "EmptyCall", pb, pb.empty_pb2.Empty) for c in channels]
    await asyncio.gather(*(call(pb.empty_pb2.Empty()) for call in calls))
    await asyncio.sleep(SETTLE_S)
    rss = benchlib.rss_kib(pid)
    await asyncio.gather(*(c.close() for c in channels))
    return rss


async def hold_streams(pb, port, count, pid):
    """The server's VmRSS with count FullDuplexCalls open and idle (one round
    trip each), 100 per channel."""
    channels = await open_channels(pb, port, -(-count // STREAMS_PER_CONNECTION))
    request = pb.messages_pb2.StreamingOutputCallRequest(
        response_parameters=[pb.messages_pb2.ResponseParameters(size=1)])
    calls = [method(channels[i // STREAMS_PER_CONNECTION], "stream_stream", "FullDuplexCall", pb,
                    pb.messages_pb2.StreamingOutputCallResponse)() for i in range(count)]

    async def one_round_trip(call):
        await call.write(request)
        await call.read()
    try:
        await asyncio.wait_for(asyncio.gather(*(one_round_trip(c) for c in calls)), OPEN_LIMIT_S)
    except asyncio.TimeoutError:
        raise RuntimeError("%d streams not all answered within %g s" % (count, OPEN_LIMIT_S))
    await asyncio.sleep(SETTLE_S)
    rss = benchlib.rss_kib(pid)
    for call in calls:
        call.cancel()
    await asyncio.gather(*(c.close() for c in channels))
    return rss


def memory(pb, command, args, what):
    """(idle KiB, loaded KiB) of a fresh server holding `what`."""
    env, argv = split_command(command)
    proc, port = benchlib.start_server(argv + ["--port", "0"], cpu=SERVER_CPU, env=env)
    try:
        time.sleep(SETTLE_S)
        idle = benchlib.rss_kib(proc.pid)
        if what == "channels":
            loaded = asyncio.run(hold_channels(pb, port, args.channels, proc.pid))
        else:
            loaded = asyncio.run(hold_streams(pb, port, args.streams, proc.pid))
    finally:
        benchlib.stop_process(proc)
    return idle, loaded


def measure(pb, command, kind, args):
    if kind == "channels" or kind == "streams":
        idle, loaded = memory(pb, command, args, kind)
        n = args.channels if kind == "channels" else args.streams
        return {"idle_kib": idle, "loaded_kib": loaded, "kib_each": (loaded - idle) / n}
    env, argv = split_command(command)
    proc, port = benchlib.start_server(argv + ["--port", "0"], cpu=SERVER_CPU, env=env)
    try:
        return (oneway if kind == "oneway" else pingpong)(pb, port, proc.pid, args)
    finally:
        benchlib.stop_process(proc)


def run_all(pb, args, servers):
    kinds = ["oneway", "pingpong", "channels", "streams"]
    commands, names = dict(servers), [n for n, _ in servers]
    results, started = {}, time.time()
    for rep, kind, name, done, total in benchlib.rotated_runs(args.reps, kinds, names):
        try:
            result = measure(pb, commands[name], kind, args)
        except (RuntimeError, grpc.RpcError, OSError) as e:
            log("%s: %s %s rep %d: %s" % (PROG, name, kind, rep, e))
            result = None
        results.setdefault((name, kind), []).append(result)
        log("%s: %d/%d %s %s (eta %s)" % (PROG, done, total, name, kind,
                                          benchlib.eta(started, done, total)))
    return results


def med(runs, field):
    return median([r[field] for r in runs if r])


def report(servers, results):
    base = servers[0][0]
    print("| server | measurement | per second | vs %s | p50 µs | server CPU µs each | "
          "vs %s | server busy | client busy |" % (base, base))
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind, label in (("oneway", "one-way messages"), ("pingpong", "ping-pong round trips")):
        b = results[(base, kind)]
        for name, _ in servers:
            r = results[(name, kind)]
            print("| %s | %s | %.0f | %s | %s | %.2f | %s | %.0f%% | %.0f%% |" % (
                name, label, med(r, "rate"), benchlib.ratio(med(r, "rate"), med(b, "rate")),
                "-" if kind == "oneway" else "%.0f" % med(r, "p50_us"), med(r, "cpu_us"),
                benchlib.ratio(med(r, "cpu_us"), med(b, "cpu_us")),
                100 * med(r, "server_busy"), 100 * med(r, "client_busy")))
    print("\n| server | held | RSS idle KiB | RSS held KiB | KiB each | vs %s |" % base)
    print("|---|---|---:|---:|---:|---:|")
    for kind in ("channels", "streams"):
        b = results[(base, kind)]
        for name, _ in servers:
            r = results[(name, kind)]
            print("| %s | %s | %.0f | %.0f | %.1f | %s |" % (
                name, kind, med(r, "idle_kib"), med(r, "loaded_kib"), med(r, "kib_each"),
                benchlib.ratio(med(r, "kib_each"), med(b, "kib_each"))))


def parse_args():
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--server", nargs=2, action="append", default=[],
                        metavar=("NAME", "COMMAND"), help="an interop server (repeatable)")
    parser.add_argument("--seconds", type=float, default=5, help="per run (default 5)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--size", type=int, default=100, help="payload bytes (default 100)")
    parser.add_argument("--messages", type=int, default=1000,
                        help="responses per StreamingOutputCall (default 1000)")
    parser.add_argument("--channels", type=int, default=1000, help="idle channels (default 1000)")
    parser.add_argument("--streams", type=int, default=200,
                        help="open streams (default 200; 1000 hangs the grpcio client)")
    parser.add_argument("--quick", action="store_true", help="2 s x 1 rep, 200 channels/streams")
    parser.add_argument("--nice", type=int, default=0, help="run at nice -N (1-20, needs root)")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.reps, args.channels, args.streams = 2, 1, 200, 200
    return args


def main():
    args = parse_args()
    hb.apply_nice(PROG, args)
    benchlib.raise_nofile()
    with tempfile.TemporaryDirectory(prefix="grpc_stream_bench.") as tmp:
        servers = args.server or default_servers(tmp)
        pb = grpc_stubs.load(os.path.join(tmp, "stubs"))
        machine = benchlib.machine_lines("bench/grpc/run_grpc_stream_bench.py")
        # The client (this process and grpcio's threads) on CPU 1; servers are
        # started through taskset onto CPU 0.
        os.sched_setaffinity(0, {CLIENT_CPU})
        results = run_all(pb, args, servers)
    print("\n".join(machine))
    print("- client: Python grpcio %s on CPU %d, servers on CPU %d; %d rep(s) of %g s, "
          "%d-byte payloads, %d responses per StreamingOutputCall, medians\n" % (
              grpc.__version__, CLIENT_CPU, SERVER_CPU, args.reps, args.seconds, args.size,
              args.messages))
    report(servers, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
