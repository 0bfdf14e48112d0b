#include "net/tls/TlsSession.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstring>

#include "net/Buffer.h"
#include "net/tls/TlsContext.h"

namespace libnet::tls {

// A BIO with no memory of its own: reads come from the session's input_
// (the caller's ciphertext, in place) and writes go straight to its Output,
// so no ciphertext is copied into an intermediate memory BIO.
struct SessionBio {
  static int write(BIO* bio, const char* data, size_t length, size_t* written) {
    auto* session = static_cast<Session*>(BIO_get_data(bio));
    session->output_->onCiphertext(std::string_view(data, length));
    *written = length;
    return 1;
  }

  static int read(BIO* bio, char* data, size_t length, size_t* got) {
    auto* session = static_cast<Session*>(BIO_get_data(bio));
    BIO_clear_retry_flags(bio);
    if (session->input_.empty()) {
      BIO_set_retry_read(bio);  // "want read": the caller brings more
      *got = 0;
      return 0;
    }
    const size_t n = std::min(length, session->input_.size());
    std::memcpy(data, session->input_.data(), n);
    session->input_.remove_prefix(n);
    *got = n;
    return 1;
  }

  static long control(BIO* bio, int command, long, void*) {
    switch (command) {
      case BIO_CTRL_FLUSH:
        return 1;  // every write went straight out
      case BIO_CTRL_PENDING: {
        auto* session = static_cast<Session*>(BIO_get_data(bio));
        return static_cast<long>(session->input_.size());
      }
      default:
        return 0;
    }
  }

  static int create(BIO* bio) {
    BIO_set_init(bio, 1);
    return 1;
  }

  // Made once per process (OpenSSL allows concurrent use of one method).
  static const BIO_METHOD* method() {
    static BIO_METHOD* const kMethod = [] {
      BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "libnet");
      if (m == nullptr) return m;
      BIO_meth_set_write_ex(m, write);
      BIO_meth_set_read_ex(m, read);
      BIO_meth_set_ctrl(m, control);
      BIO_meth_set_create(m, create);
      return m;
    }();
    return kMethod;
  }
};

namespace {

// Whether `bytes`, a server's first from its client, hold the first record
// whole, or enough of it to show that it is no ClientHello record (OpenSSL
// then refuses it as it would have): a handshake record whose length fits a
// plaintext record waits for its last byte.
bool firstRecordComplete(std::string_view bytes) {
  constexpr size_t kHeader = 5;                      // type, version (2), length (2)
  constexpr unsigned char kHandshake = 22;           // the record type of a ClientHello
  constexpr size_t kMaxPlaintextRecord = 16 * 1024;  // RFC 8446, 5.1
  if (bytes.empty()) return false;
  if (static_cast<unsigned char>(bytes[0]) != kHandshake) return true;
  if (bytes.size() < kHeader) return false;
  const size_t length = static_cast<size_t>(static_cast<unsigned char>(bytes[3])) << 8 |
                        static_cast<unsigned char>(bytes[4]);
  return length > kMaxPlaintextRecord || bytes.size() >= kHeader + length;
}

bool isIpAddress(const std::string& name) {
  unsigned char address[sizeof(in6_addr)];
  return inet_pton(AF_INET, name.c_str(), address) == 1 ||
         inet_pton(AF_INET6, name.c_str(), address) == 1;
}

}  // namespace

Session::Session(std::shared_ptr<const Context> context, const std::string& peerName,
                 Output* output)
    : context_(std::move(context)), output_(output), server_(context_->isServer()) {
  if (server_) return;  // made when the client's first record is in
  if (!makeSsl()) throw Error("TLS: " + error_);
  if (peerName.empty()) return;
  const bool ip = isIpAddress(peerName);
  if (!ip) SSL_set_tlsext_host_name(ssl_, peerName.c_str());  // SNI takes names only
  if (context_->verifiesPeer()) {
    const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), peerName.c_str())
                      : SSL_set1_host(ssl_, peerName.c_str());
    if (ok != 1) {
      SSL_free(ssl_);
      throw Error("TLS: bad peer name '" + peerName + "'");
    }
  }
}

bool Session::makeSsl() {
  ssl_ = SSL_new(context_->native());
  BIO* bio = SessionBio::method() ? BIO_new(SessionBio::method()) : nullptr;
  if (ssl_ == nullptr || bio == nullptr) {
    BIO_free(bio);
    SSL_free(ssl_);
    ssl_ = nullptr;
    error_ = "cannot make a session: " + Context::takeErrors();
    return false;
  }
  BIO_set_data(bio, this);
  SSL_set_bio(ssl_, bio, bio);  // one BIO both ways: the SSL takes its one reference
  if (server_) {
    SSL_set_accept_state(ssl_);
  } else {
    SSL_set_connect_state(ssl_);
  }
  return true;
}

