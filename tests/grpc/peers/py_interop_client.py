#!/usr/bin/python3
"""grpcio's side of the interop tests: a client of grpc.testing.TestService on
grpcio 1.51 that runs one case of grpc's interop test descriptions per
invocation, with the flags of grpc's interop clients.

  py_interop_client.py --server_host HOST --server_port PORT --test_case CASE
                       [--use_tls true [--ca_file FILE] [--server_host_override NAME]]
                       [--stubs_dir DIR]

With TLS the server's certificate is verified against --ca_file. Exit 0: the
case passed; 1: it failed (why on stderr); 2: bad flags or an unknown case.

One deviation grpcio forces: it has no per-message compression switch on a
client's stream, so client_compressed_streaming sends its second message
compressed too (with expect_compressed true); the grpc++ client covers the
compressed-then-uncompressed stream.
"""

import argparse
import queue
import sys

import grpc

import grpc_stubs
import wire_codec

ECHO_INITIAL = "x-grpc-test-echo-initial"
ECHO_TRAILING = "x-grpc-test-echo-trailing-bin"
INITIAL_VALUE = "test_initial_metadata_value"
TRAILING_VALUE = b"\xab\xab\xab"
LARGE_REQUEST = 271828
LARGE_RESPONSE = 314159
STREAM_REQUESTS = [27182, 8, 1828, 45904]
STREAM_RESPONSES = [31415, 9, 2653, 58979]
SPECIAL_MESSAGE = "\t\ntest with whitespace\r\nand Unicode BMP \u263a and non-BMP \U0001f608\t\n"


class CaseFailure(Exception):
    pass


def expect(condition, what):
    if not condition:
        raise CaseFailure(what)


def expect_body(payload, size, what):
    expect(payload.body == bytes(size),
           f"{what}: payload of {len(payload.body)} bytes, expected {size} zeros")


class Pipe:
    """A request iterator the case feeds one message at a time; close() ends it."""

    def __init__(self):
        self.items = queue.Queue()

    def add(self, item):
        self.items.put(item)

    def close(self):
        self.items.put(None)

    def __iter__(self):
        return self

    def __next__(self):
        item = self.items.get(timeout=30)
        if item is None:
            raise StopIteration
        return item


class Client:
    """The TestService methods as multi-callables whose responses come as
    (message, compressed) pairs (see wire_codec)."""

    def __init__(self, channel, pb):
        self.pb = pb
        m = pb.messages_pb2
        empty = pb.empty_pb2.Empty

        def method(kind, name, request, response, service="grpc.testing.TestService"):
            return getattr(channel, kind)(f"/{service}/{name}",
                                          request_serializer=wire_codec.encoder(request),
                                          response_deserializer=wire_codec.decoder(response))

        self.empty_call = method("unary_unary", "EmptyCall", empty, empty)
        self.unary_call = method("unary_unary", "UnaryCall", m.SimpleRequest, m.SimpleResponse)
        self.streaming_output_call = method("unary_stream", "StreamingOutputCall",
                                            m.StreamingOutputCallRequest,
                                            m.StreamingOutputCallResponse)
        self.streaming_input_call = method("stream_unary", "StreamingInputCall",
                                           m.StreamingInputCallRequest,
                                           m.StreamingInputCallResponse)
        self.full_duplex_call = method("stream_stream", "FullDuplexCall",
                                       m.StreamingOutputCallRequest,
                                       m.StreamingOutputCallResponse)
        self.unimplemented_method = method("unary_unary", "UnimplementedCall", empty, empty)
        self.unimplemented_service = method("unary_unary", "UnimplementedCall", empty, empty,
                                            "grpc.testing.UnimplementedService")

    def large_request(self, **fields):
        m = self.pb.messages_pb2
        return m.SimpleRequest(response_size=LARGE_RESPONSE,
                               payload=m.Payload(body=bytes(LARGE_REQUEST)), **fields)

    def ping(self, request_size, response_size):
        m = self.pb.messages_pb2
        return m.StreamingOutputCallRequest(
            response_parameters=[m.ResponseParameters(size=response_size)],
            payload=m.Payload(body=bytes(request_size)))


def expect_code(call, code, what):
    """Runs `call`; expects it to fail with `code`; returns the RpcError."""
    try:
        call()
    except grpc.RpcError as error:
        expect(error.code() == code, f"{what}: {error.code()} '{error.details()}', expected {code}")
        return error
    raise CaseFailure(f"{what}: succeeded, expected {code}")


def empty_unary(c):
    response, _ = c.empty_call(c.pb.empty_pb2.Empty())
    expect(response.ByteSize() == 0, "EmptyCall: the response is not empty")


def large_unary(c):
    response, _ = c.unary_call(c.large_request())
    expect_body(response.payload, LARGE_RESPONSE, "UnaryCall")


