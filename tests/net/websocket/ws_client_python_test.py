"""libnet's WebSocket client against python3-websockets 10.4 as the server:
ws_client_cases (the coroutine client) runs its cases (echoes up to 16 MiB
in 1 MiB fragments, the automatic pong, every close code, the server's own
close) against a websockets server with deflate on and off, offered and not.

usage: ws_client_python_test.py WS_CLIENT_CASES BACKEND
"""

import asyncio
import sys

import websockets

WAIT = 90  # seconds for one run of the client


async def handler(ws, path):
    try:
        await serve_messages(ws)
    except websockets.ConnectionClosed:
        pass  # the client closed with an error code: one of the cases


async def serve_messages(ws):
    async for message in ws:
        if message == "ping-me":
            pong = await ws.ping(b"from python")
            await asyncio.wait_for(pong, 10)
            await ws.send("pong-received")
        elif message == "close-me":
            await ws.close(4002, "python says bye")
            return
        else:
            await ws.send(message)


async def run_case(binary, backend, server_deflate, offer, expect):
    compression = "deflate" if server_deflate else None
    async with websockets.serve(handler, "127.0.0.1", 0, compression=compression,
                                max_size=None, ping_interval=None) as server:
        port = server.sockets[0].getsockname()[1]
        url = "ws://127.0.0.1:%d/cases" % port
        proc = await asyncio.create_subprocess_exec(
            binary, url, backend, "1" if offer else "0", "1" if expect else "0")
        try:
            code = await asyncio.wait_for(proc.wait(), WAIT)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            code = "timeout"
    if code != 0:
        print("FAIL: server deflate %s, client offers %s: ws_client_cases exited %s"
              % (server_deflate, offer, code), file=sys.stderr)
        sys.exit(1)


def main():
    binary, backend = sys.argv[1], sys.argv[2]
    for server_deflate, offer, expect in [(False, False, False), (True, True, True),
                                          (False, True, False), (True, False, False)]:
        asyncio.run(run_case(binary, backend, server_deflate, offer, expect))
    print("ws_client_python_test (%s): all cases passed" % backend)


if __name__ == "__main__":
    main()
