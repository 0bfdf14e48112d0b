// BodyBudget: a byte count shared by every loop thread of one HttpServer,
// bounding the request bodies the server holds while they are still
// arriving. Without it each connection is limited (maxBodyBytes) but their
// sum is not, and a thousand slow uploaders hold a thousand bodies.
//
// A connection takes bytes from the budget through a Reservation, which it
// owns: the reservation grows as the body it covers becomes known (a
// Content-Length, each chunk size) and gives everything back when released
// or destroyed. A reservation that cannot grow is refused (the server then
// answers 503) and keeps what it had.
//
// Threads: tryAcquire(), release(), used() and limit() may be called from any
// thread (one atomic counter, no lock). A Reservation is used by one thread at
// a time, and keeps its budget alive through a shared_ptr, so a connection
// that outlives its server can still give its bytes back.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace libnet::http {

class BodyBudget {
 public:
  // 0: no bound (bytes are still counted, and used() reports them).
  explicit BodyBudget(size_t limit) : limit_(limit) {}
  BodyBudget(const BodyBudget&) = delete;
  BodyBudget& operator=(const BodyBudget&) = delete;

  // Takes `bytes` if that keeps the total within the limit; all or nothing.
  [[nodiscard]] bool tryAcquire(size_t bytes);
  // Gives back bytes taken with tryAcquire().
  void release(size_t bytes);

  [[nodiscard]] size_t limit() const { return limit_; }
  [[nodiscard]] bool unlimited() const { return limit_ == 0; }
  // Bytes taken and not yet given back, over all holders.
  [[nodiscard]] size_t used() const { return used_.load(std::memory_order_relaxed); }

  class Reservation {
   public:
    // Holds nothing and cannot grow: cover() of anything but 0 fails.
    Reservation() = default;
    explicit Reservation(std::shared_ptr<BodyBudget> budget) : budget_(std::move(budget)) {}
    ~Reservation() { release(); }
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    Reservation(Reservation&& other) noexcept;
    Reservation& operator=(Reservation&& other) noexcept;

    // Grows the reservation to at least `total` bytes. True when it now
    // covers them (at once, with no atomic operation, when it already did);
    // false, holding what it held, when the budget cannot spare the rest.
    [[nodiscard]] bool cover(size_t total);
    // Gives every byte back; the reservation may grow again afterwards.
    void release();

    [[nodiscard]] size_t bytes() const { return bytes_; }

   private:
    std::shared_ptr<BodyBudget> budget_;
    size_t bytes_ = 0;
  };

 private:
  const size_t limit_;
  // Nothing else is published through this counter: relaxed order suffices.
  std::atomic<size_t> used_{0};
};

}  // namespace libnet::http
