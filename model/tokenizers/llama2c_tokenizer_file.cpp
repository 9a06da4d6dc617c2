#include "model/tokenizers/llama2c_tokenizer_file.h"

#include "model/core/errors.h"

#include <QFile>
#include <QtEndian>
#include <cstring>

namespace attnscope {

namespace {

const QByteArray kSpace = QByteArrayLiteral("\xE2\x96\x81"); // "▁"

qint32 int32At(const char* p) { return qFromLittleEndian<qint32>(p); }
float float32At(const char* p) {
    const quint32 bits = qFromLittleEndian<quint32>(p);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

} // namespace

std::unique_ptr<SpmTokenizer> loadLlama2cTokenizer(const QString& path, std::optional<int> vocabSize) {
    QFile file(path);
    if (!file.exists()) throw ModelError(path, QStringLiteral("file not found"));
    if (!file.open(QIODevice::ReadOnly)) throw ModelError(path, QStringLiteral("cannot open: ") + file.errorString());
    return llama2cTokenizerFromBytes(file.readAll(), path, vocabSize);
}

std::unique_ptr<SpmTokenizer> llama2cTokenizerFromBytes(const QByteArray& bytes, const QString& label,
                                                        std::optional<int> vocabSize) {
    const qsizetype size = bytes.size();
    const char* data = bytes.constData();
    if (size < 4) throw ModelError(label, QStringLiteral("not a llama2.c tokenizer: %1 bytes, shorter than the 4-byte header").arg(size));
    const qint32 maxTokenLength = int32At(data);
    if (maxTokenLength <= 0)
        throw ModelError(label, QStringLiteral("not a llama2.c tokenizer: max_token_length is %1").arg(maxTokenLength));
    if (vocabSize && *vocabSize <= 0) throw ModelError(label, QStringLiteral("vocab_size %1 is not positive").arg(*vocabSize));
    // Every record takes at least 8 bytes, so the file bounds the count before anything is allocated.
    const qsizetype maxTokens = (size - 4) / 8;
    if (vocabSize && *vocabSize > maxTokens)
        throw ModelError(label, QStringLiteral("the model's vocab_size is %1, but the file (%2 bytes) can hold at most %3 tokens")
                                    .arg(*vocabSize).arg(size).arg(maxTokens));

    SpmVocab vocab;
    const qsizetype reserve = vocabSize ? *vocabSize : maxTokens;
    vocab.pieces.reserve(reserve);
    vocab.scores.reserve(reserve);
    vocab.types.reserve(reserve);
    qsizetype offset = 4;
    while (vocabSize ? qsizetype(vocab.pieces.size()) < *vocabSize : offset < size) {
        const qsizetype id = qsizetype(vocab.pieces.size());
        if (size - offset < 8)
            throw ModelError(label, QStringLiteral("token %1: truncated record at offset %2 (%3 bytes left, a record needs 8 + its length)")
                                        .arg(id).arg(offset).arg(size - offset));
        const float score = float32At(data + offset);
        const qint32 length = int32At(data + offset + 4);
        offset += 8;
        if (length < 0) throw ModelError(label, QStringLiteral("token %1: negative length %2").arg(id).arg(length));
        if (length > size - offset)
            throw ModelError(label, QStringLiteral("token %1: length %2 at offset %3 runs past the end of the file (%4 bytes left)")
                                        .arg(id).arg(length).arg(offset - 8).arg(size - offset));
        if (length > maxTokenLength)
            throw ModelError(label, QStringLiteral("token %1: length %2 exceeds max_token_length %3").arg(id).arg(length).arg(maxTokenLength));
        QByteArray piece(data + offset, length);
        offset += length;
        TokenType type = TokenType::Normal;
        if (id == 0) {
            type = TokenType::Unknown;
        } else if (id == 1 || id == 2) {
            type = TokenType::Control;
            if (piece == (id == 1 ? "\n<s>\n" : "\n</s>\n")) piece = piece.mid(1, piece.size() - 2);
        } else if (piece.size() == 6 && piece.startsWith("<0x") && piece.endsWith('>')) {
            type = TokenType::Byte;
        }
        if (type != TokenType::Byte) piece.replace(' ', kSpace);
        vocab.pieces.push_back(std::move(piece));
        vocab.scores.push_back(score);
        vocab.types.push_back(type);
    }
    const int n = int(vocab.pieces.size());
    if (n > 0) vocab.unk = 0;
    if (n > 2) {
        vocab.bos = 1;
        vocab.eos = 2;
    }
    vocab.addBos = true;
    vocab.spacePrefix = SpmVocab::SpacePrefix::Always; // run.c: " " first unless the text is empty
    return SpmTokenizer::fromVocab(std::move(vocab), label);
}

} // namespace attnscope
