#pragma once
/// The model the host-backend tests and benchmarks run: Llama-3-8B's shape at hidden 256.

#include <string>

/// Llama-3-8B's shape (GQA with 4 query heads per KV head, SwiGLU MLP of 3.5× hidden, untied embeddings, RMSNorm,
/// rotary positions) at hidden 256, as model YAML: the same ops, buffers, streams and dependencies as the real model,
/// with small sizes. `layers` is 32 as in the real model; fewer make a shorter run. `tied_embeddings` ties the output
/// layer to the embedding (a GPT-style model; under a pipeline, Megatron's last-stage copy and its gradient exchange).
inline std::string llama_shaped_yaml(int layers = 32, bool tied_embeddings = false) {
  return "name: llama3-8b-shaped\nnum_layers: " + std::to_string(layers) +
         "\nhidden_size: 256\nffn_hidden_size: 896\nnum_attention_heads: 8\nnum_kv_heads: 2\nvocab_size: 2048\n"
         "tied_embeddings: " +
         std::string(tied_embeddings ? "true" : "false") +
         "\ngated_mlp: true\nnorm: rmsnorm\nposition_embedding: rope\n";
}