def client_compressed_unary(c):
    BoolValue = c.pb.messages_pb2.BoolValue
    expect_code(lambda: c.unary_call(c.large_request(expect_compressed=BoolValue(value=True))),
                grpc.StatusCode.INVALID_ARGUMENT, "the probe (uncompressed, expect_compressed true)")
    for compressed in (True, False):
        request = c.large_request(expect_compressed=BoolValue(value=compressed))
        compression = grpc.Compression.Gzip if compressed else grpc.Compression.NoCompression
        response, _ = c.unary_call(request, compression=compression)
        expect_body(response.payload, LARGE_RESPONSE, f"UnaryCall (compressed {compressed})")


def server_compressed_unary(c):
    BoolValue = c.pb.messages_pb2.BoolValue
    for compressed in (True, False):
        request = c.large_request(response_compressed=BoolValue(value=compressed))
        response, flag = c.unary_call(request)
        what = f"UnaryCall (response_compressed {compressed})"
        expect(flag == compressed, f"{what}: the response's compressed flag is {flag}")
        expect_body(response.payload, LARGE_RESPONSE, what)


def streaming_input_request(c, size, expect_compressed=None):
    m = c.pb.messages_pb2
    request = m.StreamingInputCallRequest(payload=m.Payload(body=bytes(size)))
    if expect_compressed is not None:
        request.expect_compressed.value = expect_compressed
    return request


def client_streaming(c):
    requests = [streaming_input_request(c, size) for size in STREAM_REQUESTS]
    response, _ = c.streaming_input_call(iter(requests))
    expect(response.aggregated_payload_size == 74922,
           f"aggregated_payload_size {response.aggregated_payload_size}, expected 74922")


def client_compressed_streaming(c):
    probe = [streaming_input_request(c, 27182, True)]
    expect_code(lambda: c.streaming_input_call(iter(probe)), grpc.StatusCode.INVALID_ARGUMENT,
                "the probe (uncompressed, expect_compressed true)")
    requests = [streaming_input_request(c, 27182, True), streaming_input_request(c, 45904, True)]
    response, _ = c.streaming_input_call(iter(requests), compression=grpc.Compression.Gzip)
    expect(response.aggregated_payload_size == 73086,
           f"aggregated_payload_size {response.aggregated_payload_size}, expected 73086")


def server_streaming(c):
    m = c.pb.messages_pb2
    request = m.StreamingOutputCallRequest(
        response_parameters=[m.ResponseParameters(size=size) for size in STREAM_RESPONSES])
    responses = [response for response, _ in c.streaming_output_call(request)]
    expect(len(responses) == 4, f"StreamingOutputCall: {len(responses)} responses, expected 4")
    for i, (response, size) in enumerate(zip(responses, STREAM_RESPONSES)):
        expect_body(response.payload, size, f"response {i}")


def server_compressed_streaming(c):
    m = c.pb.messages_pb2
    sizes, compressed = [31415, 92653], [True, False]
    request = m.StreamingOutputCallRequest(response_parameters=[
        m.ResponseParameters(size=size, compressed=m.BoolValue(value=flag))
        for size, flag in zip(sizes, compressed)])
    responses = list(c.streaming_output_call(request))
    expect(len(responses) == 2, f"StreamingOutputCall: {len(responses)} responses, expected 2")
    for i, (response, flag) in enumerate(responses):
        expect(flag == compressed[i], f"response {i}: the compressed flag is {flag}")
        expect_body(response.payload, sizes[i], f"response {i}")


def ping_pong(c):
    pipe = Pipe()
    responses = c.full_duplex_call(pipe)
    try:
        for i, (request_size, response_size) in enumerate(zip(STREAM_REQUESTS, STREAM_RESPONSES)):
            pipe.add(c.ping(request_size, response_size))
            response, _ = next(responses)
            expect_body(response.payload, response_size, f"response {i}")
    finally:
        pipe.close()
    expect(next(responses, None) is None, "FullDuplexCall: more than four responses")
    expect(responses.code() == grpc.StatusCode.OK, f"FullDuplexCall: {responses.code()}")


def empty_stream(c):
    responses = list(c.full_duplex_call(iter([])))
    expect(not responses, f"FullDuplexCall: {len(responses)} responses to no request")


def timeout_on_sleeping_server(c):
    pipe = Pipe()
    responses = c.full_duplex_call(pipe, timeout=0.001)
    pipe.add(c.pb.messages_pb2.StreamingOutputCallRequest(
        payload=c.pb.messages_pb2.Payload(body=bytes(27182))))
    try:
        expect_code(lambda: list(responses), grpc.StatusCode.DEADLINE_EXCEEDED,
                    "FullDuplexCall with 1 ms")
    finally:
        pipe.close()


def cancel_after_begin(c):
    pipe = Pipe()
    future = c.streaming_input_call.future(pipe)
    future.cancel()
    pipe.close()
    expect(future.cancelled(), "StreamingInputCall: not cancelled")
    expect(future.code() == grpc.StatusCode.CANCELLED, f"StreamingInputCall: {future.code()}")


