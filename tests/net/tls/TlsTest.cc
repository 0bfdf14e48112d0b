// TLS under TcpServer / TcpClient on both backends: round trips with every
// byte checked, the handshake's announcement, verification failures, and
// hostile peers (garbage, truncation, silence, byte-by-byte records,
// oversized records, peers that never read, mass aborts mid-handshake).
// Certificates are made at test time (TestPki). The real clients no one here
// wrote (openssl s_client, curl) are in tls_clients_test.py.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/Buffer.h"
#include "net/ConnectFailure.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/TcpClient.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"
#include "net/tls/TlsSession.h"
#include "tests/net/TestUtil.h"
#include "tests/net/tls/TestPki.h"

namespace libnet {
namespace {

using namespace std::chrono_literals;
using test::BlockingClient;
using test::lowered;
using test::runSync;
using test::waitUntil;

// What one client connection saw, written on the client loop's thread.
struct ClientRecord {
  std::mutex mutex;
  std::string received;
  int ups = 0;
  int downs = 0;
  int connectError = 0;
  std::string failure;       // ConnectFailure::message(), from the failure callback
  std::string layerFailure;  // ConnectFailure::layer
  int failureError = 0;      // ConnectFailure::error()
  TcpConnectionPtr conn;

  std::string snapshot() {
    std::lock_guard lock(mutex);
    return received;
  }
  size_t size() {
    std::lock_guard lock(mutex);
    return received.size();
  }
};

// A TLS client driven by hand over a blocking socket: every ciphertext byte
// it sends is under the test's control (split byte by byte, cut short).
class RawTlsClient : private tls::Session::Output {
 public:
  RawTlsClient(const SocketAddress& server, std::shared_ptr<const tls::Context> context)
      : socket_(server), session_(std::move(context), "127.0.0.1", this) {}

  // The client's first flight, not yet sent.
  std::string clientHello() {
    EXPECT_EQ(session_.startHandshake(), tls::Session::Status::kOk);
    return std::exchange(outgoing_, {});
  }

  // Completes the handshake, sending every ciphertext byte in a send() of
  // its own when `byteByByte`. False if the server closed or failed it.
  bool handshake(bool byteByByte) {
    if (session_.startHandshake() != tls::Session::Status::kOk) return false;
    for (int round = 0; round < 100 && !session_.established(); ++round) {
      if (!flush(byteByByte)) return false;
      if (session_.established()) break;
      if (!receiveSome()) return false;
    }
    return session_.established() && flush(byteByByte);
  }

  bool send(std::string_view plaintext, bool byteByByte) {
    if (session_.send(plaintext) != tls::Session::Status::kOk) return false;
    return flush(byteByByte);
  }

  // Reads until `n` plaintext bytes have arrived (bounded by the socket's
  // timeouts).
  std::string receivePlain(size_t n) {
    while (plain_.readableBytes() < n && receiveSome()) {
    }
    return plain_.retrieveAllAsString();
  }

  BlockingClient& socket() { return socket_; }

 private:
  void onCiphertext(std::string_view bytes) override { outgoing_.append(bytes); }

