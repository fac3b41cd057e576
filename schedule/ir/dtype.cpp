#include "schedule/ir/dtype.h"

namespace fsdpsim {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::fp32:
      return "fp32";
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::fp8:
      return "fp8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view text) {
  if (text == "fp32" || text == "float32") return DType::fp32;
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  if (text == "fp16" || text == "float16") return DType::fp16;
  if (text == "fp8" || text == "float8") return DType::fp8;
  return std::nullopt;
}

}  // namespace fsdpsim
