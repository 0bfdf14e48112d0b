#!/usr/bin/python3
"""grpcio's side of the interop tests: grpc.testing.TestService served by
grpcio 1.51, with the server features of grpc's interop test descriptions the
listed cases need (EmptyCall, UnaryCall, StreamingInputCall,
StreamingOutputCall, FullDuplexCall, HalfDuplexCall, CompressedRequest,
CompressedResponse, Echo Status, Echo Metadata, interval_us).

  py_interop_server.py --port PORT [--use_tls true --tls_cert FILE --tls_key FILE]
                       [--stubs_dir DIR]

PORT 0 picks an ephemeral port. Prints "listening on 127.0.0.1:PORT" once it
serves; SIGTERM or SIGINT stop it (exit 0). Bad flags: exit 2.
"""

import argparse
import signal
import sys
import threading
import time
from concurrent import futures

import grpc

import grpc_stubs
import wire_codec

ECHO_INITIAL = "x-grpc-test-echo-initial"
ECHO_TRAILING = "x-grpc-test-echo-trailing-bin"


def echo_metadata(context):
    received = dict(context.invocation_metadata())
    if ECHO_INITIAL in received:
        context.send_initial_metadata([(ECHO_INITIAL, received[ECHO_INITIAL])])
    if ECHO_TRAILING in received:
        context.set_trailing_metadata([(ECHO_TRAILING, received[ECHO_TRAILING])])


def check_compression(context, request, compressed):
    """CompressedRequest: aborts with INVALID_ARGUMENT when the message did
    not come as expect_compressed says."""
    if request.HasField("expect_compressed") and request.expect_compressed.value != compressed:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                      f"expected a {'' if not compressed else 'un'}compressed request message")


def set_status(context, echo):
    context.set_code(wire_codec.STATUS_BY_NUMBER.get(echo.code, grpc.StatusCode.UNKNOWN))
    context.set_details(echo.message)


class TestService:
    def __init__(self, pb):
        self.pb = pb

    def payload(self, context, size):
        if size < 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "negative payload size")
        return self.pb.messages_pb2.Payload(body=bytes(size))

    def empty_call(self, request, context):
        echo_metadata(context)
        return self.pb.empty_pb2.Empty()

    def unary_call(self, request_and_flag, context):
        request, compressed = request_and_flag
        echo_metadata(context)
        check_compression(context, request, compressed)
        if request.HasField("response_compressed") and request.response_compressed.value:
            context.set_compression(grpc.Compression.Gzip)
        response = self.pb.messages_pb2.SimpleResponse(
            payload=self.payload(context, request.response_size))
        if request.HasField("response_status"):
            set_status(context, request.response_status)
        return response

    def responses(self, request, context):
        """One StreamingOutputCallResponse per ResponseParameters, compressed
        as each asks (CompressedResponse per message)."""
        if any(p.compressed.value for p in request.response_parameters):
            context.set_compression(grpc.Compression.Gzip)
        for parameters in request.response_parameters:
            if parameters.interval_us > 0:
                time.sleep(parameters.interval_us / 1e6)
            if not parameters.compressed.value:
                context.disable_next_message_compression()
            yield self.pb.messages_pb2.StreamingOutputCallResponse(
                payload=self.payload(context, parameters.size))

    def streaming_output_call(self, request_and_flag, context):
        request, _ = request_and_flag
        echo_metadata(context)
        yield from self.responses(request, context)
        if request.HasField("response_status"):
            set_status(context, request.response_status)

    def streaming_input_call(self, requests, context):
        echo_metadata(context)
        aggregated = 0
        for request, compressed in requests:
            check_compression(context, request, compressed)
            aggregated += len(request.payload.body)
        return self.pb.messages_pb2.StreamingInputCallResponse(aggregated_payload_size=aggregated)

    def full_duplex_call(self, requests, context):
        echo_metadata(context)
        for request, _ in requests:
            if request.HasField("response_status"):
                set_status(context, request.response_status)
                return
            yield from self.responses(request, context)

    def half_duplex_call(self, requests, context):
        echo_metadata(context)
        buffered = [request for request, _ in requests]
        for request in buffered:
            yield from self.responses(request, context)


def handler(pb):
    service = TestService(pb)
    m = pb.messages_pb2
    empty = pb.empty_pb2.Empty
    codec = wire_codec
    methods = {
        "EmptyCall": grpc.unary_unary_rpc_method_handler(
            service.empty_call, codec.decoder(empty), codec.encoder(empty)),
        "UnaryCall": grpc.unary_unary_rpc_method_handler(
            service.unary_call, codec.decoder(m.SimpleRequest), codec.encoder(m.SimpleResponse)),
        "StreamingOutputCall": grpc.unary_stream_rpc_method_handler(
            service.streaming_output_call, codec.decoder(m.StreamingOutputCallRequest),
            codec.encoder(m.StreamingOutputCallResponse)),
        "StreamingInputCall": grpc.stream_unary_rpc_method_handler(
            service.streaming_input_call, codec.decoder(m.StreamingInputCallRequest),
            codec.encoder(m.StreamingInputCallResponse)),
        "FullDuplexCall": grpc.stream_stream_rpc_method_handler(
            service.full_duplex_call, codec.decoder(m.StreamingOutputCallRequest),
            codec.encoder(m.StreamingOutputCallResponse)),
        "HalfDuplexCall": grpc.stream_stream_rpc_method_handler(
            service.half_duplex_call, codec.decoder(m.StreamingOutputCallRequest),
            codec.encoder(m.StreamingOutputCallResponse)),
    }
    return grpc.method_handlers_generic_handler("grpc.testing.TestService", methods)


def parse_bool(text):
    if text in ("true", "1"):
        return True
    if text in ("false", "0", ""):
        return False
    raise argparse.ArgumentTypeError(f"'{text}': true or false")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--use_tls", type=parse_bool, default=False)
    parser.add_argument("--tls_cert", default="")
    parser.add_argument("--tls_key", default="")
    parser.add_argument("--stubs_dir", default=None)
    args = parser.parse_args()
    if args.use_tls and not (args.tls_cert and args.tls_key):
        parser.error("--use_tls true needs --tls_cert and --tls_key")
    return args


def main():
    args = parse_args()
    pb = grpc_stubs.load(args.stubs_dir)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=64), handlers=[handler(pb)],
                         options=wire_codec.OPTIONS)
    address = f"{args.host}:{args.port}"
    if args.use_tls:
        with open(args.tls_key, "rb") as key, open(args.tls_cert, "rb") as cert:
            credentials = grpc.ssl_server_credentials([(key.read(), cert.read())])
        port = server.add_secure_port(address, credentials)
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        sys.exit(f"py_interop_server: cannot listen on {address}")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    stop.wait()
    server.stop(grace=2).wait()


if __name__ == "__main__":
    main()
