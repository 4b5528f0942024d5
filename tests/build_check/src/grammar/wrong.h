#pragma once
// A header the include check must refuse in grammar/: only engine/ uses llama.cpp.
#include <llama.h>
