#pragma once
/// Element types of weights, gradients, optimizer states and collectives.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/enum_names.h"

namespace fsdpsim {

/// A numeric element type; fp8 is one byte (E4M3/E5M2 alike for sizing).
enum class DType : uint8_t { fp32, bf16, fp16, fp8 };

/// Bytes per element.
constexpr int64_t dtype_bytes(DType t) {
  switch (t) {
    case DType::fp32:
      return 4;
    case DType::bf16:
      return 2;
    case DType::fp16:
      return 2;
    case DType::fp8:
      return 1;
  }
  return 0;
}

/// The dtypes' names in files, flags and reports.
inline constexpr EnumNames<DType, 4> kDTypeNames{
    {{{DType::fp32, "fp32"}, {DType::bf16, "bf16"}, {DType::fp16, "fp16"}, {DType::fp8, "fp8"}}}};

/// "fp32", "bf16", "fp16", "fp8".
std::string_view to_string(DType t);
/// Parses the names above (also "float32", "bfloat16", "float16", "float8"); nullopt otherwise.
std::optional<DType> parse_dtype(std::string_view text);

}  // namespace fsdpsim
