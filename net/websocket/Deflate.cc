#include "net/websocket/Deflate.h"

#include <zlib.h>

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "net/websocket/GrowWithin.h"

namespace libnet::ws {

namespace {

constexpr std::string_view kExtensionName = "permessage-deflate";
constexpr char kTail[] = {'\x00', '\x00', '\xff', '\xff'};
// zlib counts bytes in 32-bit uInt: longer input goes in slices.
constexpr size_t kMaxSlice = size_t{1} << 30;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x | 0x20) == (y | 0x20);
         });
}

// Splits at `separator` outside double quotes.
std::vector<std::string_view> splitOutsideQuotes(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') quoted = !quoted;
    if (s[i] == separator && !quoted) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  parts.push_back(trim(s.substr(start)));
  return parts;
}

// One extension parameter: its name and value (the quotes of a
// quoted-string removed); hasValue false for a bare name.
struct Param {
  std::string_view name;
  std::string_view value;
  bool hasValue = false;
};

std::optional<Param> parseParam(std::string_view text) {
  Param param;
  size_t eq = text.find('=');
  param.name = trim(text.substr(0, eq));
  if (param.name.empty()) return std::nullopt;
  if (eq == std::string_view::npos) return param;
  param.hasValue = true;
  param.value = trim(text.substr(eq + 1));
  if (param.value.size() >= 2 && param.value.front() == '"' && param.value.back() == '"') {
    param.value = param.value.substr(1, param.value.size() - 2);
  }
  return param;
}

// 8..15 without leading zeros (RFC 7692 7.1.2.1); -1 otherwise.
int parseWindowBits(std::string_view value) {
  if (value.size() == 1 && value[0] >= '8' && value[0] <= '9') return value[0] - '0';
  if (value.size() == 2 && value[0] == '1' && value[1] >= '0' && value[1] <= '5') {
    return 10 + (value[1] - '0');
  }
  return -1;
}

// The parameters of one permessage-deflate offer or response; what was
// present, with the values given. clientBits 0: client_max_window_bits
// without a value.
struct Parsed {
  bool serverNoContext = false;
  bool clientNoContext = false;
  int serverBits = -1;  // -1: absent
  int clientBits = -1;  // -1: absent, 0: present without a value
};

// Parses "permessage-deflate; a; b=1" (the name checked by the caller).
// false for an unknown or duplicate parameter or an invalid value; *why says
// which.
bool parseParams(const std::vector<std::string_view>& parts, Parsed* out, std::string* why) {
  for (size_t i = 1; i < parts.size(); ++i) {
    std::optional<Param> p = parseParam(parts[i]);
    if (!p) return *why = "empty parameter", false;
    const bool isServerNct = p->name == "server_no_context_takeover";
    const bool isClientNct = p->name == "client_no_context_takeover";
    if (isServerNct || isClientNct) {
      bool& flag = isServerNct ? out->serverNoContext : out->clientNoContext;
      if (flag) return *why = "duplicate " + std::string(p->name), false;
      if (p->hasValue) return *why = std::string(p->name) + " takes no value", false;
      flag = true;
    } else if (p->name == "server_max_window_bits" || p->name == "client_max_window_bits") {
      const bool server = p->name == "server_max_window_bits";
      int& bits = server ? out->serverBits : out->clientBits;
      if (bits != -1) return *why = "duplicate " + std::string(p->name), false;
      if (!p->hasValue && !server) {
        bits = 0;
        continue;
      }
      bits = p->hasValue ? parseWindowBits(p->value) : -1;
      if (bits < 0) return *why = "invalid " + std::string(p->name), false;
    } else {
      return *why = "unknown parameter " + std::string(p->name), false;
    }
  }
  return true;
}

