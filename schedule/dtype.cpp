#include "schedule/dtype.h"

namespace fsdpsim {
namespace {

// PyTorch's spellings, also accepted where a dtype is read (a Hugging Face config.json says "bfloat16").
constexpr EnumNames<DType, 4> kTorchDTypeNames{
    {{{DType::fp32, "float32"}, {DType::bf16, "bfloat16"}, {DType::fp16, "float16"}, {DType::fp8, "float8"}}}};

}  // namespace

std::string_view to_string(DType t) {
  return kDTypeNames.name(t);
}

std::optional<DType> parse_dtype(std::string_view text) {
  if (const std::optional<DType> t = kDTypeNames.parse(text)) return t;
  return kTorchDTypeNames.parse(text);
}

}  // namespace fsdpsim
