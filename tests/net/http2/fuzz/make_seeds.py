#!/usr/bin/python3
"""Writes the seed corpus of the HTTP/2 session fuzz target (docs/fuzzing.md).

  make_seeds.py frames DIR          hand-made frames, one file per defence
  make_seeds.py capture SERVER DIR  what curl, nghttp and h2load send to
                                    SERVER (bazel-bin/examples/http/http_server)
                                    started with --h2c, taken by a TCP proxy

Each file starts with the target's mode byte (Http2SessionFuzzer.cc), then the
client's bytes. A name says what the stream must do, which the replay test
checks (fed whole, default or small limits as the mode byte says):
  ok-WHAT         at least one response, no GOAWAY with an error
  goawayXX-WHAT   GOAWAY with error code 0xXX (RFC 9113 section 7), input refused
Needs /usr/bin/python3 with python3-hpack; capture also curl, nghttp, h2load.
"""
import asyncio
import os
import re
import subprocess
import sys
import tempfile

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0, 1, 2, 3, 4, 6, 7, 8, 9)
END_STREAM, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x4, 0x8, 0x20

# Mode bits (Http2SessionFuzzer.cc): bits 0-1 preface, bit 2 small limits,
# bit 3 goAway(), bits 4-5 budgets, bits 6-7 pieces.
RAW, SMALL, UNLIMITED, SMALL_BUDGETS, MIXED_BUDGETS, WHOLE = 0x03, 0x04, 0x10, 0x00, 0x20, 0x40


def frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def settings(**entries):
    ids = {"table": 1, "push": 2, "streams": 3, "window": 4, "frame": 5, "list": 6}
    body = b"".join(ids[k].to_bytes(2, "big") + v.to_bytes(4, "big") for k, v in entries.items())
    return frame(SETTINGS, 0, 0, body)


def request(encoder, stream, path, method="GET", end=True, extra=(), authority="localhost"):
    fields = [(":method", method), (":scheme", "http"), (":authority", authority),
              (":path", path)] + list(extra)
    flags = END_HEADERS | (END_STREAM if end else 0)
    return frame(HEADERS, flags, stream, encoder.encode(fields))


def ok_seeds():
    e = hpack.Encoder()
    seeds = {"ok-get-hello": (UNLIMITED, settings() + request(e, 1, "/hello"))}
    e = hpack.Encoder()
    body = frame(DATA, 0, 1, b"hello ") + frame(DATA, END_STREAM, 1, b"body")
    seeds["ok-post-echo"] = (SMALL_BUDGETS, settings() + request(e, 1, "/echo", "POST", False) + body)
    e = hpack.Encoder()
    paths = ["/big", "/file", "/long-header", "/204", "/304", "/connection", "/throw", "/nowhere"]
    streams = b"".join(request(e, 2 * i + 1, p) for i, p in enumerate(paths))
    streams += request(e, 2 * len(paths) + 1, "/file", "HEAD")
    seeds["ok-every-handler-path"] = (UNLIMITED, settings() + streams)
    e = hpack.Encoder()
    seeds["ok-small-file-streamed"] = (SMALL | MIXED_BUDGETS, settings() + request(e, 1, "/file"))
    e = hpack.Encoder()
    updates = frame(WINDOW_UPDATE, 0, 0, (1 << 20).to_bytes(4, "big")) + frame(
        WINDOW_UPDATE, 0, 1, (1 << 20).to_bytes(4, "big"))
    seeds["ok-big-window-update"] = (SMALL_BUDGETS, settings() + request(e, 1, "/big") + updates)
    e = hpack.Encoder()
    seeds["ok-zero-window"] = (UNLIMITED, settings(window=0) + request(e, 1, "/big"))
    e = hpack.Encoder()
    block = e.encode([(":method", "GET"), (":scheme", "http"), (":path", "/hello"),
                      (":authority", "localhost"), ("user-agent", "fuzz")])
    cont = (frame(HEADERS, END_STREAM, 1, block[:5]) + frame(CONTINUATION, 0, 1, block[5:9]) +
            frame(CONTINUATION, END_HEADERS, 1, block[9:]))
    seeds["ok-continuation"] = (UNLIMITED, settings() + cont)
    return seeds


