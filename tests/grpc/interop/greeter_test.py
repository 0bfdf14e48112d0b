#!/usr/bin/python3
"""examples/grpc's greeter_server called by grpcio 1.51: on each backend, over
h2c and over TLS (ALPN h2, certificate verified), SayHello answers "Hello " +
name for 20 calls on one channel, a 100-byte name included; an unknown method
is UNIMPLEMENTED; SIGTERM stops the server with exit status 0.

  greeter_test.py GREETER_SERVER STUBS_DIR
"""

import os
import subprocess
import sys
import tempfile

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools"))
import grpc_stubs  # noqa: E402
import make_test_certs  # noqa: E402

sys.path.insert(0, HERE)
from interop_matrix import Server  # noqa: E402


def check_calls(channel, pb, label):
    stub = pb.helloworld_pb2_grpc.GreeterStub(channel)
    for i in range(20):
        name = "x" * 100 if i == 0 else f"caller {i}"
        reply = stub.SayHello(pb.helloworld_pb2.HelloRequest(name=name), timeout=10)
        if reply.message != "Hello " + name:
            raise AssertionError(f"{label}: reply {reply.message!r} to {name!r}")
    unknown = channel.unary_unary("/helloworld.Greeter/SayGoodbye")
    try:
        unknown(b"", timeout=10)
    except grpc.RpcError as error:
        if error.code() != grpc.StatusCode.UNIMPLEMENTED:
            raise AssertionError(f"{label}: SayGoodbye ended {error.code()}, not UNIMPLEMENTED")
    else:
        raise AssertionError(f"{label}: SayGoodbye succeeded")


def run(binary, pb, backend, tls, certs, logs):
    label = f"{backend} {'tls' if tls else 'h2c'}"
    argv = [binary, "--port", "0", "--backend", backend]
    if tls:
        argv += ["--tls-cert", certs["cert"], "--tls-key", certs["key"]]
    server = Server("greeter", label, argv, os.path.join(logs, f"greeter-{backend}-{tls}.log"))
    try:
        if not server.wait_listening(20):
            raise AssertionError(f"{label}: {server.problem}")
        target = f"127.0.0.1:{server.port}"
        if tls:
            with open(certs["ca"], "rb") as f:
                credentials = grpc.ssl_channel_credentials(f.read())
            channel = grpc.secure_channel(target, credentials)
        else:
            channel = grpc.insecure_channel(target)
        with channel:
            check_calls(channel, pb, label)
    finally:
        server.stop()
    if server.problem:
        raise AssertionError(f"{label}: the server {server.problem}")
    print(f"greeter {label}: ok")


def main():
    binary, stubs = sys.argv[1], sys.argv[2]
    pb = grpc_stubs.load(stubs)
    with tempfile.TemporaryDirectory(prefix="greeter.") as tmp:
        logs = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR") or tmp
        certs = make_test_certs.make(os.path.join(tmp, "certs"))
        for backend in ("epoll", "uring"):
            for tls in (False, True):
                run(binary, pb, backend, tls, certs, logs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
