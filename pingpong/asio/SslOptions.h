// SslOptions: the --tls-* options of the asio TLS ping-pong programs
// (asio_ssl_pingpong_server takes --tls-cert and --tls-key,
// asio_ssl_pingpong_client takes --tls-ca), parsed together with the
// positional arguments by parseServerArgs()/parseClientArgs() (and so by the
// parser every ping-pong peer shares, pingpong/CommandLine.h), and readable(),
// with which both check a PEM file before OpenSSL reads it.
//
// An aggregate and plain functions; called from main() before any thread
// starts.
#pragma once

#include <string>
#include <string_view>

#include "pingpong/floor/PingpongArgs.h"

namespace pingpong {

struct SslOptions {
  std::string cert;  // --tls-cert: the server's PEM certificate chain
  std::string key;   // --tls-key: the server's PEM private key
  std::string ca;    // --tls-ca: the PEM CA the client checks the server with
};

// The server's command line: --tls-cert FILE and --tls-key FILE (each also
// as --opt=FILE, before, after or among the positional arguments) and
// parseServerArgs()'s arguments. --help prints the usage and exits 0; an
// unknown, empty or missing option prints the problem and the usage and
// exits kExitUsage, as a bad positional argument does.
[[nodiscard]] ServerArgs parseSslServerArgs(int argc, char** argv, std::string_view program,
                                            SslOptions& tls);
// The client's: --tls-ca FILE and parseClientArgs()'s arguments, likewise.
[[nodiscard]] ClientArgs parseSslClientArgs(int argc, char** argv, std::string_view program,
                                            SslOptions& tls);

// False, after "PROGRAM: cannot read WHAT FILE: REASON" on stderr, if `file`
// cannot be opened for reading. OpenSSL 3 reports a missing or unreadable PEM
// file as a system-library error that asio can only call "asio.ssl error";
// opening it first gives the errno text instead.
[[nodiscard]] bool readable(std::string_view program, const std::string& file, const char* what);

}  // namespace pingpong
