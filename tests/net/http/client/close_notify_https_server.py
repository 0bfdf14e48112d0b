#!/usr/bin/python3
"""An HTTPS server whose answer and TLS close_notify arrive as one write, for
the HTTP client's reuse check.

Usage: close_notify_https_server.py CERT KEY

Listens on 127.0.0.1 on an ephemeral port and prints "port N" once it
accepts. TLS runs over memory BIOs, so that the server decides what goes out
in each write. Per request path:

  /ok-then-close-notify  200 "ok" (keep-alive headers) and close_notify in
                         the same write; the TCP connection stays open (no
                         FIN) until the client closes it
  anything else          200 "METHOD BODYLENGTH" (keep-alive)
"""
import socket
import ssl
import sys
import threading


class Tls:
    """One server-side TLS session over a socket, through memory BIOs."""

    def __init__(self, context, conn):
        self.conn = conn
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.obj = context.wrap_bio(self.incoming, self.outgoing, server_side=True)

    def flush(self):
        data = self.outgoing.read()
        if data:
            self.conn.sendall(data)

    def receive(self):
        data = self.conn.recv(65536)
        if not data:
            raise ConnectionError("closed")
        self.incoming.write(data)

    def handshake(self):
        while True:
            try:
                self.obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.flush()
                self.receive()
        self.flush()

    def read(self):
        while True:
            try:
                return self.obj.read(65536)
            except ssl.SSLWantReadError:
                self.flush()
                self.receive()

    def close_notify(self):
        try:
            self.obj.unwrap()
        except ssl.SSLWantReadError:
            pass  # sent; the peer's close_notify is not waited for


def read_request(tls, buf):
    while b"\r\n\r\n" not in buf:
        buf += tls.read()
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        rest += tls.read()
    return method, path, rest[:length], rest[length:]


def response(body):
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def serve(context, conn):
    try:
        tls = Tls(context, conn)
        tls.handshake()
        buf = b""
        while True:
            method, path, body, buf = read_request(tls, buf)
            if path == "/ok-then-close-notify":
                tls.obj.write(response(b"ok"))
                tls.close_notify()
                tls.flush()  # the answer and close_notify: one write
                while conn.recv(65536):
                    pass
                return
            tls.obj.write(response(("%s %d" % (method, len(body))).encode()))
            tls.flush()
    except (ConnectionError, OSError, ssl.SSLError):
        return
    finally:
        conn.close()


def main():
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    print("port %d" % listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(context, conn), daemon=True).start()


if __name__ == "__main__":
    main()