// The agreed parameters for an acceptable offer, and the response value.
DeflateParams answerOffer(const Parsed& offer, const DeflateOptions& options,
                          std::string* response) {
  DeflateParams agreed;
  agreed.serverNoContextTakeover = offer.serverNoContext || options.serverNoContextTakeover;
  agreed.clientNoContextTakeover = offer.clientNoContext || options.clientNoContextTakeover;
  agreed.serverMaxWindowBits = std::min(offer.serverBits > 0 ? offer.serverBits : 15,
                                        std::clamp(options.serverMaxWindowBits, 8, 15));
  // Without client_max_window_bits in the offer the client may use any
  // window: the inflater then keeps 15 bits.
  agreed.clientMaxWindowBits = 15;
  if (offer.clientBits >= 0) {
    agreed.clientMaxWindowBits = std::min(offer.clientBits > 0 ? offer.clientBits : 15,
                                          std::clamp(options.clientMaxWindowBits, 8, 15));
  }
  *response = kExtensionName;
  if (agreed.serverNoContextTakeover) *response += "; server_no_context_takeover";
  if (agreed.clientNoContextTakeover) *response += "; client_no_context_takeover";
  if (offer.serverBits > 0 || agreed.serverMaxWindowBits < 15) {
    *response += "; server_max_window_bits=" + std::to_string(agreed.serverMaxWindowBits);
  }
  if (offer.clientBits > 0 || (offer.clientBits == 0 && agreed.clientMaxWindowBits < 15)) {
    *response += "; client_max_window_bits=" + std::to_string(agreed.clientMaxWindowBits);
  }
  return agreed;
}

}  // namespace

std::optional<DeflateParams> negotiateOffer(std::string_view secWebSocketExtensions,
                                            const DeflateOptions& options,
                                            std::string* responseHeaderValue) {
  responseHeaderValue->clear();
  if (!options.enabled) return std::nullopt;
  for (std::string_view extension : splitOutsideQuotes(secWebSocketExtensions, ',')) {
    std::vector<std::string_view> parts = splitOutsideQuotes(extension, ';');
    if (!equalsIgnoreCase(parts[0], kExtensionName)) continue;
    Parsed offer;
    std::string why;
    if (!parseParams(parts, &offer, &why)) continue;  // declined; try the next offer
    return answerOffer(offer, options, responseHeaderValue);
  }
  return std::nullopt;
}

std::string makeOffer(const DeflateOptions& options) {
  if (!options.enabled) return {};
  std::string offer(kExtensionName);
  if (options.serverNoContextTakeover) offer += "; server_no_context_takeover";
  if (options.clientNoContextTakeover) offer += "; client_no_context_takeover";
  const int serverBits = std::clamp(options.serverMaxWindowBits, 8, 15);
  const int clientBits = std::clamp(options.clientMaxWindowBits, 8, 15);
  if (serverBits < 15) offer += "; server_max_window_bits=" + std::to_string(serverBits);
  offer += "; client_max_window_bits";
  if (clientBits < 15) offer += "=" + std::to_string(clientBits);
  return offer;
}

namespace {

// Checks a parsed response against the offer makeOffer(options) made.
std::optional<DeflateParams> checkResponse(const Parsed& response, const DeflateOptions& options,
                                           std::string* error) {
  const int offeredServer = std::clamp(options.serverMaxWindowBits, 8, 15);
  const int offeredClient = std::clamp(options.clientMaxWindowBits, 8, 15);
  if (response.clientBits == 0) {
    return *error = "client_max_window_bits without a value", std::nullopt;
  }
  if (options.serverNoContextTakeover && !response.serverNoContext) {
    return *error = "server_no_context_takeover was requested but not agreed", std::nullopt;
  }
  if (offeredServer < 15 && response.serverBits < 0) {
    return *error = "server_max_window_bits was requested but not agreed", std::nullopt;
  }
  if (response.serverBits > offeredServer) {
    return *error = "server_max_window_bits larger than offered", std::nullopt;
  }
  if (response.clientBits > offeredClient) {
    return *error = "client_max_window_bits larger than offered", std::nullopt;
  }
  DeflateParams agreed;
  agreed.serverNoContextTakeover = response.serverNoContext;
  agreed.clientNoContextTakeover = response.clientNoContext || options.clientNoContextTakeover;
  agreed.serverMaxWindowBits = response.serverBits > 0 ? response.serverBits : 15;
  agreed.clientMaxWindowBits = response.clientBits > 0 ? response.clientBits : offeredClient;
  return agreed;
}

}  // namespace

std::optional<DeflateParams> acceptResponse(std::string_view responseValue,
                                            const DeflateOptions& options, std::string* error) {
  error->clear();
  responseValue = trim(responseValue);
  if (responseValue.empty()) return std::nullopt;
  if (!options.enabled) return *error = "extension not offered", std::nullopt;
  std::vector<std::string_view> extensions = splitOutsideQuotes(responseValue, ',');
  if (extensions.size() != 1) return *error = "more than one extension accepted", std::nullopt;
  std::vector<std::string_view> parts = splitOutsideQuotes(extensions[0], ';');
  if (!equalsIgnoreCase(parts[0], kExtensionName)) {
    return *error = "extension not offered: " + std::string(parts[0]), std::nullopt;
  }
  Parsed response;
  if (!parseParams(parts, &response, error)) return std::nullopt;
  return checkResponse(response, options, error);
}

