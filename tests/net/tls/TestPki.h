// TestPki: certificates made at test time, never committed: a CA, a server
// certificate it signs (subjectAltName IP:127.0.0.1, IP:::1, DNS:localhost),
// a client certificate it signs, and a second CA that signed nothing the
// tests trust. P-256 keys, valid from a day ago for a week. Written as PEM
// files into a fresh directory under $TEST_TMPDIR (or /tmp), which the
// object removes, with the files it made, when destroyed.
//
// Made and used on one thread; throws std::runtime_error if OpenSSL fails.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

namespace libnet::test {

class TestPki {
 public:
  TestPki();
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  [[nodiscard]] const std::string& dir() const { return dir_; }
  [[nodiscard]] std::string caFile() const { return dir_ + "/ca.pem"; }
  [[nodiscard]] std::string serverCertFile() const { return dir_ + "/server.pem"; }
  [[nodiscard]] std::string serverKeyFile() const { return dir_ + "/server.key"; }
  [[nodiscard]] std::string clientCertFile() const { return dir_ + "/client.pem"; }
  [[nodiscard]] std::string clientKeyFile() const { return dir_ + "/client.key"; }
  [[nodiscard]] std::string otherCaFile() const { return dir_ + "/other-ca.pem"; }

  // Writes the same files into `dir` (an existing directory) and leaves them.
  static void writeTo(const std::string& dir);

 private:
  std::string dir_;
};

// `text` in lower case, for comparing OpenSSL's verify texts: their case
// differs between versions ("Hostname mismatch" before 3.0, "hostname
// mismatch" since).
inline std::string lowered(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace libnet::test
