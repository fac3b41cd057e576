#pragma once
// A fixture for the ctest Layering.CatchesAnExecToSimInclude: exec/ may not include sim/.
#include "sim/engine.h"
