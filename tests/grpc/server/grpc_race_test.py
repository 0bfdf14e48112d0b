"""Calls of grpc::Server (tests/grpc/server:grpc_test_server) answered from
worker threads while grpcio's client cancels them at random moments, on each
backend, with one loop and with two I/O loops: built with --config=tsan,
the server must report no race (it exits 0 on SIGTERM, TSan's exit code
otherwise), answer every call it was not cancelled on, and serve on.

usage: grpc_race_test.py GRPC_TEST_SERVER H2PEER_DIR
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import os
import random
import sys

sys.path.insert(0, sys.argv[2])
import grpc  # noqa: E402
from h2peer import Server, check  # noqa: E402

WAIT = 20
CALLS = 400


def race(channel):
    worker = channel.unary_unary("/test.Test/Worker")
    futures = [worker.future(b"w%d" % i, timeout=WAIT) for i in range(CALLS)]
    cancelled = set()
    # Each cancelled once its answer has begun (its head arrived), racing the
    # worker's write and finish: a call cancelled before its HEADERS left
    # makes grpc's client send RST_STREAM on an idle stream (grpc/grpc 19655),
    # a connection error. A quarter: with WorkerBidi's, fewer resets than the
    # HTTP/2 server's Rapid Reset bucket holds (http2::Options::resetBurst).
    for i in random.sample(range(CALLS), CALLS // 4):
        futures[i].initial_metadata()
        if futures[i].cancel():
            cancelled.add(i)
    for i, future in enumerate(futures):
        if i in cancelled:
            continue
        try:
            check(future.result(timeout=WAIT) == b"w%d" % i, "Worker call %d" % i)
        except grpc.FutureCancelledError:
            pass  # cancelled after the answer had begun
    bidi = channel.stream_stream("/test.Test/WorkerBidi")
    for n in range(20):
        call = bidi(iter([b"m%d" % i for i in range(50)]), timeout=WAIT)
        got = 0
        for reply in call:
            got += 1
            if got == n:
                call.cancel()
                break
        check(got in (n, 50) or n == 0, "WorkerBidi %d: %d replies" % (n, got))


def main():
    binary = sys.argv[1]
    random.seed(45)
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        for threads in ("0", "2"):
            server = Server(binary, backend, "--threads", threads)
            with grpc.insecure_channel("127.0.0.1:%d" % server.port) as channel:
                race(channel)
                check(channel.unary_unary("/test.Test/Echo")(b"on", timeout=WAIT) == b"on",
                      "the server serves on")
            server.stop()
            print("ok: %s, %s I/O threads" % (backend, threads))


if __name__ == "__main__":
    main()
