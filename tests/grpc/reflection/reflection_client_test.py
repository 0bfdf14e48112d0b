"""grpc.reflection.v1alpha.ServerReflection of generated_test_server, called
by grpcio's client through stubs made from reflection.proto by
grpc_python_plugin, as grpcurl's `list` and `describe` use it: the services
listed, a service's file with its imports (enough to build a descriptor pool
and describe the methods), a file by name, an unknown symbol (NOT_FOUND,
and the stream goes on), many requests on one stream; each backend, one loop
and two I/O loops.

usage: reflection_client_test.py SERVER ROOT H2PEER_DIR GEN_DIR
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import os
import sys

sys.path.insert(0, sys.argv[3])
sys.path.insert(0, sys.argv[4])
import grpc  # noqa: E402
import grpc_stubs  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool  # noqa: E402
from h2peer import Server, check  # noqa: E402

WAIT = 20
stubs = grpc_stubs.generate(sys.argv[2], ["net/grpc/reflection/reflection.proto"])
reflection_pb2, reflection_grpc = stubs("net/grpc/reflection/reflection.proto")
Request = reflection_pb2.ServerReflectionRequest

SERVICES = {"Bare", "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
            "libnet.test.gen.Echo", "libnet.test.gen.Kinds"}


def ask(channel, *requests):
    stub = reflection_grpc.ServerReflectionStub(channel)
    answers = list(stub.ServerReflectionInfo(iter(requests), timeout=WAIT))
    check(len(answers) == len(requests), "%d answers to %d requests" % (len(answers), len(requests)))
    for request, answer in zip(requests, answers):
        check(answer.original_request == request, "original_request: %r" % answer.original_request)
    return answers


def pool_of(answer):
    """What grpcurl does with an answer: a pool of its files alone."""
    check(answer.HasField("file_descriptor_response"), "no files: %r" % answer)
    pool = descriptor_pool.DescriptorPool()
    for data in answer.file_descriptor_response.file_descriptor_proto:
        pool.Add(descriptor_pb2.FileDescriptorProto.FromString(data))
    return pool


def list_and_describe(channel):
    listed, kinds, health = ask(
        channel, Request(host="localhost", list_services=""),
        Request(file_containing_symbol="libnet.test.gen.Kinds"),
        Request(file_by_filename="net/grpc/health/health.proto"))
    names = {service.name for service in listed.list_services_response.service}
    check(names == SERVICES, "list_services: %s" % sorted(names))

    service = pool_of(kinds).FindServiceByName("libnet.test.gen.Kinds")
    methods = {m.name: (m.input_type.full_name, m.output_type.full_name) for m in service.methods}
    check(methods == {
        "Unary": ("libnet.test.gen.Outer.Inner", "libnet.test.gen.Outer"),
        "ServerStream": ("libnet.test.common.Shared.Nested", "libnet.test.gen.Outer"),
        "ClientStream": ("libnet.test.gen.Outer", "google.protobuf.Empty"),
        "Bidi": ("libnet.test.common.Shared", "libnet.test.common.Shared"),
    }, "describe libnet.test.gen.Kinds: %s" % methods)

    watch = pool_of(health).FindServiceByName("grpc.health.v1.Health").methods_by_name["Watch"]
    check(watch.output_type.full_name == "grpc.health.v1.HealthCheckResponse", "Health.Watch")


def errors(channel):
    unknown, method, listed = ask(
        channel, Request(file_containing_symbol="no.such.Symbol"),
        Request(file_containing_symbol="libnet.test.gen.Echo.Say"),
        Request(list_services=""))
    check(unknown.HasField("error_response"), "unknown symbol: %r" % unknown)
    check(unknown.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0],
          "unknown symbol: code %d" % unknown.error_response.error_code)
    check(pool_of(method).FindServiceByName("libnet.test.gen.Echo") is not None, "Echo.Say")
    check(len(listed.list_services_response.service) == len(SERVICES), "list after an error")


def many(channel):
    requests = [Request(file_containing_symbol="libnet.test.gen.Outer")] * 200
    answers = ask(channel, *requests)
    check(all(a.HasField("file_descriptor_response") for a in answers), "200 answers on a stream")


def main():
    binary = sys.argv[1]
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        for threads in ("0", "2"):
            server = Server(binary, backend, "--threads", threads)
            with grpc.insecure_channel("127.0.0.1:%d" % server.port) as channel:
                list_and_describe(channel)
                errors(channel)
                many(channel)
            server.stop()
            print("ok: %s, %s I/O threads" % (backend, threads))


if __name__ == "__main__":
    main()
