#pragma once
/// Which tables and keys a torchtitan job TOML may have: the tables that shape the step, with every key torchtitan
/// has had in them, and the tables fsdpsim accepts whatever they hold.

#include "frontends/torchtitan_toml.h"

namespace fsdpsim::torchtitan {

/// Refuses a table torchtitan does not have (unless a custom config module may add it) and an unknown key in a table
/// that shapes the step, each at its file:line with the closest valid name.
void check_tables(const Toml& t);

}  // namespace fsdpsim::torchtitan
