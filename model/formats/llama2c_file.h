#pragma once
// Karpathy llama2.c checkpoints (`.bin`, the legacy version-0 layout of export.py), memory-mapped read-only.
// Layout (llama2.c run.c: Config, memory_map_weights @ 350e04fe): seven little-endian int32
// (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative vocab_size means the
// classifier is not tied to the embedding), then float32 arrays, each stored row-major with every weight
// matrix as out × in (PyTorch nn.Linear.weight; run.c's matmul reads W as (d, n) = (out, in)):
//   token_embedding [vocab, dim]; rms_att [layers, dim]; wq [layers, dim, dim]; wk [layers, kv_dim, dim];
//   wv [layers, kv_dim, dim]; wo [layers, dim, dim]; rms_ffn [layers, dim]; w1 [layers, hidden, dim];
//   w2 [layers, dim, hidden]; w3 [layers, hidden, dim]; rms_final [dim];
//   freq_cis_real [seq_len, head_size/2]; freq_cis_imag [seq_len, head_size/2] (unused by run.c);
//   wcls [vocab, dim] only when untied.
// with head_size = dim / n_heads and kv_dim = head_size · n_kv_heads (n_heads · head_size = dim).

#include "model/formats/mapped_file.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QString>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace attnscope {

/// The header of a llama2.c checkpoint, validated.
struct Llama2cConfig {
    int dim = 0;
    int hiddenDim = 0;
    int nLayers = 0;
    int nHeads = 0;
    int nKvHeads = 0;
    int vocabSize = 0;            ///< |vocab_size| of the file
    int seqLen = 0;
    bool sharedClassifier = true; ///< vocab_size > 0 in the file: the classifier is the token embedding

    int headSize() const { return dim / nHeads; }
    int kvDim() const { return headSize() * nKvHeads; }
};

/// The float32 arrays of a checkpoint, in file order (Classifier last).
enum class Llama2cWeight {
    TokenEmbedding, ///< [vocab, dim]
    RmsAtt,         ///< per layer [dim]
    Wq,             ///< per layer [dim (= n_heads·head_size, out), dim (in)]
    Wk,             ///< per layer [kv_dim (out), dim (in)]
    Wv,             ///< per layer [kv_dim (out), dim (in)]
    Wo,             ///< per layer [dim (out), dim (in = n_heads·head_size)]
    RmsFfn,         ///< per layer [dim]
    W1,             ///< per layer [hidden (out), dim (in)]  (gate)
    W2,             ///< per layer [dim (out), hidden (in)]  (down)
    W3,             ///< per layer [hidden (out), dim (in)]  (up)
    RmsFinal,       ///< [dim]
    FreqCisReal,    ///< [seq_len, head_size/2]: cos(pos · 10000^(−2i/head_size))
    FreqCisImag,    ///< [seq_len, head_size/2]: sin(...)
    Classifier,     ///< [vocab, dim]: wcls, or the token embedding when tied
};
inline constexpr int kLlama2cWeightCount = 14;

/// Where one array lies in the file.
struct Llama2cArray {
    std::int64_t offset = 0;         ///< byte offset in the file (a multiple of 4)
    bool perLayer = false;           ///< stored as n_layers consecutive copies of `shape`
    std::vector<std::int64_t> shape; ///< of one layer for per-layer arrays
    std::int64_t numel = 0;          ///< elements of `shape` (one layer)
};

/// A validated header and the position of every array.
struct Llama2cLayout {
    Llama2cConfig config;
    std::array<Llama2cArray, kLlama2cWeightCount> arrays; ///< indexed by Llama2cWeight
    std::int64_t fileSize = 0;                            ///< = 28 + 4 · (all floats): the exact file size
};

/// The llama2.c name of an array ("token_embedding_table", "wq", "wcls", ...).
QString llama2cWeightName(Llama2cWeight w);

/// Validates a llama2.c header (`prefix`: at least the first 28 bytes, if the file has them) against
/// the file size. Checks: size ≥ 28; not a version-1/2 export (magic "ak42", rejected by name); every
/// field positive (vocab_size non-zero, its sign selects tied/untied); dim divisible by n_heads; n_heads
/// a multiple of n_kv_heads; head_size even (RoPE rotates pairs; freq_cis holds head_size/2 per
/// position); byte counts computed without overflow; and the file exactly as long as the layout: run.c's
/// legacy export writes nothing else, so a longer or shorter file means a wrong header (the message
/// says when the other sign of vocab_size would fit exactly). Throws ModelError(fileLabel, problem).
Llama2cLayout parseLlama2cHeader(QByteArrayView prefix, std::int64_t fileSize, const QString& fileLabel);

/// One array (or one layer of it) inside the mapping.
struct Llama2cTensorView {
    const float* data = nullptr;     ///< 4-byte aligned, little-endian float32
    std::vector<std::int64_t> shape; ///< row-major
    std::int64_t numel = 0;
};

/// An open, validated llama2.c checkpoint, memory-mapped read-only for the object's lifetime (never
/// written). Thread-safe for reading. Assumes a little-endian host, as run.c does.
class Llama2cFile {
public:
    /// Opens `path` read-only, maps it and validates it (parseLlama2cHeader). `label` names the file
    /// in errors (default: the file name). Throws ModelError if it cannot be opened or is invalid.
    static std::shared_ptr<const Llama2cFile> open(const QString& path, const QString& label = {});
    /// The same over bytes in memory (kept alive by the returned object; copied only if misaligned).
    static std::shared_ptr<const Llama2cFile> fromBytes(const QByteArray& bytes, const QString& label);

    Llama2cFile(const Llama2cFile&) = delete;
    Llama2cFile& operator=(const Llama2cFile&) = delete;
    ~Llama2cFile();

    const QString& path() const { return map_.path(); }
    const QString& label() const { return map_.label(); }
    const Llama2cConfig& config() const { return layout_.config; }
    const Llama2cLayout& layout() const { return layout_; }

    /// Array `w`: for per-layer arrays, layer `layer` in [0, n_layers); for the others `layer` must be -1.
    /// Classifier gives the token embedding when the classifier is tied. Throws std::out_of_range for
    /// a wrong layer.
    Llama2cTensorView tensor(Llama2cWeight w, int layer = -1) const;

private:
    Llama2cFile() = default;

    MappedFile map_;
    Llama2cLayout layout_;
};

} // namespace attnscope
