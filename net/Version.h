// The version of libnet a program is compiled against, for `#if` tests:
//   #if LIBNET_VERSION_MAJOR == 0 && LIBNET_VERSION_MINOR < 2
//     server.setThreadNum(4);                 // the 0.1 API
//   #else
//     TcpServer server(&loop, addr, "s", {.threads = 4});
//   #endif
// Before 1.0 every change of the public API raises MINOR (CHANGELOG.md);
// from 1.0 on, MAJOR. The same numbers as the file VERSION, the installed
// libnet.pc and libnetConfigVersion.cmake (tests/tools/version_test.sh).
#pragma once

#define LIBNET_VERSION_MAJOR 0
#define LIBNET_VERSION_MINOR 5
#define LIBNET_VERSION_PATCH 0
// MAJOR * 10000 + MINOR * 100 + PATCH: 500 for 0.5.0.
#define LIBNET_VERSION \
  (LIBNET_VERSION_MAJOR * 10000 + LIBNET_VERSION_MINOR * 100 + LIBNET_VERSION_PATCH)
