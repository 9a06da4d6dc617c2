#pragma once
// A GGUF model file (ggml docs/gguf.md) as a Model: the architecture from the metadata, the weights
// read in place (F32/F16/BF16 widened and block-quantized rows decoded by the compute kernels), and the
// tokenizer embedded in the file.

#include "model/core/progress.h"
#include "model/formats/gguf_file.h"
#include "model/transformer/model.h"

#include <memory>

namespace attnscope {

/// The ModelConfig a GGUF file's metadata describes, for general.architecture llama, mistral or qwen2
/// (llama.cpp's key names: {arch}.block_count, .embedding_length, .feed_forward_length,
/// .attention.head_count(_kv), .attention.key_length, .attention.layer_norm_rms_epsilon, .context_length,
/// .rope.freq_base (default 10000), .rope.dimension_count, .rope.scaling.type/factor,
/// .attention.sliding_window; d_vocab from token_embd.weight). Rotary layout: Interleaved for llama and
/// mistral (llama.cpp's converter permutes HF's Q/K rows to Meta's pairs), HalfSplit for qwen2 (not
/// permuted; llama.cpp rotates it NeoX-style). Throws ModelError(file, …) naming the key for an unsupported
/// architecture, a missing or inconsistent key, partial rotary dims or an unsupported rope scaling.
ModelConfig ggufModelConfig(const GgufFile& file);

/// The tokenizer stored in a GGUF file's metadata: tokenizer.ggml.model llama (SentencePiece pieces with
/// scores and token types) or gpt2 (byte-level BPE with merges; the split regex chosen by
/// tokenizer.ggml.pre), BOS added as tokenizer.ggml.add_bos_token says (default: llama yes, gpt2 no).
/// Works on vocab-only files. Throws ModelError naming the file and key.
std::unique_ptr<Tokenizer> ggufTokenizer(const GgufFile& file);

/// Opens `path` (a .gguf file) as a Model: config, weights (checked against the config: names, shapes,
/// types; quantized layers' block scales checked for NaN/Inf when the layer is first used) and tokenizer.
/// Throws ModelError or Cancelled.
std::shared_ptr<const Model> loadGgufModel(const QString& path, const Progress& progress = {});

} // namespace attnscope
