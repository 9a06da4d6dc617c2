#pragma once
// Folders of loose model files: LM Studio's (~/.lmstudio/models, ~/.cache/lm-studio/models, laid out
// as <publisher>/<repo>/<file>.gguf), GPT4All's (~/.local/share/nomic.ai/GPT4All) and any folder the
// user adds. A scan lists the model candidates in them without reading any file.

#include <QString>
#include <QStringList>

namespace attnscope {

/// LM Studio's model folders, in the order LM Studio versions used them (they may not exist).
QStringList lmStudioModelDirs();
/// GPT4All's model folder (it may not exist).
QString gpt4allModelDir();

/// The candidates below `dir`, at most `maxDepth` folders deep, sorted: folders holding a config.json
/// (a Hugging Face layout; not looked into further), and files named *.gguf, *.safetensors or *.bin
/// outside such folders. Symbolic links are followed once (a folder is never listed twice).
QStringList scanModelFolder(const QString& dir, int maxDepth = 4);

} // namespace attnscope
