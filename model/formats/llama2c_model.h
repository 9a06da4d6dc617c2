#pragma once
// A llama2.c checkpoint (karpathy/llama2.c run.c, the legacy version-0 `.bin`) as a Model, with the
// tokenizer from a llama2.c tokenizer.bin (or tokenizer.json / tokenizer.model).

#include "model/core/errors.h"
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

/// The error for a llama2.c checkpoint opened without a tokenizer (none given, no tokenizer.bin beside it):
/// "<checkpointLabel>: no tokenizer: a llama2.c checkpoint needs one, give it with --tokenizer tokenizer.bin …".
ModelError llama2cMissingTokenizer(const QString& checkpointLabel);

/// Whether `path` is a llama2.c checkpoint: its header passes parseLlama2cHeader against the file size
/// (a tokenizer.bin, whose records follow a 4-byte header, never does). False for an unreadable file.
bool isLlama2cCheckpoint(const QString& path);

} // namespace attnscope
