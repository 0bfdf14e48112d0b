#!/usr/bin/python3
"""examples/http:fetch end to end against scripted_http_server.py: bodies on
stdout and with -o (appended in order), two URLs of one origin over one
connection, exit 1 with "URL: STATUS REASON" for a 404 and with the error for
a refused connection or a response framed beyond what the client reads
(nothing written as body), exit 2 for bad arguments."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def runfile(path):
    base = os.environ.get("TEST_SRCDIR")
    if base:
        candidate = os.path.join(base, "libnet", path)
        if os.path.exists(candidate):
            return candidate
    return os.path.join(HERE, "..", "..", "..", "..", path)


FETCH = runfile("examples/http/fetch")
SERVER = runfile("tests/net/http/client/scripted_http_server.py")


class FetchExampleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = subprocess.Popen(["/usr/bin/python3", SERVER], stdout=subprocess.PIPE,
                                      text=True)
        line = cls.server.stdout.readline()
        cls.base = "http://127.0.0.1:%d" % int(line.split()[1])

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.wait(timeout=10)

    def fetch(self, *args):
        return subprocess.run([FETCH] + list(args), capture_output=True, timeout=30)

    def test_two_urls_of_one_origin_share_a_connection(self):
        before = self.fetch(self.base + "/connections")
        self.assertEqual(before.returncode, 0, before.stderr)
        result = self.fetch(self.base + "/ok", self.base + "/connections")
        self.assertEqual(result.returncode, 0, result.stderr)
        # One more connection than before: /connections came over /ok's.
        self.assertEqual(result.stdout, b"ok" + str(int(before.stdout) + 1).encode())
        self.assertEqual(result.stderr, b"")

    def test_output_file_gets_every_body_in_order(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            result = self.fetch("-o", out, self.base + "/ok", self.base + "/echo")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stdout, b"")
            with open(out, "rb") as f:
                self.assertEqual(f.read(), b"okGET 0")

    def test_not_found_exits_1_with_the_status(self):
        url = self.base + "/nothing-here"
        result = self.fetch(self.base + "/ok", url)
        self.assertEqual(result.returncode, 1)
        self.assertIn((url + ": 404 Not Found").encode(), result.stderr)

    def test_errors_exit_1_with_the_reason(self):
        result = self.fetch(self.base + "/short")
        self.assertEqual(result.returncode, 1)
        self.assertIn(b"5 of 100", result.stderr)
        refused = self.fetch("http://127.0.0.1:1/")
        self.assertEqual(refused.returncode, 1)
        self.assertIn(b"refused", refused.stderr)

    def test_framing_errors_write_nothing_to_the_output(self):
        # A length of 2^64 or more (once taken as "no limit" when streaming,
        # so the chunk framing went to the file as body), and a gzip
        # transfer coding (once handed over raw as the body).
        cases = (("/chunk/10000000000000000", b"2^64 or more"),
                 ("/length/18446744073709551616", b"2^64 or more"),
                 ("/gzip-coded", b"unsupported transfer coding"))
        with tempfile.TemporaryDirectory() as tmp:
            for backend in ("epoll", "uring"):
                for path, why in cases:
                    out = os.path.join(tmp, "out")
                    result = self.fetch("--backend", backend, "-o", out, self.base + path)
                    self.assertEqual(result.returncode, 1, (backend, path, result.stderr))
                    self.assertIn(why, result.stderr, (backend, path))
                    with open(out, "rb") as f:
                        self.assertEqual(f.read(), b"", (backend, path))

    def test_bad_arguments_exit_2(self):
        for args in ([], ["--bogus", self.base + "/ok"], ["-o"], ["--backend", "kqueue", "x"]):
            result = self.fetch(*args)
            self.assertEqual(result.returncode, 2, args)
            # The usage, or (Flags' way for a bad value) a pointer to it.
            self.assertRegex(result.stderr, b"usage|see --help", args)

    def test_bad_url_exits_1(self):
        result = self.fetch("ftp://example.com/")
        self.assertEqual(result.returncode, 1)
        self.assertIn(b"ftp://example.com/", result.stderr)

    def test_both_backends(self):
        for backend in ("epoll", "uring"):
            result = self.fetch("--backend", backend, self.base + "/echo")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stdout, b"GET 0")


if __name__ == "__main__":
    unittest.main()