def cancel_after_first_response(c):
    pipe = Pipe()
    responses = c.full_duplex_call(pipe)
    pipe.add(c.ping(27182, 31415))
    response, _ = next(responses)
    expect_body(response.payload, 31415, "the first response")
    responses.cancel()
    pipe.close()
    expect_code(lambda: next(responses), grpc.StatusCode.CANCELLED, "FullDuplexCall cancelled")


def expect_echoed_status(c, message, streaming=True):
    m = c.pb.messages_pb2
    status = m.EchoStatus(code=2, message=message)
    error = expect_code(lambda: c.unary_call(m.SimpleRequest(response_status=status)),
                        grpc.StatusCode.UNKNOWN, "UnaryCall")
    expect(error.details() == message, f"UnaryCall: message {error.details()!r}")
    if not streaming:
        return
    request = m.StreamingOutputCallRequest(response_status=status)
    error = expect_code(lambda: list(c.full_duplex_call(iter([request]))),
                        grpc.StatusCode.UNKNOWN, "FullDuplexCall")
    expect(error.details() == message, f"FullDuplexCall: message {error.details()!r}")


def status_code_and_message(c):
    expect_echoed_status(c, "test status message")


def special_status_message(c):
    expect_echoed_status(c, SPECIAL_MESSAGE, streaming=False)


def expect_echoed_metadata(call, what):
    initial = dict(call.initial_metadata())
    expect(initial.get(ECHO_INITIAL) == INITIAL_VALUE, f"{what}: no echoed initial metadata")
    trailing = dict(call.trailing_metadata())
    expect(trailing.get(ECHO_TRAILING) == TRAILING_VALUE, f"{what}: no echoed trailing metadata")


def custom_metadata(c):
    metadata = [(ECHO_INITIAL, INITIAL_VALUE), (ECHO_TRAILING, TRAILING_VALUE)]
    (response, _), call = c.unary_call.with_call(c.large_request(), metadata=metadata)
    expect_body(response.payload, LARGE_RESPONSE, "UnaryCall")
    expect_echoed_metadata(call, "UnaryCall")
    responses = c.full_duplex_call(iter([c.ping(LARGE_REQUEST, LARGE_RESPONSE)]),
                                   metadata=metadata)
    received = list(responses)
    expect(len(received) == 1, f"FullDuplexCall: {len(received)} responses, expected 1")
    expect_body(received[0][0].payload, LARGE_RESPONSE, "FullDuplexCall")
    expect_echoed_metadata(responses, "FullDuplexCall")


def unimplemented_method(c):
    expect_code(lambda: c.unimplemented_method(c.pb.empty_pb2.Empty()),
                grpc.StatusCode.UNIMPLEMENTED, "TestService/UnimplementedCall")


def unimplemented_service(c):
    expect_code(lambda: c.unimplemented_service(c.pb.empty_pb2.Empty()),
                grpc.StatusCode.UNIMPLEMENTED, "UnimplementedService/UnimplementedCall")


CASES = {f.__name__: f for f in [
    empty_unary, large_unary, client_streaming, server_streaming, ping_pong, empty_stream,
    timeout_on_sleeping_server, cancel_after_begin, cancel_after_first_response,
    status_code_and_message, special_status_message, custom_metadata, unimplemented_method,
    unimplemented_service, client_compressed_unary, server_compressed_unary,
    client_compressed_streaming, server_compressed_streaming]}


def parse_bool(text):
    if text in ("true", "1"):
        return True
    if text in ("false", "0", ""):
        return False
    raise argparse.ArgumentTypeError(f"'{text}': true or false")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server_host", default="127.0.0.1")
    parser.add_argument("--server_port", type=int, required=True)
    parser.add_argument("--server_host_override", default="")
    parser.add_argument("--test_case", required=True, choices=sorted(CASES))
    parser.add_argument("--use_tls", type=parse_bool, default=False)
    parser.add_argument("--use_test_ca", type=parse_bool, default=True)
    parser.add_argument("--ca_file", default="")
    parser.add_argument("--stubs_dir", default=None)
    return parser.parse_args()


def make_channel(args):
    target = f"{args.server_host}:{args.server_port}"
    options = list(wire_codec.OPTIONS)
    if not args.use_tls:
        return grpc.insecure_channel(target, options=options)
    root = None
    if args.ca_file:
        with open(args.ca_file, "rb") as f:
            root = f.read()
    if args.server_host_override:
        options.append(("grpc.ssl_target_name_override", args.server_host_override))
    return grpc.secure_channel(target, grpc.ssl_channel_credentials(root), options=options)


def main():
    args = parse_args()
    pb = grpc_stubs.load(args.stubs_dir)
    with make_channel(args) as channel:
        try:
            CASES[args.test_case](Client(channel, pb))
        except (CaseFailure, grpc.RpcError) as failure:
            print(f"py_interop_client: {args.test_case} FAILED: {failure}", file=sys.stderr)
            return 1
    print(f"py_interop_client: {args.test_case} passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
