// ThreadSanitizer hooks for the programs that run gRPC (`make tsan`, docs/security.md
// "ThreadSanitizer"). Debian's gRPC, Protobuf and Abseil are not built with TSan, so TSan sees
// neither their memory accesses nor the synchronisation (absl::Mutex, futexes, their own
// atomics) with which gRPC hands a call from one of its threads to another. Two things make such
// a program checkable:
//  * DRACPU_TSAN_GRPC_PROGRAM() sets ignore_noninstrumented_modules=1 as the program's TSan
//    default: the accesses that an uninstrumented library makes through an intercepted libc call
//    (memcpy, memmove, epoll and socket calls) are not checked. Without it every gRPC-internal
//    hand-off (Abseil's deadlock graph, gRPC's epoll set) is reported. Synchronisation through
//    those calls (file descriptors, pthread mutexes and condition variables) still counts, and
//    every access our own code makes (including gRPC's and Protobuf's inlined header code) is
//    still checked. It is a default: TSAN_OPTIONS can still override it.
//  * ReleaseFor(key) / AcquireFor(key): an explicit happens-before edge for an ordering that only
//    gRPC provides: AcquireFor(k) happens after every earlier ReleaseFor(k). Each call names, in a
//    comment, the gRPC synchronisation it stands for; never use one to quiet a race between two
//    pieces of our own code.
// Outside a TSan build all of this compiles to nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace dracpu::tsan {

#if defined(__SANITIZE_THREAD__)
inline void ReleaseFor(const void* key) { __tsan_release(const_cast<void*>(key)); }
inline void AcquireFor(const void* key) { __tsan_acquire(const_cast<void*>(key)); }
#else
inline void ReleaseFor(const void*) {}
inline void AcquireFor(const void*) {}
#endif

}  // namespace dracpu::tsan

// Once, at namespace scope, in a source file that every gRPC-running program links (the kubelet
// plugin server, the kubelet simulator). Weak, so that a program linking both links.
#if defined(__SANITIZE_THREAD__)
#define DRACPU_TSAN_GRPC_PROGRAM()                                                               \
  extern "C" __attribute__((weak, visibility("default"))) const char* __tsan_default_options() { \
    return "ignore_noninstrumented_modules=1";                                                   \
  }
#else
#define DRACPU_TSAN_GRPC_PROGRAM()
#endif
