#include "net/websocket/Deflate.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "net/Buffer.h"

namespace libnet::ws {
namespace {

std::string sampleText(size_t length, unsigned seed) {
  static const char* const kWords[] = {"socket ",  "frame ",   "deflate ",  "window ",
                                       "message ", "context ", "takeover ", "\xc3\xa9t\xc3\xa9 "};
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < length) s += kWords[rng() % 8];
  return s;
}

std::string inflateAll(Inflater& inflater, const std::string& compressed, size_t limit = 1 << 24) {
  std::string out;
  EXPECT_EQ(inflater.feed(compressed, &out, limit), Inflater::Result::kOk);
  EXPECT_EQ(inflater.finish(&out, limit), Inflater::Result::kOk);
  return out;
}

TEST(DeflateTest, Rfc7692HelloExample) {
  Inflater inflater(Role::kClient, DeflateParams{});
  EXPECT_EQ(inflateAll(inflater, std::string("\xf2\x48\xcd\xc9\xc9\x07\x00", 7)), "Hello");
  // 7.2.3.2: the same message again, compressed against the first.
  EXPECT_EQ(inflateAll(inflater, std::string("\xf2\x00\x11\x00\x00", 5)), "Hello");
}

// RFC 7692 7.2.3.3-7.2.3.5: a stored block, a final block (BFINAL set, so
// the appended 00 00 ff ff starts a new stream), two blocks.
TEST(DeflateTest, Rfc7692OtherBlockExamples) {
  const std::string stored("\x00\x05\x00\xfa\xff\x48\x65\x6c\x6c\x6f\x00", 11);
  const std::string final("\xf3\x48\xcd\xc9\xc9\x07\x00\x00", 8);
  const std::string twoBlocks("\xf2\x48\x05\x00\x00\x00\xff\xff\xca\xc9\xc9\x07\x00", 13);
  for (const std::string& message : {stored, final, twoBlocks}) {
    Inflater inflater(Role::kClient, DeflateParams{});
    EXPECT_EQ(inflateAll(inflater, message), "Hello");
    EXPECT_EQ(inflateAll(inflater, message), "Hello");  // and the stream goes on
  }
}

TEST(DeflateTest, CompressesTheRfcExample) {
  Deflater deflater(Role::kServer, DeflateParams{});
  std::string out;
  deflater.compress("Hello", &out);
  EXPECT_EQ(out, std::string("\xf2\x48\xcd\xc9\xc9\x07\x00", 7));
}

// Every context-takeover combination and window size, both directions,
// several messages in a row (later ones compressed against earlier ones when
// the context is kept).
TEST(DeflateTest, RoundTripsEveryCombination) {
  for (int bits = 8; bits <= 15; ++bits) {
    for (int nct = 0; nct < 4; ++nct) {
      DeflateParams params;
      params.serverNoContextTakeover = (nct & 1) != 0;
      params.clientNoContextTakeover = (nct & 2) != 0;
      params.serverMaxWindowBits = bits;
      params.clientMaxWindowBits = bits;
      for (Role sender : {Role::kServer, Role::kClient}) {
        Deflater deflater(sender, params, 6);
        Inflater inflater(sender == Role::kServer ? Role::kClient : Role::kServer, params);
        for (unsigned i = 0; i < 5; ++i) {
          const std::string message = sampleText(100 + i * 3000, i % 2);
          std::string compressed;
          deflater.compress(message, &compressed);
          ASSERT_LT(compressed.size(), message.size());
          ASSERT_EQ(inflateAll(inflater, compressed), message) << bits << " " << nct;
        }
      }
    }
  }
}

TEST(DeflateTest, NoContextTakeoverResetsTheCompressor) {
  const std::string message = sampleText(2000, 1);
  for (bool reset : {false, true}) {
    DeflateParams params;
    params.serverNoContextTakeover = reset;
    Deflater deflater(Role::kServer, params);
    std::string first, second;
    deflater.compress(message, &first);
    deflater.compress(message, &second);
    if (reset) {
      EXPECT_EQ(first, second);
    } else {
      EXPECT_LT(second.size(), first.size() / 4);  // a back reference to the first
    }
  }
}

TEST(DeflateTest, EmptyAndFragmentedInput) {
  Deflater deflater(Role::kClient, DeflateParams{});
  Inflater inflater(Role::kServer, DeflateParams{});
  std::string compressed;
  deflater.compress("", &compressed);
  EXPECT_EQ(inflateAll(inflater, compressed), "");
  const std::string message = sampleText(5000, 3);
  deflater.compress(message, &compressed);
  std::string out;
  for (size_t i = 0; i < compressed.size(); i += 7) {
    ASSERT_EQ(inflater.feed(compressed.substr(i, 7), &out, 1 << 20), Inflater::Result::kOk);
  }
  ASSERT_EQ(inflater.finish(&out, 1 << 20), Inflater::Result::kOk);
  EXPECT_EQ(out, message);
}

// An empty message after another: zlib emits nothing, and the payload must
// still be the single 00 of RFC 7692 7.2.3.6.
TEST(DeflateTest, EmptyMessagesBetweenOthers) {
  Deflater deflater(Role::kServer, DeflateParams{});
  Inflater inflater(Role::kClient, DeflateParams{});
  for (const char* message : {"Hello", "", "", "Hello", ""}) {
    std::string compressed;
    deflater.compress(message, &compressed);
    EXPECT_FALSE(compressed.empty());
    EXPECT_EQ(inflateAll(inflater, compressed), message);
  }
}

// A message that does not end between blocks would leave the next one to
// be read from the middle of a block: an empty payload, or one cut short.
TEST(DeflateTest, MessageEndingInsideABlockIsCorrupt) {
  for (const std::string& payload : {std::string(), std::string("\xf2\x48\xcd", 3)}) {
    Inflater inflater(Role::kServer, DeflateParams{});
    std::string out;
    ASSERT_EQ(inflater.feed(payload, &out, 1 << 20), Inflater::Result::kOk);
    EXPECT_EQ(inflater.finish(&out, 1 << 20), Inflater::Result::kCorrupt) << payload.size();
  }
}

TEST(DeflateTest, BombIsTooBigWithBoundedMemory) {
  DeflateParams params;
  Deflater deflater(Role::kClient, params, 9);
  std::string compressed;
  deflater.compress(std::string(10 << 20, '\0'), &compressed);
  ASSERT_LT(compressed.size(), 64u * 1024);
  constexpr size_t kLimit = 1 << 20;
  Inflater inflater(Role::kServer, params);
  Buffer out(0);
  Inflater::Result result = Inflater::Result::kOk;
  size_t fed = 0;
  for (; fed < compressed.size() && result == Inflater::Result::kOk; fed += 1024) {
    result = inflater.feed(std::string_view(compressed).substr(fed, 1024), &out, kLimit);
  }
  EXPECT_EQ(result, Inflater::Result::kTooBig);
  // Deflate's ratio tops out near 1032:1, so 1 MiB is passed within the
  // first two kibibytes of input.
  EXPECT_LE(fed, 2048u);
  EXPECT_LE(out.readableBytes(), kLimit);
  EXPECT_LE(out.capacity(), Buffer::kCheapPrepend + kLimit + Inflater::kChunk);
}

TEST(DeflateTest, CompressAppendsWithoutSizingForTheWorstCase) {
  Deflater deflater(Role::kServer, DeflateParams{});
  Buffer out(0);
  out.append("head");
  const std::string message(16 << 20, 'z');
  deflater.compress(message, &out);
  ASSERT_EQ(out.view().substr(0, 4), "head");
  // 16 MiB of one byte deflates to about 16 KB: the buffer grew with the
  // output, not to deflateBound() of the message (over 16 MiB).
  EXPECT_LT(out.capacity(), 256u * 1024);
  Inflater inflater(Role::kClient, DeflateParams{});
  Buffer inflated(0);
  ASSERT_EQ(inflater.feed(out.view().substr(4), &inflated, message.size()), Inflater::Result::kOk);
  ASSERT_EQ(inflater.finish(&inflated, message.size()), Inflater::Result::kOk);
  EXPECT_TRUE(inflated.view() == message);
}

TEST(DeflateTest, ZlibStateIsCounted) {
  Deflater deflater(Role::kServer, DeflateParams{});
  Inflater inflater(Role::kServer, DeflateParams{});
  // windowBits 15, memLevel 8: 256 KiB of window, hash chains and pending
  // output, plus the state.
  EXPECT_GE(deflater.heldMemory(), 256u * 1024);
  EXPECT_LT(deflater.heldMemory(), 300u * 1024);
  const size_t before = inflater.heldMemory();
  EXPECT_GT(before, 0u);
  std::string compressed;
  Deflater peer(Role::kClient, DeflateParams{});
  peer.compress(std::string(100000, 'x'), &compressed);
  std::string out;
  ASSERT_EQ(inflater.feed(compressed, &out, 1 << 20), Inflater::Result::kOk);
  // The window, allocated at the first output.
  EXPECT_EQ(inflater.heldMemory(), before + (1u << 15));
}

TEST(DeflateTest, ExactlyTheLimitIsAllowed) {
  const std::string message(5000, 'a');
  Deflater deflater(Role::kServer, DeflateParams{});
  std::string compressed;
  deflater.compress(message, &compressed);
  Inflater fits(Role::kClient, DeflateParams{});
  EXPECT_EQ(inflateAll(fits, compressed, message.size()), message);
  Inflater tooSmall(Role::kClient, DeflateParams{});
  std::string out;
  Inflater::Result result = tooSmall.feed(compressed, &out, message.size() - 1);
  if (result == Inflater::Result::kOk) result = tooSmall.finish(&out, message.size() - 1);
  EXPECT_EQ(result, Inflater::Result::kTooBig);
}

TEST(DeflateTest, CorruptInputIsReported) {
  Inflater inflater(Role::kServer, DeflateParams{});
  std::string out;
  // BTYPE 11 is reserved.
  EXPECT_EQ(inflater.feed(std::string("\xff\xff\xff\xff", 4), &out, 1 << 20),
            Inflater::Result::kCorrupt);
}

// ---- negotiation ----

DeflateOptions enabled() {
  DeflateOptions options;
  options.enabled = true;
  return options;
}

TEST(DeflateNegotiationTest, ServerAcceptsPlainOffers) {
  std::string response;
  auto agreed = negotiateOffer("permessage-deflate", enabled(), &response);
  ASSERT_TRUE(agreed);
  EXPECT_EQ(response, "permessage-deflate");
  EXPECT_EQ(agreed->serverMaxWindowBits, 15);
  EXPECT_EQ(agreed->clientMaxWindowBits, 15);
  agreed = negotiateOffer("permessage-deflate; client_max_window_bits", enabled(), &response);
  ASSERT_TRUE(agreed);
  EXPECT_EQ(response, "permessage-deflate");
}

TEST(DeflateNegotiationTest, DisabledOrNoOffer) {
  std::string response = "stale";
  EXPECT_FALSE(negotiateOffer("permessage-deflate", DeflateOptions{}, &response));
  EXPECT_EQ(response, "");
  EXPECT_FALSE(negotiateOffer("", enabled(), &response));
  EXPECT_FALSE(negotiateOffer("x-webkit-deflate-frame", enabled(), &response));
}

// RFC 7692 5.2's example: the first offer asks for a server window of 10,
// the second is the fallback.
TEST(DeflateNegotiationTest, RfcOfferListPicksTheFirst) {
  std::string response;
  auto agreed = negotiateOffer(
      "permessage-deflate; client_max_window_bits; server_max_window_bits=10, "
      "permessage-deflate; client_max_window_bits",
      enabled(), &response);
  ASSERT_TRUE(agreed);
  EXPECT_EQ(agreed->serverMaxWindowBits, 10);
  EXPECT_EQ(response, "permessage-deflate; server_max_window_bits=10");
}

TEST(DeflateNegotiationTest, MalformedOffersAreDeclinedAndTheNextTried) {
  const std::vector<std::string> bad = {
      "permessage-deflate; server_max_window_bits=10; server_max_window_bits=11",
      "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
      "permessage-deflate; server_max_window_bits=7",
      "permessage-deflate; server_max_window_bits=16",
      "permessage-deflate; server_max_window_bits=010",
      "permessage-deflate; server_max_window_bits",
      "permessage-deflate; client_max_window_bits=abc",
      "permessage-deflate; client_no_context_takeover=1",
      "permessage-deflate; unknown_param",
  };
  for (const std::string& offer : bad) {
    std::string response;
    EXPECT_FALSE(negotiateOffer(offer, enabled(), &response)) << offer;
    auto agreed = negotiateOffer(offer + ", permessage-deflate; server_no_context_takeover",
                                 enabled(), &response);
    ASSERT_TRUE(agreed) << offer;
    EXPECT_TRUE(agreed->serverNoContextTakeover) << offer;
    EXPECT_EQ(response, "permessage-deflate; server_no_context_takeover") << offer;
  }
}

TEST(DeflateNegotiationTest, ServerOptionsShapeTheResponse) {
  DeflateOptions options = enabled();
  options.serverMaxWindowBits = 12;
  options.clientMaxWindowBits = 10;
  options.clientNoContextTakeover = true;
  std::string response;
  auto agreed =
      negotiateOffer("permessage-deflate; server_max_window_bits=\"14\"; client_max_window_bits",
                     options, &response);
  ASSERT_TRUE(agreed);
  EXPECT_EQ(agreed->serverMaxWindowBits, 12);
  EXPECT_EQ(agreed->clientMaxWindowBits, 10);
  EXPECT_TRUE(agreed->clientNoContextTakeover);
  EXPECT_EQ(response,
            "permessage-deflate; client_no_context_takeover; server_max_window_bits=12; "
            "client_max_window_bits=10");
  // Without client_max_window_bits in the offer the client's window stays 15.
  agreed = negotiateOffer("permessage-deflate", options, &response);
  ASSERT_TRUE(agreed);
  EXPECT_EQ(agreed->clientMaxWindowBits, 15);
  EXPECT_EQ(response, "permessage-deflate; client_no_context_takeover; server_max_window_bits=12");
}

TEST(DeflateNegotiationTest, ClientOffer) {
  EXPECT_EQ(makeOffer(DeflateOptions{}), "");
  EXPECT_EQ(makeOffer(enabled()), "permessage-deflate; client_max_window_bits");
  DeflateOptions options = enabled();
  options.serverNoContextTakeover = true;
  options.clientNoContextTakeover = true;
  options.serverMaxWindowBits = 10;
  options.clientMaxWindowBits = 9;
  EXPECT_EQ(makeOffer(options),
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
            "server_max_window_bits=10; client_max_window_bits=9");
}

TEST(DeflateNegotiationTest, ClientChecksTheResponse) {
  std::string error;
  EXPECT_FALSE(acceptResponse("", enabled(), &error));
  EXPECT_EQ(error, "");
  auto agreed = acceptResponse(
      "permessage-deflate; server_no_context_takeover; "
      "client_max_window_bits=11",
      enabled(), &error);
  ASSERT_TRUE(agreed) << error;
  EXPECT_TRUE(agreed->serverNoContextTakeover);
  EXPECT_EQ(agreed->clientMaxWindowBits, 11);
  EXPECT_EQ(agreed->serverMaxWindowBits, 15);
  DeflateOptions small = enabled();
  small.serverMaxWindowBits = 10;
  small.clientMaxWindowBits = 12;
  const std::vector<std::pair<std::string, DeflateOptions>> bad = {
      {"permessage-deflate; foo", enabled()},
      {"permessage-deflate; client_max_window_bits", enabled()},
      {"permessage-deflate; server_max_window_bits=16", enabled()},
      {"permessage-deflate; server_no_context_takeover; server_no_context_takeover", enabled()},
      {"x-other", enabled()},
      {"permessage-deflate, permessage-deflate", enabled()},
      {"permessage-deflate", DeflateOptions{}},
      {"permessage-deflate", small},  // server_max_window_bits not agreed
      {"permessage-deflate; server_max_window_bits=11", small},
      {"permessage-deflate; server_max_window_bits=10; client_max_window_bits=13", small},
  };
  for (const auto& [value, options] : bad) {
    EXPECT_FALSE(acceptResponse(value, options, &error)) << value;
    EXPECT_FALSE(error.empty()) << value;
  }
  agreed = acceptResponse("permessage-deflate; server_max_window_bits=9", small, &error);
  ASSERT_TRUE(agreed) << error;
  EXPECT_EQ(agreed->serverMaxWindowBits, 9);
  EXPECT_EQ(agreed->clientMaxWindowBits, 12);  // what the client offered to use
}

// What the Python websockets library (10.4) offers and answers.
TEST(DeflateNegotiationTest, PythonWebsocketsValues) {
  std::string response;
  auto agreed =
      negotiateOffer("permessage-deflate; server_max_window_bits=10; client_max_window_bits",
                     enabled(), &response);
  ASSERT_TRUE(agreed);
  EXPECT_EQ(response, "permessage-deflate; server_max_window_bits=10");
  std::string error;
  agreed =
      acceptResponse("permessage-deflate; server_no_context_takeover; client_max_window_bits=12",
                     enabled(), &error);
  ASSERT_TRUE(agreed) << error;
  EXPECT_TRUE(agreed->serverNoContextTakeover);
  EXPECT_EQ(agreed->clientMaxWindowBits, 12);
}

TEST(DeflateNegotiationTest, BothEndsAgree) {
  for (int mask = 0; mask < 16; ++mask) {
    DeflateOptions client = enabled();
    client.serverNoContextTakeover = (mask & 1) != 0;
    client.clientNoContextTakeover = (mask & 2) != 0;
    client.serverMaxWindowBits = (mask & 4) ? 11 : 15;
    client.clientMaxWindowBits = (mask & 8) ? 9 : 15;
    DeflateOptions server = enabled();
    server.serverMaxWindowBits = 13;
    server.clientMaxWindowBits = 12;
    std::string response, error;
    auto serverSide = negotiateOffer(makeOffer(client), server, &response);
    ASSERT_TRUE(serverSide) << mask;
    auto clientSide = acceptResponse(response, client, &error);
    ASSERT_TRUE(clientSide) << mask << ": " << response << ": " << error;
    EXPECT_EQ(clientSide->serverNoContextTakeover, serverSide->serverNoContextTakeover) << mask;
    EXPECT_EQ(clientSide->clientNoContextTakeover, serverSide->clientNoContextTakeover) << mask;
    EXPECT_EQ(clientSide->serverMaxWindowBits, serverSide->serverMaxWindowBits) << mask;
    EXPECT_EQ(clientSide->clientMaxWindowBits, serverSide->clientMaxWindowBits) << mask;
  }
}

}  // namespace
}  // namespace libnet::ws