  bool flush(bool byteByByte) {
    const std::string out = std::exchange(outgoing_, {});
    if (!byteByByte) return socket_.sendAll(out);
    int one = 1;
    ::setsockopt(socket_.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (char c : out) {
      if (!socket_.sendAll(std::string_view(&c, 1))) return false;
    }
    return true;
  }

  bool receiveSome() {
    char buf[16384];
    ssize_t n;
    do {
      n = ::recv(socket_.fd(), buf, sizeof buf, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    return session_.receive(std::string_view(buf, static_cast<size_t>(n)), &plain_) ==
           tls::Session::Status::kOk;
  }

  BlockingClient socket_;
  tls::Session session_;
  std::string outgoing_;
  Buffer plain_;
};

class TlsTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    serverThread_ = std::make_unique<EventLoopThread>(nullptr, "server", GetParam());
    serverLoop_ = serverThread_->startLoop();
    clientThread_ = std::make_unique<EventLoopThread>(nullptr, "client", GetParam());
    clientLoop_ = clientThread_->startLoop();
  }

  void TearDown() override {
    // A record holds its connection, whose callbacks hold the record: the
    // cycle is broken here, on the connection's loop.
    if (clientLoop_) {
      runSync(clientLoop_, [&] {
        for (auto& record : records_) {
          std::lock_guard lock(record->mutex);
          record->conn.reset();
        }
        clients_.clear();
      });
    }
    if (serverLoop_) runSync(serverLoop_, [&] { server_.reset(); });
    clientThread_.reset();
    serverThread_.reset();
  }

  tls::Context::ServerOptions serverOptions() const {
    tls::Context::ServerOptions options;
    options.certChainFile = pki_.serverCertFile();
    options.keyFile = pki_.serverKeyFile();
    return options;
  }

  std::shared_ptr<const tls::Context> clientContext(const std::string& caFile) const {
    tls::Context::ClientOptions options;
    options.caFile = caFile;
    return tls::Context::newClient(options);
  }

  // An echo server (unless `message` says otherwise) with TLS; `connection`
  // replaces the connection callback that counts ups.
  void startServer(const tls::Context::ServerOptions& options, MessageCallback message = nullptr,
                   size_t maxQueuedOutput = 0, ConnectionCallback connection = nullptr) {
    const TcpServer::Options serverOptions{
        .layer = tls::newLayer(tls::Context::newServer(options)),
        .maxQueuedOutput =
            maxQueuedOutput != 0 ? maxQueuedOutput : TcpServer::kDefaultMaxQueuedOutput,
    };
    runSync(serverLoop_, [&] {
      server_ =
          std::make_unique<TcpServer>(serverLoop_, InetAddress(0, true), "tls", serverOptions);
      if (connection) {
        server_->setConnectionCallback(std::move(connection));
      } else {
        server_->setConnectionCallback([this](const TcpConnectionPtr& conn) {
          EXPECT_TRUE(conn->announced());
          if (conn->connected()) {
            ++serverUps_;
            lastServerConn_ = conn;
          }
        });
      }
      server_->setMessageCallback(message ? std::move(message)
                                          : [](const TcpConnectionPtr& conn, Buffer* buffer,
                                               Timestamp) { conn->send(buffer); });
      server_->start();
    });
    address_ = runSync(serverLoop_, [&] { return server_->listenAddress(); });
  }

  // A TLS TcpClient on the client loop, recording into a new ClientRecord.
  std::shared_ptr<ClientRecord> connect(std::shared_ptr<const tls::Context> context,
                                        const std::string& peerName = "127.0.0.1") {
    auto record = std::make_shared<ClientRecord>();
    auto layer = tls::newLayer(std::move(context), peerName);
    runSync(clientLoop_, [&] {
      auto client = std::make_unique<TcpClient>(clientLoop_, address_, "tls-client",
                                                TcpClient::Options{.layer = layer});
      client->setConnectionCallback([record](const TcpConnectionPtr& conn) {
        std::lock_guard lock(record->mutex);
        if (conn->connected()) {
          ++record->ups;
          record->conn = conn;
        } else {
          ++record->downs;
          record->conn.reset();
        }
      });
      client->setMessageCallback([record](const TcpConnectionPtr&, Buffer* buffer, Timestamp) {
        std::lock_guard lock(record->mutex);
        record->received += buffer->retrieveAllAsString();
      });
      client->setConnectErrorCallback([record](int err) {
        std::lock_guard lock(record->mutex);
        record->connectError = err;
      });
      client->setConnectFailureCallback([record](const ConnectFailure& failure) {
        std::lock_guard lock(record->mutex);
        // Comes first: the connect-error callback has not run yet.
        EXPECT_EQ(record->connectError, 0);
        record->failure = failure.message();
        record->layerFailure = failure.layer;
        record->failureError = failure.error();
      });
      client->connect();
      clients_.push_back(std::move(client));
    });
    records_.push_back(record);
    return record;
  }

  static bool isUp(ClientRecord* record) {
    std::lock_guard lock(record->mutex);
    return record->ups > 0;
  }

  static bool waitForConnectError(ClientRecord* record) {
    return waitUntil([record] {
      std::lock_guard lock(record->mutex);
      return record->connectError != 0;
    });
  }

  void sendFromClient(ClientRecord* record, std::string data) {
    // Gone already when the server refused it after the client's handshake
    // (mutual TLS): nothing to send on.
    runSync(clientLoop_, [&] {
      if (record->conn) record->conn->send(data);
    });
  }

  test::TestPki pki_;
  std::unique_ptr<EventLoopThread> serverThread_;
  std::unique_ptr<EventLoopThread> clientThread_;
  EventLoop* serverLoop_ = nullptr;
  EventLoop* clientLoop_ = nullptr;
  std::unique_ptr<TcpServer> server_;
  std::vector<std::unique_ptr<TcpClient>> clients_;
  std::vector<std::shared_ptr<ClientRecord>> records_;  // test thread only
  SocketAddress address_;
  std::atomic<int> serverUps_{0};
  // Written by server callbacks, which may run until TearDown() destroys the
  // server: members, not locals of a test body.
  std::atomic<size_t> maxQueued_{0};
  std::atomic<int> outcome_{-1};
  std::string got_;                  // server loop only
  TcpConnectionPtr lastServerConn_;  // server loop only
};

TEST_P(TlsTest, EchoEveryByteOfMixedSizes) {
  startServer(serverOptions());
  auto record = connect(clientContext(pki_.caFile()));
  ASSERT_TRUE(waitUntil([&] { return isUp(record.get()); }));
  std::string sent;
  for (size_t size : {1, 100, 16383, 16384, 16385, 100000, 1 << 20, 3 << 20}) {
    const std::string chunk = test::randomBytes(size, static_cast<uint32_t>(size));
    sendFromClient(record.get(), chunk);
    sent += chunk;
  }
  ASSERT_TRUE(waitUntil([&] { return record->size() >= sent.size(); }, 30s)) << record->size();
  EXPECT_TRUE(record->snapshot() == sent);
  EXPECT_EQ(serverUps_.load(), 1);
}

// A message callback that throws something that is not a std::exception
// (an int, a string) over TLS: that connection is closed, and the next
// one sees and gets back only its own plaintext.
TEST_P(TlsTest, AMessageCallbackThrowingAnyTypeClosesOnlyItsConnection) {
  for (const bool throwInt : {true, false}) {
    SCOPED_TRACE(throwInt ? "int" : "std::string");
    startServer(serverOptions(),
                [throwInt](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) {
                  if (buffer->view().find("POISON") != std::string_view::npos) {
                    if (throwInt) throw 42;
                    throw std::string("poisoned");
                  }
                  conn->send(buffer);
                });
    auto a = connect(clientContext(pki_.caFile()));
    ASSERT_TRUE(waitUntil([&] { return isUp(a.get()); }));
    sendFromClient(a.get(), "aaaaPOISONaaaa");
    ASSERT_TRUE(waitUntil([&] {
      std::lock_guard lock(a->mutex);
      return a->downs > 0;
    }));
    EXPECT_EQ(a->snapshot(), "");
    auto b = connect(clientContext(pki_.caFile()));
    ASSERT_TRUE(waitUntil([&] { return isUp(b.get()); }));
    sendFromClient(b.get(), "bbbb");
    ASSERT_TRUE(waitUntil([&] { return b->size() >= 4; }));
    EXPECT_EQ(b->snapshot(), "bbbb");
    runSync(serverLoop_, [&] { server_.reset(); });
  }
}

TEST_P(TlsTest, ServerSendsFileAndClosesWithCloseNotify) {
  const std::string contents = test::randomBytes(1 << 20, 7);
  const std::string head = "HEAD\n";
  startServer(serverOptions(), nullptr, 0, [contents, head](const TcpConnectionPtr& conn) {
    if (!conn->connected()) return;
    Buffer buffer;
    buffer.append(head);
    conn->sendFile(test::temporaryFile(contents), 0, contents.size(), &buffer);
    conn->closeAfterOutput();
  });
  auto record = connect(clientContext(pki_.caFile()));
  // The client's down callback comes from the server's close_notify (a clean
  // end), after every byte.
  ASSERT_TRUE(waitUntil([&] {
    std::lock_guard lock(record->mutex);
    return record->downs > 0;
  }));
  EXPECT_TRUE(record->snapshot() == head + contents) << record->size();
}

// Bytes sent after sendFile() go out after the file's bytes, never in between
// or ahead of them: the layer encrypts the file in order, and what is sent
// behind it (small, large, another file from an offset) waits for it.
TEST_P(TlsTest, BytesSentAfterSendFileArriveAfterTheFile) {
  const std::string first = test::randomBytes(300 * 1024, 21);
  const std::string second = test::randomBytes(40 * 1024, 22);
  const std::string large = test::randomBytes(100 * 1000, 23);  // several records
  startServer(serverOptions(), nullptr, 0, [first, second, large](const TcpConnectionPtr& conn) {
    if (!conn->connected()) return;
    Buffer head;
    head.append("head\n");
    conn->sendFile(test::temporaryFile(first), 0, first.size(), &head);
    conn->send("after");
    conn->sendFile(test::temporaryFile(second), 7, second.size() - 7);
    conn->send(large);
    Buffer tail;
    tail.append("end");
    conn->send(&tail);
    conn->closeAfterOutput();
  });
  auto record = connect(clientContext(pki_.caFile()));
  ASSERT_TRUE(waitUntil([&] {
    std::lock_guard lock(record->mutex);
    return record->downs > 0;
  }));
  const std::string expected = "head\n" + first + "after" + second.substr(7) + large + "end";
  const std::string got = record->snapshot();
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected)
      << "first difference at byte "
      << std::distance(
             got.begin(),
             std::mismatch(got.begin(), got.end(), expected.begin(), expected.end()).first);
}

// A send made before the handshake completes (from outside the callbacks,
// through TcpClient::connection()) is held, encrypted once it has, and a
// shutdown() behind it waits for it: the server gets the bytes, then the end.
TEST_P(TlsTest, SendBeforeTheHandshakeThenShutdownArriveInOrder) {
  // Shared with the server's callbacks, which may outlive the test body.
  struct Seen {
    std::mutex mutex;
    std::string got;
    bool ended = false;
  };
  auto seen = std::make_shared<Seen>();
  startServer(
      serverOptions(),
      [seen](const TcpConnectionPtr&, Buffer* buffer, Timestamp) {
        std::lock_guard lock(seen->mutex);
        seen->got += buffer->retrieveAllAsString();
      },
      0,
      [seen](const TcpConnectionPtr& conn) {
        std::lock_guard lock(seen->mutex);
        if (!conn->connected()) seen->ended = true;
      });
  auto record = connect(clientContext(pki_.caFile()));
  TcpClient* client = clients_.back().get();
  ASSERT_TRUE(
      waitUntil([&] { return runSync(clientLoop_, [&] { return !!client->connection(); }); }));
  runSync(clientLoop_, [&] {
    const TcpConnectionPtr conn = client->connection();
    conn->send(std::string("early bytes"));
    conn->shutdown();
  });
  ASSERT_TRUE(waitUntil([&] {
    std::lock_guard lock(seen->mutex);
    return seen->ended;
  }));
  std::lock_guard lock(seen->mutex);
  EXPECT_EQ(seen->got, "early bytes");
}

TEST_P(TlsTest, UntrustedCaIsRefusedWithAnError) {
  startServer(serverOptions());
  auto record = connect(clientContext(pki_.otherCaFile()));
  ASSERT_TRUE(waitForConnectError(record.get()));
  std::lock_guard lock(record->mutex);
  EXPECT_EQ(record->connectError, EPROTO);
  EXPECT_EQ(record->ups, 0);
  EXPECT_EQ(record->downs, 0);
  // The application learns why, not just EPROTO: OpenSSL's verify result.
  EXPECT_EQ(record->failureError, EPROTO);
  EXPECT_EQ(record->layerFailure.rfind("certificate verify failed: ", 0), 0u)
      << record->layerFailure;
  EXPECT_NE(record->layerFailure.find("issuer certificate"), std::string::npos)
      << record->layerFailure;
  EXPECT_EQ(record->failure, address_.toIpPort() + ": " + record->layerFailure);
}

TEST_P(TlsTest, WrongHostnameIsRefused) {
  startServer(serverOptions());
  auto record = connect(clientContext(pki_.caFile()), "www.example.com");
  ASSERT_TRUE(waitForConnectError(record.get()));
  std::lock_guard lock(record->mutex);
  EXPECT_EQ(record->connectError, EPROTO);
  EXPECT_EQ(record->ups, 0);
  EXPECT_EQ(lowered(record->layerFailure), "certificate verify failed: hostname mismatch");
  EXPECT_EQ(record->failure, address_.toIpPort() + ": " + record->layerFailure);
}

TEST_P(TlsTest, ServerWithoutTlsIsReportedWithOpenSslsReason) {
  // A plain TCP server that answers the ClientHello with an HTTP error.
  runSync(serverLoop_, [&] {
    server_ = std::make_unique<TcpServer>(serverLoop_, InetAddress(0, true), "plain");
    server_->setMessageCallback([](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) {
      buffer->retrieveAll();
      conn->send(std::string("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"));
      conn->shutdown();
    });
    server_->start();
  });
  address_ = runSync(serverLoop_, [&] { return server_->listenAddress(); });
  auto record = connect(clientContext(pki_.caFile()));
  ASSERT_TRUE(waitForConnectError(record.get()));
  std::lock_guard lock(record->mutex);
  EXPECT_EQ(record->connectError, EPROTO);
  EXPECT_EQ(record->ups, 0);
  EXPECT_FALSE(record->layerFailure.empty());
  EXPECT_EQ(record->layerFailure.find("certificate"), std::string::npos) << record->layerFailure;
  EXPECT_EQ(record->failure, address_.toIpPort() + ": " + record->layerFailure);
}

TEST_P(TlsTest, TheRightHostnameIsAccepted) {
  startServer(serverOptions());
  auto record = connect(clientContext(pki_.caFile()), "localhost");
  ASSERT_TRUE(waitUntil([&] { return isUp(record.get()); }));
  sendFromClient(record.get(), "named");
  ASSERT_TRUE(waitUntil([&] { return record->size() == 5; }));
}

TEST_P(TlsTest, SilentPeerIsClosedByTheHandshakeTimeout) {
  tls::Context::ServerOptions options = serverOptions();
  options.handshakeTimeout = 300ms;
  startServer(options);
  const int fdBaseline = test::openFdCount();
  {
    RawTlsClient raw(address_, clientContext(pki_.caFile()));
    const std::string hello = raw.clientHello();
    ASSERT_TRUE(raw.socket().sendAll(std::string_view(hello).substr(0, hello.size() / 2)));
    bool eof = false;
    raw.socket().recvUntilEof(&eof);  // the server closes; bounded by SO_RCVTIMEO
    EXPECT_TRUE(eof);
  }
  EXPECT_EQ(serverUps_.load(), 0);
  ASSERT_TRUE(waitUntil([&] { return server_->connectionCount() == 0; }));
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == fdBaseline; }));
}

