#pragma once
// A llama2.c checkpoint (karpathy/llama2.c run.c, the legacy version-0 `.bin`) as a Model, with the
// tokenizer from a llama2.c tokenizer.bin (or tokenizer.json / tokenizer.model).

#include "model/core/progress.h"
#include "model/transformer/model.h"

#include <memory>

namespace attnscope {

/// Opens `path` (a llama2.c .bin) with the tokenizer `tokenizerPath` (llama2.c tokenizer.bin when it does
/// not end in .json or .model; empty: tokenizer.bin next to the checkpoint). The architecture is run.c's:
/// RMSNorm (eps 1e-5), rotary embeddings on interleaved pairs (θ = 10000), SwiGLU, grouped-query
/// attention, n_ctx = seq_len; the classifier tied to the embedding unless vocab_size is negative.
/// Throws ModelError (the checkpoint's or the tokenizer's file and problem; "no tokenizer: give one with
/// --tokenizer tokenizer.bin") or Cancelled.
std::shared_ptr<const Model> loadLlama2cModel(const QString& path, const QString& tokenizerPath = {},
                                              const Progress& progress = {});

} // namespace attnscope
