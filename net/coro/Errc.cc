#include "net/coro/Errc.h"

namespace libnet::coro {

const char* errcName(Errc error) {
  switch (error) {
    case Errc::kOk:
      return "ok";
    case Errc::kEof:
      return "end of input";
    case Errc::kClosed:
      return "connection closed";
    case Errc::kTimedOut:
      return "timed out";
    case Errc::kCancelled:
      return "cancelled";
    case Errc::kTooLong:
      return "delimiter not found within the limit";
    case Errc::kConnectFailed:
      return "connect failed";
  }
  return "?";
}

}  // namespace libnet::coro
