#include "net/NameResolver.h"

namespace libnet {

const char* resolveErrcName(ResolveErrc errc) {
  switch (errc) {
    case ResolveErrc::kOk:
      return "ok";
    case ResolveErrc::kNotFound:
      return "NXDOMAIN";
    case ResolveErrc::kNoData:
      return "no address of that family";
    case ResolveErrc::kServerFailure:
      return "SERVFAIL";
    case ResolveErrc::kRefused:
      return "REFUSED";
    case ResolveErrc::kTimedOut:
      return "timeout";
    case ResolveErrc::kNoServer:
      return "no name server reachable";
    case ResolveErrc::kBadResponse:
      return "bad response";
    case ResolveErrc::kBadName:
      return "bad name";
    case ResolveErrc::kCancelled:
      return "cancelled";
    case ResolveErrc::kOther:
      break;
  }
  return "resolver error";
}

}  // namespace libnet
