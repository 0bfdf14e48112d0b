// One edge-triggered epoll echo loop: the least work an epoll backend can do
// per ping-pong message (epoll_wait, read, write), used as the floor that
// libnet's epoll poller is measured against. Owns its epoll instance and its
// connections; borrows the listener and the termination signalfd. Everything
// runs on the thread that calls run().
#pragma once

#include <sys/epoll.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "pingpong/floor/UniqueFd.h"

namespace pingpong {

class EpollEchoLoop {
 public:
  // Throws std::system_error if epoll_create1 or epoll_ctl fails.
  EpollEchoLoop(int listenFd, int signalFd);
  EpollEchoLoop(const EpollEchoLoop&) = delete;
  EpollEchoLoop& operator=(const EpollEchoLoop&) = delete;

  // Serves until the signalfd becomes readable.
  void run();

 private:
  struct Connection {
    UniqueFd fd;
    std::string pending;  // echo bytes the socket would not take yet
    bool readPaused = false;
  };

  void acceptAll();
  void handleEvent(int fd, uint32_t events);
  void readAll(int fd, bool untilEof);
  // Returns false if the connection was closed.
  bool echo(int fd, const char* data, size_t n);
  void flushPending(int fd);
  void closeConnection(int fd);

  UniqueFd epoll_;
  int listenFd_;
  int signalFd_;
  bool stop_ = false;
  std::vector<Connection> connections_;  // indexed by fd, so events carry no pointers
  std::unique_ptr<char[]> buffer_;
};

}  // namespace pingpong
