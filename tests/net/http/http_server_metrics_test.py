#!/usr/bin/env python3
"""http_server --metrics-path and the connection limits, on both backends.

Metrics: start http_server --metrics-path /metrics, scrape it (GET, each
scrape a connection of its own), make N keep-alive connections that each send
R requests, close them, scrape until the server has seen them close, and
parse every scrape with prometheus_client's parser (which raises on a
malformed line). The counters must have moved by exactly what was sent and
received (the scrapes' own bytes accounted for), the gauges must be back
(one connection open: the scrape's own; nothing queued), and the loop series
must be there, moving.

Limits: --max-connections 2 answers a third client 503 with Retry-After and
Connection: close, serves a new one once one has closed, and counts each
refusal; --max-connections-per-client 1 refuses a second connection from
127.0.0.1 while one from 127.0.0.2 is served.

usage: http_server_metrics_test.py HTTP_SERVER
"""

import re
import socket
import subprocess
import sys
import time

from prometheus_client.parser import text_string_to_metric_families

STARTUP_TIMEOUT = 20
IO_TIMEOUT = 10
CONNECTIONS = 5
REQUESTS = 3
HELLO = b"GET /hello HTTP/1.1\r\nHost: test\r\n\r\n"


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def start(server, backend, extra):
    argv = [server, "--address", "127.0.0.1", "--port", "0", "--backend", backend] + extra
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


