"""examples/http:coro_http_server's GET /ws (the coroutine WebSocket API)
against python3-websockets: echoes up to 16 MiB in fragments, ping/pong, a
close code coming back, a bad upgrade refused with 426, and plain HTTP still
served beside it.

usage: coro_http_ws_test.py CORO_HTTP_SERVER BACKEND
"""

import asyncio
import atexit
import os
import select
import socket
import subprocess
import sys

import websockets

WAIT = 20


def check(condition, message):
    if not condition:
        print("FAIL: " + message, file=sys.stderr)
        sys.exit(1)


def start(binary, backend):
    proc = subprocess.Popen([binary, "--address", "127.0.0.1", "--port", "0",
                             "--backend", backend], stdout=subprocess.PIPE, text=True)
    atexit.register(proc.kill)
    ready, _, _ = select.select([proc.stdout], [], [], WAIT)
    check(ready, "coro_http_server did not start")
    line = proc.stdout.readline()
    check("listening on" in line, "unexpected banner: " + line)
    return proc, int(line.rsplit(":", 1)[1])


async def echo_cases(url):
    async with websockets.connect(url, max_size=None, ping_interval=None,
                                  open_timeout=WAIT, close_timeout=WAIT) as ws:
        big = os.urandom(16 * 1024 * 1024)
        for message in ["hello", b"\x00\x01", "", big]:
            await ws.send(message)
            reply = await asyncio.wait_for(ws.recv(), WAIT)
            check(reply == message, "echo of %d bytes" % len(message))
        await ws.send((big[i:i + 1048576] for i in range(0, len(big), 1048576)))
        check(await asyncio.wait_for(ws.recv(), WAIT) == big, "16 MiB fragmented echo")
        await asyncio.wait_for(await ws.ping(b"x"), WAIT)
        await ws.close(4321, "bye")
        check(ws.close_code == 4321, "close 4321 answered with %s" % ws.close_code)


def raw_request(port, request):
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
        sock.sendall(request.encode())
        answer = b""
        while True:
            data = sock.recv(65536)
            if not data or b"\r\n\r\n" in answer + data:
                return answer + data
            answer += data


def main():
    binary, backend = sys.argv[1], sys.argv[2]
    proc, port = start(binary, backend)
    asyncio.run(echo_cases("ws://127.0.0.1:%d/ws" % port))
    answer = raw_request(port, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                               "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                               "Sec-WebSocket-Version: 8\r\n\r\n")
    check(answer.startswith(b"HTTP/1.1 426 "), "bad version answered %r" % answer[:30])
    answer = raw_request(port, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    check(answer.startswith(b"HTTP/1.1 200 "), "/hello answered %r" % answer[:30])
    proc.terminate()
    check(proc.wait(WAIT) == 0, "coro_http_server did not stop cleanly")
    print("coro_http_ws_test (%s): all cases passed" % backend)


if __name__ == "__main__":
    main()
