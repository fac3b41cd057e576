#pragma once
// A fixture for the ctest Layering.CatchesAnExecToSimInclude.