def ok_seeds_more():
    e = hpack.Encoder()
    opened = b"".join(request(e, 2 * i + 1, "/echo", "POST", False) for i in range(5))
    ends = b"".join(frame(DATA, END_STREAM, 2 * i + 1, b"x") for i in range(5))
    seeds = {"ok-too-many-streams": (SMALL | UNLIMITED, settings() + opened + ends)}
    e = hpack.Encoder()
    big = request(e, 1, "/hello", extra=[("x-big", "v" * 300)])
    seeds["ok-header-list-over-limit"] = (SMALL | UNLIMITED, settings() + big + request(e, 3, "/hello"))
    e = hpack.Encoder()
    block = e.encode([(":method", "POST"), (":scheme", "http"), (":path", "/echo"),
                      (":authority", "localhost")])
    padded = frame(HEADERS, END_HEADERS | PADDED | PRIORITY_FLAG, 1,
                   b"\x03" + b"\x00\x00\x00\x00\x10" + block + b"\x00" * 3)
    data = frame(DATA, PADDED, 1, b"\x02abc\x00\x00")
    trailers = frame(HEADERS, END_HEADERS | END_STREAM, 1, e.encode([("x-trailer", "t")]))
    other = frame(PRIORITY, 0, 3, b"\x00\x00\x00\x01\x20") + frame(0x20, 0, 0, b"unknown")
    seeds["ok-padding-priority-trailers"] = (WHOLE | UNLIMITED, settings() + padded + data +
                                             trailers + other)
    e = hpack.Encoder()
    goaway = request(e, 1, "/hello") + request(e, 3, "/big")
    seeds["ok-goaway-between-requests"] = (0x08 | UNLIMITED, settings() + goaway)
    e = hpack.Encoder()
    seeds["ok-ping-and-settings-ack"] = (UNLIMITED, settings(table=0, frame=16384) +
                                         frame(PING, 0, 0, b"12345678") +
                                         frame(SETTINGS, 1, 0) + request(e, 1, "/hello"))
    return seeds


def flood_seeds():
    e = hpack.Encoder()
    resets = b"".join(request(e, 2 * i + 1, "/hello", end=False) +
                      frame(RST_STREAM, 0, 2 * i + 1, (8).to_bytes(4, "big")) for i in range(210))
    seeds = {"goaway0b-rapid-reset": (SMALL_BUDGETS, settings() + resets)}
    e = hpack.Encoder()
    resets = b"".join(request(e, 2 * i + 1, "/hello", end=False) +
                      frame(RST_STREAM, 0, 2 * i + 1, (8).to_bytes(4, "big")) for i in range(8))
    seeds["goaway0b-rapid-reset-small"] = (SMALL | UNLIMITED, settings() + resets)
    pings = b"".join(frame(PING, 0, 0, i.to_bytes(8, "big")) for i in range(12))
    seeds["goaway0b-ping-flood"] = (SMALL | 0x30, settings() + pings)
    seeds["goaway0b-settings-flood"] = (SMALL | UNLIMITED, settings() * 12)
    e = hpack.Encoder()
    empty = b"".join(frame(DATA, 0, 1) for _ in range(12))
    seeds["goaway0b-empty-data-flood"] = (SMALL | UNLIMITED, settings() +
                                          request(e, 1, "/echo", "POST", False) + empty)
    e = hpack.Encoder()
    block = e.encode([(":method", "GET"), (":scheme", "http"), (":path", "/hello")])
    # accept-encoding (static index 16) once per frame: valid, endless.
    conts = b"".join(frame(CONTINUATION, 0, 1, b"\x90") for _ in range(40))
    seeds["goaway0b-continuation-flood"] = (UNLIMITED, settings() + frame(HEADERS, END_STREAM, 1,
                                                                          block) + conts)
    # A defence trips inside an nghttp2 callback, and a SETTINGS frame of a
    # bad size follows in the same read: nghttp2 must not parse it.
    e = hpack.Encoder()
    trip = request(e, 1, "/echo", "POST", False, authority="x") + frame(DATA, 0, 1) * 9
    seeds["goaway0b-regress-flood-then-bad-frame-size"] = (
        SMALL | UNLIMITED | WHOLE, settings() + trip + frame(SETTINGS, 0, 0, b"\x00"))
    return seeds


