#pragma once
// What AttnScope can open, in one place: the model picker marks entries with it, and the app checks
// it before loading so an unsupported file gets a plain reason instead of a parser error.
// To support a new family or format, extend the lists in open_support.cpp (HF model types come
// from model/formats/hf_config.h's supportedModelTypes()).

#include "model/formats/model_probe.h"

#include <QString>
#include <QStringList>

namespace attnscope {

struct OpenVerdict {
    bool ok = false;
    QString reason; ///< why not (empty when ok), e.g. "GGUF files cannot be opened yet"
};

/// Model types of Hugging Face folders / safetensors files that open (config.json model_type).
QStringList openableHfModelTypes();
/// Weight dtypes of safetensors files that open.
QStringList openableSafetensorsDtypes();
/// general.architecture values of GGUF files that open (empty: GGUF is not supported yet).
QStringList openableGgufArchitectures();
/// ggml tensor types of GGUF files that open.
QStringList openableGgufTensorTypes();
/// True once llama2.c checkpoints (legacy .bin) open.
bool llama2cOpens();

/// Can AttnScope open the probed model? A probe that could not read the headers is not openable and
/// its problem is the reason; an unknown format is not openable either.
OpenVerdict canOpen(const ModelProbe& probe);

/// The check before loading: throws ModelError(path, reason) when `path` is a model of a format
/// probeModel recognises that canOpen rejects (e.g. a GGUF file today). An unrecognised or unreadable
/// path is left to the loader, whose errors are more specific.
void requireOpenable(const QString& path);

} // namespace attnscope
