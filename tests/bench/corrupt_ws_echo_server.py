#!/usr/bin/python3
"""A WebSocket echo server that flips one byte of every message it echoes
(its first byte, XOR 1, same length and type), so that ws_peers_test.sh can
check that ws_load --verify notices a wrong echo. Python's websockets
module (python3-websockets), which negotiates permessage-deflate when the
client offers it. Prints "corrupt_ws_echo_server listening on
127.0.0.1:PORT" once it accepts; runs until killed."""

import asyncio
import sys

import websockets


def corrupt(message):
    if isinstance(message, str):
        return chr(ord(message[0]) ^ 1) + message[1:]
    return bytes([message[0] ^ 1]) + message[1:]


async def echo(ws, _path):
    async for message in ws:
        await ws.send(corrupt(message))


async def main():
    async with websockets.serve(echo, "127.0.0.1", 0, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        print("corrupt_ws_echo_server listening on 127.0.0.1:%d" % port, flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