TEST_P(TlsTest, GarbageAndOversizedRecordsAreRefusedAndTheServerGoesOn) {
  tls::Context::ServerOptions options = serverOptions();
  options.handshakeTimeout = 60s;  // only the protocol error may close them
  startServer(options);
  std::string oversized = "\x16\x03\x01\x48\x00";  // a handshake record of 18432 bytes
  oversized += std::string(18432, 'A');
  for (const std::string& bad :
       {std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), std::string(100, '\0'), oversized}) {
    BlockingClient client(address_);
    client.sendAll(bad);  // the server may close before taking it all
    bool eof = false;
    client.recvUntilEof(&eof);
    EXPECT_TRUE(eof) << "not closed after " << bad.size() << " bad bytes";
  }
  EXPECT_EQ(serverUps_.load(), 0);
  auto record = connect(clientContext(pki_.caFile()));
  ASSERT_TRUE(waitUntil([&] { return isUp(record.get()); }));
  sendFromClient(record.get(), "still serving");
  ASSERT_TRUE(waitUntil([&] { return record->size() == 13; }));
}

TEST_P(TlsTest, RecordsSplitByteByByte) {
  startServer(serverOptions());
  RawTlsClient raw(address_, clientContext(pki_.caFile()));
  ASSERT_TRUE(raw.handshake(/*byteByByte=*/true));
  const std::string message = test::randomBytes(40000, 3);  // three records
  ASSERT_TRUE(raw.send(message, /*byteByByte=*/true));
  EXPECT_TRUE(raw.receivePlain(message.size()) == message);
}

