"""Real HTTP/2 clients against examples/http:http_server, on each backend,
both h2c with prior knowledge (--h2c, one loop) and h2 over TLS (ALPN,
--threads 2; certificates made at test time by make_test_pki):

- curl (--http2-prior-knowledge, or --http2 with ALPN): /hello with the
  verbose output naming HTTP/2 (and "ALPN: server accepted h2"); a 100 MiB
  static file of a non-repeating pattern compared byte for byte with cmp; a
  HEAD; a 404; POSTs with bodies (a 512 KiB one to /echo, compared byte for
  byte with what comes back, one to a static
  file: 405, one over the 1 MiB limit: 413), several requests on one
  connection;
- HTTP/1.1 still served: on the --h2c port (curl --http1.1, and curl --http2
  whose Upgrade: h2c the server may take or ignore), and over TLS to a client
  whose ALPN offers only http/1.1;
- nghttp: the server's SETTINGS (MAX_CONCURRENT_STREAMS 100,
  MAX_HEADER_LIST_SIZE 65536), ten concurrent requests' bodies, a 4 MiB
  file compared byte for byte, a 2 MiB POST answered 413 at once and its
  stream reset (RST_STREAM NO_ERROR) after at most 64 KiB of it;
- h2load -n 1000 -c 1 -m 1000: 1000 streams asked at once on one connection
  (the server allows 100 at a time), all 1000 succeed with 2xx and exactly
  1000 bodies' bytes; over TLS also 200 requests of a 64 KiB file on four
  connections;
- the server exits 0 on SIGTERM afterwards.

usage: h2_clients_test.py MAKE_TEST_PKI HTTP_SERVER
(LIBNET_TEST_BACKENDS picks the backends; default "epoll uring")
"""

import os
import re
import struct
import subprocess
import sys

from h2peer import MIB, WAIT, Server, check, fail

TMP = os.environ.get("TEST_TMPDIR", "/tmp")
BIG = 100 * MIB
HELLO = b"hello world\n"


