"""Hostile HTTP/2 peers against examples/http:http_server --h2c (and TLS),
on each backend. Each attack checks what the server sent (GOAWAY and
RST_STREAM error codes parsed from its frames), that it closed when it
should, that its memory (VmRSS) stayed bounded where the attack aims at it,
and that the same server then answers a fresh conforming request (python3-h2):

- its SETTINGS: MAX_CONCURRENT_STREAMS 100, MAX_HEADER_LIST_SIZE 65536,
  no ENABLE_PUSH but 0, an INITIAL_WINDOW_SIZE of at least 64 KiB;
- 101 streams open at once (before and after acknowledging the SETTINGS):
  the extra one is refused (REFUSED_STREAM or PROTOCOL_ERROR), the 100 others
  are answered; after the acknowledgement nghttp2 may instead end the
  connection (GOAWAY PROTOCOL_ERROR naming stream 199, then the close);
- a header list over 64 KiB: that stream gets 431 or a reset, a second
  stream on the connection is answered;
- an HPACK bomb (a 4000-byte header in the dynamic table, then one-byte
  references to it): GOAWAY ENHANCE_YOUR_CALM or COMPRESSION_ERROR, memory
  bounded; a dynamic table size update above 4096: COMPRESSION_ERROR;
- Rapid Reset (HEADERS then RST_STREAM, 2000 times): GOAWAY ENHANCE_YOUR_CALM
  within the first 500;
- CONTINUATION floods, by bytes (16 KiB frames) and by count (empty frames):
  GOAWAY ENHANCE_YOUR_CALM, PROTOCOL_ERROR or COMPRESSION_ERROR, then close;
  a header block left unfinished is closed at --header-timeout;
- PING and SETTINGS floods without reading the acknowledgements: GOAWAY
  ENHANCE_YOUR_CALM and close (or a close), memory bounded;
- a zero stream window (INITIAL_WINDOW_SIZE 0) on a large file while the
  client keeps PINGing: closed after --idle-timeout 2, PINGs answered
  meanwhile; a client that never reads a 64 MiB file: closed after the idle
  timeout, memory bounded;
- preface timeouts with --header-timeout 1: part of the preface on the plain
  port, and a TLS connection with ALPN h2 that sends nothing;
- SIGTERM: GOAWAY NO_ERROR while a stream is in flight (held back by flow
  control), the stream then completes byte for byte, exit status 0.

usage: h2_peers_test.py MAKE_TEST_PKI HTTP_SERVER
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import os
import struct
import subprocess
import sys
import time

from h2peer import (ACK, CANCEL, COMPRESSION_ERROR, DATA, ENABLE_PUSH, END_STREAM, ENHANCE_YOUR_CALM, GOAWAY,
                    HEADERS, INITIAL_WINDOW_SIZE, MAX_CONCURRENT_STREAMS, MAX_HEADER_LIST_SIZE,
                    MAX_WINDOW, MIB, NO_ERROR, PING, PREFACE, PROTOCOL_ERROR, REFUSED_STREAM, RST_STREAM,
                    SETTINGS, WAIT, Conn, Server, check, continuation_frame, data_frame,
                    error_name, fail, headers_frame, hpack_indexed, hpack_literal,
                    hpack_table_size_update, ping_frame, request_block, rst_frame,
                    settings_frame, still_serves, summary, tls_context, wait_until,
                    window_update_frame)

TMP = os.environ.get("TEST_TMPDIR", "/tmp")
HELLO = b"hello world\n"
FLOOD_CODES = (ENHANCE_YOUR_CALM, PROTOCOL_ERROR, COMPRESSION_ERROR)


def make_root():
    root = os.path.join(TMP, "h2-peers-root")
    os.makedirs(root, exist_ok=True)
    block = bytearray(os.urandom(MIB))
    with open(os.path.join(root, "big.bin"), "wb") as f:
        for i in range(64):  # 64 MiB, each MiB marked with its index
            block[:8] = struct.pack("!Q", i)
            f.write(block)
    with open(os.path.join(root, "mid.bin"), "wb") as f:
        f.write(os.urandom(8 * MIB))
    return root


def expect_goaway(conn, codes, what):
    """The server sent GOAWAY with one of `codes` and closed."""
    closed = conn.read_to_close()
    goaway = conn.goaway()
    check(goaway is not None and goaway.error_code() in codes,
          "%s: expected GOAWAY %s, got %s (%s)" % (
              what, "/".join(error_name(c) for c in codes),
              goaway or "no GOAWAY", summary(conn.frames)))
    check(closed, "%s: GOAWAY %s sent but the connection stayed open %d s" % (
        what, error_name(goaway.error_code()), WAIT))
    print("  %s: %s, then the close" % (what, goaway))


def settings_case(server):
    conn = Conn(server.port)
    first = conn.read_frame()
    check(first is not None and first.kind == SETTINGS and not first.flags,
          "the server's first frame is %s, not its SETTINGS" % first)
    settings = first.settings()
    check(settings.get(MAX_CONCURRENT_STREAMS) == 100, "SETTINGS %s: MAX_CONCURRENT_STREAMS "
          "is not 100" % settings)
    check(settings.get(MAX_HEADER_LIST_SIZE) == 65536, "SETTINGS %s: MAX_HEADER_LIST_SIZE "
          "is not 65536" % settings)
    # A server may leave ENABLE_PUSH out; if it sends it, it must be 0.
    check(settings.get(ENABLE_PUSH, 0) == 0, "SETTINGS %s: ENABLE_PUSH is not 0" % settings)
    check(settings.get(INITIAL_WINDOW_SIZE, 65535) >= 65535, "SETTINGS %s: a window under "
          "64 KiB" % settings)
    conn.request(1, "/hello")
    conn.read_until(lambda f: f.stream == 1 and f.flags & END_STREAM and f.kind in (DATA, HEADERS),
                    "raw GET /hello")
    response = conn.response(1)
    check(response["status"] == "200" and response["body"] == HELLO,
          "raw GET /hello: %s" % response)
    conn.close()


def open_streams(conn, count):
    """`count` POSTs to /hello whose bodies have not ended: streams 1, 3, ..."""
    data = b"".join(headers_frame(2 * i + 1, request_block("/hello", "POST"), end_stream=False)
                    for i in range(count))
    conn.send(data)


def ended(f):
    return f.kind in (DATA, HEADERS) and f.flags & END_STREAM


def handshake(conn):
    """Waits for the server's ACK of our SETTINGS (its own SETTINGS, read
    before, are acknowledged as they are read)."""
    conn.read_until(lambda f: f.kind == SETTINGS and f.flags & ACK, "the SETTINGS exchange")


def concurrent_streams_case(server, acknowledged):
    """101 streams open at once (POSTs whose bodies have not ended): the
    101st is refused; the 100 others are answered once their bodies end."""
    what = "101 concurrent streams, %s acknowledging the SETTINGS" % (
        "after" if acknowledged else "before")
    conn = Conn(server.port)
    if acknowledged:
        handshake(conn)
    else:
        conn.ack_settings = False
    open_streams(conn, 101)
    refused = conn.read_until(lambda f: f.kind == GOAWAY or f.stream == 201, what)
    if acknowledged and refused is not None and refused.kind == GOAWAY:
        connection_error_on_stream_limit(conn, refused, what)
        return
    check(refused is not None and refused.kind == RST_STREAM and
          refused.error_code() in (REFUSED_STREAM, PROTOCOL_ERROR),
          "%s: stream 201 got %s, not RST_STREAM REFUSED_STREAM or PROTOCOL_ERROR (%s)" % (
              what, refused, summary(conn.frames)))
    if not acknowledged:
        conn.ack_settings = True
        conn.send(settings_frame(ack=True))
    conn.send(b"".join(data_frame(2 * i + 1) for i in range(100)))
    pending = set(range(1, 201, 2))

    def all_answered(f):
        if ended(f):
            pending.discard(f.stream)
        return not pending

    conn.read_until(all_answered, what)
    check(not pending, "%s: %d of the 100 streams unanswered when the server closed (%s)" % (
        what, len(pending), summary(conn.frames)))
    for stream in range(1, 201, 2):
        response = conn.response(stream)
        check(response["status"] == "200" and response["body"] == HELLO,
              "%s: stream %d got %s" % (what, stream, response))
    check(conn.goaway() is None, "%s: %s" % (what, conn.goaway()))
    conn.close()


def connection_error_on_stream_limit(conn, goaway, what):
    """nghttp2 (1.52 and later) refuses a stream past an acknowledged
    SETTINGS_MAX_CONCURRENT_STREAMS with a connection error, which RFC 9113
    section 5.4.1 allows for any stream error: GOAWAY PROTOCOL_ERROR naming
    stream 199, the last of the 100, then the close. Only streams the server
    never took are lost, so a client may retry all of them elsewhere."""
    last = struct.unpack_from("!I", goaway.payload)[0] & MAX_WINDOW
    check(goaway.error_code() == PROTOCOL_ERROR and last == 199,
          "%s: %s, expected RST_STREAM on stream 201 or GOAWAY PROTOCOL_ERROR with last stream "
          "199 (%s)" % (what, goaway, summary(conn.frames)))
    check(conn.read_to_close(), "%s: %s, then the connection stayed open" % (what, goaway))
    print("  %s: %s, then the close (a connection error)" % (what, goaway))
    conn.close()


def split_block(stream, block, end_stream=True, size=16384):
    """A header block as HEADERS plus CONTINUATION frames of `size` bytes."""
    pieces = [block[i:i + size] for i in range(0, len(block), size)]
    frames = [headers_frame(stream, pieces[0], end_stream, end_headers=len(pieces) == 1)]
    for i, piece in enumerate(pieces[1:], 2):
        frames.append(continuation_frame(stream, piece, end_headers=i == len(pieces)))
    return b"".join(frames)


def big_header_list_case(server):
    """100 KB of headers on stream 1 (in HEADERS and 6 CONTINUATIONs, every
    field under 1 KB), then an ordinary GET on stream 3."""
    what = "a 100 KB header list"
    conn = Conn(server.port)
    fillers = [("x-filler-%03d" % i, "v" * 1000) for i in range(100)]
    conn.send(split_block(1, request_block("/hello", extra=fillers)) +
              headers_frame(3, request_block("/hello")))
    done = set()

    def both_done(f):
        if ended(f) or f.kind == RST_STREAM:
            done.add(f.stream)
        return {1, 3} <= done

    conn.read_until(both_done, what)
    first, second = conn.response(1), conn.response(3)
    check(first["status"] == "431" or first["reset"] is not None,
          "%s: stream 1 got %s, not 431 or a reset (%s)" % (what, first, summary(conn.frames)))
    check(second["status"] == "200" and second["body"] == HELLO,
          "%s: the next stream on the connection got %s (%s)" % (
              what, second, summary(conn.frames)))
    check(conn.goaway() is None, "%s: %s" % (what, conn.goaway()))
    print("  %s: stream 1 got %s" % (
        what, "status %s" % first["status"] if first["status"] else
        "RST_STREAM " + error_name(first["reset"])))
    conn.close()


def hpack_bomb_case(server):
    """x-bomb: 4000 bytes into the dynamic table, then 64 streams of 16000
    one-byte references to it: 1 MiB on the wire, 4 GB decoded."""
    conn = Conn(server.port)
    before = server.rss()
    conn.send(headers_frame(1, request_block("/hello") +
                            hpack_literal("x-bomb", "a" * 4000, indexed=True)))
    bomb = request_block("/hello") + hpack_indexed(62) * 16000
    conn.pump(b"".join(headers_frame(2 * i + 3, bomb) for i in range(64)))
    grown = server.rss() - before
    expect_goaway(conn, (ENHANCE_YOUR_CALM, COMPRESSION_ERROR), "HPACK bomb")
    check(grown < 32 * MIB, "HPACK bomb: the server grew by %d MiB" % (grown // MIB))
    conn.close()


def table_size_case(server):
    conn = Conn(server.port)
    conn.send(headers_frame(1, hpack_table_size_update(8192) + request_block("/hello")))
    expect_goaway(conn, (COMPRESSION_ERROR,), "a dynamic table size update to 8192")
    conn.close()


def rapid_reset_case(server):
    conn = Conn(server.port)
    block = request_block("/hello")
    conn.pump(b"".join(headers_frame(s, block) + rst_frame(s, CANCEL)
                       for s in range(1, 4001, 2)))
    what = "Rapid Reset (2000 HEADERS + RST_STREAM)"
    expect_goaway(conn, (ENHANCE_YOUR_CALM,), what)
    # The server's own bound (a burst of about 200), not nghttp2's (1000).
    last = struct.unpack_from("!I", conn.goaway().payload)[0] & MAX_WINDOW
    check(last < 1001, "%s: GOAWAY after %d streams" % (what, (last + 1) // 2))
    conn.close()


def continuation_case(server, what, fragment, count):
    """HEADERS without END_HEADERS, then `count` CONTINUATIONs carrying
    `fragment` each, none ending the block."""
    conn = Conn(server.port)
    before = server.rss()
    head = headers_frame(1, request_block("/hello"), end_headers=False)
    sent = conn.pump(head + continuation_frame(1, fragment) * count)
    grown = server.rss() - before
    expect_goaway(conn, FLOOD_CODES, "%s (%d bytes written)" % (what, sent))
    check(grown < 32 * MIB, "%s: the server grew by %d MiB" % (what, grown // MIB))
    conn.close()


def closed_in_time(conn, what, low=0.5, high=10.0):
    """The server closes the connection between `low` and `high` seconds
    from now (--header-timeout 1 against --idle-timeout 30)."""
    start = time.monotonic()
    closed = conn.read_to_close()
    elapsed = time.monotonic() - start
    check(closed and low <= elapsed <= high,
          "%s: %s after %.1f s, expected a close after %.1f to %.1f s; received %s, then %r" % (
              what, "closed" if closed else "still open", elapsed, low, high,
              summary(conn.frames), bytes(conn.buf[:200])))
    print("  %s: closed after %.1f s, %s%s" % (
        what, elapsed, conn.goaway() or "no GOAWAY",
        ", then %r" % bytes(conn.buf[:60]) if conn.buf else ""))
    conn.close()


def unfinished_block_case(server):
    conn = Conn(server.port)
    handshake(conn)
    conn.send(headers_frame(1, request_block("/hello"), end_headers=False))
    closed_in_time(conn, "a header block left unfinished")


def partial_preface_case(server):
    conn = Conn(server.port, preface=False)
    conn.send(PREFACE[:20])
    closed_in_time(conn, "20 bytes of the preface")


def tls_silent_case(server, ca):
    conn = Conn(server.port, tls=tls_context(ca), preface=False)
    closed_in_time(conn, "TLS with ALPN h2, then nothing")


def flood_case(server, what, unit, count):
    """`count` copies of `unit` (each asking for an acknowledgement) written
    without reading anything for up to 10 s, then everything read."""
    conn = Conn(server.port)
    handshake(conn)
    before = server.rss()
    sent = conn.pump(unit * count, timeout=10, read=False)
    grown = server.rss() - before
    closed = conn.read_to_close()
    grown = max(grown, server.rss() - before)
    acks = sum(1 for f in conn.frames if f.kind in (PING, SETTINGS) and f.flags & ACK)
    goaway = conn.goaway()
    what = "%s (%d of %d bytes written unread, %d acknowledged)" % (
        what, sent, len(unit) * count, acks)
    check(closed, "%s: the connection stayed open (%s)" % (what, summary(conn.frames)))
    check(goaway is None or goaway.error_code() == ENHANCE_YOUR_CALM,
          "%s: %s, expected ENHANCE_YOUR_CALM" % (what, goaway))
    check(grown < 32 * MIB, "%s: the server grew by %d MiB" % (what, grown // MIB))
    print("  %s: closed, %s" % (what, goaway or "no GOAWAY"))
    conn.close()


def zero_window_case(server):
    """INITIAL_WINDOW_SIZE 0 and a GET of 64 MiB: no DATA can move; the
    client PINGs every quarter of a second. Closed at --idle-timeout 2."""
    what = "a zero window on /big.bin, PINGs every 0.25 s"
    conn = Conn(server.port, settings=[(INITIAL_WINDOW_SIZE, 0)])
    conn.request(1, "/big.bin")
    conn.read_until(lambda f: f.stream == 1 and f.kind == HEADERS, what)
    start = time.monotonic()
    while time.monotonic() - start < WAIT and conn.read_for(0.25):
        conn.send(ping_frame())
    elapsed = time.monotonic() - start
    acks = sum(1 for f in conn.frames if f.kind == PING and f.flags & ACK)
    response = conn.response(1)
    check(conn.closed, "%s: still open after %d s (%s)" % (what, WAIT, summary(conn.frames)))
    check(1.5 <= elapsed <= 8, "%s: closed after %.1f s, expected about 2" % (what, elapsed))
    check(acks >= 3, "%s: %d PINGs answered before the close" % (what, acks))
    check(response["status"] == "200" and not response["body"],
          "%s: %s" % (what, response))
    print("  %s: closed after %.1f s, %d PINGs answered, %s" % (
        what, elapsed, acks, conn.goaway() or "no GOAWAY"))
    conn.close()


def never_read_case(server):
    """A GET of 64 MiB with the windows wide open and a 4 KiB receive buffer,
    then no reading at all: the server's memory stays bounded and it closes
    the connection at --idle-timeout 2 (seen in /proc/net/tcp)."""
    what = "a client that never reads /big.bin"
    before = server.rss()
    conn = Conn(server.port, rcvbuf=4096, settings=[(INITIAL_WINDOW_SIZE, MAX_WINDOW)])
    conn.send(window_update_frame(0, MAX_WINDOW - 65535))
    conn.request(1, "/big.bin")
    peak = [before]

    def gone():
        peak[0] = max(peak[0], server.rss())
        return conn.server_closed()

    took = wait_until(gone, WAIT)
    check(took is not None, "%s: the connection still open after %d s" % (what, WAIT))
    check(took >= 1.5, "%s: closed after %.1f s, before the idle timeout" % (what, took))
    grown = peak[0] - before
    check(grown < 24 * MIB, "%s: the server grew by %d MiB" % (what, grown // MIB))
    print("  %s: closed after %.1f s, the server grew by %.1f MiB" % (what, took, grown / MIB))
    conn.close()


def sigterm_case(server, root):
    """A GET of 8 MiB held back by the 64 KiB default window when SIGTERM
    comes: GOAWAY NO_ERROR, then, with the window opened, the whole file,
    then the close and exit status 0."""
    what = "SIGTERM with /mid.bin in flight"
    conn = Conn(server.port)
    conn.request(1, "/mid.bin")
    conn.read_until(lambda f: f.stream == 1 and f.kind == DATA, what)
    server.signal()
    goaway = conn.read_until(lambda f: f.kind == GOAWAY, what)
    check(goaway is not None and goaway.error_code() == NO_ERROR,
          "%s: %s, expected GOAWAY NO_ERROR (%s)" % (what, goaway, summary(conn.frames)))
    conn.send(window_update_frame(0, 16 * MIB) + window_update_frame(1, 16 * MIB))
    closed = conn.read_to_close()
    response = conn.response(1)
    with open(os.path.join(root, "mid.bin"), "rb") as f:
        expected = f.read()
    check(response["ended"] and response["body"] == expected,
          "%s: %d of %d bytes, ended %s (%s)" % (what, len(response["body"]), len(expected),
                                                 response["ended"], summary(conn.frames)))
    codes = [f.error_code() for f in conn.frames if f.kind == GOAWAY]
    check(set(codes) == {NO_ERROR}, "%s: GOAWAY codes %s" % (what, codes))
    check(closed, "%s: the connection stayed open after the stream" % what)
    code = server.wait_exit()
    check(code == 0, "%s: exit status %d" % (what, code))
    conn.close()


def attack_cases():
    """(name, function(server)) of the attacks on the --idle-timeout 30 server."""
    return [
        ("SETTINGS", settings_case),
        ("101 streams before the ack", lambda s: concurrent_streams_case(s, False)),
        ("101 streams after the ack", lambda s: concurrent_streams_case(s, True)),
        ("a 100 KB header list", big_header_list_case),
        ("an HPACK bomb", hpack_bomb_case),
        ("a table size update over 4096", table_size_case),
        ("Rapid Reset", rapid_reset_case),
        ("CONTINUATION bytes", lambda s: continuation_case(
            s, "CONTINUATION flood, 16 KiB frames", hpack_indexed(16) * 16384, 640)),
        ("CONTINUATION count", lambda s: continuation_case(
            s, "CONTINUATION flood, empty frames", b"", 200000)),
        ("an unfinished header block", unfinished_block_case),
        ("part of the preface", partial_preface_case),
        ("a PING flood", lambda s: flood_case(s, "PING flood", ping_frame(), 1000000)),
        ("a SETTINGS flood", lambda s: flood_case(
            s, "SETTINGS flood", settings_frame([(INITIAL_WINDOW_SIZE, 65535)]), 1000000)),
    ]


def run_backend(binary, backend, pki, root):
    server = Server(binary, backend, "--h2c", "--root", root, "--idle-timeout", "30",
                    "--header-timeout", "1")
    for name, case in attack_cases():
        case(server)
        still_serves(server, name)
        print("ok: %s: %s" % (backend, name), flush=True)
    slow = Server(binary, backend, "--h2c", "--root", root, "--idle-timeout", "2")
    for name, case in [("a zero window", zero_window_case), ("never reading", never_read_case)]:
        case(slow)
        still_serves(slow, name)
        print("ok: %s: %s" % (backend, name), flush=True)
    slow.stop()
    tls = Server(binary, backend, "--tls-cert", pki + "/server.pem", "--tls-key",
                 pki + "/server.key", "--idle-timeout", "30", "--header-timeout", "1")
    tls_silent_case(tls, pki + "/ca.pem")
    still_serves(tls, "a silent TLS client", tls=tls_context(pki + "/ca.pem"))
    tls.stop()
    print("ok: %s: TLS preface timeout" % backend, flush=True)
    sigterm_case(server, root)
    print("ok: %s: SIGTERM" % backend, flush=True)


def main():
    if len(sys.argv) != 3:
        fail("usage: h2_peers_test.py MAKE_TEST_PKI HTTP_SERVER")
    make_pki, binary = sys.argv[1:]
    pki = os.path.join(TMP, "pki")
    os.makedirs(pki, exist_ok=True)
    subprocess.run([make_pki, pki], check=True, timeout=WAIT)
    root = make_root()
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        run_backend(binary, backend, pki, root)


if __name__ == "__main__":
    main()
