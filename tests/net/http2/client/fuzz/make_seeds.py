#!/usr/bin/env python3
"""Writes the seed corpus of the HTTP/2 client fuzz target (ClientSessionFuzzer.cc):
what a server sends, frame by frame, after a mode byte (0: no pause, pieces of
one byte... see the target). Run from this directory: python3 make_seeds.py"""
import os
import struct

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, END_HEADERS, ACK = 1, 4, 1


def frame(kind, flags, stream, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, kind, flags, stream) + payload


def integer(first, bits, value):
    top = (1 << bits) - 1
    if value < top:
        return bytes([first | value])
    out = [first | top]
    value -= top
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def literal(name, value, first=0x00, bits=4):
    return (integer(first, bits, 0) + integer(0, 7, len(name)) + name +
            integer(0, 7, len(value)) + value)


def head(stream, status=b"200", end=False, extra=()):
    block = literal(b":status", status) + b"".join(literal(n, v) for n, v in extra)
    return frame(HEADERS, END_HEADERS | (END_STREAM if end else 0), stream, block)


START = frame(SETTINGS, 0, 0, struct.pack(">HI", 3, 100)) + frame(SETTINGS, ACK, 0)

SEEDS = {
    "responses": START + head(1) + frame(DATA, 0, 1, b"hello") + frame(DATA, END_STREAM, 1) +
    head(3, end=True) + head(5, extra=[(b"content-type", b"application/grpc")]) +
    frame(DATA, 0, 5, b"\0\0\0\0\0") +
    frame(HEADERS, END_HEADERS | END_STREAM, 5, literal(b"grpc-status", b"0")) +
    frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1 << 20)),
    "interim-and-continuation": START + head(1, b"100") +
    frame(HEADERS, 0, 1, literal(b":status", b"200")) +
    frame(CONTINUATION, END_HEADERS, 1, literal(b"x-a", b"b")) + frame(DATA, END_STREAM, 1, b"x"),
    "goaway": START + frame(GOAWAY, 0, 0, struct.pack(">II", 1, 0)) + head(1, end=True),
    "reset-mid-body": START + head(1) + frame(DATA, 0, 1, b"part") +
    frame(RST_STREAM, 0, 1, struct.pack(">I", 2)) + frame(PING, 0, 0, b"12345678"),
    "hpack-bomb": START + frame(HEADERS, END_HEADERS, 1, literal(b":status", b"200") +
                                literal(b"x-b", b"b" * 3000, 0x40, 6) + bytes([0xBE]) * 40),
    "settings-flood": START + frame(SETTINGS, 0, 0) * 200,
    "data-past-window": START + head(3) + frame(DATA, 0, 3, b"d" * 2000),
    "garbage": b"HTTP/1.1 400 Bad Request\r\n\r\n",
}

os.makedirs("corpus", exist_ok=True)
for mode, (name, body) in zip([0, 1, 3, 4, 5, 7, 12, 0x40], SEEDS.items()):
    with open(os.path.join("corpus", name), "wb") as f:
        f.write(bytes([mode]) + body)
