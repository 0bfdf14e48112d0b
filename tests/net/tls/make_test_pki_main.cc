// make_test_pki DIR: writes the test certificates (TestPki) into DIR, for
// the script tests and benchmarks that drive real TLS clients.
#include <cstdio>
#include <exception>

#include "tests/net/tls/TestPki.h"

int main(int argc, char* argv[]) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_test_pki DIR\n");
    return 2;
  }
  try {
    libnet::test::TestPki::writeTo(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_test_pki: %s\n", e.what());
    return 1;
  }
  return 0;
}
