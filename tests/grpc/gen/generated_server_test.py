"""The services protoc-gen-libnet generated from tests/grpc/gen/*.proto,
served by generated_test_server and called by grpcio's client through stubs
generated from the same files by grpc_python_plugin: callback handlers
(Echo.Say), coroutine handlers of all four kinds (Kinds), the generated
defaults (Kinds.ClientStream, Bare.Ping: UNIMPLEMENTED); each backend, one
loop and two I/O loops.

usage: generated_server_test.py SERVER ROOT H2PEER_DIR
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import os
import queue
import sys

sys.path.insert(0, sys.argv[3])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc  # noqa: E402
import grpc_stubs  # noqa: E402
from h2peer import Server, check  # noqa: E402

WAIT = 20
stubs = grpc_stubs.generate(sys.argv[2], ["tests/grpc/gen/kinds.proto",
                                          "tests/grpc/gen/common/common.proto",
                                          "tests/grpc/gen/nopackage.proto"])
kinds_pb2, kinds_grpc = stubs("tests/grpc/gen/kinds.proto")
common_pb2, _ = stubs("tests/grpc/gen/common/common.proto")
bare_pb2, bare_grpc = stubs("tests/grpc/gen/nopackage.proto")


def expect_code(fn, code, what):
    try:
        fn()
    except grpc.RpcError as e:
        check(e.code() == code, "%s: %s (%s), not %s" % (what, e.code(), e.details(), code))
        return
    raise AssertionError("%s: no error, %s expected" % (what, code))


def callbacks(channel):
    echo = kinds_grpc.EchoStub(channel)
    reply = echo.Say(kinds_pb2.Outer.Inner(name="hello"), timeout=WAIT)
    check(reply.name == "hello!", "Echo.Say: %r" % reply)


def coroutines(channel):
    kinds = kinds_grpc.KindsStub(channel)
    request = kinds_pb2.Outer.Inner(name="unary")
    request.when.seconds = 1234
    reply = kinds.Unary(request, timeout=WAIT)
    check(reply.inner == request, "Kinds.Unary: %r" % reply)

    replies = list(kinds.ServerStream(common_pb2.Shared.Nested(text="abc"), timeout=WAIT))
    check([r.inner.name for r in replies] == ["a0", "b1", "c2"], "Kinds.ServerStream: %r" % replies)
    check(list(kinds.ServerStream(common_pb2.Shared.Nested(text=""), timeout=WAIT)) == [],
          "Kinds.ServerStream of nothing")

    # Ping-pong: each message is sent once the previous answer came.
    answers = []
    received = queue.Queue()

    def requests():
        for i in range(1, 6):
            yield common_pb2.Shared(id=i, nested=common_pb2.Shared.Nested(text="t%d" % i))
            received.get(timeout=WAIT)

    for answer in kinds.Bidi(requests(), timeout=WAIT):
        answers.append(answer)
        received.put(answer)
    check([a.id for a in answers] == [2, 4, 6, 8, 10], "Kinds.Bidi: %r" % answers)
    check([a.nested.text for a in answers] == ["t1", "t2", "t3", "t4", "t5"], "Kinds.Bidi texts")


def defaults(channel):
    kinds = kinds_grpc.KindsStub(channel)
    expect_code(lambda: kinds.ClientStream(iter([kinds_pb2.Outer()]), timeout=WAIT),
                grpc.StatusCode.UNIMPLEMENTED, "Kinds.ClientStream (not overridden)")
    bare = bare_grpc.BareStub(channel)
    from google.protobuf import empty_pb2
    expect_code(lambda: bare.Ping(empty_pb2.Empty(), timeout=WAIT),
                grpc.StatusCode.UNIMPLEMENTED, "Bare.Ping (not overridden)")


def main():
    binary = sys.argv[1]
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        for threads in ("0", "2"):
            server = Server(binary, backend, "--threads", threads)
            with grpc.insecure_channel("127.0.0.1:%d" % server.port) as channel:
                callbacks(channel)
                coroutines(channel)
                defaults(channel)
            server.stop()
            print("ok: %s, %s I/O threads" % (backend, threads))


if __name__ == "__main__":
    main()
