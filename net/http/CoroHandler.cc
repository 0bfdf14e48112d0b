#include "net/http/CoroHandler.h"

#include <memory>
#include <stop_token>
#include <utility>

#include "net/coro/Spawn.h"

namespace libnet::http {

HttpServer::AsyncHandler coroHandler(CoroHandler handler) {
  return [handler = std::move(handler)](const HttpRequest& request, ResponseWriterPtr writer) {
    // Shared with the closed callback, which the writer drops once the
    // answer is over.
    auto stop = std::make_shared<std::stop_source>();
    writer->setClosedCallback([stop] { stop->request_stop(); });
    EventLoop* loop = writer->loop();
    // The request is copied: the coroutine outlives the handler's call.
    coro::spawn(loop, handler(request, std::move(writer)), stop->get_token());
  };
}

}  // namespace libnet::http
