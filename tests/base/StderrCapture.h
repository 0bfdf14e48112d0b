// StderrCapture: redirects file descriptor 2 into a temporary file until
// finish() (or destruction), for tests that check what was reported on stderr.
// Used by one test thread at a time.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

namespace libnet::test {

class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    file_ = std::tmpfile();
    if (saved_ >= 0 && file_ != nullptr) ::dup2(::fileno(file_), STDERR_FILENO);
  }
  ~StderrCapture() { finish(); }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Restores stderr and returns what was written to it meanwhile.
  std::string finish() {
    if (saved_ < 0 || file_ == nullptr) return captured_;
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    saved_ = -1;
    std::rewind(file_);
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) captured_.append(buf, n);
    std::fclose(file_);
    file_ = nullptr;
    return captured_;
  }

 private:
  int saved_ = -1;
  std::FILE* file_ = nullptr;
  std::string captured_;
};

}  // namespace libnet::test
