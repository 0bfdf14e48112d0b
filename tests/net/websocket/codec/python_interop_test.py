"""The codec against the Python websockets library (10.4): frames that
websockets builds, with and without permessage-deflate, in both roles, are
decoded by interop_main into the same messages; frames interop_main encodes
are parsed by websockets into the messages that were sent. Needs Debian's
python3-websockets (run with /usr/bin/python3).

usage: python_interop_test.py INTEROP_MAIN
"""
import random
import subprocess
import sys

from websockets.extensions.permessage_deflate import PerMessageDeflate
from websockets.frames import Close, Frame, Opcode
from websockets.streams import StreamReader

BINARY = sys.argv[1]
# name -> (server_no_context_takeover, client_no_context_takeover,
#          server_max_window_bits, client_max_window_bits)
PARAMS = {"none": None, "default": (False, False, 15, 15), "small": (True, True, 10, 12)}

rng = random.Random(6455)
TEXT = "caf\u00e9 \u2603 \U0001f600 " * 40
MESSAGES = [
    ("text", "Hello".encode()),
    ("text", TEXT.encode()),
    ("text", b""),
    ("binary", bytes(rng.getrandbits(8) for _ in range(70000))),
    ("binary", b"z" * 5000),
]


def extensions(name, python_role):
    """The websockets extension for the Python side (local = its role)."""
    if PARAMS[name] is None:
        return []
    snct, cnct, sbits, cbits = PARAMS[name]
    if python_role == "client":
        return [PerMessageDeflate(snct, cnct, sbits, cbits)]
    return [PerMessageDeflate(cnct, snct, cbits, sbits)]


def hexed(data):
    return data.hex() or "-"


def python_frames(params, python_role):
    """What websockets sends: the messages, one fragmented, pings, a close."""
    exts = extensions(params, python_role)
    mask = python_role == "client"
    out = b""
    for kind, data in MESSAGES:
        opcode = Opcode.TEXT if kind == "text" else Opcode.BINARY
        out += Frame(opcode, data).serialize(mask=mask, extensions=exts)
    # A text message in three fragments, split inside a code point, with a
    # ping between.
    text = "fragmented \u00fcn\u00efc\u00f6de".encode()
    out += Frame(Opcode.TEXT, text[:12], fin=False).serialize(mask=mask, extensions=exts)
    out += Frame(Opcode.PING, b"between").serialize(mask=mask, extensions=exts)
    out += Frame(Opcode.CONT, text[12:20], fin=False).serialize(mask=mask, extensions=exts)
    out += Frame(Opcode.CONT, text[20:]).serialize(mask=mask, extensions=exts)
    out += Frame(Opcode.PONG, b"").serialize(mask=mask, extensions=exts)
    close = Close(1001, "bye \u2713").serialize()
    out += Frame(Opcode.CLOSE, close).serialize(mask=mask, extensions=exts)
    expected = [f"message {kind} {hexed(data)}" for kind, data in MESSAGES]
    expected += ["ping " + hexed(b"between"), "message text " + hexed(text), "pong -",
                 "close 1001 " + hexed("bye \u2713".encode())]
    return out, expected


def check_same(what, got, expected):
    """Event lists equal; else the first difference, shortened."""
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"{what}: event {i}: got {g[:80]}..., expected {e[:80]}..."
    assert len(got) == len(expected), f"{what}: {len(got)} events, expected {len(expected)}"


def check_decode(role, params):
    python_role = "client" if role == "server" else "server"
    frames, expected = python_frames(params, python_role)
    result = subprocess.run([BINARY, "decode", role, params], input=frames,
                            capture_output=True, check=True, timeout=60)
    got = result.stdout.decode().splitlines()
    check_same(f"decode {role} {params}", got, expected)


def parse_all(data, mask, exts):
    """Frames in `data` as websockets parses them, messages reassembled."""
    reader = StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    events, parts, kind = [], [], None
    while True:
        parser = Frame.parse(reader.read_exact, mask=mask, extensions=exts)
        try:
            while True:
                next(parser)
        except StopIteration as done:
            frame = done.value
        except EOFError:
            return events
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
            kind = "text" if frame.opcode == Opcode.TEXT else "binary"
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
            parts.append(frame.data)
            if frame.fin:
                events.append(f"message {kind} {hexed(b''.join(parts))}")
                parts = []
        elif frame.opcode == Opcode.PING:
            events.append("ping " + hexed(frame.data))
        elif frame.opcode == Opcode.CLOSE:
            close = Close.parse(frame.data)
            events.append(f"close {close.code} {hexed(close.reason.encode())}")


def check_encode(role, params):
    python_role = "client" if role == "server" else "server"
    lines = [f"{kind} {hexed(data)}" for kind, data in MESSAGES]
    lines += [f"fragments 1000 binary {hexed(MESSAGES[3][1])}",
              f"fragments 7 text {hexed(TEXT.encode())}",
              "ping " + hexed(b"p"), "close 1000 " + hexed("done \u2713".encode())]
    result = subprocess.run([BINARY, "encode", role, params], input="\n".join(lines).encode(),
                            capture_output=True, check=True, timeout=60)
    got = parse_all(result.stdout, role == "client", extensions(params, python_role))
    expected = [f"message {kind} {hexed(data)}" for kind, data in MESSAGES]
    expected += [f"message binary {hexed(MESSAGES[3][1])}", f"message text {hexed(TEXT.encode())}",
                 "ping " + hexed(b"p"), "close 1000 " + hexed("done \u2713".encode())]
    check_same(f"encode {role} {params}", got, expected)


def main():
    for role in ("server", "client"):
        for params in PARAMS:
            check_decode(role, params)
            check_encode(role, params)
            print(f"ok: {role} {params}")


if __name__ == "__main__":
    main()
