// Byte-level BPE tokenizer.json files of the Llama 3 and Qwen2 kind (Split regex pre-tokenizers, then
// ByteLevel without its own regex), and the same vocabulary from GGUF-style arrays. No such file is in
// the shared test data, so each test builds a small synthetic one whose ids follow by hand from its
// merges; the splits of the real Llama 3 / Qwen2 patterns are checked against what the regexes say.

#include "model/tokenizers/byte_unicode.h"
#include "model/tokenizers/gpt2_bpe_tokenizer.h"
#include "model/tokenizers/hf_tokenizer_json.h"
#include "model/tokenizers/tokenizer_loader.h"
#include "model/transformer/prompt.h"
#include "tests/support/error_capture.h"
#include "tests/support/safetensors_writer.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

// meta-llama/Meta-Llama-3-8B tokenizer.json, pre_tokenizer.pretokenizers[0].pattern.Regex.
const QString kLlama3Pattern = QStringLiteral(
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)");
// Qwen/Qwen2-7B tokenizer.json: digits one at a time.
const QString kQwen2Pattern = QStringLiteral(
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)");
// The variant with combining marks inside words (as later Qwen tokenizers write it).
const QString kMarksPattern = QStringLiteral(
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)");

/// Byte b is token b (its bytes_to_unicode character); then these merges, token 256 + rank each,
/// so every expected id below follows from this table:
///   256 Ġw  257 or  258 Ġwor  259 ld  260 Ġworld  261 He  262 ll  263 Hell  264 Hello  265 12  266 123
/// and 267 "Ġxyz", which no merge makes (for ignore_merges).
const QStringList kMerges{"Ġ w", "o r", "Ġw or", "l d", "Ġwor ld", "H e", "l l", "He ll", "Hell o", "1 2", "12 3"};

std::vector<QString> vocabTokens() {
    std::vector<QString> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(QString(byteToUnicode(uchar(b))));
    for (const QString& m : kMerges) tokens.push_back(QString(m).remove(QLatin1Char(' ')));
    tokens.push_back(QStringLiteral("Ġxyz"));
    return tokens;
}