TEST_P(TlsTest, MutualTlsNeedsAClientCertificate) {
  tls::Context::ServerOptions options = serverOptions();
  options.clientCaFile = pki_.caFile();
  startServer(options);
  auto without = connect(clientContext(pki_.caFile()));
  tls::Context::ClientOptions withCert;
  withCert.caFile = pki_.caFile();
  withCert.certChainFile = pki_.clientCertFile();
  withCert.keyFile = pki_.clientKeyFile();
  auto with = connect(tls::Context::newClient(withCert));
  ASSERT_TRUE(waitUntil([&] { return isUp(with.get()); }));
  sendFromClient(with.get(), "mtls");
  ASSERT_TRUE(waitUntil([&] { return with->size() == 4; }));
  // TLS 1.3: the client finishes before the server checks; the server's
  // refusal then closes it without a byte echoed.
  sendFromClient(without.get(), "none");
  ASSERT_TRUE(waitUntil([&] {
    std::lock_guard lock(without->mutex);
    return without->downs > 0 || without->connectError != 0;
  }));
  EXPECT_EQ(without->size(), 0u);
  EXPECT_EQ(serverUps_.load(), 1);
}

TEST_P(TlsTest, PeerThatNeverReadsIsBoundedByTheOutputLimit) {
  constexpr size_t kLimit = 1 << 20;
  startServer(
      serverOptions(),
      [this](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) {
        conn->send(buffer);
        maxQueued_ = std::max(maxQueued_.load(), conn->queuedOutputBytes());
      },
      kLimit);
  auto record = connect(clientContext(pki_.caFile()));
  ASSERT_TRUE(waitUntil([&] { return isUp(record.get()); }));
  runSync(clientLoop_, [&] { record->conn->stopRead(); });
  const std::string data = test::randomBytes(24 << 20, 11);
  sendFromClient(record.get(), data);
  // The server stops reading once its queue passes the limit.
  ASSERT_TRUE(waitUntil([&] {
    return runSync(serverLoop_, [&] { return lastServerConn_ && !lastServerConn_->isReading(); });
  }));
  // Past the limit by at most what one read delivers (a 64 KiB read's
  // plaintext, as ciphertext) before reading paused.
  EXPECT_LE(maxQueued_.load(), kLimit + 128 * 1024);
  runSync(clientLoop_, [&] { record->conn->startRead(); });
  ASSERT_TRUE(waitUntil([&] { return record->size() >= data.size(); }, 60s)) << record->size();
  EXPECT_TRUE(record->snapshot() == data);
}

