// Heap allocations in the steady state of an echo over the codec: once the
// receiver's small storage of its own (messages up to 1 KiB), the storage it
// borrows from its pool for larger ones (as a loop's connections do) and the
// output buffer have grown to the largest message, receiving a frame (whole
// or fragmented, with pings between) and sending it back allocate nothing,
// in either role. The test counts the
// calls of the global operator new (tests/net/AllocationCounter.h). Not
// under the sanitizers, which bring their own allocator.
#include <gtest/gtest.h>

#include <string>

#include "net/Buffer.h"
#include "net/BufferPool.h"
#include "net/websocket/Receiver.h"
#include "net/websocket/Sender.h"
#include "tests/net/AllocationCounter.h"

namespace libnet::ws {
namespace {

// What a peer in role `peer` sends: messages up to 4 KiB, whole and in
// fragments, text and binary, pings between.
std::string peerTraffic(Role peer, int rounds) {
  Sender sender(peer);
  Buffer wire;
  const std::string text(4096, 't');
  for (int i = 0; i < rounds; ++i) {
    sender.appendMessage(&wire, MessageType::kText,
                         std::string_view(text).substr(0, 100 + i % 3000));
    sender.appendMessage(&wire, MessageType::kBinary, std::string_view(text).substr(0, 4096), 1000);
    sender.appendPing(&wire, "ping");
  }
  return std::string(wire.view());
}

// Echoes every message and answers every ping; returns the messages seen.
int echo(Receiver& receiver, Sender& sender, Buffer* input, Buffer* output) {
  int messages = 0;
  for (;;) {
    switch (receiver.next(input)) {
      case Receiver::Event::kMessage:
        sender.appendMessage(output, receiver.messageType(), receiver.payload());
        ++messages;
        break;
      case Receiver::Event::kPing:
        sender.appendPong(output, receiver.payload());
        break;
      case Receiver::Event::kNeedMore:
        return messages;
      default:
        ADD_FAILURE() << "unexpected event";
        return messages;
    }
    output->retrieveAll();  // as if written to the socket
  }
}

void expectNoAllocations(Role self) {
  if (!test::kCountingAllocations) GTEST_SKIP() << "not counted under the sanitizers";
  const Role peer = self == Role::kServer ? Role::kClient : Role::kServer;
  // The same messages: every size has been seen once.
  const std::string warmup = peerTraffic(peer, 200);
  const std::string traffic = peerTraffic(peer, 200);
  BufferPool pool;
  Receiver receiver(self, {}, std::nullopt, &pool);
  Sender sender(self);
  Buffer input;
  Buffer output(64 * 1024);
  input.append(warmup);
  EXPECT_EQ(echo(receiver, sender, &input, &output), 400);
  input.append(traffic);
  long allocations = 0;
  int messages = 0;
  {
    const test::AllocationCount counting;
    messages = echo(receiver, sender, &input, &output);
    allocations = counting.count();
  }
  EXPECT_EQ(messages, 400);
  EXPECT_EQ(allocations, 0);
}

TEST(SteadyStateAllocationsTest, ServerEcho) { expectNoAllocations(Role::kServer); }

TEST(SteadyStateAllocationsTest, ClientEcho) { expectNoAllocations(Role::kClient); }

}  // namespace
}  // namespace libnet::ws
