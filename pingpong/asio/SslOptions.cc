#include "pingpong/asio/SslOptions.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

namespace pingpong {
namespace {

// One option a program takes, and where its value goes. Every one is
// required and takes a FILE.
struct Option {
  std::string_view name;
  std::string* value;
};

// How a program is called: its name, the usage line after the name (printed
// on a bad option) and the note that --help adds to the shared usage text.
struct Syntax {
  std::string_view program;
  std::string_view usage;
  std::string_view note;
};

[[noreturn]] void optionError(const Syntax& syntax, const std::string& message) {
  const std::string program(syntax.program);
  const std::string usage(syntax.usage);
  std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program.c_str(), message.c_str(), program.c_str(),
               usage.c_str());
  std::exit(kExitUsage);
}

// Takes the options ("--opt FILE" or "--opt=FILE", anywhere on the line) out
// of argv and hands the rest to `parse`, the shared positional parser.
template <typename Args>
Args parseWithOptions(int argc, char** argv, const Syntax& syntax, std::span<const Option> options,
                      Args (*parse)(int, char**, const ProgramInfo&)) {
  const ProgramInfo info(syntax.program, 256, syntax.note);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") (void)parse(argc, argv, info);  // prints usage, exits 0
  }
  std::vector<char*> positional{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("--")) {
      positional.push_back(argv[i]);
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    const Option* option = nullptr;
    for (const Option& candidate : options) {
      if (candidate.name == name) option = &candidate;
    }
    if (option == nullptr) optionError(syntax, "unknown option: " + std::string(arg));
    std::string value;
    if (eq != std::string_view::npos) {
      value = std::string(arg.substr(eq + 1));
    } else if (i + 1 < argc && !std::string_view(argv[i + 1]).starts_with("--")) {
      value = argv[++i];
    }
    if (value.empty()) optionError(syntax, "option " + std::string(name) + " needs a FILE");
    *option->value = std::move(value);
  }
  const int count = static_cast<int>(positional.size());
  positional.push_back(nullptr);
  Args args = parse(count, positional.data(), info);
  for (const Option& option : options) {
    if (option.value->empty()) optionError(syntax, "missing " + std::string(option.name) + " FILE");
  }
  return args;
}

}  // namespace

ServerArgs parseSslServerArgs(int argc, char** argv, std::string_view program, SslOptions& tls) {
  const Syntax syntax{
      program, "--tls-cert FILE --tls-key FILE <address> <port> <threads>",
      "TLS: --tls-cert FILE --tls-key FILE (PEM chain and key; required, before or after the "
      "arguments)."};
  const Option options[] = {{"--tls-cert", &tls.cert}, {"--tls-key", &tls.key}};
  return parseWithOptions(argc, argv, syntax, options, &parseServerArgs);
}

ClientArgs parseSslClientArgs(int argc, char** argv, std::string_view program, SslOptions& tls) {
  const Syntax syntax{
      program, "--tls-ca FILE <address> <port> <threads> <blocksize> <sessions> <time_seconds>",
      "TLS: --tls-ca FILE (PEM CA that signed the server's certificate; required, before or "
      "after the arguments)."};
  const Option options[] = {{"--tls-ca", &tls.ca}};
  return parseWithOptions(argc, argv, syntax, options, &parseClientArgs);
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