// A peer that asks for many files and never reads: the files queued count
// toward the output limit, so reading from it pauses after a few and the
// server holds a bounded number of open files for it, not one per request.
TEST_P(TlsTest, FilesQueuedForAPeerThatNeverReadsAreBoundedByTheOutputLimit) {
  constexpr size_t kLimit = 256 * 1024;
  constexpr size_t kRequests = 300;
  const std::string contents = test::randomBytes(32 * 1024, 24);
  // Each request gets its own descriptor of one file, as a static-file
  // server opens the file once per request.
  auto file = std::make_shared<UniqueFd>(test::temporaryFile(contents));
  const size_t size = contents.size();
  startServer(
      serverOptions(),
      [file, size](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) {
        // One byte is one request; like an HTTP server, answer no more while
        // the answers already queued are over the limit.
        while (buffer->readableBytes() > 0 && conn->queuedOutputBytes() <= kLimit) {
          buffer->retrieve(1);
          conn->sendFile(UniqueFd(::dup(file->get())), 0, size);
        }
      },
      kLimit);
  const int baseline = test::openFdCount();
  auto record = connect(clientContext(pki_.caFile()));
  ASSERT_TRUE(waitUntil([&] { return isUp(record.get()); }));
  runSync(clientLoop_, [&] { record->conn->stopRead(); });
  sendFromClient(record.get(), std::string(kRequests, 'r'));
  EXPECT_TRUE(waitUntil([&] {
    return runSync(serverLoop_, [&] { return lastServerConn_ && !lastServerConn_->isReading(); });
  })) << "reading never paused";
  // The client's and the server's sockets, the files of the answers within
  // the limit, and the one that passed it.
  EXPECT_LE(test::openFdCount() - baseline, 2 + static_cast<int>(kLimit / size) + 4);
  runSync(clientLoop_, [&] { record->conn->startRead(); });
  ASSERT_TRUE(waitUntil([&] { return record->size() >= kRequests * size; }, 60s)) << record->size();
  std::string expected;
  for (size_t i = 0; i < kRequests; ++i) expected += contents;
  EXPECT_TRUE(record->snapshot() == expected);
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() <= baseline + 2; }));
}

