#pragma once
// A header the include check must refuse in api/: the engine is not among what api/ uses.
#include "core/error.h"
#include "engine/session.h"