// ---- zlib's memory ----

namespace {

// zlib's allocations for one stream, counted (heldMemory()): each block
// carries its size in front, at an offset that keeps the block aligned as
// malloc's are.
struct ZlibMemory {
  static constexpr size_t kHeader = alignof(std::max_align_t);

  static voidpf allocate(voidpf opaque, uInt items, uInt size) {
    const size_t bytes = size_t{items} * size;
    auto* block = static_cast<char*>(std::malloc(kHeader + bytes));
    if (block == nullptr) return Z_NULL;
    std::memcpy(block, &bytes, sizeof bytes);
    static_cast<ZlibMemory*>(opaque)->held += bytes;
    return block + kHeader;
  }

  static void release(voidpf opaque, voidpf address) {
    char* block = static_cast<char*>(address) - kHeader;
    size_t bytes;
    std::memcpy(&bytes, block, sizeof bytes);
    static_cast<ZlibMemory*>(opaque)->held -= bytes;
    std::free(block);
  }

  // Before the stream's init: zlib allocates through this from then on.
  void attach(z_stream* z) {
    z->zalloc = allocate;
    z->zfree = release;
    z->opaque = this;
  }

  size_t held = 0;
};

}  // namespace

// ---- Deflater ----

struct Deflater::Stream {
  z_stream z{};
  ZlibMemory memory;
};

Deflater::Deflater(Role self, const DeflateParams& params, int level)
    : stream_(std::make_unique<Stream>()),
      noContextTakeover_(self == Role::kServer ? params.serverNoContextTakeover
                                               : params.clientNoContextTakeover) {
  int bits = self == Role::kServer ? params.serverMaxWindowBits : params.clientMaxWindowBits;
  // zlib refuses -8 for raw deflate; 9 is compatible (see the header).
  bits = std::clamp(bits, 9, 15);
  stream_->memory.attach(&stream_->z);
  int rc =
      deflateInit2(&stream_->z, std::clamp(level, 0, 9), Z_DEFLATED, -bits, 8, Z_DEFAULT_STRATEGY);
  if (rc != Z_OK) throw std::bad_alloc();
}

Deflater::~Deflater() { deflateEnd(&stream_->z); }

size_t Deflater::heldMemory() const { return stream_->memory.held; }

void Deflater::compress(std::string_view message, Buffer* out) {
  z_stream& z = stream_->z;
  const size_t start = out->readableBytes();
  // A small message's whole output at once; a large one's a chunk at a time
  // (the buffer then grows geometrically as deflate fills it).
  size_t room = std::min<size_t>(deflateBound(&z, message.size()) + 16, kChunk);
  size_t fed = 0;
  for (;;) {
    if (z.avail_in == 0 && fed < message.size()) {
      const size_t slice = std::min(message.size() - fed, kMaxSlice);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(message.data() + fed));
      z.avail_in = static_cast<uInt>(slice);
      fed += slice;
    }
    const bool last = fed == message.size();
    out->ensureWritableBytes(room);
    const size_t avail = std::min(out->writableBytes(), kMaxSlice);
    z.next_out = reinterpret_cast<Bytef*>(out->beginWrite());
    z.avail_out = static_cast<uInt>(avail);
    int rc = deflate(&z, last ? Z_SYNC_FLUSH : Z_NO_FLUSH);
    out->hasWritten(avail - z.avail_out);
    assert(rc == Z_OK || rc == Z_BUF_ERROR);
    (void)rc;
    // Done once a flushing call left output space: all input taken, flush
    // complete.
    if (last && z.avail_out != 0 && z.avail_in == 0) break;
    room = kChunk;
  }
  const size_t produced = out->readableBytes() - start;
  if (produced >= 4 && std::memcmp(out->peek() + out->readableBytes() - 4, kTail, 4) == 0) {
    out->unwrite(4);
  }
  // An empty message right after another emits nothing (the stream is
  // already flushed); its payload is then the one byte of an empty stored
  // block's header, which the receiver's 00 00 ff ff completes (RFC 7692
  // 7.2.3.6). An empty payload would not decode.
  if (out->readableBytes() == start) out->append(std::string_view("\0", 1));
  if (noContextTakeover_) deflateReset(&z);
}