TEST_P(TlsTest, ThousandConnectionsHalfAbortedMidHandshake) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < 4096 && limit.rlim_max >= 4096) {
    limit.rlim_cur = 4096;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur < 4096) GTEST_SKIP() << "needs 4096 fds";
  startServer(serverOptions());
  constexpr int kEach = 500;
  std::vector<std::shared_ptr<ClientRecord>> good;
  std::vector<std::unique_ptr<RawTlsClient>> aborted;
  for (int i = 0; i < kEach; ++i) {
    good.push_back(connect(clientContext(pki_.caFile())));
    auto raw = std::make_unique<RawTlsClient>(address_, clientContext(pki_.caFile()));
    const std::string hello = raw->clientHello();
    raw->socket().sendAll(std::string_view(hello).substr(0, 1 + i % (hello.size() - 1)));
    aborted.push_back(std::move(raw));
  }
  // Reset, not closed: the abrupt way.
  for (auto& raw : aborted) {
    linger reset{1, 0};
    ::setsockopt(raw->socket().fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  }
  aborted.clear();
  ASSERT_TRUE(waitUntil(
      [&] { return std::all_of(good.begin(), good.end(), [](auto& r) { return isUp(r.get()); }); },
      60s));
  for (auto& record : good) sendFromClient(record.get(), "ping");
  ASSERT_TRUE(waitUntil(
      [&] { return std::all_of(good.begin(), good.end(), [](auto& r) { return r->size() == 4; }); },
      60s));
  EXPECT_EQ(serverUps_.load(), kEach);
  EXPECT_TRUE(waitUntil([&] { return server_->connectionCount() == kEach; }));
}

