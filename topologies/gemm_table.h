#pragma once
/// Measured GEMM times by shape: the CSV `bench/kernel_tables/measure_kernel_tables.py` writes (role, layout, dtype,
/// m, n, k, time_us, tflops; one full grid of m × n × k per role and dtype), read into per-(role, dtype) grids and
/// interpolated, so that the compute model takes a GEMM's time from what the GPU did on that shape instead of a
/// best-shape efficiency shaped by tile and k-loop factors.
///
/// Interpolation is in log m, log n, log k of the achieved FLOP rate (which varies slowly and saturates, where time
/// spans five orders of magnitude); outside the grid `time_s` uses the rate of the nearest edge (a smaller shape runs
/// at the smallest shape's rate, which launch overhead bounds). The compute model carries a larger shape on from the
/// edge with the profile's efficiency model (`sim/compute_model.cpp`): a published table that stops at 4096 per axis
/// leaves a B200's last wave partly idle at its edge, which a Llama layer's larger GEMMs are not.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fsdpsim {

/// A linear layer's three GEMMs (the executor's and the schedule's Gemm names end in ".dgrad" / ".wgrad").
enum class GemmRole : uint8_t { forward, dgrad, wgrad };

/// The operand precision of a measured GEMM: BF16, FP8 with one scale per tensor, or FP8 with one scale per row of
/// each operand (the script's dtype column: bf16, fp8, fp8_rowwise).
enum class GemmPrecision : uint8_t { bf16, fp8, fp8_rowwise };

/// One role's and dtype's grid: sorted axis values and the achieved rate at every point (m fastest).
struct GemmGrid {
  std::vector<int64_t> m, n, k;
  std::vector<double> flops_per_s;  ///< index (ik · n.size() + in) · m.size() + im
};

struct GemmTable {
  std::string source;  ///< the file it was read from
  /// [role][precision]; an empty grid where the table has no rows.
  std::array<std::array<GemmGrid, 3>, 3> grids;

  /// The measured-rate time of one m × n × k GEMM, or nothing when the table has no grid for its role and precision
  /// (FP8 input gradients without their own rows use the forward grid: Hopper's FP8 GEMMs all run in one layout).
  [[nodiscard]] std::optional<double> time_s(GemmRole role, GemmPrecision precision, int64_t m, int64_t n,
                                             int64_t k) const;
  /// The grid `time_s` reads for this role and precision (the forward grid for FP8 input gradients without their
  /// own), or nullptr when there is none.
  [[nodiscard]] const GemmGrid* grid_for(GemmRole role, GemmPrecision precision) const;
};

/// Reads the CSV; ConfigError naming `source`, the line and the field for anything else (a missing column, a
/// non-positive size or time, a grid with a hole).
GemmTable parse_gemm_table_csv(const std::string& text, const std::string& source);
/// Reads the file at `path` (at most 64 MiB).
GemmTable load_gemm_table(const std::string& path);
/// Reads several files into one table (the H100's BF16 and per-tensor FP8 rows of one day with its rowwise rows of
/// another, say); a role and dtype given in two files is a ConfigError naming both.
GemmTable load_gemm_tables(const std::vector<std::string>& paths);
/// The role of a schedule Gemm from its name ("mlp_down.dgrad" → dgrad).
GemmRole gemm_role_of(const std::string& gemm_name);

}  // namespace fsdpsim