void Deflater::compress(std::string_view message, std::string* out) {
  Buffer buffer(0);
  compress(message, &buffer);
  out->assign(buffer.view());
}

// ---- Inflater ----

struct Inflater::Stream {
  z_stream z{};
  ZlibMemory memory;
  // A final block ended the stream and nothing came after it yet.
  bool ended = false;
};

Inflater::Inflater(Role self, const DeflateParams& params)
    : stream_(std::make_unique<Stream>()),
      noContextTakeover_(self == Role::kServer ? params.clientNoContextTakeover
                                               : params.serverNoContextTakeover) {
  int bits = self == Role::kServer ? params.clientMaxWindowBits : params.serverMaxWindowBits;
  stream_->memory.attach(&stream_->z);
  if (inflateInit2(&stream_->z, -std::clamp(bits, 8, 15)) != Z_OK) throw std::bad_alloc();
}

Inflater::~Inflater() { inflateEnd(&stream_->z); }

size_t Inflater::heldMemory() const { return stream_->memory.held; }

Inflater::Result Inflater::feed(std::string_view compressed, Buffer* out, size_t limit) {
  do {
    const std::string_view slice = compressed.substr(0, kMaxSlice);
    compressed.remove_prefix(slice.size());
    const Result result = run(slice.data(), slice.size(), out, limit);
    if (result != Result::kOk) return result;
  } while (!compressed.empty());
  return Result::kOk;
}

Inflater::Result Inflater::finish(Buffer* out, size_t limit) {
  Result result = run(kTail, sizeof kTail, out, limit);
  if (result != Result::kOk) return result;
  // The tail completes an empty stored block, so a well-formed message ends
  // between blocks (zlib's data_type bit 128: waiting for a block header).
  // Anything else, an empty payload for one, would leave the next message
  // to be read from the middle of a block.
  if (!(stream_->z.data_type & 128) && !stream_->ended) return Result::kCorrupt;
  if (noContextTakeover_) {
    inflateReset(&stream_->z);
    stream_->ended = false;
  }
  return result;
}

Inflater::Result Inflater::feed(std::string_view compressed, std::string* out, size_t limit) {
  Buffer buffer(0);
  buffer.append(*out);
  const Result result = feed(compressed, &buffer, limit);
  out->assign(buffer.view());
  return result;
}

Inflater::Result Inflater::finish(std::string* out, size_t limit) {
  Buffer buffer(0);
  buffer.append(*out);
  const Result result = finish(&buffer, limit);
  out->assign(buffer.view());
  return result;
}

Inflater::Result Inflater::run(const char* data, size_t length, Buffer* out, size_t limit) {
  z_stream& z = stream_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
  z.avail_in = static_cast<uInt>(length);
  // (No limit at all: SIZE_MAX, which a chunk more would wrap to a chunk.)
  const size_t cap = limit > SIZE_MAX - kChunk ? SIZE_MAX : limit + kChunk;
  for (;;) {
    const size_t used = out->readableBytes();
    if (used > limit) return Result::kTooBig;
    unsigned char probe;
    // Room for a chunk, within the limit (the buffer's capacity stays within
    // the limit plus a chunk); at the limit, one byte of probe shows whether
    // more would come.
    const size_t chunk = std::min(kChunk, limit - used);
    if (chunk > 0) growWithin(out, chunk, cap);
    const size_t avail = chunk > 0 ? std::min({out->writableBytes(), limit - used, kMaxSlice}) : 1;
    z.next_out = chunk > 0 ? reinterpret_cast<Bytef*>(out->beginWrite()) : &probe;
    z.avail_out = static_cast<uInt>(avail);
    const uInt inBefore = z.avail_in;
    int rc = inflate(&z, Z_SYNC_FLUSH);
    if (chunk > 0) {
      out->hasWritten(avail - z.avail_out);
    } else if (z.avail_out == 0) {
      return Result::kTooBig;  // the limit is reached and more output came
    }
    if (z.avail_in != inBefore) stream_->ended = false;
    if (rc == Z_STREAM_END) {
      // A final block (BFINAL) ends the stream; what follows starts anew.
      inflateReset(&z);
      stream_->ended = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return Result::kCorrupt;
    }
    const bool progress = z.avail_in != inBefore || out->readableBytes() != used;
    if (z.avail_out != 0 && z.avail_in == 0) return Result::kOk;
    if (!progress && rc != Z_STREAM_END) return Result::kCorrupt;
  }
}

}  // namespace libnet::ws
