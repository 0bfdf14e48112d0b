"""examples/http:async_server (answers that come later, from a worker pool)
against real clients, on each backend, HTTP/1.1 and HTTP/2 (--h2c) on one
port:

- python's http.client (HTTP/1.1): /later answered by a worker with its
  Content-Length; /stream?n=N read chunked, every line in order; an
  HTTP/1.0 request's stream ends with the connection;
- python3-h2: /later and /stream?n=N on one connection, the streamed body
  line for line, no content-length on it; a stream reset by the client
  (RST_STREAM CANCEL) mid-answer leaves the server serving on that
  connection and on new ones;
- the server exits 0 on SIGTERM (drain) afterwards.

usage: h2_async_test.py ASYNC_SERVER
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import http.client
import os
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events

from h2peer import WAIT, Server, check, fetch

LINES = 20000


def expected_lines(n):
    return b"".join(b"line %d\n" % i for i in range(n))


def http1_checks(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    conn.request("GET", "/later?ms=20")
    r = conn.getresponse()
    body = r.read()
    check(r.status == 200 and body == b"answered 20 ms later\n", "/later: %d %r" % (r.status, body))
    check(r.getheader("Content-Length") == str(len(body)), "/later without its length")
    conn.request("GET", "/stream?n=%d" % LINES)  # the same connection: keep-alive
    r = conn.getresponse()
    check(r.getheader("Transfer-Encoding") == "chunked", "/stream not chunked")
    body = r.read()
    check(body == expected_lines(LINES), "/stream body differs (%d bytes)" % len(body))
    conn.close()
    # HTTP/1.0: no chunks, the body ends with the connection.
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock.sendall(b"GET /stream?n=100 HTTP/1.0\r\n\r\n")
    data = b""
    while True:
        more = sock.recv(65536)
        if not more:
            break
        data += more
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    check(b"chunked" not in head.lower() and body == expected_lines(100),
          "HTTP/1.0 stream: %r" % head)


def h2_stream_then_reset(port):
    """/later and /stream on one connection, then a stream reset mid-answer."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()

    def request(stream, path):
        conn.send_headers(stream, [(":method", "GET"), (":scheme", "http"),
                                   (":authority", "127.0.0.1"), (":path", path)], end_stream=True)

    request(1, "/later?ms=10")
    request(3, "/stream?n=%d" % LINES)
    request(5, "/stream?n=100000000")  # reset after its first bytes
    sock.sendall(conn.data_to_send())
    bodies = {1: bytearray(), 3: bytearray(), 5: bytearray()}
    headers = {}
    ended = set()
    reset_sent = False
    deadline = time.monotonic() + WAIT
    while (len(ended) < 2 or not reset_sent) and time.monotonic() < deadline:
        data = sock.recv(65536)
        check(data, "the server closed the connection")
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                headers[event.stream_id] = dict((k.decode(), v.decode()) for k, v in event.headers)
            elif isinstance(event, h2.events.DataReceived):
                bodies[event.stream_id] += event.data
                if event.stream_id != 5:  # its window stays shut: little of it in flight
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                if event.stream_id == 5 and not reset_sent:
                    conn.reset_stream(5, error_code=8)  # CANCEL
                    reset_sent = True
            elif isinstance(event, h2.events.StreamEnded):
                ended.add(event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                check(False, "stream %d reset by the server: %s" % (event.stream_id,
                                                                    event.error_code))
        sock.sendall(conn.data_to_send())
    check(ended >= {1, 3}, "streams ended: %s" % sorted(ended))
    check(reset_sent, "stream 5 sent no data before the reset")
    check(5 not in ended, "the endless stream ended")
    check(bytes(bodies[1]) == b"answered 10 ms later\n", "stream 1: %r" % bytes(bodies[1]))
    check(headers[1].get("content-length") == str(len(bodies[1])), "stream 1 length")
    check(bytes(bodies[3]) == expected_lines(LINES), "stream 3 body (%d bytes)" % len(bodies[3]))
    check("content-length" not in headers[3], "a streamed answer announced a length")
    # The same connection serves on.
    request(7, "/hello")
    sock.sendall(conn.data_to_send())
    got = bytearray()
    done = False
    while not done and time.monotonic() < deadline:
        data = sock.recv(65536)
        check(data, "the server closed the connection after the reset")
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.DataReceived) and event.stream_id == 7:
                got += event.data
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id == 7:
                done = True
        sock.sendall(conn.data_to_send())
    check(done and bytes(got) == b"hello world\n", "after the reset: %r" % bytes(got))
    sock.close()


def main():
    binary = sys.argv[1]
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        server = Server(binary, backend, "--h2c", "--workers", "2")
        http1_checks(server.port)
        status, response_headers, body = fetch(server.port, "/later?ms=5")
        check(status == "200" and body == b"answered 5 ms later\n", "h2 /later: %r" % body)
        h2_stream_then_reset(server.port)
        status, _, body = fetch(server.port)
        check(status == "200" and body == b"hello world\n", "a new connection: %r" % body)
        server.stop()
        print("ok: %s" % backend)


if __name__ == "__main__":
    main()
