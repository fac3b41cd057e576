#include "cli/measured_tables.h"

#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/text.h"
#include "topologies/attention_table.h"
#include "topologies/gemm_table.h"

namespace fsdpsim::cli {

void add_measured_table_options(CLI::App& cmd, MeasuredTableOptions& options) {
  cmd.add_option("--gemm-table", options.gemm_tables,
                 "measured GEMM times by shape (CSV of bench/kernel_tables/measure_kernel_tables.py): GEMMs take their "
                 "time from it instead of the profile's efficiency model; repeat it to join files into one table "
                 "(each role and dtype from one file)")
      ->take_all();
  cmd.add_option("--attention-table", options.attention_table,
                 "measured fused-attention times by shape (attention.csv of "
                 "bench/kernel_tables/measure_kernel_tables.py): the attention core takes its time from it instead "
                 "of the profile's attention efficiency");
  cmd.add_option(
      "--attention-kernel", options.attention_kernel,
      "which kernel's rows of --attention-table to read (cudnn, flash, flash_attn2, flash_attn3, ...; needed "
      "when it holds several)");
}

void attach_measured_tables(const MeasuredTableOptions& options, GpuProfile& gpu) {
  if (!options.gemm_tables.empty()) {
    gpu.gemm_table = std::make_shared<const GemmTable>(load_gemm_tables(options.gemm_tables));
  }
  if (!options.attention_table.empty()) {
    gpu.attention_table =
        std::make_shared<const AttentionTable>(load_attention_table(options.attention_table, options.attention_kernel));
  } else if (!options.attention_kernel.empty()) {
    throw ConfigError(SourceLocation{"<--attention-kernel>", 0, 0}, "attention_kernel",
                      "chooses a kernel of an attention table, but no --attention-table was given",
                      "add --attention-table FILE, or drop --attention-kernel");
  }
}

std::vector<std::string> measured_table_lines(const GpuProfile& gpu, int64_t query_heads_per_kv_head) {
  std::vector<std::string> lines;
  if (gpu.gemm_table) lines.push_back("GEMMs: " + gpu.gemm_table->source);
  if (gpu.attention_table) {
    std::string line = "attention: " + gpu.attention_table->source + ", kernel " + gpu.attention_table->kernel;
    // Grouped-query rows are named, and so is a job whose group size the table did not measure.
    const std::vector<AttentionGroup>& groups = gpu.attention_table->groups;
    std::vector<std::string> sizes;
    bool measured = false;
    for (const AttentionGroup& g : groups) {
      sizes.push_back(std::to_string(g.query_heads_per_kv_head));
      measured = measured || g.query_heads_per_kv_head == query_heads_per_kv_head;
    }
    if (!measured || query_heads_per_kv_head != 1) {
      line += " (query heads per key/value head: " + join(sizes, ", ");
      if (!measured) {
        const bool inside = !groups.empty() && groups.front().query_heads_per_kv_head < query_heads_per_kv_head &&
                            query_heads_per_kv_head < groups.back().query_heads_per_kv_head;
        line += "; this job's " + std::to_string(query_heads_per_kv_head) +
                (inside ? " interpolated between them" : " timed at the nearest");
      }
      line += ")";
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace fsdpsim::cli
