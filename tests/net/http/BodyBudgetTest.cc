// BodyBudget: all-or-nothing acquisition within the limit, reservations that
// grow, fail without losing what they hold, and give everything back when
// released, moved from or destroyed, also after the budget's owner let go,
// and a limit that holds under concurrent use.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "net/http/BodyBudget.h"

namespace libnet::http {
namespace {

using Reservation = BodyBudget::Reservation;

TEST(BodyBudgetTest, AcquiresWithinTheLimitAllOrNothing) {
  BodyBudget budget(1000);
  EXPECT_FALSE(budget.unlimited());
  EXPECT_TRUE(budget.tryAcquire(600));
  EXPECT_FALSE(budget.tryAcquire(401));  // would pass the limit by one byte
  EXPECT_EQ(budget.used(), 600u);        // and took nothing
  EXPECT_TRUE(budget.tryAcquire(400));   // exactly to the limit
  EXPECT_EQ(budget.used(), 1000u);
  EXPECT_FALSE(budget.tryAcquire(1));
  budget.release(600);
  EXPECT_EQ(budget.used(), 400u);
  EXPECT_TRUE(budget.tryAcquire(600));
  budget.release(1000);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_FALSE(budget.tryAcquire(1001));
}

TEST(BodyBudgetTest, ZeroMeansNoBoundButStillCounts) {
  BodyBudget budget(0);
  EXPECT_TRUE(budget.unlimited());
  EXPECT_TRUE(budget.tryAcquire(size_t{1} << 40));
  EXPECT_TRUE(budget.tryAcquire(size_t{1} << 40));
  EXPECT_EQ(budget.used(), size_t{2} << 40);
  budget.release(size_t{2} << 40);
  EXPECT_EQ(budget.used(), 0u);
}

TEST(BodyBudgetTest, AReservationGrowsAndGivesBackOnDestruction) {
  auto budget = std::make_shared<BodyBudget>(1000);
  {
    Reservation r(budget);
    EXPECT_EQ(r.bytes(), 0u);
    EXPECT_TRUE(r.cover(0));
    EXPECT_EQ(budget->used(), 0u);
    EXPECT_TRUE(r.cover(300));
    EXPECT_EQ(r.bytes(), 300u);
    EXPECT_TRUE(r.cover(200));  // covered already: no change
    EXPECT_EQ(r.bytes(), 300u);
    EXPECT_TRUE(r.cover(700));  // takes the difference only
    EXPECT_EQ(r.bytes(), 700u);
    EXPECT_EQ(budget->used(), 700u);
  }
  EXPECT_EQ(budget->used(), 0u);
}

TEST(BodyBudgetTest, AReservationThatCannotGrowKeepsWhatItHad) {
  auto budget = std::make_shared<BodyBudget>(1000);
  Reservation other(budget);
  ASSERT_TRUE(other.cover(600));
  Reservation r(budget);
  ASSERT_TRUE(r.cover(300));
  EXPECT_FALSE(r.cover(401));  // needs 101 more, 100 are free
  EXPECT_EQ(r.bytes(), 300u);
  EXPECT_EQ(budget->used(), 900u);
  other.release();
  EXPECT_EQ(other.bytes(), 0u);
  EXPECT_EQ(budget->used(), 300u);
  EXPECT_TRUE(r.cover(401));  // room again
  EXPECT_TRUE(other.cover(599));
  EXPECT_EQ(budget->used(), 1000u);
  r.release();
  r.release();  // twice is harmless
  other.release();
  EXPECT_EQ(budget->used(), 0u);
}

TEST(BodyBudgetTest, ADefaultReservationHoldsNothingAndCannotGrow) {
  Reservation r;
  EXPECT_TRUE(r.cover(0));
  EXPECT_FALSE(r.cover(1));
  EXPECT_EQ(r.bytes(), 0u);
  r.release();
}

TEST(BodyBudgetTest, MovingAReservationMovesItsBytes) {
  auto budget = std::make_shared<BodyBudget>(1000);
  Reservation a(budget);
  ASSERT_TRUE(a.cover(400));
  Reservation b(std::move(a));
  EXPECT_EQ(b.bytes(), 400u);
  EXPECT_EQ(budget->used(), 400u);  // moved, not doubled
  Reservation c(budget);
  ASSERT_TRUE(c.cover(100));
  c = std::move(b);  // c's own 100 go back first
  EXPECT_EQ(c.bytes(), 400u);
  EXPECT_EQ(budget->used(), 400u);
  c.release();
  EXPECT_EQ(budget->used(), 0u);
}

TEST(BodyBudgetTest, AReservationKeepsItsBudgetAlive) {
  // A connection's state may outlive the server that made the budget.
  auto budget = std::make_shared<BodyBudget>(1000);
  const std::weak_ptr<BodyBudget> watch = budget;
  auto r = std::make_unique<Reservation>(budget);
  ASSERT_TRUE(r->cover(500));
  budget.reset();
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(watch.lock()->used(), 500u);
  r.reset();  // gives back to a budget only it still holds
  EXPECT_TRUE(watch.expired());
}

TEST(BodyBudgetTest, ConcurrentReservationsNeverPassTheLimit) {
  constexpr int kThreads = 4;
  constexpr size_t kLimit = 10000;
  constexpr size_t kBase = 2000;  // held by each thread throughout: 2000 stay free
  auto budget = std::make_shared<BodyBudget>(kLimit);
  std::atomic<int> ready{0};
  std::atomic<bool> overdrawn{false};
  std::atomic<int> granted{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Reservation base(budget);
      if (!base.cover(kBase)) overdrawn = true;  // must fit: 4 x 2000 <= 10000
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      Reservation r(budget);
      for (int i = 0; i < 20000; ++i) {
        // 500..2999 bytes: above 2000 can never fit, below may, depending on
        // what the other threads hold at that moment.
        const size_t want = 500 + static_cast<size_t>((i * 7 + t * 13) % 2500);
        if (r.cover(want)) {
          ++granted;
          if (budget->used() > kLimit) overdrawn = true;
        } else {
          ++refused;
        }
        if (i % 3 == 0) r.release();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(overdrawn.load());
  EXPECT_GT(granted.load(), 0);
  EXPECT_GT(refused.load(), 0);
  EXPECT_EQ(budget->used(), 0u);
}

}  // namespace
}  // namespace libnet::http
