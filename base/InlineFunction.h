// InlineFunction: a move-only `void()` callable that keeps a small callable
// inside itself and only a larger one on the heap. EventLoop's queue holds
// these: a functor such as `[self = shared_from_this()] { self->close(); }`
// (a shared_ptr and a few words) is queued without an allocation, where
// std::function puts every capture that is not trivially copyable on the
// heap.
//
// What fits inline: up to kInlineSize bytes, alignment up to
// alignof(std::max_align_t), and a move constructor that cannot throw (a
// queue that grows moves its elements). Anything else is allocated once, at
// construction, and moving the InlineFunction then moves a pointer. Calling
// an empty one is undefined (unlike std::function, nothing is thrown): the
// loop never queues an empty one.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace libnet {

class InlineFunction {
 public:
  static constexpr size_t kInlineSize = 48;

  InlineFunction() noexcept = default;
  InlineFunction(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)

  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!std::is_same_v<D, InlineFunction> &&
                                     std::is_invocable_r_v<void, D&>>>
  InlineFunction(
      F&& f) {  // NOLINT(google-explicit-constructor): takes any callable, as std::function
    if constexpr (kFitsInline<D>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      *heapSlot<D>(storage_) = new D(std::forward<F>(f));
      ops_ = &kHeapOps<D>;
    }
  }

  InlineFunction(InlineFunction&& other) noexcept : ops_(other.ops_) {
    if (ops_ != nullptr) {
      ops_->relocate(other.storage_, storage_);
      other.ops_ = nullptr;
    }
  }
  InlineFunction& operator=(InlineFunction&& other) noexcept {
    if (this != &other) {
      reset();
      if (other.ops_ != nullptr) {
        other.ops_->relocate(other.storage_, storage_);
        ops_ = std::exchange(other.ops_, nullptr);
      }
    }
    return *this;
  }
  InlineFunction(const InlineFunction&) = delete;
  InlineFunction& operator=(const InlineFunction&) = delete;
  ~InlineFunction() { reset(); }

  void operator()() { ops_->invoke(storage_); }
  explicit operator bool() const noexcept { return ops_ != nullptr; }
  // Whether a callable of type F is kept inline (no allocation).
  template <class F>
  static constexpr bool fitsInline() {
    return kFitsInline<std::decay_t<F>>;
  }

 private:
  struct Ops {
    void (*invoke)(void* storage);
    // Moves the callable from `from` to `to` (raw storage) and ends its life
    // in `from`.
    void (*relocate)(void* from, void* to) noexcept;
    void (*destroy)(void* storage) noexcept;
  };

  template <class D>
  static constexpr bool kFitsInline =
      sizeof(D) <= kInlineSize &&
      alignof(D) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<D>;

  template <class D>
  static D** heapSlot(void* storage) {
    return static_cast<D**>(storage);
  }

  template <class D>
  static constexpr Ops kInlineOps = {
      [](void* s) { (*std::launder(static_cast<D*>(s)))(); },
      [](void* from, void* to) noexcept {
        D* source = std::launder(static_cast<D*>(from));
        ::new (to) D(std::move(*source));
        source->~D();
      },
      [](void* s) noexcept { std::launder(static_cast<D*>(s))->~D(); },
  };
  template <class D>
  static constexpr Ops kHeapOps = {
      [](void* s) { (**heapSlot<D>(s))(); },
      [](void* from, void* to) noexcept { *heapSlot<D>(to) = *heapSlot<D>(from); },
      [](void* s) noexcept { delete *heapSlot<D>(s); },
  };

  void reset() noexcept {
    if (ops_ != nullptr) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

  alignas(std::max_align_t) unsigned char storage_[kInlineSize];
  const Ops* ops_ = nullptr;
};

}  // namespace libnet
