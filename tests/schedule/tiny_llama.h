#pragma once
// A tiny Llama-style model whose sizes are easy to follow by hand (the builder tests derive their bytes from it).
//   embedding  1024 × 256                                  = 262,144   (largest row 256)
//   layer      input norm 256, qkv 768 × 256 = 196,608, proj 256 × 256 = 65,536,
//              pre-MLP norm 256, fc1 (gate, up) 2048 × 256 = 524,288, fc2 256 × 1024 = 262,144
//                                                          = 1,049,088 (largest row 1024: fc2)
//   output     final norm 256 + 1024 × 256                 = 262,400   (largest row 256)

#include <string>

#include "model/model.h"

namespace fsdpsim::testing {

inline ModelSpec tiny_llama(int32_t layers = 2) {
  return parse_model_yaml("name: tiny\nnum_layers: " + std::to_string(layers) + R"(
hidden_size: 256
ffn_hidden_size: 1024
num_attention_heads: 4
num_kv_heads: 4
vocab_size: 1024
tied_embeddings: false
gated_mlp: true
norm: rmsnorm
)",
                          "tiny.yaml");
}

}  // namespace fsdpsim::testing