def connect(port, source="127.0.0.1"):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(IO_TIMEOUT)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def read_response(sock, pending=b""):
    """One response (Content-Length framed): (bytes of it, status, headers, rest)."""
    data = pending
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            fail(f"connection closed before a whole response: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            fail("connection closed inside a response body")
        body += chunk
    size = len(head) + 4 + length
    return size, status, headers, body[length:]


def scrape(port, source="127.0.0.1"):
    """(request bytes, response bytes, status, {(name, labels): value}) of one GET /metrics."""
    request = b"GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    with connect(port, source) as sock:
        sock.sendall(request)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    samples = {}
    if status == 200:
        if b"text/plain; version=0.0.4" not in head:
            fail(f"metrics content type: {head!r}")
        for family in text_string_to_metric_families(body.decode()):
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return len(request), len(data), status, samples


def total(samples, name):
    return sum(v for (n, _), v in samples.items() if n == name)


def check_metrics(server, backend):
    proc, port = start(server, backend, ["--metrics-path", "/metrics", "--threads", "2"])
    try:
        req_bytes, resp_bytes, status, base = scrape(port)
        if status != 200:
            fail(f"{backend}: first scrape answered {status}")
        for name in ("libnet_connections_open", "libnet_connections_accepted_total",
                     "libnet_bytes_received_total", "libnet_output_queued_bytes",
                     "libnet_loop_turns_total", "libnet_loop_busy_seconds_total",
                     "libnet_loop_lag_max_seconds", "libnet_timers_armed",
                     "libnet_timers_fired_total"):
            if not any(n == name for n, _ in base):
                fail(f"{backend}: no {name} series")
        quantiles = {dict(l).get("quantile") for n, l in base if n == "libnet_loop_lag_seconds"}
        if quantiles != {"0.5", "0.99"}:
            fail(f"{backend}: lag quantiles {quantiles}")
        sent_requests = received_responses = 0
        conns = [connect(port) for _ in range(CONNECTIONS)]
        for sock in conns:
            pending = b""
            for _ in range(REQUESTS):
                sock.sendall(HELLO)
                sent_requests += len(HELLO)
                size, status, _, pending = read_response(sock, pending)
                if status != 200:
                    fail(f"{backend}: /hello answered {status}")
                received_responses += size
        for sock in conns:
            sock.close()
        # Until the server has seen the clients close (bounded): each scrape
        # is accounted for, its request by the scrape that reads it and its
        # response by the next.
        scrape_requests, scrape_responses = 0, resp_bytes
        deadline = time.monotonic() + IO_TIMEOUT
        while True:
            req, resp, status, now = scrape(port)
            scrape_requests += req
            if status != 200:
                fail(f"{backend}: scrape answered {status}")
            if total(now, "libnet_connections_open") == 1 or time.monotonic() > deadline:
                break
            scrape_responses += resp
        accepted = total(now, "libnet_connections_accepted_total") - total(
            base, "libnet_connections_accepted_total")
        expected = {
            "libnet_bytes_received_total": sent_requests + scrape_requests,
            "libnet_bytes_sent_total": received_responses + scrape_responses,
        }
        for name, want in expected.items():
            got = total(now, name) - total(base, name)
            if got != want:
                fail(f"{backend}: {name} moved by {got}, want {want}")
        scrapes = scrape_requests // req_bytes
        if accepted != CONNECTIONS + scrapes:
            fail(f"{backend}: accepted moved by {accepted}, want {CONNECTIONS + scrapes}")
        closed = total(now, "libnet_connections_closed_total") - total(
            base, "libnet_connections_closed_total")
        if closed != CONNECTIONS + scrapes:
            fail(f"{backend}: closed moved by {closed}, want {CONNECTIONS + scrapes}")
        if total(now, "libnet_connections_open") != 1:
            fail(f"{backend}: {total(now, 'libnet_connections_open')} open, want 1 (the scrape)")
        if total(now, "libnet_output_queued_bytes") != 0:
            fail(f"{backend}: output still queued")
        if total(now, "libnet_loop_turns_total") <= total(base, "libnet_loop_turns_total"):
            fail(f"{backend}: the loops did not turn")
        if total(now, "libnet_loop_busy_seconds_total") <= 0:
            fail(f"{backend}: no busy time")
    finally:
        proc.terminate()
        proc.wait(timeout=IO_TIMEOUT)


def expect_refusal(port, backend, source="127.0.0.1"):
    with connect(port, source) as sock:
        sock.sendall(HELLO)
        _, status, headers, _ = read_response(sock)
        if status != 503 or headers.get("retry-after") != "1" or \
                headers.get("connection") != "close":
            fail(f"{backend}: refusal was {status} {headers}")
        sock.settimeout(IO_TIMEOUT)
        if sock.recv(1) != b"":
            fail(f"{backend}: a refused connection stayed open")


def served(sock, backend):
    sock.sendall(HELLO)
    _, status, _, _ = read_response(sock)
    if status != 200:
        fail(f"{backend}: /hello answered {status}")


def scrape_when_admitted(port, refusals, source="127.0.0.1"):
    """Scrapes until one gets in (a close may not have reached the server yet)."""
    deadline = time.monotonic() + IO_TIMEOUT
    while time.monotonic() < deadline:
        _, _, status, samples = scrape(port, source)
        if status == 200:
            return samples, refusals
        refusals += 1
    fail("no scrape was admitted")


def check_limits(server, backend):
    proc, port = start(server, backend, ["--metrics-path", "/metrics", "--max-connections", "2"])
    try:
        first, second = connect(port), connect(port)
        served(first, backend)
        served(second, backend)
        expect_refusal(port, backend)
        second.close()
        samples, refusals = scrape_when_admitted(port, 1)
        if total(samples, "libnet_connections_refused_total") != refusals:
            fail(f"{backend}: refused_total {total(samples, 'libnet_connections_refused_total')}"
                 f", want {refusals}")
        first.close()
    finally:
        proc.terminate()
        proc.wait(timeout=IO_TIMEOUT)
    proc, port = start(server, backend,
                       ["--metrics-path", "/metrics", "--max-connections-per-client", "1"])
    try:
        mine = connect(port, "127.0.0.1")
        served(mine, backend)
        expect_refusal(port, backend, "127.0.0.1")
        other = connect(port, "127.0.0.2")
        served(other, backend)
        samples, _ = scrape_when_admitted(port, 0, "127.0.0.3")
        if total(samples, "libnet_connections_refused_total") != 1:
            fail(f"{backend}: per-client refusals counted "
                 f"{total(samples, 'libnet_connections_refused_total')}, want 1")
        mine.close()
        other.close()
    finally:
        proc.terminate()
        proc.wait(timeout=IO_TIMEOUT)


def main():
    server = sys.argv[1]
    for backend in ("epoll", "uring"):
        check_metrics(server, backend)
        check_limits(server, backend)
    print("OK")


if __name__ == "__main__":
    main()
