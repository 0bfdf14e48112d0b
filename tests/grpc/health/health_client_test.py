"""grpc.health.v1.Health of generated_test_server, called by grpcio's client
through stubs made from net/grpc/health/health.proto by grpc_python_plugin:
Check (the server, a served service, an unknown one: NOT_FOUND) and Watch
(the first status, each change as the program makes it, SERVICE_UNKNOWN,
two watchers at once); each backend, one loop and two I/O loops.

usage: health_client_test.py SERVER ROOT H2PEER_DIR GEN_DIR
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import os
import sys

sys.path.insert(0, sys.argv[3])
sys.path.insert(0, sys.argv[4])
import grpc  # noqa: E402
import grpc_stubs  # noqa: E402
from h2peer import Server, check  # noqa: E402

WAIT = 20
stubs = grpc_stubs.generate(sys.argv[2], ["net/grpc/health/health.proto",
                                          "tests/grpc/gen/kinds.proto",
                                          "tests/grpc/gen/common/common.proto"])
health_pb2, health_grpc = stubs("net/grpc/health/health.proto")
kinds_pb2, kinds_grpc = stubs("tests/grpc/gen/kinds.proto")
Status = health_pb2.HealthCheckResponse


def set_status(channel, service, state):
    """The test server's Echo.Say sets a health status on request."""
    echo = kinds_grpc.EchoStub(channel)
    echo.Say(kinds_pb2.Outer.Inner(name="status:%s:%s" % (service, state)), timeout=WAIT)


def check_status(health, service):
    return health.Check(health_pb2.HealthCheckRequest(service=service), timeout=WAIT).status


def checks(channel):
    health = health_grpc.HealthStub(channel)
    check(check_status(health, "") == Status.SERVING, "Check of the server")
    for service in ("libnet.test.gen.Echo", "grpc.health.v1.Health"):
        check(check_status(health, service) == Status.SERVING, "Check of %s" % service)
    try:
        check_status(health, "no.such.Service")
        raise AssertionError("Check of an unknown service answered")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.NOT_FOUND, "Check of an unknown service: %s" % e.code())
    set_status(channel, "pkg.Checked", "NOT_SERVING")
    check(check_status(health, "pkg.Checked") == Status.NOT_SERVING, "Check after NOT_SERVING")


def watches(channel):
    health = health_grpc.HealthStub(channel)
    first = health.Watch(health_pb2.HealthCheckRequest(service="pkg.Watched"), timeout=WAIT)
    second = health.Watch(health_pb2.HealthCheckRequest(service="pkg.Watched"), timeout=WAIT)
    for watch in (first, second):
        check(next(watch).status == Status.SERVICE_UNKNOWN, "Watch of a service never set")
    for state, expected in (("SERVING", Status.SERVING), ("NOT_SERVING", Status.NOT_SERVING),
                            ("CLEAR", Status.SERVICE_UNKNOWN), ("SERVING", Status.SERVING)):
        set_status(channel, "pkg.Watched", state)
        for watch in (first, second):
            got = next(watch).status
            check(got == expected, "Watch after %s: %s" % (state, Status.ServingStatus.Name(got)))
    first.cancel()
    # The other watch goes on after one is cancelled.
    set_status(channel, "pkg.Watched", "NOT_SERVING")
    check(next(second).status == Status.NOT_SERVING, "Watch after the other's cancel")
    second.cancel()


def main():
    binary = sys.argv[1]
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        for threads in ("0", "2"):
            server = Server(binary, backend, "--threads", threads)
            with grpc.insecure_channel("127.0.0.1:%d" % server.port) as channel:
                checks(channel)
                watches(channel)
            server.stop()
            print("ok: %s, %s I/O threads" % (backend, threads))


if __name__ == "__main__":
    main()
