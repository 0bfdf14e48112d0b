"""Python messages and stubs for the script tests of tests/grpc, made at test
time from the repository's .proto files by Debian's protoc (--python_out)
and grpc_python_plugin (--grpc_python_out) into the test's temporary
directory, so that grpcio's own client calls the generated services of
generated_test_server as any gRPC client would.

usage (from a test script):
    stubs = grpc_stubs.generate(ROOT, ["tests/grpc/gen/kinds.proto", ...])
    kinds_pb2, kinds_grpc = stubs("tests/grpc/gen/kinds.proto")
ROOT is the runfiles directory of the repository (where the .proto files
are, at their workspace-relative paths).
"""

import importlib
import os
import subprocess
import sys
import tempfile

PROTOC = "/usr/bin/protoc"
PLUGIN = "/usr/bin/grpc_python_plugin"


def generate(root, protos):
    """Runs protoc over `protos` (workspace-relative paths under `root`) and
    returns a function that imports the (messages, stubs) modules of one."""
    out = tempfile.mkdtemp(prefix="grpc_stubs_", dir=os.environ.get("TEST_TMPDIR"))
    for tool in (PROTOC, PLUGIN):
        if not os.access(tool, os.X_OK):
            raise SystemExit("FAIL: %s is needed (tools/setup.sh installs it)" % tool)
    subprocess.run([PROTOC, "-I" + root, "-I/usr/include", "--python_out=" + out,
                    "--grpc_python_out=" + out, "--plugin=protoc-gen-grpc_python=" + PLUGIN,
                    *protos], check=True)
    sys.path.insert(0, out)

    def stubs(proto):
        module = proto[:-len(".proto")].replace("/", ".")
        return importlib.import_module(module + "_pb2"), importlib.import_module(module + "_pb2_grpc")

    return stubs
