#pragma once
/// Internals shared by the model files (not part of the public API): the parameter tensors of each part of a model,
/// in Megatron-Core's layout, and the consistency checks with a hook that says where each key was written.

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "model/model.h"
#include "model/model_check.h"

namespace fsdpsim {

/// How tensor parallelism splits a parameter. Weights are [out, in] as in torch.nn.Linear and Megatron-Core.
enum class TpSplit : uint8_t {
  replicated,  ///< full on every TP rank: norms, router, MLA down-projections, row-parallel biases
  column,      ///< dim 0 split: ColumnParallelLinear weight and bias
  row,         ///< dim 1 split: RowParallelLinear weight
  vocab,       ///< vocab-parallel embedding / output layer: dim 0 is the (padded) vocabulary, split
};

/// One parameter tensor: `rows` (dim 0) × `cols` (the product of the other dims; 1 for a vector).
struct ParamTensor {
  std::string name;  ///< Megatron-Core's name, e.g. "self_attention.linear_qkv.weight"
  int64_t rows = 0;
  int64_t cols = 1;
  TpSplit split = TpSplit::replicated;
  bool expert = false;  ///< a routed expert's tensor: `copies` experts, split by ep (copies) and etp (like tp)
  int64_t copies = 1;

  [[nodiscard]] int64_t elems() const { return rows * cols * copies; }
};

/// One multi-token-prediction module's own parameters beside its decoder layer: enorm, hnorm, eh_proj, final norm
/// (Megatron-Core MultiTokenPredictionLayer).
std::vector<ParamTensor> mtp_extra_tensors(const ModelSpec& model);

/// Word embedding (+ learned position embedding).
std::vector<ParamTensor> embedding_tensors(const ModelSpec& model);
/// Final norm + output projection (the projection only when the embeddings are not tied).
std::vector<ParamTensor> output_tensors(const ModelSpec& model);
/// Every parameter of decoder layer `layer`: norms, attention (GQA or MLA), dense MLP or router + experts.
std::vector<ParamTensor> layer_tensors(const ModelSpec& model, int32_t layer);

}  // namespace fsdpsim
