// Task<T>: a lazy, move-only coroutine that produces a T (or throws). It
// starts when awaited (`co_await std::move(task)` or `co_await f()`). A task
// that finishes without suspending returns to its awaiter like a function
// (the awaiter is not suspended at all), so a loop over a million such tasks
// runs in constant stack at any optimization level; one that finishes after
// suspending hands the thread straight to its awaiter (symmetric transfer: a
// tail call in optimized builds). An exception thrown inside propagates to
// the awaiter. A Task never awaited is
// destroyed without having run. To run one without an awaiter, hand it to
// spawn() (net/coro/Spawn.h), which owns it from then on.
//
// The Task object owns its coroutine frame; destroying it (or the frame of
// the coroutine awaiting it) destroys the frame, wherever it is suspended:
// every awaitable of the library undoes its registration (reader slot,
// timer, ...) in its destructor.
//
// Frames are allocated with the promise's operator new, which counts them per
// thread (frameAllocations()): the benchmark reports frames per connection
// from it, and the tests check that steady-state reads and writes make none.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

namespace libnet::coro {

// What the coroutines of one task share (net/coro/TaskContext.h, inside the
// layer): awaitables find it through their awaiter's promise.
class TaskContext;

template <class T = void>
class Task;

namespace detail {

// What every promise of the layer has: counted frames (Task.cc), and the
// task context its awaitables find through the coroutine handle.
class FrameBase {
 public:
  static void* operator new(std::size_t size);
  static void operator delete(void* frame, std::size_t size) noexcept;

  [[nodiscard]] TaskContext* context() const { return context_; }

 protected:
  TaskContext* context_ = nullptr;
};

class PromiseBase : public FrameBase {
 public:
  std::suspend_always initial_suspend() noexcept { return {}; }

  struct FinalAwaiter {
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> done) noexcept {
      // Finished inside the awaiter's await_suspend(): it goes on by itself.
      if (done.promise().startingInline_) return std::noop_coroutine();
      return done.promise().continuation_;
    }
    void await_resume() const noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { exception_ = std::current_exception(); }

  // Runs the task for its awaiter until it first suspends or finishes;
  // returns whether the awaiter must suspend (the task suspended).
  bool runFor(std::coroutine_handle<> self, std::coroutine_handle<> awaiter, TaskContext* context) {
    continuation_ = awaiter;
    context_ = context;
    startingInline_ = true;
    self.resume();
    if (self.done()) return false;
    startingInline_ = false;
    return true;
  }

 protected:
  void rethrowIfFailed() {
    if (exception_) std::rethrow_exception(exception_);
  }

 private:
  std::coroutine_handle<> continuation_ = std::noop_coroutine();
  std::exception_ptr exception_;
  bool startingInline_ = false;
};

template <class T>
class Promise : public PromiseBase {
 public:
  Task<T> get_return_object() noexcept;
  template <class U>
  void return_value(U&& value) {
    value_.emplace(std::forward<U>(value));
  }
  T result() {
    rethrowIfFailed();
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
};

template <>
class Promise<void> : public PromiseBase {
 public:
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void result() { rethrowIfFailed(); }
};

}  // namespace detail

// Frames of the layer's coroutines allocated by this thread so far.
[[nodiscard]] uint64_t frameAllocations();

template <class T>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task() = default;
  explicit Task(Handle handle) : handle_(handle) {}
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  [[nodiscard]] bool valid() const { return static_cast<bool>(handle_); }

  // Owns the task while it is awaited, so that an awaiter kept in a wrapper
  // (withTimeout()) keeps the frame alive.
  class Awaiter {
   public:
    explicit Awaiter(Task task) : task_(std::move(task)) {}
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> awaiting) {
      return task_.handle_.promise().runFor(task_.handle_, awaiting, awaiting.promise().context());
    }
    T await_resume() { return task_.handle_.promise().result(); }

   private:
    Task task_;
  };
  Awaiter operator co_await() && noexcept { return Awaiter(std::move(*this)); }

  // For spawn(): the frame, now owned by the caller.
  Handle release() { return std::exchange(handle_, {}); }

 private:
  void reset() {
    if (handle_) std::exchange(handle_, {}).destroy();
  }

  Handle handle_;
};

namespace detail {

template <class T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}

inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}

// The awaiter of an awaitable: its operator co_await()'s result, or itself.
template <class A>
auto awaiterOf(A&& awaitable) {
  if constexpr (requires { std::forward<A>(awaitable).operator co_await(); }) {
    return std::forward<A>(awaitable).operator co_await();
  } else {
    return std::decay_t<A>(std::forward<A>(awaitable));
  }
}

// Suspends `awaiting` on `awaiter` (an awaiter wrapped by another, such as
// withTimeout()'s), with await_suspend()'s three result types folded into the
// bool form: false resumes `awaiting` at once by returning to it (never by a
// nested resume(), which would grow the stack of a loop whose operations
// complete at once).
template <class Awaiter, class P>
bool suspendOn(Awaiter& awaiter, std::coroutine_handle<P> awaiting) {
  using Result = decltype(awaiter.await_suspend(awaiting));
  if constexpr (std::is_void_v<Result>) {
    awaiter.await_suspend(awaiting);
    return true;
  } else if constexpr (std::is_same_v<Result, bool>) {
    return awaiter.await_suspend(awaiting);
  } else {
    const std::coroutine_handle<> next = awaiter.await_suspend(awaiting);
    if (next == awaiting) return false;
    next.resume();
    return true;
  }
}

}  // namespace detail

}  // namespace libnet::coro
