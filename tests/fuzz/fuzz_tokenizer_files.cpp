// libFuzzer target: the tokenizer files (vocab.json, merges.txt, tokenizer.json) from arbitrary
// bytes. The first byte picks which file is fuzzed; the others are a small valid byte-level
// vocabulary, so fuzzed merges reach the BPE loop. A tokenizer that loads must encode and decode
// text losslessly (decode(encode(s)) == s) and give every token a display label.
// ModelError is an expected rejection; anything else is a bug.

#include "fuzz_support.h"
#include "model/core/errors.h"
#include "model/tokenizers/byte_unicode.h"
#include "model/tokenizers/gpt2_bpe_tokenizer.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <cstdint>
#include <cstdlib>

namespace {

/// vocab.json with the 256 byte tokens (ids 0..255) plus "Ġt", "he", "Ġthe", "<|endoftext|>".
const QByteArray& validVocab() {
    static const QByteArray json = [] {
        QJsonObject v;
        for (int b = 0; b < 256; ++b) v.insert(QString(attnscope::byteToUnicode(uchar(b))), b);
        v.insert(QStringLiteral("\u0120t"), 256);
        v.insert(QStringLiteral("he"), 257);
        v.insert(QStringLiteral("\u0120the"), 258);
        v.insert(QStringLiteral("<|endoftext|>"), 259);
        return QJsonDocument(v).toJson(QJsonDocument::Compact);
    }();
    return json;
}
const QByteArray kValidMerges = "#version: 0.2\n\xc4\xa0 t\nh e\n\xc4\xa0t he\n";

void checkRoundTrip(const attnscope::Gpt2BpeTokenizer& tok, const QString& text) {
    const std::vector<int> ids = tok.encode(text);
    if (tok.decode(ids) != attnscope::fuzz::withoutLoneSurrogates(text)) std::abort();
    for (int id : ids)
        if (id < 0 || id >= tok.vocabSize() || tok.displayToken(id).isEmpty()) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    if (size == 0) return 0;
    const QByteArray bytes(reinterpret_cast<const char*>(data) + 1, qsizetype(size - 1));
    try {
        std::unique_ptr<Gpt2BpeTokenizer> tok;
        switch (data[0] % 3) {
        case 0: tok = Gpt2BpeTokenizer::fromVocabAndMergesBytes(bytes, kValidMerges, "vocab.json", "merges.txt"); break;
        case 1: tok = Gpt2BpeTokenizer::fromVocabAndMergesBytes(validVocab(), bytes, "vocab.json", "merges.txt"); break;
        default: tok = Gpt2BpeTokenizer::fromTokenizerJsonBytes(bytes, "tokenizer.json"); break;
        }
        checkRoundTrip(*tok, QStringLiteral(" the theta  héllo 🙂 <|endoftext|>\n"));
        checkRoundTrip(*tok, QString::fromUtf8(bytes.left(256)));
    } catch (const ModelError&) {
    }
    return 0;
}
