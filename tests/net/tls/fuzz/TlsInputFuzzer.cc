// libFuzzer target for the TLS input path: a server-side tls::Session (the
// state a TlsConnectionIo drives) fed bytes a hostile peer chose, split into
// reads of sizes the input also chooses. Built and run by tools/fuzz.sh.
//
// The first byte picks what the rest is:
//   0: the stream from the first byte on: ClientHello parsing, alerts,
//      record framing before any key exists;
//   1: records after a real handshake with an in-process client: framing,
//      decryption failures, alerts and post-handshake messages in an
//      established session;
//   2: plaintext that the in-process client encrypts in writes of the
//      sizes chosen; the server must decrypt exactly these bytes (checked).
// The second byte sets the read size (1..256 bytes, 0: all at once).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "net/Buffer.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsSession.h"
#include "tests/net/tls/TestPki.h"

namespace {

using libnet::Buffer;
using libnet::tls::Context;
using libnet::tls::Session;

struct Collect : Session::Output {
  void onCiphertext(std::string_view bytes) override { bytes_.append(bytes); }
  std::string take() { return std::exchange(bytes_, {}); }
  std::string bytes_;
};

struct Contexts {
  std::shared_ptr<const Context> server;
  std::shared_ptr<const Context> client;
};

const Contexts& contexts() {
  static const Contexts made = [] {
    libnet::test::TestPki pki;  // files removed when it goes; contexts hold the keys
    Context::ServerOptions server;
    server.certChainFile = pki.serverCertFile();
    server.keyFile = pki.serverKeyFile();
    server.alpn = {"http/1.1"};
    Context::ClientOptions client;
    client.caFile = pki.caFile();
    return Contexts{Context::newServer(server), Context::newClient(client)};
  }();
  return made;
}

// Feeds `bytes` to `session` in reads of `step` bytes (0: one read).
bool feed(Session& session, std::string_view bytes, size_t step, Buffer* plaintext) {
  while (!bytes.empty()) {
    const size_t n = step == 0 ? bytes.size() : std::min(step, bytes.size());
    if (session.receive(bytes.substr(0, n), plaintext) != Session::Status::kOk) return false;
    bytes.remove_prefix(n);
    // The caller would deliver and drop what was decrypted: keep it bounded.
    if (plaintext->readableBytes() > (1 << 20)) plaintext->retrieveAll();
  }
  return true;
}

// A completed handshake between `server` and an in-process client.
bool handshake(Session& server, Collect& toClient, Session& client, Collect& toServer) {
  Buffer ignored;
  if (client.startHandshake() != Session::Status::kOk) return false;
  for (int i = 0; i < 8 && !(server.established() && client.established()); ++i) {
    if (!feed(server, toServer.take(), 0, &ignored)) return false;
    if (!feed(client, toClient.take(), 0, &ignored)) return false;
  }
  feed(server, toServer.take(), 0, &ignored);
  return server.established() && client.established();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int mode = data[0] % 3;
  const size_t step = data[1];
  const std::string_view input(reinterpret_cast<const char*>(data + 2), size - 2);
  Collect toClient;
  Collect toServer;
  Session server(contexts().server, "", &toClient);
  Buffer plaintext;
  if (mode == 0) {
    feed(server, input, step, &plaintext);
    return 0;
  }
  Session client(contexts().client, "127.0.0.1", &toServer);
  if (!handshake(server, toClient, client, toServer)) std::abort();  // must always work
  if (mode == 1) {
    feed(server, input, step, &plaintext);
    return 0;
  }
  // Mode 2: the client encrypts the input in writes of up to `step` bytes.
  std::string_view rest = input;
  while (!rest.empty()) {
    const size_t n = step == 0 ? rest.size() : std::min(step * 64, rest.size());
    if (client.send(rest.substr(0, n)) != Session::Status::kOk) std::abort();
    rest.remove_prefix(n);
  }
  if (!feed(server, toServer.take(), step, &plaintext)) std::abort();
  if (plaintext.view() != input) std::abort();  // decrypted bytes differ
  return 0;
}
