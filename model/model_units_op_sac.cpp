// torchtitan's op-level selective activation checkpointing (recompute_granularity: selective_op).
//
// torchtitan wraps each transformer block in a checkpoint whose policy (torchtitan/distributed/
// activation_checkpoint.py, _apply_op_sac; the list _op_sac_save_list) saves the outputs of aten.mm, the SDPA
// kernels (flash, efficient, cuDNN: output and log-sum-exp) and a few collectives — except every second aten.mm in
// forward order, which is recomputed. Every other op (norms, rotary, SiLU, products, residual adds) is recomputed at
// the start of the block's backward from the block input and the saved tensors.
//
// A Llama block runs its projections as separate matmuls in the order wq, wk, wv, wo, w1 (gate), w3 (up), w2 (down)
// (torchtitan/models/llama3/model.py), so the 1st, 3rd, 5th and 7th are saved: Q, V, the gate and the down output;
// K, the attention output projection and the up projection are recomputed. fsdpsim's GEMM list fuses QKV and
// gate/up as Megatron-Core does, so those are split back into torchtitan's matmuls here. MoE expert GEMMs and MLA
// projections follow the same alternation in forward order (an approximation: torchtitan's grouped expert matmuls
// are not aten.mm).
#include <algorithm>
#include <string>
#include <vector>

#include "model/model_units_internal.h"

namespace fsdpsim {
namespace {

constexpr int64_t kFp32Bytes = 4;

// The projection matmuls of a layer in forward order, with the fused ones split into torchtitan's.
std::vector<Gemm> projection_matmuls(const UnitDims& d, const std::vector<Gemm>& fwd_gemms) {
  const ModelSpec& m = *d.model;
  std::vector<Gemm> out;
  for (const Gemm& g : fwd_gemms) {
    if (g.attention) continue;
    if (g.name == "qkv") {
      for (const auto& [name, heads] : {std::pair{"q", d.heads}, {"k", d.kv_heads}, {"v", d.kv_heads}}) {
        out.push_back(Gemm{name, g.m, heads * m.head_dim, g.k, g.batch, false});
      }
    } else if (g.name.size() > 8 && g.name.compare(g.name.size() - 8, 8, "_gate_up") == 0) {
      const std::string prefix = g.name.substr(0, g.name.size() - 8);
      out.push_back(Gemm{prefix + "_gate", g.m, g.n / 2, g.k, g.batch, false});
      out.push_back(Gemm{prefix + "_up", g.m, g.n / 2, g.k, g.batch, false});
    } else {
      out.push_back(g);
    }
  }
  return out;
}

}  // namespace

void add_layer_op_sac(const UnitDims& d, UnitCost& unit) {
  const int64_t a = d.act_bytes;
  // The block input is what the checkpoint keeps; the attention output and its fp32 log-sum-exp per query row and
  // head are saved with the SDPA op.
  int64_t saved = d.sp_tokens * d.model->hidden_size * a;
  saved += d.tokens * d.heads * (d.v_head_dim * a + kFp32Bytes);
  const std::vector<Gemm> matmuls = projection_matmuls(d, unit.fwd_gemms);
  for (size_t i = 0; i < matmuls.size(); ++i) {
    const Gemm& g = matmuls[i];
    if (i % 2 == 0) {
      saved += g.m * g.n * g.batch * a;  // 1st, 3rd, ...: the output is saved
    } else {
      unit.op_sac_recompute_gemms.push_back(Gemm{g.name + ".sac_recompute", g.m, g.n, g.k, g.batch, false});
    }
  }
  // Never more than saving everything (tiny layers where the alternation saves the larger outputs).
  const int64_t none = unit.saved_activation_bytes[static_cast<size_t>(Recompute::none)];
  unit.saved_activation_bytes[static_cast<size_t>(Recompute::selective_op)] = std::min(saved, none);
  // The elementwise forward work (norms, rotary, activation) runs again before the block's backward.
  unit.op_sac_recompute_bytes = unit.fwd_bytes_touched;
  unit.op_sac_recompute_class_bytes = unit.fwd_class_bytes;
}

}  // namespace fsdpsim
