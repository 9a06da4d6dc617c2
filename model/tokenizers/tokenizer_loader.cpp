#include "model/tokenizers/tokenizer_loader.h"

#include "model/core/errors.h"
#include "model/tokenizers/gpt2_bpe_tokenizer.h"

#include <QDir>
#include <QFileInfo>

namespace attnscope {

void requireTokenizerFiles(const QString& dir) {
    const QDir folder(dir);
    const bool pair = QFileInfo(folder.filePath(QStringLiteral("vocab.json"))).isFile()
                      && QFileInfo(folder.filePath(QStringLiteral("merges.txt"))).isFile();
    if (!pair && !QFileInfo(folder.filePath(QStringLiteral("tokenizer.json"))).isFile())
        throw ModelError(dir, QStringLiteral("no tokenizer: expected vocab.json and merges.txt, or tokenizer.json"));
}

std::unique_ptr<Tokenizer> loadTokenizerFromFolder(const QString& dir) {
    requireTokenizerFiles(dir);
    const QDir folder(dir);
    const QString vocab = folder.filePath(QStringLiteral("vocab.json"));
    const QString merges = folder.filePath(QStringLiteral("merges.txt"));
    const QString tokenizerJson = folder.filePath(QStringLiteral("tokenizer.json"));
    if (QFileInfo(vocab).isFile() && QFileInfo(merges).isFile()) return Gpt2BpeTokenizer::fromVocabAndMerges(vocab, merges);
    return Gpt2BpeTokenizer::fromTokenizerJson(tokenizerJson);
}

} // namespace attnscope
