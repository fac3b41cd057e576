#pragma once
/// The measured kernel tables a command can give a GPU profile (`--gemm-table`, `--attention-table`,
/// `--attention-kernel`): simulate and fidelity take the same three options and attach them the same way.

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "topologies/hardware.h"

namespace fsdpsim::cli {

struct MeasuredTableOptions {
  std::vector<std::string> gemm_tables;  ///< one table, possibly read from several files
  std::string attention_table;
  std::string attention_kernel;
  [[nodiscard]] bool any() const { return !gemm_tables.empty() || !attention_table.empty(); }
};

/// Registers the three options on `cmd`.
void add_measured_table_options(CLI::App& cmd, MeasuredTableOptions& options);

/// Loads the tables named and attaches them to `gpu`; ConfigError for a file that does not read, and for
/// --attention-kernel without --attention-table.
void attach_measured_tables(const MeasuredTableOptions& options, GpuProfile& gpu);

/// What the report says timed the kernels: one line per table attached to `gpu` ("GEMMs: FILE", "attention: FILE,
/// kernel K", with the table's group sizes where it or the job's `query_heads_per_kv_head` is not multi-head, and
/// whether the job's was measured), none when the profile's efficiencies did.
std::vector<std::string> measured_table_lines(const GpuProfile& gpu, int64_t query_heads_per_kv_head);

}  // namespace fsdpsim::cli
