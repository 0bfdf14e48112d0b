"""grpc::Server (tests/grpc/server:grpc_test_server) called by grpcio's own
client (python3-grpcio, generic calls with bytes: no stubs), on each backend,
with one loop and with two I/O loops:

- unary (empty, small, 1 MiB), server streaming (small, and 8 MiB under
  back-pressure), client streaming, bidirectional ping-pong;
- metadata both ways ("-bin" values included), a status with a message of
  special characters, trailers-only answers;
- a deadline on a handler that never answers: DEADLINE_EXCEEDED, and its
  cancel callback ran; a client cancel reaches the cancel callback;
- gzip both ways; a request past maxReceiveMessageBytes and an answer past
  maxSendMessageBytes: RESOURCE_EXHAUSTED, the limit itself passes;
- unknown method and service: UNIMPLEMENTED; a handler that throws (an
  exception, an int) or drops its call: INTERNAL, and the next call works;
- HTTP/1.1 on the same port: the HttpServer's own handler;
- Options::maxDeadline: a longer grpc-timeout is cut to it;
- h2 over TLS (ALPN) with grpcio's TLS credentials;
- a drain (SIGTERM: HttpServer::drain, GOAWAY) with a call in flight: the
  call finishes OK, the server exits 0;
- coroutine handlers (CoroStream, google.protobuf.StringValue): unary,
  server, client and bidi streaming; a deadline stops the coroutine (its
  sleep ends kCancelled); coro::withTimeout inside; a throw is INTERNAL.

usage: grpc_server_test.py GRPC_TEST_SERVER H2PEER_DIR MAKE_TEST_PKI
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import os
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, sys.argv[2])
import grpc  # noqa: E402
from google.protobuf import wrappers_pb2  # noqa: E402
from h2peer import Server, check, wait_until  # noqa: E402

LIMIT = 1024 * 1024  # --max-receive and --max-send
WAIT = 20


def method(channel, name, kind="unary_unary"):
    return getattr(channel, kind)("/test.Test/" + name)


def expect_error(fn, code, what):
    try:
        fn()
    except grpc.RpcError as e:
        check(e.code() == code, "%s: %s (%s), not %s" % (what, e.code(), e.details(), code))
        return e
    raise AssertionError("%s: no error, %s expected" % (what, code))


def stats(channel):
    text = method(channel, "Stats")(b"", timeout=WAIT).decode()
    return dict(item.split("=") for item in text.split())


def unary(channel):
    echo = method(channel, "Echo")
    for payload in (b"", b"hello", bytes(range(256)) * 4096):
        check(echo(payload, timeout=WAIT) == payload, "Echo of %d bytes" % len(payload))


def metadata(channel):
    echo = method(channel, "Echo")
    binary = bytes(range(256))
    reply, call = echo.with_call(b"m", timeout=WAIT, metadata=[
        ("x-plain", "a value, with spaces"), ("x-blob-bin", binary)])
    check(reply == b"m", "Echo with metadata")
    initial = dict(call.initial_metadata())
    trailing = dict(call.trailing_metadata())
    check(initial.get("x-plain") == "a value, with spaces", "initial metadata: %r" % initial)
    check(initial.get("x-blob-bin") == binary, "binary initial metadata: %r" % initial)
    check(trailing.get("x-plain-t") == "a value, with spaces", "trailing: %r" % trailing)
    check(trailing.get("x-blob-t-bin") == binary, "binary trailing metadata: %r" % trailing)


def status_message(channel):
    echo = method(channel, "Echo")
    text = "\t\ntest with whitespace\r\nand Unicode BMP \u2615 and non-BMP \U0001F60E 100% %41"
    error = expect_error(lambda: echo(b"x", timeout=WAIT, metadata=[
        ("x-status", "2"), ("x-message", "unused")]), grpc.StatusCode.UNKNOWN, "x-status 2")
    check(error.details() == "unused", "details %r" % error.details())
    # A message of any bytes goes through the metadata as -bin, back as
    # grpc-message: grpcio decodes it as UTF-8.
    error = expect_error(
        lambda: echo(b"x", timeout=WAIT, metadata=[("x-status", "9"),
                                                   ("x-message-bin", text.encode())]),
        grpc.StatusCode.FAILED_PRECONDITION, "special status message")
    check(error.details() == text, "details %r, not %r" % (error.details(), text))


def streaming(channel):
    stream = method(channel, "ServerStream", "unary_stream")
    replies = list(stream(b"20 100", timeout=WAIT))
    check(len(replies) == 20 and all(len(r) == 100 for r in replies),
          "server streaming: %d replies" % len(replies))
    # 8 MiB, more than any window or high-water mark: paced by the reader.
    total = sum(len(r) for r in stream(b"128 65536", timeout=WAIT))
    check(total == 128 * 65536, "server streaming under back-pressure: %d bytes" % total)
    client = method(channel, "ClientStream", "stream_unary")
    reply = client(iter([b"x" * n for n in range(50)]), timeout=WAIT)
    check(reply == b"count=50 bytes=1225", "client streaming: %r" % reply)
    check(client(iter([]), timeout=WAIT) == b"count=0 bytes=0", "client streaming, none")
    bidi = method(channel, "Bidi", "stream_stream")
    requests = [b"ping %d" % i for i in range(10)]
    check(list(bidi(iter(requests), timeout=WAIT)) == requests, "bidi")
    # Ping-pong: each request sent only once the previous reply has come.
    cond = threading.Condition()
    got = []

    def paced():
        for i in range(10):
            with cond:
                check(cond.wait_for(lambda: len(got) == i, WAIT), "ping-pong reply %d" % i)
            yield b"pp %d" % i

    for reply in bidi(paced(), timeout=WAIT):
        with cond:
            got.append(reply)
            cond.notify()
    check(got == [b"pp %d" % i for i in range(10)], "ping-pong: %r" % got)


def deadline_and_cancel(channel):
    before = int(stats(channel)["cancels"])
    sleep = method(channel, "Sleep")
    expect_error(lambda: sleep(b"", timeout=0.3), grpc.StatusCode.DEADLINE_EXCEEDED, "Sleep")
    check(wait_until(lambda: int(stats(channel)["cancels"]) == before + 1),
          "the cancel callback of the call past its deadline did not run")
    hold = method(channel, "Hold", "stream_stream")
    call = hold(iter([b"a"]), timeout=WAIT)
    check(wait_until(lambda: int(stats(channel)["handled"]) > 0), "Hold was not called")
    time.sleep(0)  # the call has begun on the server once Stats has counted it
    count = int(stats(channel)["cancels"])
    call.cancel()
    check(wait_until(lambda: int(stats(channel)["cancels"]) == count + 1),
          "the cancel callback of a call the client cancelled did not run")


def compression(channel):
    echo = method(channel, "Echo")
    payload = b"compressible " * 10000
    check(echo(payload, timeout=WAIT, compression=grpc.Compression.Gzip) == payload,
          "a gzip request")
    check(method(channel, "Gzip")(payload, timeout=WAIT) == payload, "a gzip answer")


def limits(channel):
    echo = method(channel, "Echo")
    check(len(echo(b"r" * LIMIT, timeout=WAIT)) == LIMIT, "a request of the limit")
    expect_error(lambda: echo(b"r" * (LIMIT + 1), timeout=WAIT),
                 grpc.StatusCode.RESOURCE_EXHAUSTED, "a request past the limit")
    # Compressed small, past the limit once inflated.
    expect_error(lambda: echo(b"\0" * (LIMIT + 1), timeout=WAIT,
                              compression=grpc.Compression.Gzip),
                 grpc.StatusCode.RESOURCE_EXHAUSTED, "a gzip request past the limit")
    big = method(channel, "Big")
    check(len(big(b"%d" % LIMIT, timeout=WAIT)) == LIMIT, "an answer of the limit")
    expect_error(lambda: big(b"%d" % (LIMIT + 1), timeout=WAIT),
                 grpc.StatusCode.RESOURCE_EXHAUSTED, "an answer past the limit")


def failures(channel):
    expect_error(lambda: method(channel, "Nope")(b"", timeout=WAIT),
                 grpc.StatusCode.UNIMPLEMENTED, "an unknown method")
    expect_error(lambda: channel.unary_unary("/no.Such/Method")(b"", timeout=WAIT),
                 grpc.StatusCode.UNIMPLEMENTED, "an unknown service")
    for request in (b"exception", b"int"):
        expect_error(lambda: method(channel, "Throw")(request, timeout=WAIT),
                     grpc.StatusCode.INTERNAL, "a handler throwing %s" % request)
        check(method(channel, "Echo")(b"after", timeout=WAIT) == b"after", "a call after a throw")
    expect_error(lambda: method(channel, "Drop")(b"", timeout=WAIT),
                 grpc.StatusCode.INTERNAL, "a dropped call")


def typed(channel, name, kind="unary_unary"):
    return getattr(channel, kind)(
        "/test.Test/" + name, request_serializer=wrappers_pb2.StringValue.SerializeToString,
        response_deserializer=wrappers_pb2.StringValue.FromString)


def text(value):
    return wrappers_pb2.StringValue(value=value)


def coroutines(channel):
    check(typed(channel, "CoroEcho")(text("co"), timeout=WAIT).value == "co", "CoroEcho")
    replies = [m.value for m in typed(channel, "CoroStream", "unary_stream")(text("300"),
                                                                               timeout=WAIT)]
    check(replies == [str(i) for i in range(300)], "CoroStream: %d replies" % len(replies))
    bidi = typed(channel, "CoroBidi", "stream_stream")
    words = ["w%d" % i for i in range(100)]
    check([m.value for m in bidi(iter(map(text, words)), timeout=WAIT)] == words, "CoroBidi")
    total = typed(channel, "CoroSum", "stream_unary")(iter(map(text, "abc")), timeout=WAIT)
    check(total.value == "a+b+c", "CoroSum: %r" % total.value)
    before = int(stats(channel)["cancels"])
    expect_error(lambda: typed(channel, "CoroSleep")(text(""), timeout=0.3),
                 grpc.StatusCode.DEADLINE_EXCEEDED, "CoroSleep")
    check(wait_until(lambda: int(stats(channel)["cancels"]) == before + 1),
          "the deadline did not stop the coroutine")
    error = expect_error(lambda: typed(channel, "CoroTimeout")(text(""), timeout=WAIT),
                         grpc.StatusCode.ABORTED, "CoroTimeout")
    check("imed" in error.details(), "withTimeout inside a coroutine: %r" % error.details())
    expect_error(lambda: typed(channel, "CoroThrow")(text(""), timeout=WAIT),
                 grpc.StatusCode.INTERNAL, "CoroThrow")
    check(typed(channel, "CoroEcho")(text("after"), timeout=WAIT).value == "after",
          "a coroutine call after a throw")


def http1(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/hello" % port, timeout=WAIT) as reply:
        check(reply.read() == b"hello\n", "HTTP/1.1 on the gRPC port")


def drain(server, channel):
    """SIGTERM with a call in flight: it is answered, then the server exits 0."""
    before = int(stats(channel)["handled"])
    later = method(channel, "Later").future(b"700", timeout=WAIT)
    check(wait_until(lambda: int(stats(channel)["handled"]) >= before + 2),
          "the Later call did not begin")
    server.signal()
    check(later.result(timeout=WAIT) == b"700", "the call in flight during the drain")
    code = server.wait_exit()
    check(code == 0, "grpc_test_server exited with %d after the drain" % code)


def max_deadline(binary, backend):
    server = Server(binary, backend, "--max-deadline-ms", "300")
    with grpc.insecure_channel("127.0.0.1:%d" % server.port) as channel:
        before = int(stats(channel)["cancels"])
        # The client's deadline is far; the server's cap ends the call.
        error = expect_error(lambda: method(channel, "Sleep")(b"", timeout=3 * WAIT),
                             grpc.StatusCode.DEADLINE_EXCEEDED, "Sleep under maxDeadline")
        # The server's trailers said so, not the client's own timer.
        check("received from peer" in error.debug_error_string(),
              "DEADLINE_EXCEEDED not from the server: %s" % error.debug_error_string())
        check(wait_until(lambda: int(stats(channel)["cancels"]) == before + 1),
              "the capped deadline did not reach the cancel callback")
    server.stop()


def tls(binary, backend, pki):
    server = Server(binary, backend, "--tls-cert", pki + "/server.pem",
                    "--tls-key", pki + "/server.key")
    with open(pki + "/ca.pem", "rb") as f:
        credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
    with grpc.secure_channel("localhost:%d" % server.port, credentials) as channel:
        unary(channel)
        metadata(channel)
        streaming(channel)
        coroutines(channel)
    server.stop()


def main():
    binary = sys.argv[1]
    pki = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "grpc_pki")
    os.makedirs(pki, exist_ok=True)
    subprocess.run([sys.argv[3], pki], check=True, timeout=WAIT)
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        tls(binary, backend, pki)
        max_deadline(binary, backend)
        for threads in ("0", "2"):
            server = Server(binary, backend, "--threads", threads, "--max-receive", str(LIMIT),
                            "--max-send", str(LIMIT))
            with grpc.insecure_channel("127.0.0.1:%d" % server.port) as channel:
                unary(channel)
                metadata(channel)
                status_message(channel)
                streaming(channel)
                deadline_and_cancel(channel)
                compression(channel)
                limits(channel)
                failures(channel)
                coroutines(channel)
                http1(server.port)
                drain(server, channel)
            print("ok: %s, %s I/O threads" % (backend, threads))


if __name__ == "__main__":
    main()