Session::~Session() { SSL_free(ssl_); }

Session::Status Session::startHandshake() {
  if (ssl_ == nullptr) return Status::kOk;  // a server: the client speaks first
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) return Status::kOk;
  const int e = SSL_get_error(ssl_, r);
  if (e == SSL_ERROR_WANT_READ) return Status::kOk;
  return fail(e);
}

Session::Status Session::receive(std::string_view ciphertext, Buffer* plaintext) {
  if (ssl_ != nullptr) return decrypt(ciphertext, plaintext);
  // A server whose client's first record is not complete yet.
  if (!error_.empty()) return Status::kFailed;
  std::string_view first = ciphertext;
  if (!firstRecord_.empty() || !firstRecordComplete(ciphertext)) {
    firstRecord_.append(ciphertext);
    if (!firstRecordComplete(firstRecord_)) return Status::kOk;
    first = firstRecord_;
  }
  if (!makeSsl()) return Status::kFailed;
  const Status status = decrypt(first, plaintext);
  std::string().swap(firstRecord_);  // its memory too
  return status;
}

Session::Status Session::decrypt(std::string_view ciphertext, Buffer* plaintext) {
  // One record's plaintext at most per SSL_read: room for it, every time.
  constexpr size_t kRecordPlaintext = 16 * 1024;
  ERR_clear_error();
  input_ = ciphertext;
  Status status = Status::kOk;
  for (;;) {
    plaintext->ensureWritableBytes(kRecordPlaintext);
    size_t got = 0;
    const size_t before = input_.size();
    const int r = SSL_read_ex(ssl_, plaintext->beginWrite(), plaintext->writableBytes(), &got);
    if (r == 1) {
      plaintext->hasWritten(got);
      continue;
    }
    const int e = SSL_get_error(ssl_, r);
    // "Want read" with input left: a record that was not application data
    // (a session ticket, a key update) was taken; go on with the rest. With
    // SSL_MODE_AUTO_RETRY (OpenSSL's default) this does not happen; kept so
    // that the input is always taken whole.
    if (e == SSL_ERROR_WANT_READ && !input_.empty() && input_.size() < before) continue;
    if (e == SSL_ERROR_WANT_READ) break;  // all of the input is taken
    status = e == SSL_ERROR_ZERO_RETURN ? Status::kPeerClosed : fail(e);
    break;
  }
  input_ = {};
  return status;
}

Session::Status Session::send(std::string_view plaintext) {
  if (plaintext.empty()) return Status::kOk;
  if (ssl_ == nullptr) {
    error_ = "send before the handshake";
    return Status::kFailed;
  }
  ERR_clear_error();
  size_t written = 0;
  const int r = SSL_write_ex(ssl_, plaintext.data(), plaintext.size(), &written);
  if (r == 1) return Status::kOk;
  return fail(SSL_get_error(ssl_, r));
}

void Session::sendCloseNotify() {
  if (closeNotifySent_ || !established()) return;
  closeNotifySent_ = true;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // writes the alert; the peer's is not awaited
  ERR_clear_error();
}

bool Session::established() const { return ssl_ != nullptr && SSL_is_init_finished(ssl_) == 1; }

std::string_view Session::version() const {
  return ssl_ != nullptr ? SSL_get_version(ssl_) : std::string_view();
}

std::string_view Session::cipher() const {
  const char* name = ssl_ != nullptr ? SSL_get_cipher_name(ssl_) : nullptr;
  return name != nullptr ? std::string_view(name) : std::string_view();
}

std::string_view Session::alpn() const {
  if (ssl_ == nullptr) return {};
  const unsigned char* data = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(ssl_, &data, &length);
  return data ? std::string_view(reinterpret_cast<const char*>(data), length) : std::string_view();
}

bool Session::resumed() const { return ssl_ != nullptr && SSL_session_reused(ssl_) == 1; }

size_t Session::heldMemory() const {
  // An empty string's capacity is its inline storage, not the heap's.
  size_t bytes = firstRecord_.empty() ? 0 : firstRecord_.capacity();
  if (ssl_ != nullptr) bytes += established() ? kEstablishedSslMemory : kHandshakeSslMemory;
  return bytes;
}

Session::Status Session::fail(int sslError) {
  if (error_.empty()) {
    const long verify = SSL_get_verify_result(ssl_);
    std::string errors = Context::takeErrors();
    if (verify != X509_V_OK && !server_) {
      error_ = std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
    } else if (!errors.empty()) {
      error_ = std::move(errors);
    } else if (sslError == SSL_ERROR_SYSCALL) {
      error_ = "unexpected end of the stream";
    } else {
      error_ = "TLS error " + std::to_string(sslError);
    }
  }
  ERR_clear_error();
  return Status::kFailed;
}

}  // namespace libnet::tls
