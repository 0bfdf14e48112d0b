"""Python messages and stubs of examples/grpc/protos for the grpcio peers,
generated with Debian's protoc and grpc_python_plugin (nothing generated is
checked in).

  modules = grpc_stubs.load()            generates into a fresh temporary
                                         directory (removed at exit)
  modules = grpc_stubs.load(DIR)         generates into DIR unless it holds
                                         them already (the harness does this
                                         once for all its runs)
  python3 grpc_stubs.py DIR              generates into DIR

Returns a namespace with empty_pb2, messages_pb2, test_pb2, test_pb2_grpc,
helloworld_pb2 and helloworld_pb2_grpc.
"""

import atexit
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import types

PROTOS = ["empty", "messages", "test", "helloworld"]
PROTO_DIR = "examples/grpc/protos"
PROTOC = "/usr/bin/protoc"
PLUGIN = "/usr/bin/grpc_python_plugin"


def workspace_root():
    """The directory the .proto files' import paths are relative to: the
    workspace root, or the runfiles tree of a Bazel test."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.normpath(os.path.join(here, "..", "..", ".."))]
    runfiles = os.environ.get("RUNFILES_DIR") or os.environ.get("TEST_SRCDIR")
    if runfiles:
        candidates.insert(0, os.path.join(runfiles, os.environ.get("TEST_WORKSPACE", "libnet")))
    for root in candidates:
        if os.path.exists(os.path.join(root, PROTO_DIR, "test.proto")):
            return root
    raise FileNotFoundError(f"no {PROTO_DIR}/test.proto above {here}")


def generate(directory):
    """Runs protoc for every .proto into `directory` (idempotent)."""
    marker = os.path.join(directory, PROTO_DIR, "test_pb2_grpc.py")
    if os.path.exists(marker):
        return
    os.makedirs(directory, exist_ok=True)
    root = workspace_root()
    sources = [f"{PROTO_DIR}/{name}.proto" for name in PROTOS]
    subprocess.run([PROTOC, "-I.", f"--python_out={directory}", f"--grpc_python_out={directory}",
                    f"--plugin=protoc-gen-grpc_python={PLUGIN}"] + sources,
                   cwd=root, check=True)


def load(directory=None):
    if directory is None:
        directory = tempfile.mkdtemp(prefix="grpc_stubs.")
        atexit.register(shutil.rmtree, directory, True)
    generate(directory)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    package = PROTO_DIR.replace("/", ".")
    modules = types.SimpleNamespace()
    for name in PROTOS:
        for suffix in ("_pb2", "_pb2_grpc"):
            setattr(modules, name + suffix, importlib.import_module(f"{package}.{name}{suffix}"))
    return modules


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: grpc_stubs.py DIR")
    generate(sys.argv[1])
