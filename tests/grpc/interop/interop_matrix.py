#!/usr/bin/python3
"""Runs the cases of grpc's interop test descriptions for every pair of an
interop client and an interop server, over plaintext and TLS, and prints the
matrix (case x pair); exits 1 if any case failed or a server misbehaved.

  interop_matrix.py [--grpc-server NAME CMD]... [--grpc-client NAME CMD]...
                    [--server NAME PLAIN TLS]... [--client NAME PLAIN TLS]...
                    [--pair CLIENT SERVER]... [--modes plaintext,tls]
                    [--cases CASE,...] [--jobs N] [--case-timeout S]

Peers are given by command line, so that one more implementation is one more
entry:
  --grpc-server NAME CMD   a server that takes grpc's interop flags; the
                           driver appends --port 0 [--use_tls true
                           --tls_cert FILE --tls_key FILE]
  --grpc-client NAME CMD   a client that takes grpc's interop flags; the
                           driver appends --server_host 127.0.0.1
                           --server_port P --test_case C [--use_tls true
                           --ca_file FILE]
  --server NAME PLAIN TLS  a server with flags of its own: PLAIN and TLS are
                           whole command templates with {cert} and {key}
  --client NAME PLAIN TLS  likewise for a client: {port}, {case}, {ca}
(each CMD or template is split like a shell line, the placeholders filled in
afterwards). A server prints "listening on HOST:PORT" once it serves and must
exit 0 on SIGTERM; a client exits 0 when its case passed.

Without --pair every client runs against every server. Cases of one pair run
--jobs at a time against one server process per (server, mode).
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

CASES = [
    "empty_unary", "large_unary", "client_streaming", "server_streaming", "ping_pong",
    "empty_stream", "timeout_on_sleeping_server", "cancel_after_begin",
    "cancel_after_first_response", "status_code_and_message", "special_status_message",
    "custom_metadata", "unimplemented_method", "unimplemented_service",
    "client_compressed_unary", "server_compressed_unary", "client_compressed_streaming",
    "server_compressed_streaming",
]
MODES = ["plaintext", "tls"]
GRPC_SERVER_PLAIN = " --port 0"
GRPC_SERVER_TLS = " --port 0 --use_tls true --tls_cert {cert} --tls_key {key}"
GRPC_CLIENT_PLAIN = " --server_host 127.0.0.1 --server_port {port} --test_case {case}"
GRPC_CLIENT_TLS = GRPC_CLIENT_PLAIN + " --use_tls true --ca_file {ca}"
LISTENING = re.compile(rb"listening on [^\s:]+:(\d+)")


def fill(template, **values):
    return [word.format(**values) for word in shlex.split(template)]


class Server:
    """One server process for one mode; `port` once it listens."""

    def __init__(self, name, mode, argv, log_path):
        self.name, self.mode, self.argv = name, mode, argv
        self.log_path = log_path
        self.problem = None
        self.port = None
        self.log = open(log_path, "wb")
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log,
                                        stdin=subprocess.DEVNULL)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.listening = threading.Event()
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            self.log.write(line)
            self.log.flush()
            match = LISTENING.search(line)
            if match and self.port is None:
                self.port = int(match.group(1))
                self.listening.set()
        self.listening.set()

    def wait_listening(self, seconds):
        self.listening.wait(seconds)
        if self.port is None:
            self.problem = f"did not announce its port within {seconds} s (log {self.log_path})"
        return self.port is not None

    def stop(self):
        if self.process.poll() is not None:
            self.problem = self.problem or (
                f"died during the run (exit status {self.process.returncode})")
        else:
            self.process.terminate()
            try:
                status = self.process.wait(timeout=10)
                if status != 0:
                    self.problem = self.problem or f"exited with status {status} after SIGTERM"
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                self.problem = self.problem or "did not stop within 10 s of SIGTERM"
        self.reader.join(5)
        self.log.close()


def run_case(argv, timeout):
    """(passed, last lines of output)."""
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"").decode(errors="replace")
        return False, f"timed out after {timeout} s\n{output}"
    output = done.stdout.decode(errors="replace")
    if done.returncode != 0:
        return False, f"exit status {done.returncode}\n{output}"
    return True, output


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grpc-server", nargs=2, action="append", default=[],
                        metavar=("NAME", "CMD"))
    parser.add_argument("--grpc-client", nargs=2, action="append", default=[],
                        metavar=("NAME", "CMD"))
    parser.add_argument("--server", nargs=3, action="append", default=[],
                        metavar=("NAME", "PLAIN", "TLS"))
    parser.add_argument("--client", nargs=3, action="append", default=[],
                        metavar=("NAME", "PLAIN", "TLS"))
    parser.add_argument("--pair", nargs=2, action="append", default=[],
                        metavar=("CLIENT", "SERVER"))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--case-timeout", type=float, default=30)
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args()
    args.servers = {name: {"plaintext": cmd + GRPC_SERVER_PLAIN, "tls": cmd + GRPC_SERVER_TLS}
                    for name, cmd in args.grpc_server}
    args.servers.update({name: {"plaintext": plain, "tls": tls}
                         for name, plain, tls in args.server})
    args.clients = {name: {"plaintext": cmd + GRPC_CLIENT_PLAIN, "tls": cmd + GRPC_CLIENT_TLS}
                    for name, cmd in args.grpc_client}
    args.clients.update({name: {"plaintext": plain, "tls": tls}
                         for name, plain, tls in args.client})
    args.modes = [m for m in args.modes.split(",") if m]
    args.cases = [c for c in args.cases.split(",") if c]
    for mode in args.modes:
        if mode not in MODES:
            parser.error(f"--modes: '{mode}' is not one of {', '.join(MODES)}")
    if not args.servers or not args.clients:
        parser.error("at least one server and one client are needed")
    pairs = args.pair or [(c, s) for c in args.clients for s in args.servers]
    for client, server in pairs:
        if client not in args.clients or server not in args.servers:
            parser.error(f"--pair {client} {server}: no such client or server")
    args.pairs = pairs
    return args


def make_certs(directory):
    tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools")
    sys.path.insert(0, os.path.normpath(tools))
    import make_test_certs  # noqa: E402 (found next to the workspace's tools/)
    return make_test_certs.make(directory)


def run_all(args, certs, logs, results, problems):
    """Starts each server needed in each mode, runs every pair's cases (all
    modes in one pool of --jobs), stops the servers."""
    servers = {}
    for mode in args.modes:
        for name in sorted({s for _, s in args.pairs}):
            argv = fill(args.servers[name][mode], **certs)
            log = os.path.join(logs, f"server-{name}-{mode}.log")
            servers[name, mode] = Server(name, mode, argv, log)
    try:
        jobs = []
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for mode in args.modes:
                for client, server_name in args.pairs:
                    server = servers[server_name, mode]
                    if not server.wait_listening(20):
                        continue
                    for case in args.cases:
                        argv = fill(args.clients[client][mode], port=server.port, case=case,
                                    **certs)
                        key = (case, f"{client}>{server_name} {mode}")
                        jobs.append((key, pool.submit(run_case, argv, args.case_timeout)))
            for key, job in jobs:
                results[key] = job.result()
    finally:
        for (name, mode), server in servers.items():
            server.stop()
            if server.problem:
                problems.append(f"server {name} ({mode}): {server.problem}")


def report(args, results, problems):
    columns = [f"{c}>{s} {m}" for m in args.modes for c, s in args.pairs]
    width = max(len(c) for c in args.cases)
    print("interop matrix (client>server mode):")
    for i, column in enumerate(columns):
        print(f"  [{i}] {column}")
    print(" " * width + " " + " ".join(f"[{i}]".rjust(5) for i in range(len(columns))))
    failed = 0
    for case in args.cases:
        cells = []
        for column in columns:
            result = results.get((case, column))
            cell = "-" if result is None else ("ok" if result[0] else "FAIL")
            failed += result is not None and not result[0]
            cells.append(cell.rjust(5))
        print(case.ljust(width) + " " + " ".join(cells))
    for (case, column), (passed, output) in sorted(results.items()):
        if not passed:
            tail = "\n".join(output.strip().splitlines()[-8:])
            print(f"\nFAILED {case} [{column}]:\n  " + tail.replace("\n", "\n  "))
    for problem in problems:
        print(f"\n{problem}")
    ran = sum(1 for _ in results)
    print(f"\ninterop: {ran - failed} passed, {failed} failed")
    missing = len(args.cases) * len(columns) - ran
    return failed == 0 and not problems and missing == 0


def main():
    args = parse_args()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="interop.") as tmp:
        logs = args.log_dir or os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR") or tmp
        os.makedirs(logs, exist_ok=True)
        certs = make_certs(os.path.join(tmp, "certs"))
        results, problems = {}, []
        run_all(args, certs, logs, results, problems)
        ok = report(args, results, problems)
    print(f"({time.monotonic() - began:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
