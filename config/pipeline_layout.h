#pragma once
/// Megatron-core's custom pipeline layout (--pipeline-model-parallel-layout, `pipeline_layout`): which layers each
/// model chunk holds, written as a string such as "Etttt|(tttt|)*14tL". `|` ends a chunk; E is the embedding, t a
/// decoder layer, m a multi-token-prediction layer, L the output layer and loss; `x*n` and `(…)*n` repeat; commas
/// are cosmetic (megatron/core/transformer/pipeline_parallel_layer_layout.py @ d98e8a64ddf3). Chunks are listed in
/// model order: chunk c·pp + r is rank r's virtual stage c.

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"

namespace fsdpsim {

/// What one model chunk holds.
struct LayoutChunk {
  bool embedding = false;
  bool loss = false;
  int32_t decoder_layers = 0;
};

/// Parses and checks a layout string: the embedding first and once, the loss last and once (Megatron-core's
/// validate_layer_layout). Throws ConfigError at `where` (key `pipeline_layout`) naming the character or the rule
/// that fails. MTP layers (m) are refused: fsdpsim models DeepSeek-V3 without multi-token prediction.
std::vector<LayoutChunk> parse_pipeline_layout(const std::string& text, const SourceLocation& where);

}  // namespace fsdpsim
