// libFuzzer target: llama2.c tokenizer.bin from arbitrary bytes (the first byte, if odd, asks for a
// vocab_size taken from the second). A file that loads must encode any text to ids inside the
// vocabulary without throwing, decode them, and label every token. ModelError is an expected
// rejection; anything else (crash, hang, other exception, sanitizer report) is a bug.

#include "model/core/errors.h"
#include "model/tokenizers/llama2c_tokenizer_file.h"

#include <cstdint>
#include <cstdlib>

namespace {

void exercise(const attnscope::SpmTokenizer& tok, const QString& text) {
    const std::vector<int> ids = tok.encode(text);
    for (int id : ids)
        if (id < 0 || id >= tok.vocabSize()) std::abort();
    (void)tok.decodeBytes(ids);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    if (size < 2) return 0;
    const std::optional<int> vocabSize = data[0] & 1 ? std::optional<int>(data[1]) : std::nullopt;
    const QByteArray bytes(reinterpret_cast<const char*>(data) + 2, qsizetype(size - 2));
    try {
        auto tok = llama2cTokenizerFromBytes(bytes, QStringLiteral("tokenizer.bin"), vocabSize);
        if (vocabSize && tok->vocabSize() != *vocabSize) std::abort();
        for (int id = 0; id < tok->vocabSize() && id < 4096; ++id) {
            (void)tok->displayToken(id);
            (void)tok->tokenId(tok->tokenString(id));
        }
        exercise(*tok, QStringLiteral(" the theta  héllo 🙂 <s></s>\n\t"));
        exercise(*tok, QString::fromUtf8(bytes.left(256)));
        tok->setMatchSpecialTokens(true);
        exercise(*tok, QStringLiteral("<s>a<unk></s> b"));
    } catch (const ModelError&) {
    }
    return 0;
}
