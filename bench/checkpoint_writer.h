#pragma once
// Random-weight GPT-2 checkpoints of real shapes, written in Hugging Face layout for the benchmark.

#include <QString>

namespace attnscope::bench {

/// Hyper-parameters of a GPT-2 size.
struct Gpt2Shape {
    QString name;     ///< "gpt2-small", "gpt2-medium", ...
    int n_layers = 12;
    int n_heads = 12;
    int d_model = 768;
    int d_vocab = 50257;
    int n_ctx = 1024;
};

/// gpt2-small (12/12/768), gpt2-medium (24/16/1024) or gpt2-xl (48/25/1600); throws InputError otherwise.
Gpt2Shape gpt2Shape(const QString& name);

/// Writes `dir`/config.json, model.safetensors (F32; matrices and biases N(0, 0.02), LayerNorm weights 1 and
/// biases 0; W_U tied to wte as in GPT-2) and the real GPT-2 tokenizer copied from `tokenizerDir`
/// (encoder.json → vocab.json, vocab.bpe → merges.txt). Deterministic for a given seed.
/// Throws InputError if a file cannot be written or the tokenizer files are missing.
void writeRandomGpt2(const Gpt2Shape& shape, const QString& dir, const QString& tokenizerDir, unsigned seed = 1);

} // namespace attnscope::bench
