#pragma once
// Writes a LlamaCheckpoint in HF layout as a GGUF file the way llama.cpp's convert_hf_to_gguf.py writes the
// Qwen2, Qwen3 and Gemma 2 architectures (general.architecture "qwen2", "qwen3", "gemma2"): tensors under llama.cpp's
// names (token_embd, blk.N.attn_q, attn_q_norm, post_attention_norm, ffn_gate, post_ffw_norm, output_norm, output when
// untied), matrices as ggml [in, out] (nn.Linear's [out, in] rows as stored, no Q/K permutation: these architectures
// use NEOX rotary pairs), float32, Gemma's norm weights stored as 1 + w (Gemma2Model.modify_tensors), metadata keys
// {arch}.block_count, .attention.head_count_kv, .attention.key_length, .rope.freq_base, gemma2.attn_logit_softcapping,
// … and a byte-level vocabulary of d_vocab placeholder tokens (tokenizer.ggml.model "gpt2", pre "qwen2").

#include "tests/support/llama_checkpoint.h"

#include <QByteArray>

namespace attnscope::test {

/// The GGUF bytes of checkpoint `c` (modelType qwen2, qwen3, gemma2, gemma3_text or gemma3 — architecture gemma3, q/k
/// norms as 1 + w, rope.scaling.type linear and rope.scaling.factor for the global layers — in HF layout). qFatal on
/// another model type, or a Gemma 3 whose layer pattern or local RoPE llama.cpp's gemma3 cannot express.
/// `skip` names a tensor to leave out (for refusal tests).
QByteArray ggufHfLayoutBytes(const LlamaCheckpoint& c, const QByteArray& skip = {});

} // namespace attnscope::test
