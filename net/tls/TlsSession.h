// TlsSession: one TLS connection's protocol state (an OpenSSL SSL object),
// with no socket: ciphertext goes in through receive() and comes out through
// the Output it is given; plaintext comes out of receive() into the caller's
// Buffer and goes in through send(). TlsConnectionIo drives one per
// connection on its loop; the fuzz target drives one with made-up input.
//
// The bytes: receive() lets OpenSSL read the given ciphertext in place (its
// BIO copies each record into OpenSSL's record buffer, where it is decrypted)
// and decrypts straight into the caller's Buffer: one copy of the plaintext,
// the one OpenSSL makes. send() encrypts from the caller's bytes into
// OpenSSL's write buffer and hands each record to Output::onCiphertext().
//
// Owned by one object on one thread; not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

struct ssl_st;  // OpenSSL's SSL

namespace libnet {

class Buffer;
class TlsContext;

class TlsSession {
 public:
  // Where ciphertext goes: called from inside receive(), send(),
  // startHandshake() and sendCloseNotify(), once per record or flight.
  class Output {
   public:
    virtual void onCiphertext(std::string_view bytes) = 0;

   protected:
    ~Output() = default;
  };

  enum class Status {
    kOk,          // go on
    kPeerClosed,  // the peer sent close_notify: it will send nothing more
    kFailed,      // a fatal protocol error or a failed verification: see error()
  };

  // `peerName`: for a client, the server's DNS name or IP address, checked
  // against its certificate (when the context verifies) and sent as SNI (a
  // name only); ignored by a server. Throws TlsError if OpenSSL cannot make
  // the session (out of memory).
  TlsSession(std::shared_ptr<const TlsContext> context, const std::string& peerName,
             Output* output);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // A client's first flight (ClientHello). A server waits for the client.
  [[nodiscard]] Status startHandshake();
  // Takes all of `ciphertext`; appends what it decrypts to `plaintext`. The
  // handshake, while under way, advances here.
  [[nodiscard]] Status receive(std::string_view ciphertext, Buffer* plaintext);
  // Encrypts all of `plaintext`. Only once established().
  [[nodiscard]] Status send(std::string_view plaintext);
  // Our close_notify (once): nothing more will be sent.
  void sendCloseNotify();

  [[nodiscard]] bool established() const;
  [[nodiscard]] bool isServer() const { return server_; }
  [[nodiscard]] bool closeNotifySent() const { return closeNotifySent_; }
  // Why the session failed ("" until it has).
  [[nodiscard]] const std::string& error() const { return error_; }
  // After the handshake: the negotiated protocol ("TLSv1.3"), cipher, ALPN
  // protocol ("" if none), and whether the session was resumed.
  [[nodiscard]] std::string_view version() const;
  [[nodiscard]] std::string_view cipher() const;
  [[nodiscard]] std::string_view alpn() const;
  [[nodiscard]] bool resumed() const;

 private:
  friend struct TlsSessionBio;

  // A failed call: keeps the reason in error_.
  Status fail(int sslError);

  std::shared_ptr<const TlsContext> context_;
  ssl_st* ssl_ = nullptr;
  Output* output_;
  // The ciphertext receive() is reading from; the BIO's read side.
  std::string_view input_;
  const bool server_;
  bool closeNotifySent_ = false;
  std::string error_;
};

}  // namespace libnet
