#!/usr/bin/python3
"""A DNS server that misbehaves on purpose, for the resolver's tests.

Usage: scripted_dns_server.py MODE [--delay-ms N]

Listens on UDP and TCP on the same ephemeral port of 127.0.0.1, prints
"port N" on stdout once both are bound, and serves until its stdin closes
(the test holds the other end of a pipe, so the server goes with the test).

Every query gets the same treatment, by MODE:
  servfail   an answer with RCODE SERVFAIL
  refused    RCODE REFUSED
  nxdomain   RCODE NXDOMAIN
  truncated  over UDP an empty answer with the TC bit; over TCP the full
             answer (A 10.1.2.3, AAAA fd00::3), its length prefix and body
             written in one send
  silent     no answer at all
  garbage    the query's header and question with ANCOUNT=1 and an answer
             record cut short: an answer to the query that cannot be parsed
  noise      random bytes that are no DNS message
  slow       the full answer after --delay-ms (default 500)

and, over UDP, an empty answer with the TC bit (as truncated) so that the
query comes again over TCP, where the answer is malformed:
  tcp-empty    a length of 0, the connection left open
  tcp-short    a length of 5 and 5 bytes (less than a DNS header), left open
  tcp-garbage  a length and as many random bytes, whose id is not the
               query's, left open
  tcp-cut      the full answer's length, half of its bytes, then a close
"""
import argparse
import os
import random
import socket
import struct
import sys
import threading

from dnslib import AAAA, QTYPE, RCODE, RR, A, DNSRecord

ADDRESS_V4 = "10.1.2.3"
ADDRESS_V6 = "fd00::3"


def full_answer(query):
    reply = query.reply()
    qname = query.q.qname
    if query.q.qtype == QTYPE.A:
        reply.add_answer(RR(qname, QTYPE.A, rdata=A(ADDRESS_V4), ttl=60))
    elif query.q.qtype == QTYPE.AAAA:
        reply.add_answer(RR(qname, QTYPE.AAAA, rdata=AAAA(ADDRESS_V6), ttl=60))
    return reply.pack()


def with_rcode(query, rcode):
    reply = query.reply()
    reply.header.rcode = rcode
    return reply.pack()


def garbage(data):
    # Header (with the query's id and question count) and question kept;
    # QR set, ANCOUNT 1, then half of a resource record.
    question_end = 12
    while data[question_end] != 0:  # the name's labels, uncompressed in a query
        question_end += 1 + data[question_end]
    question_end += 1 + 4  # the root label, QTYPE and QCLASS
    header = bytearray(data[:12])
    header[2] |= 0x80
    header[6:8] = struct.pack("!H", 1)
    return bytes(header) + data[12:question_end] + b"\xc0\x0c\x00\x01\x00"


TCP_MALFORMED = ("tcp-empty", "tcp-short", "tcp-garbage", "tcp-cut")


def malformed_tcp(mode, data):
    """What a tcp-* mode writes for query `data`, and whether it closes then."""
    if mode == "tcp-empty":
        return b"\x00\x00", False
    if mode == "tcp-short":
        return struct.pack("!H", 5) + full_answer(DNSRecord.parse(data))[:5], False
    if mode == "tcp-garbage":
        body = bytearray(random.getrandbits(8) for _ in range(40))
        body[0:2] = struct.pack("!H", struct.unpack("!H", data[:2])[0] ^ 0x5A5A)
        return struct.pack("!H", len(body)) + bytes(body), False
    reply = full_answer(DNSRecord.parse(data))
    return struct.pack("!H", len(reply)) + reply[:len(reply) // 2], True


def answer(mode, data, tcp):
    """The bytes to send back for query `data`, or None for no answer."""
    if mode == "silent":
        return None
    if mode == "noise":
        return bytes(random.getrandbits(8) for _ in range(40))
    if mode == "garbage":
        return garbage(data)
    query = DNSRecord.parse(data)
    if mode == "servfail":
        return with_rcode(query, RCODE.SERVFAIL)
    if mode == "refused":
        return with_rcode(query, RCODE.REFUSED)
    if mode == "nxdomain":
        return with_rcode(query, RCODE.NXDOMAIN)
    if (mode == "truncated" or mode in TCP_MALFORMED) and not tcp:
        reply = query.reply()
        reply.header.tc = 1
        return reply.pack()
    return full_answer(query)


def serve_udp(sock, mode, delay):
    while True:
        data, peer = sock.recvfrom(4096)
        try:
            reply = answer(mode, data, tcp=False)
        except Exception as e:  # a bad query must not end the server
            print(f"scripted_dns_server: {e!r}", file=sys.stderr, flush=True)
            continue
        if reply is None:
            continue
        if delay:
            threading.Timer(delay, sock.sendto, (reply, peer)).start()
        else:
            sock.sendto(reply, peer)


def recv_exactly(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def serve_tcp_connection(conn, mode):
    with conn:
        while True:
            prefix = recv_exactly(conn, 2)
            if prefix is None:
                return
            data = recv_exactly(conn, struct.unpack("!H", prefix)[0])
            if data is None:
                return
            if mode in TCP_MALFORMED:
                reply, close = malformed_tcp(mode, data)
                conn.sendall(reply)
                if close:
                    return
                continue
            reply = answer(mode, data, tcp=True)
            if reply is not None:
                conn.sendall(struct.pack("!H", len(reply)) + reply)


def serve_tcp(sock, mode):
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=serve_tcp_connection, args=(conn, mode), daemon=True).start()


def bind_both():
    """A UDP and a TCP socket on the same free port (retried on a clash)."""
    for _ in range(100):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        port = udp.getsockname()[1]
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            tcp.bind(("127.0.0.1", port))
        except OSError:
            udp.close()
            tcp.close()
            continue
        tcp.listen(64)
        return udp, tcp, port
    sys.exit("no port free for both UDP and TCP")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["servfail", "refused", "nxdomain", "truncated",
                                         "silent", "garbage", "noise", "slow"]
                        + list(TCP_MALFORMED))
    parser.add_argument("--delay-ms", type=int, default=500)
    args = parser.parse_args()
    delay = args.delay_ms / 1000.0 if args.mode == "slow" else 0
    udp, tcp, port = bind_both()
    threading.Thread(target=serve_udp, args=(udp, args.mode, delay), daemon=True).start()
    threading.Thread(target=serve_tcp, args=(tcp, args.mode), daemon=True).start()
    print(f"port {port}", flush=True)
    sys.stdin.read()  # until the test closes the pipe (or goes)
    os._exit(0)


if __name__ == "__main__":
    main()
