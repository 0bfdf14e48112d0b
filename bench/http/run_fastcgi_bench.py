#!/usr/bin/env python3
"""FastCGI to php-fpm: libnet's http_server --fastcgi-pass against nginx's
fastcgi_pass, both to the same php-fpm (pm static, the same children), with
a small PHP script. Clients: wrk (keep-alive) and ab (a connection per
request). Per run: requests per second (the client's count) and the server's
CPU time per request (utime+stime from /proc/PID/stat: every thread of
http_server; nginx's master and worker; php-fpm not counted, it is the same
for both). Medians of --runs interleaved runs (the server order rotated each
run), and the ratio to nginx from the same run.

nginx is set up as php-fpm is usually put behind it: fastcgi_pass to the
socket, a connection per request. Its upstream keepalive is not used: it
caps the idle connections it keeps, not the open ones, and php-fpm holds a
child per open connection, so with more clients than children the requests
on connections beyond the children wait for the kept ones to time out
(seen here: ab stalled). libnet's pool caps the open connections and queues
the rest, so it keeps them (--fastcgi-pool = the children). The server
nginx-keepalive (upstream keepalive = --workers, fastcgi_keep_conn on) is
safe only with --workers >= --connections: each request in flight then has
a child.

CPUs: the server under test (one loop / one worker) and php-fpm on CPU 0,
the client on CPU 1 (taskset); php-fpm shares CPU 0 with the server, as it
would on a box that runs both.

  bazel build --config=opt //examples/http:http_server
  python3 bench/http/run_fastcgi_bench.py --server bazel-bin/examples/http/http_server

Needs php8.2-fpm, nginx (nginx-light), wrk and ab (apache2-utils).
"""

import argparse
import datetime
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

PHP_FPM = "/usr/sbin/php-fpm8.2"
CLK_TCK = os.sysconf("SC_CLK_TCK")
SCRIPT = "<?php echo \"hello from php\\n\";\n"

NGINX_CONF = """worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log warn;
{user}
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    {upstream}
    client_body_temp_path {dir}/client_body;
    fastcgi_temp_path {dir}/fastcgi;
    proxy_temp_path {dir}/proxy;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {dir};
        location ~ \\.php$ {{
            {pass_lines}
            fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
            fastcgi_param QUERY_STRING $query_string;
            fastcgi_param REQUEST_METHOD $request_method;
            fastcgi_param CONTENT_TYPE $content_type;
            fastcgi_param CONTENT_LENGTH $content_length;
            fastcgi_param SCRIPT_NAME $fastcgi_script_name;
            fastcgi_param REQUEST_URI $request_uri;
            fastcgi_param DOCUMENT_URI $document_uri;
            fastcgi_param DOCUMENT_ROOT $document_root;
            fastcgi_param SERVER_PROTOCOL $server_protocol;
            fastcgi_param REQUEST_SCHEME $scheme;
            fastcgi_param HTTPS $https if_not_empty;
            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            fastcgi_param SERVER_SOFTWARE nginx/$nginx_version;
            fastcgi_param REMOTE_ADDR $remote_addr;
            fastcgi_param REMOTE_PORT $remote_port;
            fastcgi_param SERVER_ADDR $server_addr;
            fastcgi_param SERVER_PORT $server_port;
            fastcgi_param SERVER_NAME $server_name;
            fastcgi_param REDIRECT_STATUS 200;
        }}
    }}
}}
"""


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


class PhpFpm:
    def __init__(self, directory, workers):
        self.sock = os.path.join(directory, "fpm.sock")
        conf = os.path.join(directory, "fpm.conf")
        with open(conf, "w") as f:
            f.write(f"[global]\nerror_log = {directory}/fpm.log\ndaemonize = no\n"
                    f"[www]\nlisten = {self.sock}\nlisten.backlog = 4096\npm = static\n"
                    f"pm.max_children = {workers}\npm.max_requests = 0\n")
            if os.geteuid() == 0:
                f.write("user = root\ngroup = root\n")
        self.proc = subprocess.Popen(["taskset", "-c", "0", PHP_FPM, "-n", "-R", "-F", "-y", conf],
                                     start_new_session=True)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.sock) and time.monotonic() < deadline:
            time.sleep(0.02)

    def stop(self):
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def start_server(name, args, directory, fpm):
    port = free_port()
    if name.startswith("nginx"):
        conf = os.path.join(directory, "nginx.conf")
        user = "user root;" if os.geteuid() == 0 else ""
        upstream = ""
        pass_lines = f"fastcgi_pass unix:{fpm.sock};"
        if name == "nginx-keepalive":
            upstream = f"upstream php {{ server unix:{fpm.sock}; keepalive {args.workers}; }}"
            pass_lines = "fastcgi_pass php; fastcgi_keep_conn on;"
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(dir=directory, port=port, user=user, upstream=upstream,
                                      pass_lines=pass_lines))
        argv = ["taskset", "-c", "0", shutil.which("nginx") or "/usr/sbin/nginx", "-p",
                directory, "-c", conf, "-e", os.path.join(directory, "nginx-error.log")]
    else:
        backend = name.split("-", 1)[1]
        argv = ["taskset", "-c", "0", args.server, "--address", "127.0.0.1", "--port", str(port),
                "--backend", backend, "--root", directory, "--fastcgi-pass", "unix:" + fpm.sock,
                "--fastcgi-pool", str(args.workers)]
    # A session of its own: stopping it kills nginx's worker with its master
    # (an orphaned worker would hold its php-fpm connections, and children).
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    wait_port(port)
    pids = [proc.pid] + children(proc.pid)
    return proc, port, pids


