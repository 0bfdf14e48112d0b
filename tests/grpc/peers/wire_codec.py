"""Message (de)serialisers for the grpcio peers that see whether a message
came compressed.

grpcio gives an application no per-message compressed flag. Both peers
therefore run with grpc core's "grpc.per_message_decompression" off: core
hands over a compressed message as it came (a gzip stream), and the
deserialiser here inflates it and reports that it was compressed. A protobuf
message never starts with gzip's magic 1f 8b (0x1f would be field 3 with the
invalid wire type 7), so the test is exact.
"""

import zlib

import grpc

OPTIONS = [("grpc.per_message_decompression", 0)]
GZIP_MAGIC = b"\x1f\x8b"

# grpc.StatusCode by its numeric value.
STATUS_BY_NUMBER = {code.value[0]: code for code in grpc.StatusCode}


def decoder(message_class):
    """bytes -> (message, compressed)."""
    def decode(data):
        compressed = data[:2] == GZIP_MAGIC
        if compressed:
            data = zlib.decompress(data, wbits=16 + zlib.MAX_WBITS)
        return message_class.FromString(data), compressed
    return decode


def encoder(message_class):
    return message_class.SerializeToString