def make_root():
    """The files the server serves; returns {name: path}."""
    root = os.path.join(TMP, "h2-root")
    os.makedirs(root, exist_ok=True)
    files = {"small.txt": b"".join(b"line %04d of small.txt\n" % i for i in range(40)),
             "mid.bin": os.urandom(4 * MIB), "k64.bin": os.urandom(64 * 1024)}
    for name, contents in files.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(contents)
    # 100 MiB: one random MiB repeated with each copy's index in its first
    # bytes, so that a misplaced or repeated chunk shows up in cmp.
    block = bytearray(os.urandom(MIB))
    with open(os.path.join(root, "big.bin"), "wb") as f:
        for i in range(BIG // MIB):
            block[:8] = struct.pack("!Q", i)
            f.write(block)
    return root


class Mode:
    """How each client reaches one server: h2c prior knowledge or TLS."""

    def __init__(self, name, port, ca):
        self.name, self.port, self.ca = name, port, ca
        tls = name == "tls"
        self.base = ("https://localhost:%d" if tls else "http://127.0.0.1:%d") % port
        self.curl_flags = ["--http2", "--cacert", ca] if tls else ["--http2-prior-knowledge"]


def curl(args, timeout=3 * WAIT):
    """curl with -w printing "VERSION CODE SIZE" on stdout; returns the
    completed process."""
    argv = ["curl", "-sS", "--max-time", str(timeout),
            "-w", "%{http_version} %{http_code} %{size_download}\n"] + args
    return subprocess.run(argv, capture_output=True, timeout=timeout + 5)


def curl_ok(mode, args, what):
    r = curl(mode.curl_flags + args)
    check(r.returncode == 0, "%s %s: curl exited %d: %s" % (
        mode.name, what, r.returncode, r.stderr.decode(errors="replace")[-2000:]))
    return r


def same_file(a, b, what):
    r = subprocess.run(["cmp", a, b], capture_output=True, timeout=WAIT)
    check(r.returncode == 0, "%s differs: %s" % (what, r.stdout.decode(errors="replace")))


def curl_get_cases(mode, root):
    out = os.path.join(TMP, "curl.out")
    r = curl_ok(mode, ["-v", mode.base + "/hello", "-o", out], "GET /hello")
    check(r.stdout == b"2 200 12\n", "%s GET /hello: %r" % (mode.name, r.stdout))
    with open(out, "rb") as f:
        check(f.read() == HELLO, "%s GET /hello: wrong body" % mode.name)
    verbose = r.stderr.decode(errors="replace")
    check("< HTTP/2 200" in verbose, "%s: no HTTP/2 status line in curl -v:\n%s" % (
        mode.name, verbose[-2000:]))
    if mode.name == "tls":
        check("ALPN: server accepted h2" in verbose,
              "ALPN did not choose h2:\n" + verbose[-2000:])
    r = curl_ok(mode, [mode.base + "/big.bin", "-o", out], "GET /big.bin")
    check(r.stdout == b"2 200 %d\n" % BIG, "%s GET /big.bin: %r" % (mode.name, r.stdout))
    same_file(out, os.path.join(root, "big.bin"), "%s: the 100 MiB file" % mode.name)
    os.remove(out)
    r = curl_ok(mode, ["-I", mode.base + "/big.bin"], "HEAD /big.bin")
    text = r.stdout.decode(errors="replace")
    check(text.startswith("HTTP/2 200") and "content-length: %d" % BIG in text.lower()
          and text.endswith("2 200 0\n"), "%s HEAD /big.bin:\n%s" % (mode.name, text))
    r = curl_ok(mode, [mode.base + "/missing", "-o", out], "GET /missing")
    check(r.stdout == b"2 404 " + str(os.path.getsize(out)).encode() + b"\n",
          "%s GET /missing: %r" % (mode.name, r.stdout))
    if mode.name == "tls":
        curl_reuse_case(mode, root)


def curl_reuse_case(mode, root):
    """Three requests on one connection. TLS only: curl 7.88.1 fails the second
    request on a reused prior-knowledge connection (exit 16, nghttpd too)."""
    out = os.path.join(TMP, "curl.out")
    r = curl_ok(mode, ["-v", mode.base + "/small.txt", "-o", out + "1", mode.base + "/hello",
                       "-o", out + "2", mode.base + "/k64.bin", "-o", out + "3"], "three GETs")
    check(r.stdout == b"2 200 920\n2 200 12\n2 200 65536\n",
          "%s three GETs: %r" % (mode.name, r.stdout))
    for i, name in enumerate(["small.txt", None, "k64.bin"]):
        if name:
            same_file(out + str(i + 1), os.path.join(root, name), "%s %s" % (mode.name, name))
    check(b"Re-using existing connection" in r.stderr,
          "%s: curl opened a connection per request" % mode.name)


def curl_post_cases(mode):
    body = os.path.join(TMP, "post.bin")
    with open(body, "wb") as f:
        f.write(os.urandom(512 * 1024))
    out = os.path.join(TMP, "post.out")
    r = curl_ok(mode, ["--data-binary", "@" + body, mode.base + "/echo", "-o", out],
                "POST /echo")
    check(r.stdout == b"2 200 524288\n", "%s POST 512 KiB to /echo: %r" % (mode.name, r.stdout))
    with open(body, "rb") as sent, open(out, "rb") as echoed:
        check(sent.read() == echoed.read(), "%s POST /echo: the body came back changed" % mode.name)
    r = curl_ok(mode, ["--data-binary", "@" + body, mode.base + "/small.txt", "-o", out, "-D",
                       out + ".headers"], "POST /small.txt")
    check(r.stdout.startswith(b"2 405 "), "%s POST /small.txt: %r" % (mode.name, r.stdout))
    with open(out + ".headers", "rb") as f:
        check(b"allow: get, head" in f.read().lower(),
              "%s: 405 without Allow: GET, HEAD" % mode.name)
    with open(body, "wb") as f:
        f.write(os.urandom(2 * MIB))
    # The server answers 413 as soon as the Content-Length shows the body too
    # large, then resets the stream (RST_STREAM NO_ERROR, RFC 9113 8.1).
    # curl 7.88 drops an answer that comes with a reset while it is still
    # uploading (exit 92, no status: the same against nginx 1.22), so the
    # status counts when curl prints one; nghttp_cases() checks the frames.
    r = curl(mode.curl_flags + ["--data-binary", "@" + body, mode.base + "/hello", "-o", out])
    check(r.stdout.startswith(b"2 413 ") or (r.returncode == 92 and r.stdout == b"0 000 0\n"),
          "%s POST 2 MiB: %r (curl exit %d: %s)" % (
              mode.name, r.stdout, r.returncode, r.stderr.decode(errors="replace")[-500:]))


def http1_cases(mode):
    if mode.name == "tls":
        r = curl(["--http1.1", "--cacert", mode.ca, "-v", mode.base + "/hello"])
        check(r.returncode == 0 and r.stdout == HELLO + b"1.1 200 12\n",
              "TLS http/1.1: %r %r" % (r.stdout, r.stderr[-1000:]))
        check(b"ALPN: server accepted http/1.1" in r.stderr,
              "ALPN http/1.1 not chosen:\n" + r.stderr.decode(errors="replace")[-1500:])
        return
    r = curl(["--http1.1", mode.base + "/hello"])
    check(r.returncode == 0 and r.stdout == HELLO + b"1.1 200 12\n",
          "HTTP/1.1 on the --h2c port: %r %r" % (r.stdout, r.stderr[-1000:]))
    r = curl(["--http2", mode.base + "/hello"])  # Upgrade: h2c, taken or ignored
    check(r.returncode == 0 and re.fullmatch(rb"hello world\n(1\.1|2) 200 12\n", r.stdout),
          "curl --http2 (Upgrade: h2c): %r %r" % (r.stdout, r.stderr[-1000:]))


def nghttp(args):
    r = subprocess.run(["nghttp"] + args, capture_output=True, timeout=3 * WAIT)
    check(r.returncode == 0, "nghttp %s exited %d: %s" % (
        " ".join(args), r.returncode, (r.stdout + r.stderr).decode(errors="replace")[-2000:]))
    return r.stdout


def nghttp_cases(mode, root):
    verbose = nghttp(["-v", "-n", mode.base + "/hello"]).decode(errors="replace")
    check(re.search(r"recv \(stream_id=\d+\) :status: 200", verbose),
          "%s nghttp: no :status 200:\n%s" % (mode.name, verbose[-2000:]))
    for setting in ("SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100",
                    "SETTINGS_MAX_HEADER_LIST_SIZE(0x06):65536"):
        check(setting in verbose, "%s: the server's SETTINGS lack %s:\n%s" % (
            mode.name, setting, verbose[:2000]))
    with open(os.path.join(root, "small.txt"), "rb") as f:
        small = f.read()
    # Ten concurrent streams; each body fits one DATA frame, so stdout holds
    # them whole, one after the other.
    out = nghttp(["-m", "10", mode.base + "/small.txt"])
    check(out == small * 10, "%s nghttp -m 10: %d bytes, expected 10 x %d" % (
        mode.name, len(out), len(small)))
    out = nghttp([mode.base + "/mid.bin"])
    with open(os.path.join(root, "mid.bin"), "rb") as f:
        check(out == f.read(), "%s nghttp: the 4 MiB file differs" % mode.name)
    early_413_case(mode)


def early_413_case(mode):
    """A 2 MiB POST over the 1 MiB limit: 413 at once, then RST_STREAM
    NO_ERROR; the client sends no more than its first window (64 KiB)."""
    body = os.path.join(TMP, "post-2m.bin")
    with open(body, "wb") as f:
        f.write(os.urandom(2 * MIB))
    verbose = nghttp(["-v", "-d", body, mode.base + "/hello"]).decode(errors="replace")
    sent = sum(int(n) for n in re.findall(r"send DATA frame <length=(\d+)", verbose))
    check(re.search(r"recv \(stream_id=\d+\) :status: 413", verbose) and
          re.search(r"recv RST_STREAM frame <length=4, flags=0x00, stream_id=\d+>\s*"
                    r"\(error_code=NO_ERROR", verbose) and sent <= 64 * 1024,
          "%s nghttp POST 2 MiB: expected 413, RST_STREAM NO_ERROR and at most 64 KiB sent "
          "(%d sent):\n%s" % (mode.name, sent, verbose[-3000:]))


def h2load(args, url):
    r = subprocess.run(["h2load"] + args + [url], capture_output=True, timeout=6 * WAIT)
    text = (r.stdout + r.stderr).decode(errors="replace")
    check(r.returncode == 0, "h2load %s exited %d:\n%s" % (args, r.returncode, text[-2000:]))
    return text


def check_h2load(text, mode, requests, body_bytes):
    summary = "%d total, %d started, %d done, %d succeeded, 0 failed, 0 errored, 0 timeout" % (
        (requests,) * 4)
    check("requests: " + summary in text, "%s h2load: not all %d requests succeeded:\n%s" % (
        mode.name, requests, text[-2000:]))
    check("status codes: %d 2xx, 0 3xx, 0 4xx, 0 5xx" % requests in text,
          "%s h2load: statuses:\n%s" % (mode.name, text[-2000:]))
    m = re.search(r"^traffic: .*\((\d+)\) data$", text, re.M)
    check(m and int(m.group(1)) == body_bytes, "%s h2load: %s data bytes, expected %d" % (
        mode.name, m and m.group(1), body_bytes))
    protocol = "h2" if mode.name == "tls" else "h2c"
    check("Application protocol: " + protocol in text,
          "%s h2load did not speak %s:\n%s" % (mode.name, protocol, text[-2000:]))


def h2load_cases(mode):
    text = h2load(["-n", "1000", "-c", "1", "-m", "1000"], mode.base + "/hello")
    check_h2load(text, mode, 1000, 1000 * len(HELLO))
    if mode.name == "tls":
        text = h2load(["-n", "200", "-c", "4", "-m", "20"], mode.base + "/k64.bin")
        check_h2load(text, mode, 200, 200 * 65536)


def run_mode(http_server, backend, name, pki, root):
    # The TLS server runs two I/O threads, the h2c one serves on its main loop.
    extra = ["--tls-cert", pki + "/server.pem", "--tls-key", pki + "/server.key", "--threads",
             "2"] if name == "tls" else ["--h2c"]
    server = Server(http_server, backend, "--root", root, *extra)
    mode = Mode(name, server.port, pki + "/ca.pem")
    curl_get_cases(mode, root)
    curl_post_cases(mode)
    http1_cases(mode)
    nghttp_cases(mode, root)
    h2load_cases(mode)
    server.stop()
    print("ok: %s %s" % (backend, name), flush=True)


def main():
    if len(sys.argv) != 3:
        fail("usage: h2_clients_test.py MAKE_TEST_PKI HTTP_SERVER")
    make_pki, http_server = sys.argv[1:]
    pki = os.path.join(TMP, "pki")
    os.makedirs(pki, exist_ok=True)
    subprocess.run([make_pki, pki], check=True, timeout=WAIT)
    root = make_root()
    for backend in os.environ.get("LIBNET_TEST_BACKENDS", "epoll uring").split():
        for name in ("h2c", "tls"):
            run_mode(http_server, backend, name, pki, root)


if __name__ == "__main__":
    main()
