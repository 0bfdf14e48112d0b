// http::coroHandler(): an HttpServer::AsyncHandler whose answers are
// coroutines (net/coro/). Each request's coroutine is spawned on its
// connection's loop with a copy of the request and the writer, and is
// stopped (coro::spawn's stop token, as withStop) when the client goes: the
// library operation it waits on then, and every later one, ends with
// Errc::kCancelled.
//
//   server.setAsyncHandler(http::coroHandler(
//       [&db](HttpRequest request, ResponseWriterPtr writer) -> coro::Task<> {
//         std::vector<std::string> rows = co_await db.query(request.path());
//         writer->start(HttpResponse(false));
//         for (std::string& row : rows) {
//           if (co_await http::write(writer, std::move(row)) != coro::Errc::kOk) co_return;
//         }
//         writer->finish();
//       }));
//
// The coroutine owns the answer: one that ends without finishing it (or
// throws: logged) leaves the writer unfinished, which is a 500 or a cut-off
// (ResponseWriter.h). The writer's closed callback is coroHandler()'s.
// Works for HTTP/1.1 and HTTP/2 alike.
#pragma once

#include <functional>

#include "net/coro/Task.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpServer.h"
#include "net/http/ResponseWriter.h"

namespace libnet::http {

using CoroHandler = std::function<coro::Task<>(HttpRequest, ResponseWriterPtr)>;

[[nodiscard]] HttpServer::AsyncHandler coroHandler(CoroHandler handler);

}  // namespace libnet::http