// The coroutine layer sees the plaintext stream too; a clean close_notify is
// the end of input (kEof), a TCP close without it is not (kClosed).
coro::Task<> readToEnd(coro::Stream stream, std::atomic<int>* outcome, std::string* got) {
  for (;;) {
    coro::Input in = co_await stream.read();
    if (!in) {
      *outcome = static_cast<int>(in.error());
      co_return;
    }
    *got += std::string(in->view());
    in->retrieveAll();
  }
}

TEST_P(TlsTest, CoroutinesSeeCloseNotifyAsEndAndTruncationAsError) {
  std::atomic<int>& outcome = outcome_;
  std::string& got = got_;
  auto layer = tls::newLayer(tls::Context::newServer(serverOptions()));
  runSync(serverLoop_, [&] {
    server_ = std::make_unique<TcpServer>(serverLoop_, InetAddress(0, true), "tls-coro",
                                          TcpServer::Options{.layer = layer});
    coro::serve(*server_, [this](coro::Stream stream) {
      return readToEnd(std::move(stream), &outcome_, &got_);
    });
    server_->start();
  });
  address_ = runSync(serverLoop_, [&] { return server_->listenAddress(); });

  auto record = connect(clientContext(pki_.caFile()));
  ASSERT_TRUE(waitUntil([&] { return isUp(record.get()); }));
  sendFromClient(record.get(), "clean");
  runSync(clientLoop_, [&] { record->conn->shutdown(); });  // close_notify
  ASSERT_TRUE(waitUntil([&] { return outcome.load() != -1; }));
  EXPECT_EQ(outcome.load(), static_cast<int>(coro::Errc::kEof));
  EXPECT_EQ(runSync(serverLoop_, [&] { return got; }), "clean");

  outcome = -1;
  RawTlsClient raw(address_, clientContext(pki_.caFile()));
  ASSERT_TRUE(raw.handshake(false));
  ASSERT_TRUE(raw.send("cut", false));
  raw.socket().shutdownWrite();  // FIN without close_notify
  ASSERT_TRUE(waitUntil([&] { return outcome.load() != -1; }));
  EXPECT_EQ(outcome.load(), static_cast<int>(coro::Errc::kClosed));
}

// Collects what a tls::Session driven by hand sends.
struct CiphertextSink : tls::Session::Output {
  std::string bytes;
  void onCiphertext(std::string_view b) override { bytes.append(b); }
};

