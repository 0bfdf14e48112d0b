#!/usr/bin/env python3
"""Makes a throwaway CA and a server certificate it signs (P-256 keys, valid
two days, subjectAltName IP:127.0.0.1) with the openssl command, for the
benchmarks and the consumer tests that run TLS over loopback:

  DIR/ca.pem, DIR/ca.key, DIR/server.pem, DIR/server.key

  tools/make_test_certs.py DIR          (or: import make_test_certs; make(DIR))

Never for anything but loopback tests: the CA's key lies next to it.
"""

import os
import subprocess
import sys


def make(directory):
    """Writes the files into `directory` (made if missing); returns their paths
    as {"cert", "key", "ca"}. Raises CalledProcessError if openssl fails."""
    os.makedirs(directory, exist_ok=True)

    def run(*argv):
        subprocess.run(["openssl"] + list(argv), cwd=directory, check=True,
                       capture_output=True)

    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=libnet test CA")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(directory, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")
    return {"cert": os.path.join(directory, "server.pem"),
            "key": os.path.join(directory, "server.key"),
            "ca": os.path.join(directory, "ca.pem")}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tools/make_test_certs.py DIR")
    try:
        make(sys.argv[1])
    except subprocess.CalledProcessError as e:
        sys.exit("make_test_certs: openssl %s failed: %s" %
                 (e.cmd[1], e.stderr.decode(errors="replace").strip()))