/// A Llama 3-style tokenizer.json over vocabTokens(): <|begin_of_text|> 400 and <|end_of_text|> 401
/// (special), <tool> 402 (not special), Split(pattern, Isolated) + ByteLevel(use_regex false), and
/// a Sequence[ByteLevel, TemplateProcessing(<|begin_of_text|> $A)] post-processor.
QJsonObject llama3Json(const QString& pattern, bool ignoreMerges) {
    QJsonObject vocab;
    const std::vector<QString> tokens = vocabTokens();
    for (size_t id = 0; id < tokens.size(); ++id) vocab.insert(tokens[id], int(id));
    QJsonArray merges;
    for (const QString& m : kMerges) merges.append(m);
    const QJsonObject model{{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", ignoreMerges},
                            {"byte_fallback", false}, {"fuse_unk", false}};
    const QJsonArray added{QJsonObject{{"id", 400}, {"content", "<|begin_of_text|>"}, {"special", true}},
                           QJsonObject{{"id", 401}, {"content", "<|end_of_text|>"}, {"special", true}},
                           QJsonObject{{"id", 402}, {"content", "<tool>"}, {"special", false}}};
    const QJsonObject pre{{"type", "Sequence"},
                          {"pretokenizers", QJsonArray{QJsonObject{{"type", "Split"}, {"pattern", QJsonObject{{"Regex", pattern}}},
                                                                   {"behavior", "Isolated"}, {"invert", false}},
                                                       QJsonObject{{"type", "ByteLevel"}, {"add_prefix_space", false},
                                                                   {"trim_offsets", true}, {"use_regex", false}}}}};
    const QJsonObject templ{{"type", "TemplateProcessing"},
                            {"single", QJsonArray{QJsonObject{{"SpecialToken", QJsonObject{{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                                                  QJsonObject{{"Sequence", QJsonObject{{"id", "A"}, {"type_id", 0}}}}}},
                            {"special_tokens", QJsonObject{{"<|begin_of_text|>", QJsonObject{{"id", "<|begin_of_text|>"}, {"ids", QJsonArray{400}},
                                                                                              {"tokens", QJsonArray{"<|begin_of_text|>"}}}}}}};
    const QJsonObject post{{"type", "Sequence"}, {"processors", QJsonArray{QJsonObject{{"type", "ByteLevel"}}, templ}}};
    return QJsonObject{{"version", "1.0"}, {"added_tokens", added}, {"normalizer", QJsonValue()}, {"pre_tokenizer", pre},
                       {"post_processor", post}, {"decoder", QJsonObject{{"type", "ByteLevel"}}}, {"model", model}};
}

std::unique_ptr<Gpt2BpeTokenizer> fromJson(const QJsonObject& root) {
    auto tok = hfTokenizerFromJsonBytes(QJsonDocument(root).toJson(QJsonDocument::Compact), QStringLiteral("tokenizer.json"));
    return std::unique_ptr<Gpt2BpeTokenizer>(dynamic_cast<Gpt2BpeTokenizer*>(tok.release()));
}

} // namespace

class TestByteLevelTokenizer : public QObject {
    Q_OBJECT

private slots:
    void llama3Splits_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("pieces");
        // Each expectation is the leftmost alternative of the pattern that matches at the position.
        QTest::newRow("words") << "Hello world" << QStringList{"Hello", " world"};
        QTest::newRow("contractions, any case") << "I'LL say he's DON'T" << QStringList{"I", "'LL", " say", " he", "'s", " DON", "'T"};
        QTest::newRow("digits in threes") << "1234567" << QStringList{"123", "456", "7"};
        QTest::newRow("space before digits") << "x 12345" << QStringList{"x", " ", "123", "45"};
        QTest::newRow("newlines") << "a\n\nb" << QStringList{"a", "\n\n", "b"};
        QTest::newRow("spaces then newline") << "a  \n b" << QStringList{"a", "  \n", " b"};
        QTest::newRow("two spaces before a word") << "  hi" << QStringList{" ", " hi"};
        QTest::newRow("trailing spaces") << "hi   " << QStringList{"hi", "   "};
        QTest::newRow("punctuation run") << "Hi!!! ok?" << QStringList{"Hi", "!!!", " ok", "?"};
        QTest::newRow("punctuation glued to a word") << "$hello (x)" << QStringList{"$hello", " (", "x", ")"};
        QTest::newRow("punctuation then newline") << "end.\n\nNext" << QStringList{"end", ".\n\n", "Next"};
        QTest::newRow("non-ASCII letters") << "café über 日本語" << QStringList{"café", " über", " 日本語"};
        QTest::newRow("tab") << "\tx" << QStringList{"\tx"};
        // U+0301 is a mark, not a letter: it ends "e" and is the one optional non-letter before "x".
        QTest::newRow("combining mark splits a word") << "e\u0301x" << QStringList{"e", "\u0301x"};
        QTest::newRow("Devanagari signs are marks") << "नमस्ते" << QStringList{"नमस", "्त", "े"};
    }
    void llama3Splits() {
        QFETCH(QString, text);
        QFETCH(QStringList, pieces);
        const auto tok = fromJson(llama3Json(kLlama3Pattern, true));
        QCOMPARE(tok->pretokenize(text), pieces);
    }

    void qwen2Splits() {
        auto root = llama3Json(kQwen2Pattern, false);
        root.insert("normalizer", QJsonObject{{"type", "NFC"}});
        const auto qwen = fromJson(root);
        QCOMPARE(qwen->pretokenize(QStringLiteral("in 2024!")), (QStringList{"in", " ", "2", "0", "2", "4", "!"}));
        // NFC first: e + U+0301 becomes é (U+00E9), one letter, bytes C3 A9.
        QCOMPARE(qwen->pretokenize(QStringLiteral("e\u0301x")), QStringList{QStringLiteral("éx")});
        QCOMPARE(qwen->encode(QStringLiteral("e\u0301")), (std::vector<int>{0xC3, 0xA9}));
        // With [\p{L}\p{M}]+ the mark stays in its word even without NFC; Hindi vowel signs are marks.
        const auto marks = fromJson(llama3Json(kMarksPattern, false));
        QCOMPARE(marks->pretokenize(QStringLiteral("e\u0301x nमस्ते")), (QStringList{"e\u0301x", " nमस्ते"}));
        QCOMPARE(marks->encode(QStringLiteral("e\u0301")), (std::vector<int>{0x65, 0xCC, 0x81}));
    }

    void llama3Ids() {
        const auto tok = fromJson(llama3Json(kLlama3Pattern, true));
        // "Hello" -> He, ll, Hell, Hello = 264; " world" -> Ġw, or, Ġwor, ld, Ġworld = 260; " " is byte 0x20;
        // "123" -> 12, 123 = 266; "45" has no merge: bytes '4' '5'.
        const std::vector<int> ids = tok->encode(QStringLiteral("Hello world 12345"));
        QCOMPARE(ids, (std::vector<int>{264, 260, 32, 266, 52, 53}));
        QCOMPARE(tok->decode(ids), QStringLiteral("Hello world 12345"));
        QCOMPARE(tok->tokenString(260), QStringLiteral("Ġworld"));
        QCOMPARE(tok->displayToken(260), QStringLiteral("␣world"));
        // ignore_merges: a piece that is a token is that token.
        QCOMPARE(tok->encode(QStringLiteral(" xyz")), std::vector<int>{267});
        QCOMPARE(fromJson(llama3Json(kLlama3Pattern, false))->encode(QStringLiteral(" xyz")), (std::vector<int>{32, 120, 121, 122}));
    }

    void llama3SpecialTokensAndBos() {
        auto tok = fromJson(llama3Json(kLlama3Pattern, true));
        QCOMPARE(tok->bosId(), std::optional<int>(400));
        QVERIFY(tok->addsBos());
        QCOMPARE(tokenizePrompt(*tok, QStringLiteral("Hello"), tok->addsBos()), (std::vector<int>{400, 264}));
        // <tool> (not special) is always one token; <|end_of_text|> only when special tokens are matched.
        QCOMPARE(tok->encode(QStringLiteral("a<tool>b")), (std::vector<int>{97, 402, 98}));
        // As text it is the pieces "<|", "end", "_of", "_text", "|>", none of which has a merge: its bytes.
        QCOMPARE(tok->pretokenize(QStringLiteral("<|end_of_text|>")), (QStringList{"<|", "end", "_of", "_text", "|>"}));
        std::vector<int> bytes;
        for (char c : QByteArray("<|end_of_text|>")) bytes.push_back(c);
        QCOMPARE(tok->encode(QStringLiteral("<|end_of_text|>")), bytes);
        tok->setMatchSpecialTokens(true);
        QCOMPARE(tok->encode(QStringLiteral("Hello<|end_of_text|>")), (std::vector<int>{264, 401}));
        // A prompt that already starts with BOS gets no second one.
        QCOMPARE(tokenizePrompt(*tok, QStringLiteral("<|begin_of_text|>Hello"), true), (std::vector<int>{400, 264}));
        QCOMPARE(tok->decode(std::vector<int>{400, 264}), QStringLiteral("<|begin_of_text|>Hello"));
    }

    void qwen2NoBos() {
        // Qwen2: no template, tokenizer_config.json says bos_token null.
        auto root = llama3Json(kQwen2Pattern, false);
        root.insert("post_processor", QJsonObject{{"type", "ByteLevel"}});
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        writeFile(dir.filePath(QStringLiteral("tokenizer.json")), QJsonDocument(root).toJson());
        writeFile(dir.filePath(QStringLiteral("tokenizer_config.json")), R"({"bos_token": null, "eos_token": "<|end_of_text|>"})");
        const auto tok = loadTokenizerFromFolder(dir.path());
        QCOMPARE(tok->bosId(), std::nullopt);
        QVERIFY(!tok->addsBos());
        QCOMPARE(tokenizePrompt(*tok, QStringLiteral("Hello"), true), std::vector<int>{264});
        // Qwen2 pads its embedding past the tokenizer (151 936 rows, 151 646 tokens): such rows show their id
        QCOMPARE(tok->displayToken(tok->vocabSize() + 3), QStringLiteral("⟨id %1⟩").arg(tok->vocabSize() + 3));
        QCOMPARE(tok->displayToken(264), QStringLiteral("Hello"));
    }

    void fromGgufArrays() {
        // tokenizer.ggml.model = gpt2: tokens, merges, token types, bos, add_bos, the pre-tokenizer's regex.
        std::vector<QString> tokens = vocabTokens();
        std::vector<TokenType> types(tokens.size(), TokenType::Normal);
        tokens.resize(401);
        types.resize(401, TokenType::Unused);
        for (size_t id = 268; id < 400; ++id) tokens[id] = QStringLiteral("<|reserved_%1|>").arg(id);
        tokens[400] = QStringLiteral("<|begin_of_text|>");
        types[400] = TokenType::Control;
        ByteLevelOptions options;
        options.splitPatterns = QStringList{kLlama3Pattern};
        options.ignoreMerges = true;
        const auto tok = Gpt2BpeTokenizer::fromTokensAndMerges(tokens, kMerges, types, 400, true, options, QStringLiteral("model.gguf"));
        const auto json = fromJson(llama3Json(kLlama3Pattern, true));
        for (const QString& text : {QStringLiteral("Hello world 12345"), QStringLiteral("I'LL say he's\n\n  Hello"), QStringLiteral(" xyz!")})
            QCOMPARE(tok->encode(text), json->encode(text));
        QCOMPARE(tokenizePrompt(*tok, QStringLiteral("Hello"), tok->addsBos()), (std::vector<int>{400, 264}));
        QCOMPARE(tok->tokenBytes(400), QByteArray("<|begin_of_text|>"));

        QCOMPARE(modelErrorOf([&] { Gpt2BpeTokenizer::fromTokensAndMerges(tokens, QStringList{"Ġ q"}, types, 400, true, options, "model.gguf"); }),
                 QStringLiteral("model.gguf: merges[0]: token \"Ġq\" is not in the vocabulary"));
        QCOMPARE(modelErrorOf([&] { Gpt2BpeTokenizer::fromTokensAndMerges(tokens, QStringList{"Ġw"}, types, 400, true, options, "model.gguf"); }),
                 QStringLiteral("model.gguf: merges[0]: expected \"a b\", got \"Ġw\""));
        QCOMPARE(modelErrorOf([&] { Gpt2BpeTokenizer::fromTokensAndMerges(tokens, kMerges, types, 401, true, options, "model.gguf"); }),
                 QStringLiteral("model.gguf: BOS token id 401 is outside the vocabulary (401 tokens)"));
        options.splitPatterns = QStringList{QStringLiteral("(?i:'s")};
        QVERIFY(modelErrorOf([&] { Gpt2BpeTokenizer::fromTokensAndMerges(tokens, kMerges, types, 400, true, options, "model.gguf"); })
                    .startsWith(QStringLiteral("model.gguf: invalid pretokenizer regex at offset")));
    }

    void mergeOrder() {
        // Merges ["ab a", "a b"]: the first names "ab" before the merge that makes it. On "abab",
        // encoder.py merges both (a, b) first: [ab, ab]. tokenizers merges one at a time and the new
        // pair (ab, a) outranks the second (a, b): [aba, b].
        QJsonObject vocab;
        for (int b = 0; b < 256; ++b) vocab.insert(QString(byteToUnicode(uchar(b))), b);
        vocab.insert("ab", 256);
        vocab.insert("aba", 257);
        const QJsonObject model{{"type", "BPE"}, {"vocab", vocab}, {"merges", QJsonArray{"ab a", "a b"}}};
        const auto hf = fromJson(QJsonObject{{"model", model}});
        QCOMPARE(hf->encode(QStringLiteral("abab")), (std::vector<int>{257, 98}));
        const auto gpt2 = Gpt2BpeTokenizer::fromVocabAndMergesBytes(QJsonDocument(vocab).toJson(), "ab a\na b\n", "vocab.json", "merges.txt");
        QCOMPARE(gpt2->encode(QStringLiteral("abab")), (std::vector<int>{256, 256}));
    }

    void unsupportedFiles_data() {
        QTest::addColumn<QJsonObject>("root");
        QTest::addColumn<QString>("problem");
        QJsonObject root = llama3Json(kLlama3Pattern, false);
        QJsonObject split{{"type", "Split"}, {"pattern", QJsonObject{{"Regex", "\\s+"}}}, {"behavior", "Removed"}, {"invert", false}};
        root.insert("pre_tokenizer", split);
        QTest::newRow("Split Removed") << root << QStringLiteral("unsupported Split pre_tokenizer: behavior \"Removed\" (only Isolated is supported)");
        root.insert("pre_tokenizer", QJsonObject{{"type", "Whitespace"}});
        QTest::newRow("Whitespace") << root << QStringLiteral("unsupported pre_tokenizer \"Whitespace\" for a byte-level BPE");
        split.insert("behavior", "Isolated");
        root.insert("pre_tokenizer", split);
        QTest::newRow("no ByteLevel") << root << QStringLiteral("unsupported pre_tokenizer \"Split\": no ByteLevel step, so not a byte-level BPE");
        root = llama3Json(QStringLiteral("(?i:'s|[\\p{L}+"), false);
        QTest::newRow("bad regex") << root << QStringLiteral("invalid pretokenizer regex at offset 14 (missing terminating ] for character class): (?i:'s|[\\p{L}+");
        root = llama3Json(kLlama3Pattern, false);
        root.insert("normalizer", QJsonObject{{"type", "Lowercase"}});
        QTest::newRow("Lowercase") << root << QStringLiteral("unsupported normalizer \"Lowercase\" for a byte-level BPE");
    }
    void unsupportedFiles() {
        QFETCH(QJsonObject, root);
        QFETCH(QString, problem);
        const auto [path, message] = modelErrorOfFile(QStringLiteral("tokenizer.json"), QJsonDocument(root).toJson(),
                                                      [](const QString& p) { loadHfTokenizerJson(p); });
        QCOMPARE(message, path + QStringLiteral(": ") + problem);
    }
};

QTEST_GUILESS_MAIN(TestByteLevelTokenizer)
#include "tst_byte_level_tokenizer.moc"
