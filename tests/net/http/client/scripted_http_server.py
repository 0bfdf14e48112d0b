#!/usr/bin/python3
"""An HTTP/1.1 server that misbehaves on purpose, for the HTTP client's tests.

Listens on 127.0.0.1 on an ephemeral port and prints "port N" on stdout once
it accepts. Each connection is served by its own thread; what a request gets
depends on its path:

  /ok               200 "ok" (keep-alive)
  /echo             200 "METHOD BODYLENGTH" (the request body is read)
  /close-next       200 "armed"; the connection's next request is read and
                    the connection closed without an answer
  /short            Content-Length: 100, 5 bytes, then close
  /endless          a chunked body that never ends (until the client closes)
  /stall            headers and half the body, then nothing (until the client closes)
  /informational    100 Continue and 103 Early Hints, then 200 "final"
  /headers10000     10,000 header fields
  /204, /304        that status with "Content-Length: 5" and no body
  /close-delimited  no Content-Length: the body ends with the connection
  /301 ... /308     redirect to /echo
  /loop             redirect to /loop
  /connections      200 with the number of connections accepted so far
  /late-bytes       200 "ok", then 100 ms later bytes nobody asked for
  /close-after      200 "ok", then 100 ms later the connection is closed
  /ok-then-fin      200 "ok" (keep-alive) with the FIN in the same segment
                    (TCP_CORK, then shutdown): it is at the client's socket
                    when the client reads the response
  /length/DIGITS    "Content-Length: DIGITS", the body "hello", then close
  /chunk/HEX        chunked, a chunk-size line HEX, "hello", the last chunk,
                    then close
  /interim-flood    20,000 "100 Continue", then 200 "final"
  /interim-then-close  103 Early Hints, then close
  /gzip-coded       "Transfer-Encoding: gzip" and a gzip body, then close
  /request-head     200 with the request's header section as the body
  anything else     404
A HEAD request gets the headers the GET would get, "Content-Length: 1000"
for /ok, and no body.
"""
import gzip
import socket
import sys
import threading
import time

ACCEPTED = [0]  # connections accepted (only the accepting thread writes it)


def read_request(conn, buf):
    """Returns (method, path, body, rest, head) or None at EOF."""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        data = conn.recv(65536)
        if not data:
            return None
        rest += data
    return method, path, rest[:length], rest[length:], head


def response(status, body=b"", extra="", length=None):
    if length is None:
        length = len(body)
    head = "HTTP/1.1 %s\r\nContent-Length: %d\r\n%s\r\n" % (status, length, extra)
    return head.encode() + body


def endless(conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
    while True:
        conn.sendall(chunk)


def answer_framing(conn, path):
    """The framing cases: returns None when `path` is not one of them, else
    whether the connection stays open."""
    if path == "/ok-then-fin":
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
        conn.sendall(response("200 OK", b"ok"))
        conn.shutdown(socket.SHUT_WR)  # the FIN goes out with the corked response
        while conn.recv(65536):
            pass
        return False
    if path.startswith("/length/"):
        conn.sendall(("HTTP/1.1 200 OK\r\nContent-Length: %s\r\n\r\nhello" % path[8:]).encode())
        return False
    if path.startswith("/chunk/"):
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                     path[7:].encode() + b"\r\nhello\r\n0\r\n\r\n")
        return False
    if path == "/interim-flood":
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" * 20000 + response("200 OK", b"final"))
        return True
    if path == "/interim-then-close":
        conn.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n")
        return False
    if path == "/gzip-coded":
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n" +
                     gzip.compress(b"hello"))
        return False
    return None


def answer(conn, method, path, body):
    """Sends the answer; returns False when the connection must close."""
    head_only = method == "HEAD"
    framing = answer_framing(conn, path)
    if framing is not None:
        return framing
    if path == "/ok":
        conn.sendall(response("200 OK", length=1000) if head_only else response("200 OK", b"ok"))
    elif path == "/echo":
        conn.sendall(response("200 OK", ("%s %d" % (method, len(body))).encode()))
    elif path == "/short":
        conn.sendall(response("200 OK", b"short", length=100))
        return False
    elif path == "/endless":
        endless(conn)
    elif path == "/stall":
        conn.sendall(response("200 OK", b"x" * 50, length=100))
        while conn.recv(65536):
            pass
        return False
    elif path == "/informational":
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        conn.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n")
        conn.sendall(response("200 OK", b"final"))
    elif path == "/headers10000":
        fields = "".join("X-Field-%d: v\r\n" % i for i in range(10000))
        conn.sendall(response("200 OK", b"", extra=fields))
    elif path in ("/204", "/304"):
        status = "204 No Content" if path == "/204" else "304 Not Modified"
        conn.sendall(("HTTP/1.1 %s\r\nContent-Length: 5\r\n\r\n" % status).encode())
    elif path == "/close-delimited":
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end")
        return False
    elif path in ("/301", "/302", "/303", "/307", "/308"):
        conn.sendall(response(path[1:] + " Moved", b"", extra="Location: /echo\r\n"))
    elif path == "/late-bytes":
        conn.sendall(response("200 OK", b"ok"))
        time.sleep(0.1)
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
    elif path == "/close-after":
        conn.sendall(response("200 OK", b"ok"))
        time.sleep(0.1)
        return False
    elif path == "/connections":
        conn.sendall(response("200 OK", str(ACCEPTED[0]).encode()))
    elif path == "/loop":
        conn.sendall(response("302 Found", b"", extra="Location: /loop\r\n"))
    else:
        conn.sendall(response("404 Not Found", b"" if head_only else b"no such path"))
    return True


def serve(conn):
    buf = b""
    armed = False
    try:
        while True:
            request = read_request(conn, buf)
            if request is None:
                return
            method, path, body, buf, head = request
            if armed:
                return  # read, never answered
            if path == "/request-head":
                conn.sendall(response("200 OK", head))
                continue
            if path == "/close-next":
                conn.sendall(response("200 OK", b"armed"))
                armed = True
                continue
            if not answer(conn, method, path, body):
                return
    except (ConnectionError, BrokenPipeError, OSError):
        return
    finally:
        conn.close()


def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print("port %d" % listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        ACCEPTED[0] += 1
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
