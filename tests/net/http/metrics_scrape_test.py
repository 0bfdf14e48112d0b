#!/usr/bin/env python3
"""Scrapes of /metrics never block an I/O loop, however many come at once.

On epoll and io_uring: http_server --threads 4 --metrics-path /metrics; 8
scrapers, each scraping SCRAPES times on a new connection (so that every
I/O loop serves scrapes), while a client keeps asking /hello on one
keep-alive connection. Every scrape must be answered 200 with the series of
every loop, every /hello 200, and no loop may have blocked waiting for
another: libnet_loop_blocking_waits_total (each loop counts the times its
thread blocked until another loop answered) must not move. Before the fix
every scrape served on an I/O loop waited there for the other loops' queued
output, up to 250 ms each.

usage: metrics_scrape_test.py HTTP_SERVER
"""

import re
import socket
import subprocess
import sys
import threading
import time

from prometheus_client.parser import text_string_to_metric_families

STARTUP_TIMEOUT = 20
IO_TIMEOUT = 20
THREADS = 4
SCRAPERS = 8
SCRAPES = 25
HELLO = b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
SCRAPE = b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"


def fail(message):
    print("FAIL: " + message, file=sys.stderr, flush=True)
    sys.exit(1)


def start(server, backend):
    argv = [server, "--address", "127.0.0.1", "--port", "0", "--backend", backend,
            "--threads", str(THREADS), "--metrics-path", "/metrics"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if match:
            return proc, int(match.group(1))
    proc.kill()
    fail(f"{backend}: http_server did not start")


def read_response(sock, pending=b""):
    """(status, body, rest) of one Content-Length response."""
    data = pending
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("closed before a whole response")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", head + b"\r\n").group(1))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("closed inside a response body")
        body += chunk
    return int(head.split()[1]), body[:length], body[length:]


def scrape(port):
    with socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT) as sock:
        sock.sendall(SCRAPE)
        status, body, _ = read_response(sock)
    return status, body.decode()


def samples(text):
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, s.labels.get("server"), s.labels.get("loop"))] = s.value
    return out


def blocking_waits(parsed):
    return {(server, loop): v for (name, server, loop), v in parsed.items()
            if name == "libnet_loop_blocking_waits_total"}


class Scraper(threading.Thread):
    def __init__(self, port, errors):
        super().__init__(daemon=True)
        self.port, self.errors, self.done = port, errors, 0

    def run(self):
        for _ in range(SCRAPES):
            try:
                status, text = scrape(self.port)
            except (OSError, EOFError) as e:
                self.errors.append(f"scrape: {e!r}")
                return
            if status != 200 or "libnet_output_queued_bytes{" not in text:
                self.errors.append(f"scrape answered {status}")
                return
            self.done += 1


def hello_until(port, stop, counts, errors):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT) as sock:
            pending = b""
            while not stop.is_set():
                sock.sendall(HELLO)
                status, body, pending = read_response(sock, pending)
                if status != 200 or body != b"hello world\n":
                    errors.append(f"/hello answered {status} {body!r}")
                    return
                counts[0] += 1
    except (OSError, EOFError) as e:
        errors.append(f"/hello: {e!r}")


def check(server, backend):
    proc, port = start(server, backend)
    try:
        status, text = scrape(port)
        if status != 200:
            fail(f"{backend}: first scrape answered {status}")
        before = blocking_waits(samples(text))
        loops = {loop for (_, loop) in before}
        if loops != {str(i) for i in range(THREADS)} | {"main"}:
            fail(f"{backend}: blocking-wait series for loops {sorted(loops)}")
        errors, hellos, stop = [], [0], threading.Event()
        client = threading.Thread(target=hello_until, args=(port, stop, hellos, errors),
                                  daemon=True)
        client.start()
        scrapers = [Scraper(port, errors) for _ in range(SCRAPERS)]
        for s in scrapers:
            s.start()
        for s in scrapers:
            s.join(IO_TIMEOUT * SCRAPES)
        stop.set()
        client.join(IO_TIMEOUT)
        scraped = sum(s.done for s in scrapers)
        print(f"  {backend}: {scraped} scrapes, {hellos[0]} /hello answered meanwhile", flush=True)
        if errors:
            fail(f"{backend}: {errors[:5]}")
        if scraped != SCRAPERS * SCRAPES or hellos[0] == 0:
            fail(f"{backend}: {scraped} scrapes and {hellos[0]} /hello answered")
        status, text = scrape(port)
        after = blocking_waits(samples(text))
        moved = {k: after[k] - before[k] for k in before if after.get(k) != before[k]}
        if moved:
            fail(f"{backend}: loops blocked waiting for other loops while scraped: {moved}")
    finally:
        proc.terminate()
        proc.wait(timeout=IO_TIMEOUT)


def main():
    for backend in ("epoll", "uring"):
        check(sys.argv[1], backend)
    print("PASS")


if __name__ == "__main__":
    main()
