// StaticFiles on a temporary tree: statuses for every kind of path, and the
// small pure helpers (percent-decoding, MIME types).
#include "net/http/StaticFiles.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "base/UniqueFd.h"

namespace libnet::http {
namespace {

class StaticFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ =
        std::filesystem::temp_directory_path() / ("libnet-static-" + std::to_string(::getpid()));
    std::filesystem::remove_all(base_);
    std::filesystem::create_directories(base_ / "root" / "dir");
    std::filesystem::create_directories(base_ / "root" / "noindex");
    std::ofstream(base_ / "root" / "a.txt") << "A";
    std::ofstream(base_ / "root" / "dir" / "index.html") << "<i>";
    std::ofstream(base_ / "outside.txt") << "secret";
    std::filesystem::create_symlink(base_ / "outside.txt", base_ / "root" / "abs-link");
    std::filesystem::create_symlink("../outside.txt", base_ / "root" / "rel-link");
    std::filesystem::create_symlink(base_, base_ / "root" / "dir-link");
    ASSERT_EQ(::mkfifo((base_ / "root" / "fifo").c_str(), 0600), 0);
  }
  void TearDown() override { std::filesystem::remove_all(base_); }

  int status(const std::string& path) {
    StaticFiles files((base_ / "root").string());
    return files.open(path).status;
  }

  std::filesystem::path base_;
};

TEST_F(StaticFilesTest, ServesRegularFilesAndDirectoryIndexes) {
  StaticFiles files((base_ / "root").string());
  StaticFiles::File f = files.open("/a.txt");
  ASSERT_EQ(f.status, 200);
  EXPECT_TRUE(f.fd);
  EXPECT_EQ(f.size, 1u);
  EXPECT_EQ(f.contentType, "text/plain; charset=utf-8");
  f = files.open("/dir/");
  EXPECT_EQ(f.status, 200);
  EXPECT_EQ(f.size, 3u);
  EXPECT_EQ(f.contentType, "text/html; charset=utf-8");
  EXPECT_EQ(files.open("/%61.txt").status, 200);  // "a" percent-encoded
  EXPECT_EQ(files.open("//a.txt").status, 200);
  EXPECT_EQ(files.open("/./a.txt").status, 200);
}

TEST_F(StaticFilesTest, RefusesEverythingThatWouldLeaveTheRoot) {
  EXPECT_EQ(status("/../outside.txt"), 403);
  EXPECT_EQ(status("/dir/../../outside.txt"), 403);
  EXPECT_EQ(status("/%2e%2e/outside.txt"), 403);
  EXPECT_EQ(status("/%2E%2e%2Foutside.txt"), 403);
  EXPECT_EQ(status("/abs-link"), 403);
  EXPECT_EQ(status("/rel-link"), 403);
  EXPECT_EQ(status("/dir-link/outside.txt"), 403);
  // Even ".." that would stay inside is refused rather than resolved.
  EXPECT_EQ(status("/dir/../a.txt"), 403);
}

TEST_F(StaticFilesTest, ErrorStatuses) {
  EXPECT_EQ(status("/missing"), 404);
  EXPECT_EQ(status("/a.txt/x"), 404);
  EXPECT_EQ(status("/noindex/"), 403);  // no listing
  EXPECT_EQ(status("/fifo"), 403);      // never opened for reading as a file
  EXPECT_EQ(status("a.txt"), 400);      // not origin-form
  EXPECT_EQ(status(""), 400);
  EXPECT_EQ(status("/%zz"), 400);
  EXPECT_EQ(status("/%4"), 400);
  EXPECT_EQ(status("/a%00.txt"), 400);
}

// Every descriptor of the process taken (RLIMIT_NOFILE lowered to what is
// open now plus a few, then those few opened): the server is out of a
// resource, which is no fault of the request. Restored on destruction.
class FdTableFull {
 public:
  FdTableFull() {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(highestOpen() + 8);
    ::setrlimit(RLIMIT_NOFILE, &low);
    for (;;) {
      UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (!fd) break;
      held_.push_back(std::move(fd));
    }
  }
  ~FdTableFull() {
    held_.clear();
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  FdTableFull(const FdTableFull&) = delete;
  FdTableFull& operator=(const FdTableFull&) = delete;

 private:
  static int highestOpen() {
    int highest = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
      highest = std::max(highest, std::stoi(entry.path().filename().string()));
    }
    return highest;
  }
  rlimit saved_{};
  std::vector<UniqueFd> held_;
};

TEST_F(StaticFilesTest, NoDescriptorLeftIsAServerErrorNotAForbidden) {
  StaticFiles files((base_ / "root").string());
  HttpRequest request;
  ASSERT_EQ(request.assign(Method::kGet, Version::kHttp11, "/a.txt"), 0);
  int status = 0;
  HttpResponse response(false);
  {
    FdTableFull full;
    status = files.open("/a.txt").status;
    files.serve(request, &response);
  }
  EXPECT_EQ(status, 503);
  EXPECT_EQ(response.status(), 503);
  std::string retryAfter;
  response.forEachHeader([&](std::string_view name, std::string_view value) {
    if (name == "Retry-After") retryAfter = value;
  });
  EXPECT_EQ(retryAfter, "1");
  EXPECT_EQ(files.open("/a.txt").status, 200);  // and served again once there are
}

TEST_F(StaticFilesTest, MissingRootThrows) {
  EXPECT_THROW(StaticFiles((base_ / "nope").string()), std::system_error);
  EXPECT_THROW(StaticFiles((base_ / "outside.txt").string()), std::system_error);
}

TEST(StaticFilesHelpers, PercentDecode) {
  std::string out;
  EXPECT_TRUE(StaticFiles::percentDecode("/a%20b%2F", &out));
  EXPECT_EQ(out, "/a b/");
  EXPECT_FALSE(StaticFiles::percentDecode("%", &out));
  EXPECT_FALSE(StaticFiles::percentDecode("%g0", &out));
  EXPECT_FALSE(StaticFiles::percentDecode("%00", &out));
}

TEST(StaticFilesHelpers, ContentTypes) {
  EXPECT_EQ(StaticFiles::contentTypeFor("/x/index.HTML"), "text/html; charset=utf-8");
  EXPECT_EQ(StaticFiles::contentTypeFor("a.png"), "image/png");
  EXPECT_EQ(StaticFiles::contentTypeFor("a.tar.gz"), "application/gzip");
  EXPECT_EQ(StaticFiles::contentTypeFor("noext"), "application/octet-stream");
  EXPECT_EQ(StaticFiles::contentTypeFor("dir.d/noext"), "application/octet-stream");
}

}  // namespace
}  // namespace libnet::http