// A server's session makes no SSL object (tens of KiB mid-handshake) until
// its client's first record is whole: a connection that sends part of a
// ClientHello and stalls holds only the bytes it sent. The handshake then
// goes on as usual.
TEST(TlsSessionTest, AServerMakesItsSslObjectOnlyOnceTheFirstRecordIsWhole) {
  test::TestPki pki;
  tls::Context::ServerOptions serverOptions;
  serverOptions.certChainFile = pki.serverCertFile();
  serverOptions.keyFile = pki.serverKeyFile();
  tls::Context::ClientOptions clientOptions;
  clientOptions.caFile = pki.caFile();
  CiphertextSink toClient;
  CiphertextSink toServer;
  tls::Session server(tls::Context::newServer(serverOptions), "", &toClient);
  tls::Session client(tls::Context::newClient(clientOptions), "127.0.0.1", &toServer);
  EXPECT_EQ(server.heldMemory(), 0u);
  ASSERT_EQ(client.startHandshake(), tls::Session::Status::kOk);
  const std::string hello = std::exchange(toServer.bytes, {});
  ASSERT_GT(hello.size(), 5u);
  Buffer plain;
  for (size_t cut : {size_t{1}, size_t{4}, hello.size() - 1}) {  // inside and after the header
    tls::Session partial(tls::Context::newServer(serverOptions), "", &toClient);
    ASSERT_EQ(partial.receive(std::string_view(hello).substr(0, cut), &plain),
              tls::Session::Status::kOk);
    EXPECT_LE(partial.heldMemory(), 2 * hello.size()) << "after " << cut << " bytes";
    EXPECT_FALSE(partial.established());
    EXPECT_TRUE(toClient.bytes.empty()) << "answered an incomplete ClientHello";
  }
  const size_t half = hello.size() / 2;
  ASSERT_EQ(server.receive(std::string_view(hello).substr(0, half), &plain),
            tls::Session::Status::kOk);
  EXPECT_LT(server.heldMemory(), tls::Session::kHandshakeSslMemory);
  ASSERT_EQ(server.receive(std::string_view(hello).substr(half), &plain),
            tls::Session::Status::kOk);
  EXPECT_GE(server.heldMemory(), tls::Session::kHandshakeSslMemory);
  ASSERT_FALSE(toClient.bytes.empty()) << "no ServerHello";
  ASSERT_EQ(client.receive(std::exchange(toClient.bytes, {}), &plain), tls::Session::Status::kOk);
  ASSERT_TRUE(client.established());
  ASSERT_EQ(server.receive(std::exchange(toServer.bytes, {}), &plain), tls::Session::Status::kOk);
  EXPECT_TRUE(server.established());
  EXPECT_EQ(plain.readableBytes(), 0u);
}

TEST(TlsContextTest, BadFilesGiveClearErrors) {
  test::TestPki pki;
  tls::Context::ServerOptions options;
  options.certChainFile = pki.dir() + "/missing.pem";
  options.keyFile = pki.serverKeyFile();
  try {
    (void)tls::Context::newServer(options);
    FAIL() << "no error for a missing certificate";
  } catch (const tls::Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.pem"), std::string::npos) << e.what();
  }
  options.certChainFile = pki.serverCertFile();
  options.keyFile = pki.clientKeyFile();  // not the certificate's key
  try {
    (void)tls::Context::newServer(options);
    FAIL() << "no error for a mismatched key";
  } catch (const tls::Error& e) {
    EXPECT_NE(std::string(e.what()).find("with certificate"), std::string::npos) << e.what();
  }
  tls::Context::ClientOptions client;
  client.caFile = pki.dir() + "/nope.pem";
  EXPECT_THROW((void)tls::Context::newClient(client), tls::Error);
  EXPECT_THROW((void)tls::newLayer(tls::Context::newClient({}), ""), std::invalid_argument);
  EXPECT_THROW((void)tls::newLayer(nullptr), std::invalid_argument);
}

// Bad values are configuration errors (std::invalid_argument), not TLS
// errors: nothing was tried.
TEST(TlsContextTest, BadOptionValuesThrowInvalidArgument) {
  test::TestPki pki;
  EXPECT_THROW((void)tls::Context::newServer({}), std::invalid_argument);  // no certificate
  tls::Context::ServerOptions server;
  server.certChainFile = pki.serverCertFile();
  server.keyFile = pki.serverKeyFile();
  server.handshakeTimeout = -std::chrono::seconds(1);
  EXPECT_THROW((void)tls::Context::newServer(server), std::invalid_argument);
  server.handshakeTimeout = std::chrono::seconds(1);
  server.alpn = {""};
  EXPECT_THROW((void)tls::Context::newServer(server), std::invalid_argument);
  server.alpn = {"http/1.1"};
  EXPECT_NO_THROW((void)tls::Context::newServer(server));
  tls::Context::ClientOptions client;
  client.verifyPeer = false;
  client.alpn = {std::string(256, 'x')};
  EXPECT_THROW((void)tls::Context::newClient(client), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Backends, TlsTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