def run_client(client, port, args):
    url = f"http://127.0.0.1:{port}/hello.php"
    if client == "wrk":
        out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{args.connections}",
                              f"-d{args.seconds}s", url], capture_output=True, text=True).stdout
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
        total = int(re.search(r"(\d+) requests in", out).group(1))
        errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        return rps, total, int(errors.group(1)) if errors else 0
    out = subprocess.run(["taskset", "-c", "1", "ab", "-q", "-n", str(args.requests), "-c",
                          str(args.connections), url], capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))
    failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
    non2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
    return rps, args.requests, failed + (int(non2xx.group(1)) if non2xx else 0)


def one_run(name, client, args, directory, fpm):
    proc, port, pids = start_server(name, args, directory, fpm)
    try:
        # Warm-up: the pool's connections made, php-fpm's opcache warm.
        subprocess.run(["ab", "-q", "-n", "2000", "-c", str(args.connections), "-k",
                        f"http://127.0.0.1:{port}/hello.php"], capture_output=True)
        before = cpu_ticks(pids + children(proc.pid))
        rps, total, errors = run_client(client, port, args)
        after = cpu_ticks(pids + children(proc.pid))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    cpu_us = (after - before) / CLK_TCK * 1e6 / max(total, 1)
    return {"rps": rps, "cpu_us": cpu_us, "errors": errors}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", required=True, help="libnet's http_server (an opt build)")
    p.add_argument("--servers", default="nginx,libnet-epoll,libnet-uring")
    p.add_argument("--clients", default="wrk,ab")
    p.add_argument("--workers", type=int, default=4, help="php-fpm children = pool size")
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--seconds", type=int, default=5, help="each wrk run")
    p.add_argument("--requests", type=int, default=20000, help="each ab run")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    servers = args.servers.split(",")
    clients = args.clients.split(",")
    directory = tempfile.mkdtemp(prefix="libnet-fcgi-bench-")
    with open(os.path.join(directory, "hello.php"), "w") as f:
        f.write(SCRIPT)
    fpm = PhpFpm(directory, args.workers)
    results = {}
    try:
        for run in range(args.runs):
            order = servers[run % len(servers):] + servers[:run % len(servers)]
            for client in clients:
                for name in order:
                    r = one_run(name, client, args, directory, fpm)
                    log(f"run {run + 1} {client} {name}: {r['rps']:.0f} req/s, "
                        f"{r['cpu_us']:.1f} us CPU/request, {r['errors']} errors")
                    results.setdefault((client, name), []).append(r)
    finally:
        fpm.stop()
        shutil.rmtree(directory, ignore_errors=True)
    print(f"# {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"kernel {platform.release()}, {os.cpu_count()} CPUs; php-fpm pm static "
          f"{args.workers} children (pool {args.workers}), {args.connections} connections, "
          f"medians of {args.runs} interleaved runs")
    print("| client | server | req/s | req/s vs nginx | server CPU us/request | CPU vs nginx "
          "| errors |")
    print("|---|---|---|---|---|---|---|")
    for client in clients:
        for name in servers:
            runs = results[(client, name)]
            rps = statistics.median(r["rps"] for r in runs)
            cpu = statistics.median(r["cpu_us"] for r in runs)
            ratio = cpu_ratio = "-"
            if not name.startswith("nginx") and (client, "nginx") in results:
                base = results[(client, "nginx")]
                ratio = "%.2f" % statistics.median(
                    r["rps"] / b["rps"] for r, b in zip(runs, base))
                cpu_ratio = "%.2f" % statistics.median(
                    r["cpu_us"] / b["cpu_us"] for r, b in zip(runs, base))
            errors = sum(r["errors"] for r in runs)
            print(f"| {client} | {name} | {rps:.0f} | {ratio} | {cpu:.1f} | {cpu_ratio} | "
                  f"{errors} |")


if __name__ == "__main__":
    main()
