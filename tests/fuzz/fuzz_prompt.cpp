// libFuzzer target: prompt tokenization of arbitrary bytes with the real GPT-2 tokenizer
// (encoder.json + vocab.bpe from ATTNSCOPE_GPT2_TOKENIZER_DIR, env var or the compiled-in path).
// The bytes are tried as UTF-8 (invalid sequences -> U+FFFD) and as raw UTF-16 (lone surrogates).
// Invariants: never throws, decode(encode(s)) == s, every id in range with a non-empty label,
// and tokenizePrompt/tokenLabels agree with encode.

#include "fuzz_support.h"
#include "model/tokenizers/gpt2_bpe_tokenizer.h"
#include "model/transformer/prompt.h"

#include <QDir>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

const attnscope::Gpt2BpeTokenizer& gpt2() {
    static const std::unique_ptr<attnscope::Gpt2BpeTokenizer> tok = [] {
        QString dir = qEnvironmentVariable("ATTNSCOPE_GPT2_TOKENIZER_DIR");
        if (dir.isEmpty()) dir = QStringLiteral(ATTNSCOPE_GPT2_TOKENIZER_DIR);
        return attnscope::Gpt2BpeTokenizer::fromVocabAndMerges(QDir(dir).filePath("encoder.json"),
                                                               QDir(dir).filePath("vocab.bpe"));
    }();
    return *tok;
}

void check(const QString& text) {
    const attnscope::Gpt2BpeTokenizer& tok = gpt2();
    const std::vector<int> ids = tok.encode(text);
    const QString clean = attnscope::fuzz::withoutLoneSurrogates(text);
    if (tok.decode(ids) != clean) std::abort();
    if (!text.isEmpty() && ids.empty()) std::abort();
    for (int id : ids)
        if (id < 0 || id >= tok.vocabSize() || tok.displayToken(id).isEmpty()) std::abort();
    const std::vector<int> withBos = attnscope::tokenizePrompt(tok, text, true);
    if (withBos.size() != ids.size() + 1 || withBos.front() != 50256) std::abort();
    if (attnscope::tokenLabels(tok, withBos).size() != qsizetype(withBos.size())) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    check(QString::fromUtf8(reinterpret_cast<const char*>(data), qsizetype(size)));
    QString utf16(qsizetype(size / 2), Qt::Uninitialized);
    if (size >= 2) std::memcpy(utf16.data(), data, (size / 2) * 2);
    check(utf16);
    return 0;
}
