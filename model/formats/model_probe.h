#pragma once
// What a model file or folder is, read from its headers only (never the weights), for the model
// picker and for the check before opening (model/formats/open_support.h):
//  - a Hugging Face folder: config.json (model_type, torch_dtype, layer count) and the safetensors
//    headers of model.safetensors or of the shards in model.safetensors.index.json (dtypes, elements);
//  - a .safetensors file: its header, and config.json next to it;
//  - a GGUF file (found by its magic, so Ollama's extension-less blobs count): model/formats/gguf_probe.h;
//  - a llama2.c checkpoint (.bin): the seven-int header, checked against the file size.

#include <QString>
#include <QStringList>
#include <cstdint>

namespace attnscope {

enum class ModelFormat { Unknown, HfFolder, Safetensors, Gguf, Llama2c };

/// "Hugging Face folder", "safetensors", "GGUF", "llama2.c", "unknown".
QString modelFormatName(ModelFormat format);

struct ModelProbe {
    QString path;                      ///< what was probed (as given)
    ModelFormat format = ModelFormat::Unknown;
    QString architecture;              ///< HF model_type, GGUF general.architecture, "llama" for llama2.c
    QString dtype;                     ///< "F32", "F16", "BF16", "mixed (F16, F32)"; GGUF: the quantization ("Q4_K_M")
    QStringList tensorTypes;           ///< distinct tensor element types (safetensors dtypes or ggml types), sorted
    QString name;                      ///< GGUF general.name, else the file or folder name
    std::int64_t bytes = 0;            ///< size of the weight files on disk
    std::int64_t parameters = 0;       ///< elements of all tensors (0 when unknown)
    int layers = -1;                   ///< from config.json / GGUF block_count / the llama2.c header; -1 unknown
    QString detail;                    ///< extra words for the picker ("llama2.c export version 2", "sharded: 4 files")
    QString problem;                   ///< non-empty when the headers could not be read: "<file>: <problem>"

    bool readable() const { return problem.isEmpty(); }
};

/// Probes a model file or folder (see the header comment). Reads only headers and small JSON files,
/// read-only; never throws: a missing, unreadable or malformed file is described in `problem`.
ModelProbe probeModel(const QString& path);

} // namespace attnscope
