#pragma once
// What every connection of one server shares.
#include "http/connection_registry.h"
#include "http/handler_pool.h"
#include "http/limits.h"
#include "http/router.h"

namespace specd::http {

struct Transport {
    const Router &       router;
    HandlerPool &        pool;
    ConnectionRegistry & registry;
    const Limits &       limits;
};

} // namespace specd::http
