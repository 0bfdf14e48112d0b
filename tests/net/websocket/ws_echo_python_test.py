"""ws_echo_server against an independent peer: python3-websockets 10.4 as
the client (large fragmented messages, ping/pong, every close code, deflate
on and off), then hostile frames written by hand on a raw socket after a
hand-made handshake. Each hostile case asserts the close code the server
sends and that the server still serves a new connection afterwards.

Then wss:// with two I/O threads: certificates made at test time
(make_test_pki), deflate, several clients at once.

usage: ws_echo_python_test.py WS_ECHO_SERVER BACKEND MAKE_TEST_PKI
"""

import asyncio
import atexit
import base64
import os
import select
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import zlib

import websockets

MIB = 1024 * 1024
WAIT = 20  # seconds: every wait is bounded


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


class Server:
    """A ws_echo_server process on an ephemeral loopback port."""

    def __init__(self, binary, backend, *args):
        self.proc = subprocess.Popen(
            [binary, "--address", "127.0.0.1", "--port", "0", "--backend", backend, *args],
            stdout=subprocess.PIPE, text=True)
        atexit.register(self.proc.kill)  # a failing check must not leave it running
        ready, _, _ = select.select([self.proc.stdout], [], [], WAIT)
        check(ready, "ws_echo_server did not start")
        line = self.proc.stdout.readline()
        check(line.startswith("ws_echo_server listening on "), "unexpected banner: " + line)
        self.port = int(line.rsplit(":", 1)[1])
        self.url = "ws://127.0.0.1:%d/echo" % self.port

    def rss_bytes(self):
        with open("/proc/%d/status" % self.proc.pid) as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def stop(self):
        self.proc.terminate()
        try:
            code = self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("ws_echo_server did not stop on SIGTERM")
        check(code == 0, "ws_echo_server exited with %d on SIGTERM" % code)


def chunks(data, size):
    for i in range(0, len(data), size):
        yield data[i:i + size]


async def echo_cases(url, compression, tls=None):
    async with websockets.connect(url, compression=compression, max_size=None, ssl=tls,
                                  ping_interval=None, open_timeout=WAIT) as ws:
        if compression:
            check(ws.extensions, "deflate was not negotiated")
        else:
            check(not ws.extensions, "an extension was negotiated without an offer")
        for message in ["hello", "", "żółw ☃ 🐢", b"", b"\x00\xff" * 1000]:
            await ws.send(message)
            reply = await asyncio.wait_for(ws.recv(), WAIT)
            check(reply == message and type(reply) is type(message),
                  "echo of %r came back as %r" % (message[:20], reply[:20]))
        big = os.urandom(16 * MIB)
        await ws.send(chunks(big, 1 * MIB))  # 16 fragments
        reply = await asyncio.wait_for(ws.recv(), WAIT)
        check(reply == big, "16 MiB fragmented binary message not echoed intact")
        text = "é" * (8 * MIB)  # 16 MiB of UTF-8, fragments split inside characters
        await ws.send(chunks(text, 333333))
        reply = await asyncio.wait_for(ws.recv(), WAIT)
        check(reply == text, "16 MiB fragmented text message not echoed intact")
        pong = await ws.ping(b"are you there")
        await asyncio.wait_for(pong, WAIT)


async def close_case(url, code):
    reason = "reason for %d" % code
    ws = await websockets.connect(url, ping_interval=None, open_timeout=WAIT, close_timeout=WAIT)
    await ws.close(code, reason)
    check(ws.close_code == code, "close %d answered with %s" % (code, ws.close_code))


def close_codes():
    return [1000, 1001, 1002, 1003] + list(range(1007, 1015)) + [3000, 3999, 4000, 4999]


# ---- hand-made frames --------------------------------------------------------

