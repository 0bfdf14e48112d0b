#include "base/InlineFunction.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <utility>
#include <vector>

namespace libnet {
namespace {

// Counts live copies of itself, so that a leak or a double destruction shows.
struct Tracked {
  explicit Tracked(int* live) : live_(live) { ++*live_; }
  Tracked(const Tracked& other) : live_(other.live_) { ++*live_; }
  Tracked(Tracked&& other) noexcept : live_(other.live_) { ++*live_; }
  Tracked& operator=(const Tracked&) = delete;
  Tracked& operator=(Tracked&&) = delete;
  ~Tracked() { --*live_; }
  int* live_;
};

TEST(InlineFunctionTest, SharedPtrCaptureIsKeptInline) {
  auto shared = std::make_shared<int>(7);
  auto queued = [shared] { ++*shared; };
  // What the library queues most (a connection kept alive by its functor).
  static_assert(InlineFunction::fitsInline<decltype(queued)>());
  InlineFunction f(std::move(queued));
  EXPECT_EQ(shared.use_count(), 2);
  f();
  EXPECT_EQ(*shared, 8);
}

TEST(InlineFunctionTest, LargeCaptureGoesToTheHeapAndStillRuns) {
  std::array<char, 200> big{};
  big[199] = 'x';
  char seen = 0;
  auto large = [big, &seen] { seen = big[199]; };
  static_assert(!InlineFunction::fitsInline<decltype(large)>());
  InlineFunction f(large);
  InlineFunction moved(std::move(f));
  EXPECT_FALSE(static_cast<bool>(f));  // NOLINT(bugprone-use-after-move): moved-from is empty
  moved();
  EXPECT_EQ(seen, 'x');
}

TEST(InlineFunctionTest, MoveOnlyCapture) {
  auto owned = std::make_unique<int>(41);
  int result = 0;
  InlineFunction f([p = std::move(owned), &result] { result = *p + 1; });
  f();
  EXPECT_EQ(result, 42);
}

TEST(InlineFunctionTest, EveryCaptureIsDestroyedExactlyOnce) {
  int live = 0;
  {
    std::vector<InlineFunction> queue;
    for (int i = 0; i < 100; ++i) {
      // Inline and heap-held ones alike, moved around as the vector grows.
      if (i % 2 == 0) {
        queue.emplace_back([t = Tracked(&live)] {});
      } else {
        queue.emplace_back([t = Tracked(&live), pad = std::array<char, 128>{}] {});
      }
    }
    EXPECT_EQ(live, 100);
    InlineFunction assigned;
    assigned = std::move(queue.front());
    assigned = std::move(queue.back());  // the first one is destroyed here
    EXPECT_EQ(live, 99);
  }
  EXPECT_EQ(live, 0);
}

TEST(InlineFunctionTest, MutableCallableKeepsItsState) {
  int calls = 0;
  InlineFunction f([n = 0, &calls]() mutable { calls = ++n; });
  f();
  f();
  EXPECT_EQ(calls, 2);
}

TEST(InlineFunctionTest, EmptyAndNull) {
  InlineFunction empty;
  InlineFunction null(nullptr);
  EXPECT_FALSE(static_cast<bool>(empty));
  EXPECT_FALSE(static_cast<bool>(null));
  InlineFunction set([] {});
  EXPECT_TRUE(static_cast<bool>(set));
}

}  // namespace
}  // namespace libnet
