// Callback types shared by TcpServer, TcpClient, TcpConnection and the loop
// threads. Every connection callback runs on the loop thread of the
// connection it names.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "base/Timestamp.h"

namespace libnet {

class Buffer;
class EventLoop;
class TcpConnection;

using TcpConnectionPtr = std::shared_ptr<TcpConnection>;
using TimerCallback = std::function<void()>;
// Runs once on each new loop thread (EventLoopThread, EventLoopThreadPool,
// TcpServer's I/O threads), on that thread, before its loop runs; with no
// threads, on the base loop, from start().
using ThreadInitCallback = std::function<void(EventLoop*)>;
// Called on connect and on disconnect; conn->connected() tells which.
using ConnectionCallback = std::function<void(const TcpConnectionPtr&)>;
using CloseCallback = std::function<void(const TcpConnectionPtr&)>;
// A connection was idle for its server's idle timeout (TcpServer).
using IdleCallback = std::function<void(const TcpConnectionPtr&)>;
// The output buffer went from non-empty (or a direct send) to fully written.
using WriteCompleteCallback = std::function<void(const TcpConnectionPtr&)>;
// The output buffer grew past the high-water mark; the argument is its size.
using HighWaterMarkCallback = std::function<void(const TcpConnectionPtr&, size_t)>;
// Bytes arrived; consume what you can from the buffer, leave the rest (it is
// kept for the next call). The Buffer* is valid for this call only: it may be
// the loop's scratch buffer or a view of received bytes in the io_uring
// buffer ring rather than conn->inputBuffer().
using MessageCallback = std::function<void(const TcpConnectionPtr&, Buffer*, Timestamp)>;
// A client's connect attempt failed; `error` is its errno (ECONNREFUSED,
// ETIMEDOUT, ENETUNREACH, ...).
using ConnectErrorCallback = std::function<void(int error)>;

void defaultConnectionCallback(const TcpConnectionPtr& conn);
void defaultMessageCallback(const TcpConnectionPtr& conn, Buffer* buffer, Timestamp receiveTime);

}  // namespace libnet
