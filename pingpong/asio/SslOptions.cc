#include "pingpong/asio/SslOptions.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>

namespace pingpong {
namespace {

// Every option of the TLS programs is required and takes a FILE.
template <typename Args>
Args parseWithOptions(int argc, char** argv, std::string_view program,
                      std::string_view optionsUsage, std::string_view note,
                      std::span<const cmdline::Option> options,
                      Args (*parse)(int, char**, const ProgramInfo&)) {
  ProgramInfo info(program, 256, note);
  info.options = options;
  info.optionsUsage = optionsUsage;
  info.optionsRequired = true;
  return parse(argc, argv, info);
}

}  // namespace

ServerArgs parseSslServerArgs(int argc, char** argv, std::string_view program, SslOptions& tls) {
  const cmdline::Option options[] = {{"--tls-cert", &tls.cert}, {"--tls-key", &tls.key}};
  return parseWithOptions(argc, argv, program, "--tls-cert FILE --tls-key FILE",
                          "TLS: --tls-cert FILE --tls-key FILE (PEM chain and key; required, "
                          "before or after the arguments).",
                          options, &parseServerArgs);
}

ClientArgs parseSslClientArgs(int argc, char** argv, std::string_view program, SslOptions& tls) {
  const cmdline::Option options[] = {{"--tls-ca", &tls.ca}};
  return parseWithOptions(argc, argv, program, "--tls-ca FILE",
                          "TLS: --tls-ca FILE (PEM CA that signed the server's certificate; "
                          "required, before or after the arguments).",
                          options, &parseClientArgs);
}

bool readable(std::string_view program, const std::string& file, const char* what) {
  std::FILE* f = std::fopen(file.c_str(), "r");
  if (f == nullptr) {
    const int error = errno;
    std::fprintf(stderr, "%s: cannot read %s %s: %s\n", std::string(program).c_str(), what,
                 file.c_str(), std::strerror(error));
    return false;
  }
  std::fclose(f);
  return true;
}

}  // namespace pingpong
