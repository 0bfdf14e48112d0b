"""Compiler options that libnet's library targets carry themselves."""

# libnet's sources need C++20. A workspace that depends on libnet does not read
# libnet's .bazelrc, and Bazel's auto-configured toolchain compiles C++ with
# -std=c++0x, so every cc_library with sources in libnet sets the level in its
# own copts: a rule's copts come after the toolchain's flags and after
# --copt/--cxxopt on the compile command line, and for GCC and Clang the last
# -std wins.
#
# Nothing in libnet can do the same for the workspace's own files that include
# libnet's headers. copts reach only the target's own sources; what a
# cc_library passes on to its dependents (CcInfo) is headers, include paths and
# defines, never flags; and the toolchain is made by Bazel's cc_configure(),
# which runs after the workspace's WORKSPACE and which a macro cannot change.
# That code needs `build --cxxopt=-std=c++20` in the workspace's .bazelrc.
LIBNET_COPTS = ["-std=c++20"]
