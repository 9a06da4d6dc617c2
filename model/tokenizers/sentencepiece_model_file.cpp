#include "model/tokenizers/sentencepiece_model_file.h"

#include "model/core/errors.h"
#include "model/tokenizers/hf_json_parts.h"
#include "model/tokenizers/lone_surrogates.h"

#ifdef ATTNSCOPE_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace attnscope {

#ifdef ATTNSCOPE_HAVE_SENTENCEPIECE

namespace {

class SentencePieceModelTokenizer : public SpmTokenizer {
public:
    SentencePieceModelTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor, SpmVocab vocab,
                                const QString& source)
        : SpmTokenizer(std::move(vocab)), processor_(std::move(processor)) {
        index(source);
    }

    /// SentencePieceProcessor::Encode of the text's UTF-8 (no BOS); [] if the library fails.
    std::vector<int> encode(const QString& text) const override {
        const QByteArray utf8 = withoutLoneSurrogates(text).toUtf8();
        std::vector<int> ids;
        if (!processor_->Encode(absl::string_view(utf8.constData(), size_t(utf8.size())), &ids).ok()) ids.clear();
        return ids;
    }

private:
    std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

} // namespace

bool sentencePieceAvailable() { return true; }

std::unique_ptr<SpmTokenizer> sentencePieceModelFromBytes(const QByteArray& bytes, const QString& label) {
    auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = processor->LoadFromSerializedProto(absl::string_view(bytes.constData(), size_t(bytes.size())));
    if (!status.ok())
        throw ModelError(label, QStringLiteral("not a SentencePiece model: %1").arg(QString::fromStdString(status.ToString())));
    const int n = processor->GetPieceSize();
    SpmVocab vocab;
    vocab.pieces.reserve(n);
    vocab.scores.reserve(n);
    vocab.types.reserve(n);
    for (int id = 0; id < n; ++id) {
        const std::string& piece = processor->IdToPiece(id);
        vocab.pieces.emplace_back(piece.data(), qsizetype(piece.size()));
        vocab.scores.push_back(processor->GetScore(id));
        vocab.types.push_back(processor->IsControl(id)   ? TokenType::Control
                              : processor->IsUnknown(id) ? TokenType::Unknown
                              : processor->IsUnused(id)  ? TokenType::Unused
                              : processor->IsByte(id)    ? TokenType::Byte
                                                         : TokenType::Normal);
    }
    auto idOrNone = [&](int id) { return id >= 0 && id < n ? std::optional<int>(id) : std::nullopt; };
    vocab.bos = idOrNone(processor->bos_id());
    vocab.eos = idOrNone(processor->eos_id());
    vocab.unk = idOrNone(processor->unk_id());
    vocab.addBos = true;
    // The library hides the normalizer spec; whether it adds the dummy prefix shows in how it
    // encodes one letter.
    std::vector<std::string> probe;
    const bool prefixed = processor->Encode("a", &probe).ok() && !probe.empty() && probe.front().rfind("\xE2\x96\x81", 0) == 0;
    vocab.spacePrefix = prefixed ? SpmVocab::SpacePrefix::First : SpmVocab::SpacePrefix::Never;
    return std::make_unique<SentencePieceModelTokenizer>(std::move(processor), std::move(vocab), label);
}

#else

bool sentencePieceAvailable() { return false; }

std::unique_ptr<SpmTokenizer> sentencePieceModelFromBytes(const QByteArray&, const QString& label) {
    throw ModelError(label, QStringLiteral("reading tokenizer.model needs libsentencepiece, and this build was made without it "
                                           "(install libsentencepiece-dev and rebuild)"));
}

#endif

std::unique_ptr<SpmTokenizer> loadSentencePieceModel(const QString& path) {
    if (!sentencePieceAvailable()) return sentencePieceModelFromBytes(QByteArray(), path);
    return sentencePieceModelFromBytes(readTokenizerFile(path), path);
}

} // namespace attnscope
