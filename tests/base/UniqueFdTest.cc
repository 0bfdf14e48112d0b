#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "base/UniqueFd.h"

namespace libnet {
namespace {

// True if `fd` names no open file in this process.
bool isClosed(int fd) {
  errno = 0;
  return ::fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

int openFd() {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0);
  return fd;
}

TEST(UniqueFdTest, DefaultIsInvalid) {
  const UniqueFd fd;
  EXPECT_FALSE(fd.valid());
  EXPECT_FALSE(static_cast<bool>(fd));
  EXPECT_EQ(fd.get(), -1);
}

TEST(UniqueFdTest, ClosesOnDestruction) {
  const int raw = openFd();
  {
    const UniqueFd fd(raw);
    EXPECT_TRUE(fd.valid());
    EXPECT_TRUE(static_cast<bool>(fd));
    EXPECT_EQ(fd.get(), raw);
    EXPECT_FALSE(isClosed(raw));
  }
  EXPECT_TRUE(isClosed(raw));
}

TEST(UniqueFdTest, MoveConstructorTransfersOwnership) {
  const int raw = openFd();
  UniqueFd a(raw);
  {
    UniqueFd b(std::move(a));
    EXPECT_EQ(b.get(), raw);
    EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
    EXPECT_FALSE(isClosed(raw));
  }
  EXPECT_TRUE(isClosed(raw));
}

TEST(UniqueFdTest, MoveAssignmentClosesOldAndTakesNew) {
  const int first = openFd();
  const int second = openFd();
  UniqueFd a(first);
  UniqueFd b(second);
  a = std::move(b);
  EXPECT_TRUE(isClosed(first));
  EXPECT_FALSE(isClosed(second));
  EXPECT_EQ(a.get(), second);
  EXPECT_FALSE(b.valid());  // NOLINT(bugprone-use-after-move)
  a = UniqueFd();
  EXPECT_TRUE(isClosed(second));
  EXPECT_FALSE(a.valid());
}

TEST(UniqueFdTest, SelfMoveAssignmentKeepsFd) {
  const int raw = openFd();
  UniqueFd a(raw);
  UniqueFd& alias = a;
  a = std::move(alias);
  EXPECT_EQ(a.get(), raw);
  EXPECT_FALSE(isClosed(raw));
}

TEST(UniqueFdTest, ReleaseDoesNotClose) {
  const int raw = openFd();
  int released = -1;
  {
    UniqueFd fd(raw);
    released = fd.release();
    EXPECT_FALSE(fd.valid());
    EXPECT_EQ(fd.get(), -1);
  }
  EXPECT_EQ(released, raw);
  EXPECT_FALSE(isClosed(raw));
  ASSERT_EQ(::close(raw), 0);
}

TEST(UniqueFdTest, ResetClosesAndAdopts) {
  const int first = openFd();
  const int second = openFd();
  UniqueFd fd(first);
  fd.reset(second);
  EXPECT_TRUE(isClosed(first));
  EXPECT_FALSE(isClosed(second));
  EXPECT_EQ(fd.get(), second);
  fd.reset();
  EXPECT_TRUE(isClosed(second));
  EXPECT_FALSE(fd.valid());
  fd.reset();  // resetting an empty UniqueFd is harmless
  EXPECT_FALSE(fd.valid());
}

}  // namespace
}  // namespace libnet