def hpack_seeds():
    # A literal with incremental indexing (0x40) of a 4000-byte value fills
    # the dynamic table; each 0xbe (index 62) then decodes to all of it.
    literal = b"\x40\x01x" + b"\x7f\xa1\x1e" + b"v" * 4000
    head = hpack.Encoder().encode([(":method", "GET"), (":scheme", "http"), (":path", "/")])
    bomb = frame(HEADERS, END_HEADERS | END_STREAM, 1, head + literal + b"\xbe" * 300)
    seeds = {"goaway0b-hpack-bomb": (UNLIMITED, settings() + bomb)}
    # A dynamic table size update (0x3f prefix) to 8192, above the 4096
    # the server allows.
    update = b"\x3f\xe1\x3f" + head
    seeds["goaway09-table-size-update"] = (UNLIMITED, settings() +
                                           frame(HEADERS, END_HEADERS | END_STREAM, 1, update))
    seeds["goaway09-bad-hpack-index"] = (UNLIMITED, settings() +
                                         frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\xff\xff"))
    seeds["goaway01-bad-preface"] = (RAW | UNLIMITED, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    seeds["goaway01-even-stream"] = (UNLIMITED, settings() +
                                     request(hpack.Encoder(), 2, "/hello"))
    seeds["goaway01-data-on-stream-0"] = (UNLIMITED, settings() + frame(DATA, 0, 0, b"x"))
    return seeds


def write_seeds(directory, seeds):
    os.makedirs(directory, exist_ok=True)
    for name, (mode, stream) in sorted(seeds.items()):
        with open(os.path.join(directory, name), "wb") as out:
            out.write(bytes([mode]) + stream)


async def pipe(reader, writer, record):
    try:
        while data := await reader.read(65536):
            if record is not None:
                record.append(data)
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def proxy(upstream_port, captured, ready):
    """Forwards every connection to the server, keeping what clients sent."""
    async def serve(client_reader, client_writer):
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        record = []
        captured.append(record)
        await asyncio.gather(pipe(client_reader, server_writer, record),
                             pipe(server_reader, client_writer, None))

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    ready.append(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


CLIENTS = {
    "ok-curl-get": ["curl", "-s", "-o", "/dev/null", "--http2-prior-knowledge", "URL/hello"],
    "ok-curl-post": ["curl", "-s", "-o", "/dev/null", "--http2-prior-knowledge", "-d",
                     "name=value&x=1", "URL/echo"],
    "ok-nghttp-three-gets": ["nghttp", "-n", "URL/hello", "URL/file", "URL/big"],
    "ok-nghttp-post": ["nghttp", "-n", "-d", "DATAFILE", "URL/echo"],
    "ok-h2load-six-requests": ["h2load", "-n", "6", "-c", "1", "-m", "3", "URL/hello"],
}


def start_server(binary, root):
    server = subprocess.Popen([binary, "--port", "0", "--h2c", "--root", root],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()
    match = re.search(r"listening on [0-9.]+:(\d+)", line)
    if not match:
        server.kill()
        sys.exit(f"make_seeds.py: no listening line from {binary}: {line!r}")
    return server, int(match.group(1))


def run_clients(port, root):
    """Runs each client through the proxy; the stream it sent, by seed name."""
    import threading
    captured, ready = [], []
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=lambda: loop.run_until_complete(
        proxy(port, captured, ready)), daemon=True)
    thread.start()
    while not ready:
        thread.join(0.05)
    seeds = {}
    for name, argv in CLIENTS.items():
        before = len(captured)
        argv = [a.replace("URL", f"http://127.0.0.1:{ready[0]}")
                .replace("DATAFILE", os.path.join(root, "file")) for a in argv]
        subprocess.run(argv, check=True, timeout=30, stdout=subprocess.DEVNULL)
        stream = b"".join(b"".join(record) for record in captured[before:])
        if not stream.startswith(PREFACE):
            sys.exit(f"make_seeds.py: {name} sent no HTTP/2 preface")
        # Raw mode: the preface is in the capture.
        seeds[name] = (RAW | UNLIMITED, stream)
    return seeds


def capture(binary, directory):
    with tempfile.TemporaryDirectory() as root:
        for name, size in (("file", 3000), ("big", 40000)):
            with open(os.path.join(root, name), "wb") as out:
                out.write(b"f" * size)
        server, port = start_server(binary, root)
        try:
            write_seeds(directory, run_clients(port, root))
        finally:
            server.terminate()
            server.wait(timeout=10)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "frames":
        write_seeds(sys.argv[2], {**ok_seeds(), **ok_seeds_more(), **flood_seeds(),
                                  **hpack_seeds()})
    elif len(sys.argv) == 4 and sys.argv[1] == "capture":
        capture(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
