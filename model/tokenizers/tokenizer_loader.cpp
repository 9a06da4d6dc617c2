#include "model/tokenizers/tokenizer_loader.h"

#include "model/core/errors.h"
#include "model/tokenizers/gpt2_bpe_tokenizer.h"
#include "model/tokenizers/hf_tokenizer_json.h"
#include "model/tokenizers/llama2c_tokenizer_file.h"
#include "model/tokenizers/sentencepiece_model_file.h"
#include "model/tokenizers/spm_tokenizer.h"

#include <QDir>
#include <QFileInfo>

namespace attnscope {

namespace {

enum class FolderKind { None, VocabAndMerges, TokenizerJson, SentencePieceModel, Llama2cTokenizerBin };

FolderKind folderKind(const QDir& folder) {
    auto has = [&](const char* name) { return QFileInfo(folder.filePath(QLatin1String(name))).isFile(); };
    if (has("vocab.json") && has("merges.txt")) return FolderKind::VocabAndMerges;
    if (has("tokenizer.json")) return FolderKind::TokenizerJson;
    if (has("tokenizer.model")) return FolderKind::SentencePieceModel;
    if (has("tokenizer.bin")) return FolderKind::Llama2cTokenizerBin;
    return FolderKind::None;
}

} // namespace

void requireTokenizerFiles(const QString& dir) {
    if (folderKind(QDir(dir)) == FolderKind::None)
        throw ModelError(dir, QStringLiteral("no tokenizer: expected vocab.json and merges.txt, tokenizer.json, tokenizer.model or "
                                            "llama2.c's tokenizer.bin"));
}

std::unique_ptr<Tokenizer> loadTokenizerFromFolder(const QString& dir) {
    requireTokenizerFiles(dir);
    const QDir folder(dir);
    switch (folderKind(folder)) {
    case FolderKind::VocabAndMerges:
        return Gpt2BpeTokenizer::fromVocabAndMerges(folder.filePath(QStringLiteral("vocab.json")), folder.filePath(QStringLiteral("merges.txt")));
    case FolderKind::TokenizerJson: return loadHfTokenizerJson(folder.filePath(QStringLiteral("tokenizer.json")));
    case FolderKind::Llama2cTokenizerBin: return loadLlama2cTokenizer(folder.filePath(QStringLiteral("tokenizer.bin")));
    default: return loadSentencePieceModel(folder.filePath(QStringLiteral("tokenizer.model")));
    }
}

std::unique_ptr<Tokenizer> loadTokenizerFile(const QString& path, std::optional<int> vocabSize) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QStringLiteral("json")) return loadHfTokenizerJson(path);
    if (suffix == QStringLiteral("model")) return loadSentencePieceModel(path);
    return loadLlama2cTokenizer(path, vocabSize);
}

bool onlyControlTokensFrom(const Tokenizer& tokenizer, int modelVocab) {
    const auto* spm = dynamic_cast<const SpmTokenizer*>(&tokenizer);
    if (!spm || modelVocab < 0) return false;
    for (int id = modelVocab; id < spm->vocabSize(); ++id)
        if (spm->tokenType(id) != TokenType::Control) return false;
    return true;
}

} // namespace attnscope
