// SleepingGrpcTimers: lets gRPC 1.51's iomgr timer thread sleep until the earliest pending
// timer, or until a timer is set, instead of waking about once a second.
//
// Why: the kubelet's connections run on gRPC's iomgr, whose timers live in shards (2 per CPU,
// up to 32). Each idle shard's window is moved every second, and shards that held timers drift
// apart from the others, so an idle server's timer thread wakes once a second per group of
// shards: 1 to 3 times a second on the nodes we measured, for no timer at all
// (docs/performance.md, "gRPC's threads"). Later gRPC releases (EventEngine timers) sleep until
// the next deadline; Debian 12's 1.51 cannot be configured to.
//
// How: gRPC routes every iomgr timer through a table of functions that it lets a platform
// replace. This installs a table that forwards each call to gRPC's own one and keeps the deadline
// of each timer set and not yet cancelled or fired. A check with no deadline reached answers at
// once, naming the earliest deadline as the next time to check; a check with one reached runs
// gRPC's own, which fires every due timer (and moves its idle windows), and the fired timers are
// forgotten. Setting a timer earlier than the thread was told to sleep until wakes the thread.
// Timers therefore fire when gRPC's own would (its check runs at each deadline), and a thread
// with nothing pending sleeps until something is set.
//
// The table's layout and the helper functions are gRPC-internal: they are looked up by name at
// run time and used only when the library reports core version 29.0.0 (gRPC 1.51, Debian 12),
// whose layout this was written against. Anything else leaves gRPC's timers as they are.
//
// Contract: call before any other gRPC use in the process (timers set before the install are
// unknown to it); the first call decides, later ones return its result. It initialises gRPC and
// keeps it initialised for the process's life. An error says why it was not installed; gRPC then
// works as before, with its once-a-second wakeups.
#pragma once

#include "common/status.h"

namespace dracpu::dra {

Status InstallSleepingGrpcTimers();

}  // namespace dracpu::dra
