// tls::Session: one TLS connection's protocol state (an OpenSSL SSL object),
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
// A server makes its SSL object only when the client's first record is
// complete (or cannot be a ClientHello record): until then the few bytes
// that came are kept here. A connection that sends nothing, or part of a
// ClientHello, and stalls (a scanner, a slow-loris, a flood of half-open
// handshakes) then costs those bytes, not the ~40 KiB an SSL object
// in the middle of reading a ClientHello holds (its record and handshake
// buffers); bench/tls/half_open_rss.py measures it.
//
// Owned by one object on one thread; not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

struct ssl_st;  // OpenSSL's SSL

namespace libnet {
class Buffer;
}  // namespace libnet

namespace libnet::tls {

class Context;

class Session {
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
  // name only); ignored by a server. Throws Error if OpenSSL cannot make
  // a client's session (out of memory); a server's that cannot be made
  // when the first record is in fails receive().
  Session(std::shared_ptr<const Context> context, const std::string& peerName, Output* output);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

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
  // Heap memory the session holds, roughly: the SSL object's (an estimate
  // once it exists) plus what is kept of a first record. For the loop's
  // accounting of memory given back when connections close.
  [[nodiscard]] size_t heldMemory() const;

  // What an SSL object holds, roughly, measured with OpenSSL 3.0: during a
  // handshake (the object, its handshake buffer, a record buffer) and once
  // established with idle buffers released (docs/tls.md, "Memory").
  static constexpr size_t kHandshakeSslMemory = 40 * 1024;
  static constexpr size_t kEstablishedSslMemory = 16 * 1024;

 private:
  friend struct SessionBio;

  // Makes ssl_ and its BIO; false (error_ says why) if OpenSSL cannot.
  bool makeSsl();
  // A server without ssl_ yet: keeps `ciphertext` until the first record is
  // complete; then makes ssl_. False while it waits.
  bool takeFirstRecord(std::string_view ciphertext);
  // receive() once ssl_ exists.
  Status decrypt(std::string_view ciphertext, Buffer* plaintext);
  // A failed call: keeps the reason in error_.
  Status fail(int sslError);

  std::shared_ptr<const Context> context_;
  ssl_st* ssl_ = nullptr;
  Output* output_;
  // The ciphertext receive() is reading from; the BIO's read side.
  std::string_view input_;
  // A server's first bytes, while its first record is incomplete.
  std::string firstRecord_;
  const bool server_;
  bool closeNotifySent_ = false;
  std::string error_;
};

}  // namespace libnet::tls