def frame(opcode, payload=b"", fin=True, rsv=0, mask=True):
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    length = len(payload)
    mask_bit = 0x80 if mask else 0
    if length < 126:
        head += bytes([mask_bit | length])
    elif length < 65536:
        head += bytes([mask_bit | 126]) + struct.pack("!H", length)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", length)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def raw_connect(port, extensions=None):
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    key = base64.b64encode(os.urandom(16)).decode()
    request = ("GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n" % key)
    if extensions:
        request += "Sec-WebSocket-Extensions: %s\r\n" % extensions
    sock.sendall((request + "\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(4096)
        check(data, "connection closed during the handshake")
        head += data
    check(head.startswith(b"HTTP/1.1 101 "), "no 101: %r" % head[:40])
    rest = head.split(b"\r\n\r\n", 1)[1]
    return sock, rest


def recv_exact(sock, n, pending):
    while len(pending) < n:
        data = sock.recv(65536)
        if not data:
            return None, pending
        pending += data
    return pending[:n], pending[n:]


def read_close_code(sock, pending):
    """Reads frames until a close frame (returns its code) or EOF (None)."""
    while True:
        head, pending = recv_exact(sock, 2, pending)
        if head is None:
            return None
        opcode, length = head[0] & 0x0F, head[1] & 0x7F
        check(head[1] & 0x80 == 0, "server sent a masked frame")
        if length == 126:
            ext, pending = recv_exact(sock, 2, pending)
            length = struct.unpack("!H", ext)[0]
        elif length == 127:
            ext, pending = recv_exact(sock, 8, pending)
            length = struct.unpack("!Q", ext)[0]
        payload, pending = recv_exact(sock, length, pending)
        if payload is None:
            return None
        if opcode == 8:
            return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005


def read_eof(sock, pending):
    """True once the server has closed its side (after any frames)."""
    while True:
        data = sock.recv(65536)
        if not data:
            return True


def deflate_bomb():
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = compressor.compress(b"\0" * (64 * MIB)) + compressor.flush(zlib.Z_SYNC_FLUSH)
    return data[:-4]  # the 00 00 ff ff tail is left off (RFC 7692 7.2.1)


def hostile_cases():
    bad_utf8 = "aé".encode()
    return [
        ("unmasked client frame", [frame(1, b"hi", mask=False)], 1002, None),
        ("reserved opcode 3", [frame(3, b"x")], 1002, None),
        ("reserved opcode 0xB", [frame(0xB, b"x")], 1002, None),
        ("RSV2 set", [frame(1, b"x", rsv=0x20)], 1002, None),
        ("RSV3 set", [frame(1, b"x", rsv=0x10)], 1002, None),
        ("RSV1 without deflate", [frame(1, b"x", rsv=0x40)], 1002, None),
        ("ping of 126 bytes", [frame(9, b"p" * 126)], 1002, None),
        ("fragmented ping", [frame(9, b"p", fin=False), frame(0, b"q")], 1002, None),
        ("invalid UTF-8 split across fragments",
         [frame(1, bad_utf8[:2], fin=False), frame(0, b"\xc3\x28")], 1007, None),
        ("continuation without a message", [frame(0, b"x")], 1002, None),
        ("message over the limit", [frame(2, b"\0" * (MIB + 1))], 1009, None),
        ("deflate bomb", [frame(2, deflate_bomb(), rsv=0x40)], 1009, "permessage-deflate"),
    ]


def hostile_case(server, name, frames, expected, extensions):
    sock, pending = raw_connect(server.port, extensions)
    try:
        for f in frames:
            sock.sendall(f)
        code = read_close_code(sock, pending)
        check(code == expected, "%s: server closed with %s, expected %d" % (name, code, expected))
        check(read_eof(sock, b""), "%s: the server did not close its side" % name)
    finally:
        sock.close()
    asyncio.run(serves_again(server.url, name))


async def serves_again(url, after):
    async with websockets.connect(url, ping_interval=None, open_timeout=WAIT) as ws:
        await ws.send("still there?")
        reply = await asyncio.wait_for(ws.recv(), WAIT)
        check(reply == "still there?", "no echo after " + after)


def close_and_never_read(server):
    """A client that sends its close and does not read: the server answers and
    closes TCP regardless, and serves others meanwhile."""
    sock, pending = raw_connect(server.port)
    try:
        sock.sendall(frame(8, struct.pack("!H", 1000) + b"bye"))
        asyncio.run(serves_again(server.url, "a close left unread"))
        check(read_close_code(sock, pending) == 1000, "close not echoed with 1000")
        check(read_eof(sock, b""), "the server did not close TCP after the close handshake")
    finally:
        sock.close()


def bomb_memory(server):
    before = server.rss_bytes()
    for _ in range(3):
        hostile_case(server, "deflate bomb", [frame(2, deflate_bomb(), rsv=0x40)], 1009,
                     "permessage-deflate")
    grown = server.rss_bytes() - before
    # The inflater stops at the 1 MiB message limit plus one chunk; 64 MiB
    # of zeros never exist in the server.
    check(grown < 48 * MIB, "deflate bombs grew the server by %d bytes" % grown)


async def small_echoes(url, tls, count):
    async with websockets.connect(url, ssl=tls, ping_interval=None, open_timeout=WAIT) as ws:
        for i in range(count):
            await ws.send("message %d" % i)
            reply = await asyncio.wait_for(ws.recv(), WAIT)
            check(reply == "message %d" % i, "TLS echo %d came back as %r" % (i, reply))


async def tls_cases(url, tls):
    await echo_cases(url, "deflate", tls)
    # Several clients at once, spread over the I/O threads.
    await asyncio.gather(*(small_echoes(url, tls, 50) for _ in range(8)))


def tls_with_threads(binary, backend, make_pki):
    with tempfile.TemporaryDirectory() as pki:
        subprocess.run([make_pki, pki], check=True, timeout=WAIT)
        server = Server(binary, backend, "--threads", "2", "--deflate",
                        "--tls-cert", pki + "/server.pem", "--tls-key", pki + "/server.key")
        tls = ssl.create_default_context(cafile=pki + "/ca.pem")
        asyncio.run(tls_cases("wss://127.0.0.1:%d/echo" % server.port, tls))
        server.stop()


def main():
    binary, backend, make_pki = sys.argv[1], sys.argv[2], sys.argv[3]
    server = Server(binary, backend)
    asyncio.run(echo_cases(server.url, None))
    for code in close_codes():
        asyncio.run(close_case(server.url, code))
    server.stop()
    server = Server(binary, backend, "--deflate")
    asyncio.run(echo_cases(server.url, "deflate"))
    asyncio.run(echo_cases(server.url, None))
    server.stop()
    server = Server(binary, backend, "--deflate", "--max-message", str(MIB))
    for name, frames, expected, extensions in hostile_cases():
        hostile_case(server, name, frames, expected, extensions)
    close_and_never_read(server)
    bomb_memory(server)
    server.stop()
    tls_with_threads(binary, backend, make_pki)
    print("ws_echo_python_test (%s): all cases passed" % backend)


if __name__ == "__main__":
    main()
