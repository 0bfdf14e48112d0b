// ThreadAnnotations: macros that state the library's locking rules in the
// code, so that Clang's thread-safety analysis (-Wthread-safety) can check
// them at compile time: which mutex guards a member, which helpers expect
// the caller to hold it, which functions take it themselves.
//
// Under Clang they expand to its capability attributes; under any other
// compiler (GCC builds the library normally) they expand to nothing and cost
// nothing. tools/thread_safety.sh runs the analysis over base/ and net/.
// Stateless and header-only: any thread may include it.
//
// How they are used here (base/Mutex.h is the annotated lock):
//   Mutex mutex_;
//   int count_ LIBNET_GUARDED_BY(mutex_);        // read or written only held
//   void bumpLocked() LIBNET_REQUIRES(mutex_);   // the caller holds it
//   int count() const LIBNET_EXCLUDES(mutex_);   // takes it: must not hold it
#pragma once

#if defined(__clang__)
#define LIBNET_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define LIBNET_THREAD_ANNOTATION(x)
#endif

// On a class: its objects are locks ("capabilities") the analysis tracks.
#define LIBNET_CAPABILITY(name) LIBNET_THREAD_ANNOTATION(capability(name))
// On an RAII class: constructing it acquires, destroying it releases.
#define LIBNET_SCOPED_CAPABILITY LIBNET_THREAD_ANNOTATION(scoped_lockable)

// On a member: touched only while the named capability is held.
#define LIBNET_GUARDED_BY(x) LIBNET_THREAD_ANNOTATION(guarded_by(x))
// On a pointer member: what it points to is touched only while held (the
// pointer itself is not guarded).
#define LIBNET_PT_GUARDED_BY(x) LIBNET_THREAD_ANNOTATION(pt_guarded_by(x))

// On a function: the caller must already hold the capabilities.
#define LIBNET_REQUIRES(...) LIBNET_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// On a function: the caller must not hold them (the function takes them, and
// std::mutex is not recursive).
#define LIBNET_EXCLUDES(...) LIBNET_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// On a function: returns holding the capabilities (with no argument, on a
// capability class's member: `this`).
#define LIBNET_ACQUIRE(...) LIBNET_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
// On a function: returns having let them go.
#define LIBNET_RELEASE(...) LIBNET_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// On a function: holds them on return exactly when it returns the first
// argument (e.g. true).
#define LIBNET_TRY_ACQUIRE(...) LIBNET_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))

// On a function that checks at run time that the capability is held (and
// aborts if not): after a call, the analysis takes it as held.
#define LIBNET_ASSERT_CAPABILITY(x) LIBNET_THREAD_ANNOTATION(assert_capability(x))
// On an accessor: the capability it returns is the named one, so that locking
// the result counts as locking that.
#define LIBNET_RETURN_CAPABILITY(x) LIBNET_THREAD_ANNOTATION(lock_returned(x))

// On a function the analysis cannot follow (a lock handed between threads, a
// field published by an atomic flag): it is not checked. Say why next to it.
#define LIBNET_NO_THREAD_SAFETY_ANALYSIS LIBNET_THREAD_ANNOTATION(no_thread_safety_analysis)
