// The coroutine layer in one include: Task, spawn, Stream, serve, connect,
// sleep, withTimeout, withStop. See docs/coroutines.md.
#pragma once

#include "net/coro/Cancel.h"
#include "net/coro/Connect.h"
#include "net/coro/Errc.h"
#include "net/coro/Serve.h"
#include "net/coro/Sleep.h"
#include "net/coro/Spawn.h"
#include "net/coro/Stream.h"
#include "net/coro/Task.h"
