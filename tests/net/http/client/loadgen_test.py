#!/usr/bin/python3
"""bench/http:loadgen against scripted_http_server.py: 10,000 requests (-n)
through a pool of 4 connections, every one but the first on each connection
counted as reused; the three output lines in their exact format; a timed run
(-d) over two threads; exit 2 for bad arguments."""
import os
import re
import subprocess
import unittest


def runfile(path):
    return os.path.join(os.environ["TEST_SRCDIR"], "libnet", path)


LOADGEN = runfile("bench/http/loadgen")
SERVER = runfile("tests/net/http/client/scripted_http_server.py")

LINES = [
    re.compile(r"^requests: (\d+)  seconds: ([\d.]+)  requests/s: ([\d.]+)$"),
    re.compile(r"^latency_us: p50 (\d+)  p90 (\d+)  p99 (\d+)  max (\d+)$"),
    re.compile(r"^errors: (\d+)  connections_opened: (\d+)  reused: (\d+)$"),
]


def parse(stdout):
    lines = stdout.decode().strip().split("\n")
    assert len(lines) == 3, lines
    values = []
    for pattern, line in zip(LINES, lines):
        match = pattern.match(line)
        assert match, line
        values.append([float(v) for v in match.groups()])
    return values


class LoadgenTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = subprocess.Popen(["/usr/bin/python3", SERVER], stdout=subprocess.PIPE,
                                      text=True)
        cls.url = "http://127.0.0.1:%d/ok" % int(cls.server.stdout.readline().split()[1])

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.wait(timeout=10)

    def run_loadgen(self, *args):
        return subprocess.run([LOADGEN] + list(args), capture_output=True, timeout=120)

    def test_ten_thousand_requests_through_the_pool(self):
        result = self.run_loadgen("-c", "4", "-n", "10000", "--backend", "epoll", self.url)
        self.assertEqual(result.returncode, 0, result.stderr)
        (requests, seconds, rate), (p50, p90, p99, top), (errors, opened, reused) = \
            parse(result.stdout)
        self.assertEqual(requests, 10000)
        self.assertEqual(errors, 0)
        self.assertEqual(opened, 4)
        self.assertEqual(reused, 10000 - 4)
        self.assertGreater(seconds, 0)
        self.assertTrue(p50 <= p90 <= p99 <= top, (p50, p90, p99, top))

    def test_timed_run_over_two_threads(self):
        result = self.run_loadgen("-c", "4", "-t", "2", "-d", "1", "--backend", "uring", self.url)
        self.assertEqual(result.returncode, 0, result.stderr)
        (requests, seconds, _), _, (errors, opened, reused) = parse(result.stdout)
        self.assertGreater(requests, 0)
        self.assertGreaterEqual(seconds, 1.0)
        self.assertEqual(errors, 0)
        self.assertEqual(opened, 4)
        self.assertEqual(reused, requests - 4)

    def test_bad_arguments_exit_2(self):
        for args in ([], ["-c", "0", self.url], ["-c", "2"], [self.url, self.url]):
            self.assertEqual(self.run_loadgen(*args).returncode, 2, args)


if __name__ == "__main__":
    unittest.main()
