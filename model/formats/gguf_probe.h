#pragma once
// A header-only look at a GGUF file for the model picker: the architecture, the name, the file type
// (quantization) and the tensor types, read from the metadata and tensor infos without touching a
// weight. Format: ggml docs/gguf.md ("File Structure"): magic "GGUF", u32 version, u64 tensor_count,
// u64 metadata_kv_count, key/value pairs, tensor infos. Versions 2 and 3, little-endian.
// Read through the validating reader (model/formats/gguf_file.h), which parses only the header: fast on a
// multi-GB file (the file is mapped, only the header pages are read).

#include "model/formats/ggml_type.h"

#include <QMap>
#include <QString>
#include <cstdint>

namespace attnscope {

/// What the GGUF header says about the model.
struct GgufSummary {
    std::uint32_t version = 0;
    std::int64_t tensorCount = 0;
    std::int64_t metadataCount = 0;
    QString architecture;            ///< general.architecture ("llama", "qwen2", "gpt2", ...)
    QString name;                    ///< general.name (may be empty)
    int fileType = -1;               ///< general.file_type (llama_ftype), -1 when absent
    int blockCount = -1;             ///< <arch>.block_count (layers), -1 when absent
    QMap<QString, std::int64_t> tensorTypes; ///< ggml type name ("Q4_K", "F32") → number of tensors
    std::int64_t parameterCount = 0; ///< Σ elements of all tensors

    /// The quantization to show: general.file_type's name ("Q4_K_M", "F16"), else the most common
    /// tensor type other than F32 (F32 when all are).
    QString quantization() const;
};

/// Name of a llama_ftype value (general.file_type): "F32", "F16", "Q4_K_M", ...; "file type N" if unknown.
QString ggufFileTypeName(int fileType);

/// True when `path` starts with the GGUF magic (reads 4 bytes).
bool hasGgufMagic(const QString& path);

/// Reads the header of the GGUF file at `path` (read-only; a Qt resource path works too).
/// Throws ModelError(file name, problem) for a file that is not GGUF, an unsupported version
/// (1, or a big-endian file), or a header that runs past the end of the file or has absurd counts.
GgufSummary probeGguf(const QString& path);

} // namespace attnscope
