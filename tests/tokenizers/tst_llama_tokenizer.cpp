// SentencePiece-style (Llama 1/2) tokenizers against independent references: llama.cpp's 47 vectors
// for the Llama 2 vocabulary (made upstream with HF's tokenizer), the 18 cases of
// llama2_spm_tokenizer_vectors.json (llama2.c test.c and transformers' Llama tests), and the 14 run.c
// encode() cases of stories260K; each through llama2.c's tokenizer.bin, HF's tokenizer.json and the
// vocab-only GGUF (llama.cpp's ggml-vocab-llama-spm.gguf, through loadTokenizerOnly). Also the
// tokenizer.bin reader's errors, decoding, labels and BOS handling.

#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/tokenizers/hf_tokenizer_json.h"
#include "model/tokenizers/llama2c_tokenizer_file.h"
#include "model/tokenizers/spm_tokenizer.h"
#include "model/tokenizers/tokenizer_loader.h"
#include "model/transformer/prompt.h"
#include "model/transformer/forward.h"
#include "tests/support/error_capture.h"
#include "tests/support/hf_llama_folder.h"
#include "tests/support/reference_json.h"
#include "tests/support/safetensors_writer.h"
#include "tests/support/test_paths.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtConcurrent>
#include <QtTest>
#include <ctime>

using namespace attnscope;
using namespace attnscope::test;

namespace {

QString llamaFile(const char* name) { return testdata(QStringLiteral("llama/") + QLatin1String(name)); }

/// llama.cpp's .inp/.out pair: texts separated by "\n__ggml_vocab_test__\n", one line of ids each.
std::vector<std::pair<QString, std::vector<int>>> readLlamaCppVectors() {
    const QStringList texts = QString::fromUtf8(readBytes(llamaFile("ggml-vocab-llama-spm.gguf.inp")))
                                  .split(QStringLiteral("\n__ggml_vocab_test__\n"));
    const QList<QByteArray> lines = readBytes(llamaFile("ggml-vocab-llama-spm.gguf.out")).split('\n');
    std::vector<std::pair<QString, std::vector<int>>> cases;
    for (qsizetype i = 0; i < texts.size() && i < lines.size(); ++i) {
        std::vector<int> ids;
        for (const QByteArray& t : lines[i].split(' '))
            if (!t.isEmpty()) ids.push_back(t.toInt());
        cases.emplace_back(texts[i], ids);
    }
    return cases;
}

/// Milliseconds of CPU time `f` takes (the machine may be busy with other builds).
template <typename F>
double cpuMs(F f) {
    const std::clock_t start = std::clock();
    f();
    return 1000.0 * double(std::clock() - start) / CLOCKS_PER_SEC;
}

/// int32 little-endian at `offset` of `bytes` replaced by `v`.
QByteArray withInt32(QByteArray bytes, qsizetype offset, qint32 v) {
    qToLittleEndian(v, bytes.data() + offset);
    return bytes;
}

/// Offset of token `id`'s record in a llama2.c tokenizer file.
qsizetype recordOffset(const QByteArray& bytes, int id) {
    qsizetype offset = 4;
    for (int i = 0; i < id; ++i) offset += 8 + qFromLittleEndian<qint32>(bytes.constData() + offset + 4);
    return offset;
}

/// A Gemma-style tokenizer.json as transformers' GemmaConverter writes it: BPE with byte fallback and merges over
/// <pad> <eos> <bos> <unk> <start_of_turn> <end_of_turn> (ids 0-5), the 256 byte tokens and a few pieces, then
/// "<unused…>" pieces up to `size` entries; normalizer Replace(" ", "▁"), pre_tokenizer Split(" ", MergedWithPrevious),
/// the turn tokens and <bos> special added tokens, BOS by TemplateProcessing.
QJsonObject gemmaTokenizerRoot(int size = 0) {
    QJsonObject vocab;
    const QStringList named{"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"};
    for (int i = 0; i < named.size(); ++i) vocab.insert(named[i], i);
    for (int b = 0; b < 256; ++b) vocab.insert(QStringLiteral("<0x%1>").arg(b, 2, 16, QLatin1Char('0')).toUpper().replace("<0X", "<0x"), 6 + b);
    const QStringList pieces{"▁", "H", "e", "l", "o", "w", "r", "d", "u", "s", "ll", "He", "Hell", "Hello", "▁w", "or",
                             "▁wor", "ld", "▁world", "us", "use", "user"};
    for (int i = 0; i < pieces.size(); ++i) vocab.insert(pieces[i], 262 + i);
    for (int i = 262 + int(pieces.size()); i < size; ++i) vocab.insert(QStringLiteral("<unused%1>").arg(i), i);
    const QJsonArray merges{"l l", "H e", "He ll", "Hell o", "▁ w", "o r", "▁w or", "l d", "▁wor ld", "u s", "us e", "use r"};
    return QJsonObject{
        {"model", QJsonObject{{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"byte_fallback", true},
                              {"fuse_unk", true}, {"unk_token", "<unk>"}}},
        {"normalizer", QJsonObject{{"type", "Replace"}, {"pattern", QJsonObject{{"String", " "}}}, {"content", "▁"}}},
        {"pre_tokenizer", QJsonObject{{"type", "Split"}, {"pattern", QJsonObject{{"String", " "}}},
                                      {"behavior", "MergedWithPrevious"}, {"invert", false}}},
        {"added_tokens", QJsonArray{QJsonObject{{"id", 2}, {"content", "<bos>"}, {"special", true}},
                                    QJsonObject{{"id", 4}, {"content", "<start_of_turn>"}, {"special", true}},
                                    QJsonObject{{"id", 5}, {"content", "<end_of_turn>"}, {"special", true}}}},
        {"post_processor", QJsonObject{{"type", "TemplateProcessing"},
                                       {"single", QJsonArray{QJsonObject{{"SpecialToken", QJsonObject{{"id", "<bos>"}, {"type_id", 0}}}},
                                                             QJsonObject{{"Sequence", QJsonObject{{"id", "A"}, {"type_id", 0}}}}}},
                                       {"special_tokens", QJsonObject{{"<bos>", QJsonObject{{"id", "<bos>"}, {"ids", QJsonArray{2}},
                                                                                             {"tokens", QJsonArray{"<bos>"}}}}}}}}};
}

} // namespace

class TestLlamaTokenizer : public QObject {
    Q_OBJECT

    std::unique_ptr<SpmTokenizer> bin_;   ///< llama/tokenizer.bin
    std::unique_ptr<SpmTokenizer> json_;  ///< llama/tokenizer.json, with tokenizer_config.json beside it
    std::unique_ptr<SpmTokenizer> gguf_;  ///< llama/ggml-vocab-llama-spm.gguf (vocab-only) via loadTokenizerOnly
    std::unique_ptr<SpmTokenizer> tok512_;

    const SpmTokenizer& source(const QString& name) {
        return name == QStringLiteral("tokenizer.bin") ? *bin_ : name == QStringLiteral("tokenizer.json") ? *json_ : *gguf_;
    }
    static constexpr const char* kSources[] = {"tokenizer.bin", "tokenizer.json", "ggml-vocab-llama-spm.gguf"};

    static void checkRoundTrip(const Tokenizer& tok, const QString& text, const std::vector<int>& ids) {
        QCOMPARE(tok.decode(ids), text);
        QCOMPARE(tok.decodeBytes(ids), text.toUtf8());
    }

    /// Loads a tokenizer with `load` and prints its CPU time (speed targets live in bench/, not here); it
    /// must be an SpmTokenizer.
    template <class Load>
    static void loadTimed(std::unique_ptr<SpmTokenizer>& out, const char* what, Load load) {
        std::unique_ptr<Tokenizer> tok;
        const double ms = cpuMs([&] { tok = load(); });
        qInfo("%s loaded in %.0f ms CPU", what, ms);
        out.reset(dynamic_cast<SpmTokenizer*>(tok.release()));
        QVERIFY2(out, qPrintable(QStringLiteral("%1 must be read as a SentencePiece-style tokenizer").arg(QLatin1String(what))));
    }

private slots:
    void initTestCase() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        loadTimed(bin_, "tokenizer.bin (32000 tokens)", [] { return loadLlama2cTokenizer(llamaFile("tokenizer.bin")); });
        loadTimed(json_, "tokenizer.json (32000 tokens, 61249 merges)", [] { return loadHfTokenizerJson(llamaFile("tokenizer.json")); });
        // the vocab-only GGUF (tokenizer.ggml.model llama)
        loadTimed(gguf_, "ggml-vocab-llama-spm.gguf (32000 tokens)", [] { return loadTokenizerOnly(llamaFile("ggml-vocab-llama-spm.gguf")); });
        tok512_ = loadLlama2cTokenizer(testdata(QStringLiteral("stories260K/tok512.bin")));
    }

    void vocabulary() {
        QCOMPARE(bin_->vocabSize(), 32000);
        QCOMPARE(json_->vocabSize(), 32000);
        QCOMPARE(gguf_->vocabSize(), 32000);
        QCOMPARE(tok512_->vocabSize(), 512);
        for (const SpmTokenizer* t : {bin_.get(), json_.get(), gguf_.get(), tok512_.get()}) {
            QCOMPARE(t->bosId(), std::optional<int>(1));
            QCOMPARE(t->eosId(), std::optional<int>(2));
            QVERIFY(t->addsBos());
            QCOMPARE(t->tokenString(0), QStringLiteral("<unk>"));
            QCOMPARE(t->tokenString(1), QStringLiteral("<s>")); // "\n<s>\n" in the .bin files
            QCOMPARE(t->tokenString(2), QStringLiteral("</s>"));
            QCOMPARE(t->tokenType(0), TokenType::Unknown);
            QCOMPARE(t->tokenType(1), TokenType::Control);
            QCOMPARE(t->tokenType(2), TokenType::Control);
            // llama2.c looks byte tokens up at id = byte + 3; every source names them <0xNN> there.
            for (int b = 0; b < 256; ++b) {
                const QString piece = QStringLiteral("<0x%1>").arg(b, 2, 16, QLatin1Char('0')).toUpper().replace(QStringLiteral("<0X"), QStringLiteral("<0x"));
                QCOMPARE(t->tokenId(piece), std::optional<int>(b + 3));
                QCOMPARE(t->tokenType(b + 3), TokenType::Byte);
            }
            QCOMPARE(t->tokenType(259), TokenType::Normal);
        }
        QCOMPARE(bin_->tokenString(278), QStringLiteral("▁the")); // spaces are "▁" again
        QCOMPARE(bin_->tokenId(QStringLiteral("▁Hello")), std::optional<int>(15043));
        QCOMPARE(bin_->tokenId(QStringLiteral(" Hello")), std::nullopt);
        QCOMPARE(bin_->tokenString(-1), QString());
        QCOMPARE(bin_->tokenString(32000), QString());
        // The README: the two vocabularies agree except at id 31353 (U+2028 in the GGUF and the .bin, "" in the .json).
        for (int id = 0; id < 32000; ++id) {
            if (id != 31353) QCOMPARE(json_->tokenString(id), bin_->tokenString(id));
            QCOMPARE(gguf_->tokenString(id), bin_->tokenString(id));
            QCOMPARE(gguf_->score(id), bin_->score(id));
            QCOMPARE(gguf_->tokenType(id), bin_->tokenType(id));
        }
        QCOMPARE(bin_->tokenString(31353), QString(QChar(0x2028)));
        // Token 30143 is U+FEFF, written raw in tokenizer.json: Qt's JSON parser would drop it from the
        // start of the string, and QString::fromUtf8 from the start of the piece (found by fuzz_prompt).
        for (const SpmTokenizer* t : {bin_.get(), json_.get(), gguf_.get()}) {
            QCOMPARE(t->tokenString(30143), QString(QChar(0xFEFF)));
            QCOMPARE(t->tokenId(QString(QChar(0xFEFF))), std::optional<int>(30143));
        }
        QCOMPARE(json_->tokenString(31353), QString());
        // Scores as exported by llama2.c (the GGUF's): control/byte pieces 0, merged pieces -(id - 259),
        // "▁▁" and "▁" last (-1e9), single characters after the merged pieces.
        QCOMPARE(bin_->score(1), 0.0f);
        QCOMPARE(bin_->score(258), 0.0f);
        QCOMPARE(bin_->score(260), -1.0f);
        QCOMPARE(bin_->score(278), -19.0f);
        QCOMPARE(bin_->score(259), -1e9f);
        QCOMPARE(bin_->score(29871), -1e9f);
        QCOMPARE(bin_->score(29872), -29613.0f);
    }

    void llamaCppVectors_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("text");
        QTest::addColumn<std::vector<int>>("ids");
        const auto cases = readLlamaCppVectors();
        // 46 texts, each followed by the separator, and 46 lines: the pieces after the last
        // separator and the last newline make a 47th case, "" -> [] (llama.cpp counts it too).
        QCOMPARE(cases.size(), size_t(47));
        QCOMPARE(cases.back().first, QString());
        QCOMPARE(cases.back().second, std::vector<int>());
        for (const char* source : kSources)
            for (size_t i = 0; i < cases.size(); ++i)
                QTest::newRow(qPrintable(QStringLiteral("%1 case %2").arg(QLatin1String(source)).arg(i + 1)))
                    << QString::fromLatin1(source) << cases[i].first << cases[i].second;
    }
    void llamaCppVectors() {
        QFETCH(QString, source);
        QFETCH(QString, text);
        QFETCH(std::vector<int>, ids);
        const SpmTokenizer& tok = this->source(source);
        QCOMPARE(tok.encode(text), ids);
        checkRoundTrip(tok, text, ids);
    }

    void llama2Vectors_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("text");
        QTest::addColumn<std::vector<int>>("idsWithBos");
        const QJsonArray vectors = readJsonObject(llamaFile("llama2_spm_tokenizer_vectors.json")).value("vectors").toArray();
        QCOMPARE(vectors.size(), 18);
        for (const char* source : kSources) {
            for (qsizetype i = 0; i < vectors.size(); ++i) {
                const QJsonObject v = vectors[i].toObject();
                QTest::newRow(qPrintable(QStringLiteral("%1 case %2").arg(QLatin1String(source)).arg(i + 1)))
                    << QString::fromLatin1(source) << v.value("text").toString() << intsFromJson(v.value("ids_with_bos").toArray());
            }
        }
    }
    void llama2Vectors() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QString, source);
        QFETCH(QString, text);
        QFETCH(std::vector<int>, idsWithBos);
        const SpmTokenizer& tok = this->source(source);
        QVERIFY(tok.addsBos());
        if (text == QStringLiteral("<s>")) {
            // transformers' case: HF matches the added token "<s>" in the text, then its template adds
            // BOS: [1, 1]. Here special tokens are matched only on request.
            auto matching = loadLlama2cTokenizer(llamaFile("tokenizer.bin"));
            if (source == QStringLiteral("tokenizer.json")) matching.reset(dynamic_cast<SpmTokenizer*>(loadHfTokenizerJson(llamaFile("tokenizer.json")).release()));
            if (source == QStringLiteral("ggml-vocab-llama-spm.gguf"))
                matching.reset(dynamic_cast<SpmTokenizer*>(loadTokenizerOnly(llamaFile("ggml-vocab-llama-spm.gguf")).release()));
            matching->setMatchSpecialTokens(true);
            std::vector<int> hf{*matching->bosId()};
            for (int id : matching->encode(text)) hf.push_back(id);
            QCOMPARE(hf, idsWithBos);
            // The prompt gets BOS once, not twice (prompt.h); without matching "<s>" is plain text.
            QCOMPARE(tokenizePrompt(*matching, text, true), std::vector<int>{1});
            QCOMPARE(tokenizePrompt(tok, text, true), (std::vector<int>{1, 529, 29879, 29958})); // <, s, > ("▁<" is 529)
            QCOMPARE(tok.decode(tok.encode(text)), text);
            return;
        }
        QCOMPARE(tokenizePrompt(tok, text, tok.addsBos()), idsWithBos);
        checkRoundTrip(tok, text, tokenizePrompt(tok, text, true));
    }

    /// tokenizer.json and the vocab-only GGUF give the same ids on all 65 texts (each also equals the
    /// expected ids above; this pins the two sources to each other with BOS handling included).
    void tokenizerJsonAgreesWithGguf() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QStringList texts;
        for (const auto& c : readLlamaCppVectors()) texts << c.first;
        for (const QJsonValue& v : readJsonObject(llamaFile("llama2_spm_tokenizer_vectors.json")).value("vectors").toArray())
            texts << v.toObject().value("text").toString();
        QCOMPARE(texts.size(), 65);
        QCOMPARE(gguf_->addsBos(), json_->addsBos());
        for (const QString& t : texts) {
            QCOMPARE(gguf_->encode(t), json_->encode(t));
            QCOMPARE(tokenizePrompt(*gguf_, t, gguf_->addsBos()), tokenizePrompt(*json_, t, json_->addsBos()));
        }
    }

    void stories260K_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QString>("text");
        QTest::addColumn<std::vector<int>>("idsWithBos");
        const QJsonArray cases = readJsonObject(testdata(QStringLiteral("stories260K/reference.json"))).value("tokenizer_cases").toArray();
        QCOMPARE(cases.size(), 14);
        for (qsizetype i = 0; i < cases.size(); ++i) {
            const QJsonObject c = cases[i].toObject();
            QTest::addRow("case %lld", i + 1) << c.value("text").toString() << intsFromJson(c.value("ids").toArray());
        }
    }
    void stories260K() {
        QFETCH(QString, text);
        QFETCH(std::vector<int>, idsWithBos);
        const std::vector<int> ids = tokenizePrompt(*tok512_, text, tok512_->addsBos());
        QCOMPARE(ids, idsWithBos);
        checkRoundTrip(*tok512_, text, ids);
    }

    void specialTokensInText() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // Off by default: "</s>" is text. On: control tokens are whole units, and the text after one
        // gets the dummy prefix again (llama.cpp is_prev_special; HF normalizes each piece).
        auto tok = loadLlama2cTokenizer(llamaFile("tokenizer.bin"));
        const QString text = QStringLiteral("Hi</s>Hello");
        // Ids from a plain score-greedy merge over tokenizer.bin (llama2.c encode() rescanning for the best pair).
        QCOMPARE(tok->encode(text), (std::vector<int>{6324, 829, 29879, 29958, 10994})); // ▁Hi </ s > Hello

        tok->setMatchSpecialTokens(true);
        QCOMPARE(tok->encode(text), (std::vector<int>{6324, 2, 15043}));               // ▁Hi </s> ▁Hello
        // "▁▁a": "▁a" (score -4) beats "▁▁" (-1e9).
        QCOMPARE(tok->encode(QStringLiteral("<s> a")), (std::vector<int>{1, 29871, 263}));
        QCOMPARE(json_->encode(text), bin_->encode(text));
        // Control tokens decode to nothing; the "▁" after one is a space (only the text's first is the prefix).
        QCOMPARE(tok->decode(tok->encode(text)), QStringLiteral("Hi Hello"));
    }

    void decoding() {
        const SpmTokenizer& t = *bin_;
        QCOMPARE(t.decode(std::vector<int>{1, 15043, 3186}), QStringLiteral("Hello world"));   // BOS invisible, dummy prefix dropped
        QCOMPARE(t.decode(std::vector<int>{15043, 3186}), QStringLiteral("Hello world"));
        QCOMPARE(t.decode(std::vector<int>{29871, 15043}), QStringLiteral(" Hello"));            // "▁" + "▁Hello": only the first "▁" is the prefix
        QCOMPARE(t.decode(std::vector<int>{3186, 15043}), QStringLiteral("world Hello"));
        QCOMPARE(t.decode(std::vector<int>{13, 15043}), QStringLiteral("\n Hello"));             // <0x0A> ends the start
        // "谛" (E8 B0 9B) is not a piece: three byte tokens that decode only when joined.
        const std::vector<int> di{235, 179, 158};
        QCOMPARE(t.decodeBytes(di), QByteArray("\xE8\xB0\x9B"));
        QCOMPARE(t.decode(di), QStringLiteral("谛"));
        QCOMPARE(t.decodeBytes(std::vector<int>{235}), QByteArray("\xE8"));
        QCOMPARE(t.decode(std::vector<int>{-1, 32000, 1 << 30, 22172}), QStringLiteral("hello"));
        QCOMPARE(t.decodeBytes({}), QByteArray());
        QCOMPARE(t.decode(std::vector<int>{0}), QStringLiteral("<unk>"));
    }

    void displayStrings() {
        for (const SpmTokenizer* t : {bin_.get(), json_.get()}) {
            QCOMPARE(t->displayToken(278), QStringLiteral("␣the"));
            QCOMPARE(t->displayToken(29871), QStringLiteral("␣"));
            QCOMPARE(t->displayToken(259), QStringLiteral("␣␣"));
            QCOMPARE(t->displayToken(13), QStringLiteral("↵"));       // <0x0A>
            QCOMPARE(t->displayToken(12), QStringLiteral("→"));       // <0x09>
            QCOMPARE(t->displayToken(3 + 0x41), QStringLiteral("A")); // <0x41>
            QCOMPARE(t->displayToken(3 + 0x0D), QStringLiteral("\\x0D"));
            QCOMPARE(t->displayToken(235), QStringLiteral("\\xE8")); // a lone lead byte
            QCOMPARE(t->displayToken(1), QStringLiteral("<s>"));
            QCOMPARE(t->displayToken(0), QStringLiteral("<unk>"));
            QCOMPARE(t->displayToken(15043), QStringLiteral("␣Hello"));
            QCOMPARE(t->displayToken(10994), QStringLiteral("Hello")); // no "▁": inside a word
            QCOMPARE(t->displayToken(-1), QStringLiteral("⟨id -1⟩")); // no such token: named by its id
            QCOMPARE(t->displayToken(32000), QStringLiteral("⟨id 32000⟩"));
        }
        QCOMPARE(tokenLabels(*bin_, tokenizePrompt(*bin_, QStringLiteral("Hi\n you"), true)),
                 (QStringList{QStringLiteral("<s>"), QStringLiteral("␣Hi"), QStringLiteral("↵"), QStringLiteral("␣you")}));
    }

    void fromArraysWithoutBos() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // What the GGUF reader does: the arrays with their types and tokenizer.ggml.add_bos_token.
        SpmVocab vocab = bin_->vocab();
        QCOMPARE(vocab.pieces.size(), size_t(32000));
        QCOMPARE(vocab.pieces[29871], QByteArray("\xE2\x96\x81"));
        vocab.addBos = false;
        const auto tok = SpmTokenizer::fromVocab(vocab, QStringLiteral("model.gguf"));
        QVERIFY(!tok->addsBos());
        QCOMPARE(tok->bosId(), std::optional<int>(1));
        QCOMPARE(tokenizePrompt(*tok, QStringLiteral("Hello world"), tok->addsBos()), (std::vector<int>{15043, 3186}));
        QCOMPARE(tokenizePrompt(*tok, QStringLiteral("Hello world"), true), (std::vector<int>{1, 15043, 3186}));
        for (const auto& [text, ids] : readLlamaCppVectors()) QCOMPARE(tok->encode(text), ids);

        vocab.types.clear();
        vocab.scores.pop_back();
        QCOMPARE(modelErrorOf([&] { SpmTokenizer::fromVocab(vocab, QStringLiteral("model.gguf")); }),
                 QStringLiteral("model.gguf: 31999 scores for 32000 tokens"));
        vocab.scores.push_back(std::nanf(""));
        QCOMPARE(modelErrorOf([&] { SpmTokenizer::fromVocab(vocab, QStringLiteral("model.gguf")); }),
                 QStringLiteral("model.gguf: token 31999 has a NaN score"));
        vocab.scores.back() = 0;
        vocab.bos = 32000;
        QCOMPARE(modelErrorOf([&] { SpmTokenizer::fromVocab(vocab, QStringLiteral("model.gguf")); }),
                 QStringLiteral("model.gguf: BOS token id 32000 is outside the vocabulary (32000 tokens)"));
        SpmVocab bare;
        bare.pieces = {"a", "b"};
        bare.scores = {0, 0};
        QCOMPARE(modelErrorOf([&] { SpmTokenizer::fromVocab(bare, QStringLiteral("v")); }),
                 QStringLiteral("v: no byte tokens <0x00>..<0xFF> and no unknown token: text outside the vocabulary could not be encoded"));
        bare.unk = 0;
        bare.pieces = {"<unk>", "\xE2\x96\x81" "a"};
        const auto tiny = SpmTokenizer::fromVocab(bare, QStringLiteral("v"));
        QCOMPARE(tiny->encode(QStringLiteral("ab")), (std::vector<int>{1, 0})); // "b" unknown, no byte tokens: unk
    }

    void hfBosSettings() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // tokenizer_config.json's add_bos_token overrides the template (transformers LlamaTokenizerFast).
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QVERIFY(QFile::copy(llamaFile("tokenizer.json"), dir.filePath(QStringLiteral("tokenizer.json"))));
        writeFile(dir.filePath(QStringLiteral("tokenizer_config.json")), R"({"add_bos_token": false, "bos_token": "<s>"})");
        auto tok = loadTokenizerFromFolder(dir.path());
        QCOMPARE(tok->bosId(), std::optional<int>(1));
        QVERIFY(!tok->addsBos());
        QCOMPARE(tokenizePrompt(*tok, QStringLiteral("hello"), tok->addsBos()), std::vector<int>{22172});
        // No config: the TemplateProcessing [<s>, $A] decides.
        QFile::remove(dir.filePath(QStringLiteral("tokenizer_config.json")));
        tok = loadTokenizerFromFolder(dir.path());
        QVERIFY(tok->addsBos());
        QCOMPARE(tokenizePrompt(*tok, QStringLiteral("hello"), tok->addsBos()), (std::vector<int>{1, 22172}));
        // A broken config is an error naming it.
        writeFile(dir.filePath(QStringLiteral("tokenizer_config.json")), "{\"add_bos_token\": tru");
        QVERIFY(modelErrorOf([&] { loadTokenizerFromFolder(dir.path()); })
                    .startsWith(dir.filePath(QStringLiteral("tokenizer_config.json")) + QStringLiteral(": invalid JSON at offset")));
    }

    void metaspaceTokenizerJson() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // Newer conversions write the same tokenizer as pre_tokenizer Metaspace(prepend_scheme
        // "first", split false) with no normalizer: the same ids on texts without special tokens.
        QJsonObject root = readJsonObject(llamaFile("tokenizer.json"));
        root.insert("normalizer", QJsonValue());
        root.insert("pre_tokenizer", QJsonObject{{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}, {"split", false}});
        const auto tok = hfTokenizerFromJsonBytes(QJsonDocument(root).toJson(QJsonDocument::Compact), QStringLiteral("tokenizer.json"));
        for (const auto& [text, ids] : readLlamaCppVectors()) QCOMPARE(tok->encode(text), ids);
        // split true: merges stop at word starts; "▁▁" (259) cannot form across "▁" + "▁Hello".
        root.insert("pre_tokenizer", QJsonObject{{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}, {"split", true}});
        const auto split = hfTokenizerFromJsonBytes(QJsonDocument(root).toJson(QJsonDocument::Compact), QStringLiteral("tokenizer.json"));
        QCOMPARE(split->encode(QStringLiteral("Hello world")), (std::vector<int>{15043, 3186}));
        QCOMPARE(split->encode(QStringLiteral("   Hello")), (std::vector<int>{29871, 29871, 29871, 15043}));
        QCOMPARE(json_->encode(QStringLiteral("   Hello")), (std::vector<int>{1678, 15043})); // "▁▁▁" + "▁Hello" without split
    }

    /// A Gemma-style tokenizer.json written here from transformers' GemmaConverter: BPE with byte_fallback and merges,
    /// normalizer Replace(" ", "▁") with no Prepend (no dummy prefix), pre_tokenizer Split(" ", MergedWithPrevious)
    /// (nothing left to split once spaces are ▁), <start_of_turn> a special added token, BOS (<bos> = 2) added by the
    /// TemplateProcessing post-processor. Ids as SentencePiece BPE would give them by merge rank. Before, the Split
    /// pre_tokenizer was refused, so real Gemma folders (which ship this tokenizer.json) did not tokenize.
    void gemmaTokenizerJson() {
        const QJsonObject root = gemmaTokenizerRoot();
        const QJsonObject vocab = root.value("model").toObject().value("vocab").toObject();
        QTemporaryDir dir;
        writeFile(dir.filePath("tokenizer.json"), QJsonDocument(root).toJson());
        const auto tok = loadTokenizerFromFolder(dir.path());
        const auto id = [&](const char* piece) { return vocab.value(QString::fromUtf8(piece)).toInt(); };
        QCOMPARE(tok->encode("Hello world"), (std::vector<int>{id("Hello"), id("▁world")}));
        QCOMPARE(tok->encode("Hello"), std::vector<int>{id("Hello")}); // no dummy prefix
        QCOMPARE(tok->encode(" Hello"), (std::vector<int>{id("▁"), id("Hello")}));
        QCOMPARE(tok->encode("é"), (std::vector<int>{id("<0xC3>"), id("<0xA9>")})); // byte fallback, UTF-8 bytes
        // control tokens are text unless matching them is on (as for Llama), then whole units
        QCOMPARE(tok->encode("<eos>").size(), size_t(5));
        auto* spm = dynamic_cast<SpmTokenizer*>(tok.get());
        QVERIFY(spm);
        spm->setMatchSpecialTokens(true);
        QCOMPARE(tok->encode("<start_of_turn>user\nHello"), (std::vector<int>{4, id("user"), id("<0x0A>"), id("Hello")}));
        QCOMPARE(tok->bosId(), std::optional<int>(2));
        QVERIFY(tok->addsBos());
        QCOMPARE(tokenizePrompt(*tok, "Hello world", tok->addsBos()), (std::vector<int>{2, id("Hello"), id("▁world")}));
        const std::vector<int> ids{id("Hello"), id("▁world"), id("<0xC3>"), id("<0xA9>")};
        QCOMPARE(tok->decode(ids), QStringLiteral("Hello worldé"));
    }

    /// Gemma 3's tokenizer.json is Gemma 2's layout (GemmaConverter: the same BPE with byte fallback, normalizer,
    /// pre_tokenizer and post-processor) with more added tokens: <mask>, <start_of_image>/<end_of_image>, and
    /// <image_soft_token> at id 262 144, past the 262 144 pieces of model.vocab, which is also the vocab_size of the
    /// 270M and 1B configs. Written here in that layout at this suite's scale (no real Gemma 3 file is available offline):
    /// 512 pieces, the image token at 512, beside a random Gemma 3 folder whose vocab_size is 512. The folder opens (it
    /// was refused: "the tokenizer has 513 tokens but vocab_size is 512"), encodes as Gemma 2's, the image token is one
    /// unit when special tokens are matched, and a prompt holding it is refused by the forward pass by message. A
    /// tokenizer larger by an ordinary piece is still refused.
    void gemma3TokenizerJson() {
        QJsonObject root = gemmaTokenizerRoot(512);
        QJsonObject model = root.value("model").toObject();
        QJsonObject vocab = model.value("vocab").toObject();
        QJsonArray added = root.value("added_tokens").toArray();
        for (const auto& [tokenId, content] : {std::pair{497, "<mask>"}, std::pair{498, "<start_of_image>"}, std::pair{499, "<end_of_image>"}}) {
            vocab.remove(QStringLiteral("<unused%1>").arg(tokenId));
            vocab.insert(content, tokenId);
            added.append(QJsonObject{{"id", tokenId}, {"content", content}, {"special", true}});
        }
        added.append(QJsonObject{{"id", 512}, {"content", "<image_soft_token>"}, {"special", true}, {"normalized", false}});
        model.insert("vocab", vocab);
        root.insert("model", model);
        root.insert("added_tokens", added);
        QCOMPARE(vocab.size(), 512);
        QTemporaryDir tokDir, dir;
        const QString file = tokDir.filePath("tokenizer.json");
        writeFile(file, QJsonDocument(root).toJson());
        writeHfLlamaFolder(randomLlama(smallGemma3Spec(), 3), dir.path(), Storage::F32, file, "tokenizer.json");
        const std::shared_ptr<const Model> m = loadModel(dir.path());
        QCOMPARE(m->config().d_vocab, 512);
        const Tokenizer& tok = m->tokenizer();
        QCOMPARE(tok.vocabSize(), 513);
        const auto id = [&](const char* piece) { return vocab.value(QString::fromUtf8(piece)).toInt(); };
        QCOMPARE(tok.encode("Hello world"), (std::vector<int>{id("Hello"), id("▁world")}));
        QCOMPARE(tokenizePrompt(tok, "Hello world", tok.addsBos()), (std::vector<int>{2, id("Hello"), id("▁world")}));
        QCOMPARE(tok.tokenId("<image_soft_token>"), std::optional<int>(512));
        const ActivationCache run = runForward(*m, tokenizePrompt(tok, "Hello world", true));
        QCOMPARE(run.logits.cols(), Eigen::Index(512));
        auto spm = loadTokenizerFile(file);
        dynamic_cast<SpmTokenizer&>(*spm).setMatchSpecialTokens(true);
        const std::vector<int> withImage = spm->encode("<start_of_turn>user\n<image_soft_token>");
        QCOMPARE(withImage, (std::vector<int>{4, id("user"), id("<0x0A>"), 512}));
        try {
            runForward(*m, withImage);
            QFAIL("a token past the embedding ran");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromUtf8(e.what()), QStringLiteral("Token id 512 is outside the vocabulary [0, 512)."));
        }
        // the same folder with an ordinary piece at 512 instead: another model's vocabulary, refused as before
        added.removeLast();
        vocab.insert("Hellos", 512);
        model.insert("vocab", vocab);
        root.insert("model", model);
        root.insert("added_tokens", added);
        writeFile(dir.filePath("tokenizer.json"), QJsonDocument(root).toJson());
        QCOMPARE(modelErrorOf([&] { loadModel(dir.path())->tokenizer().vocabSize(); }),
                 QStringLiteral("config.json: the tokenizer has 513 tokens but vocab_size is 512"));
    }

    void llama2cFileErrors_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("problem");
        const QByteArray good = readBytes(testdata(QStringLiteral("stories260K/tok512.bin")));
        const qsizetype t5 = recordOffset(good, 5);
        QTest::newRow("empty") << QByteArray() << QStringLiteral("not a llama2.c tokenizer: 0 bytes, shorter than the 4-byte header");
        QTest::newRow("max_token_length 0") << withInt32(good, 0, 0) << QStringLiteral("not a llama2.c tokenizer: max_token_length is 0");
        QTest::newRow("truncated in a record") << good.left(t5 + 6)
                                               << QStringLiteral("token 5: truncated record at offset %1 (6 bytes left, a record needs 8 + its length)").arg(t5);
        QTest::newRow("truncated in a token's bytes") << good.left(t5 + 10)
                                                      << QStringLiteral("token 5: length 6 at offset %1 runs past the end of the file (2 bytes left)").arg(t5);
        QTest::newRow("length past the end") << withInt32(good, t5 + 4, 1000000000)
                                             << QStringLiteral("token 5: length 1000000000 at offset %1 runs past the end of the file (%2 bytes left)")
                                                    .arg(t5).arg(good.size() - t5 - 8);
        QTest::newRow("negative length") << withInt32(good, t5 + 4, -1) << QStringLiteral("token 5: negative length -1");
        QTest::newRow("above max_token_length") << withInt32(good, 0, 5) << QStringLiteral("token 2: length 6 exceeds max_token_length 5");
        QByteArray nan = good;
        qToLittleEndian<quint32>(0x7FC00000u, nan.data() + t5);
        QTest::newRow("NaN score") << nan << QStringLiteral("token 5 has a NaN score");
    }
    void llama2cFileErrors() {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, problem);
        const auto [path, message] = modelErrorOfFile(QStringLiteral("tokenizer.bin"), bytes, [](const QString& p) { loadLlama2cTokenizer(p); });
        QCOMPARE(message, path + QStringLiteral(": ") + problem);
    }

    void llama2cVocabSize() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QString path = testdata(QStringLiteral("stories260K/tok512.bin"));
        QCOMPARE(loadLlama2cTokenizer(path, 512)->vocabSize(), 512);
        QCOMPARE(loadLlama2cTokenizer(path, 300)->vocabSize(), 300); // run.c reads vocab_size tokens, ignores the rest
        QCOMPARE(modelErrorOf([&] { loadLlama2cTokenizer(path, 513); }), path + QStringLiteral(": token 512: truncated record at offset 6227 "
                                                                                             "(0 bytes left, a record needs 8 + its length)"));
        QCOMPARE(modelErrorOf([&] { loadLlama2cTokenizer(path, 1 << 30); }),
                 path + QStringLiteral(": the model's vocab_size is 1073741824, but the file (6227 bytes) can hold at most 777 tokens"));
        QCOMPARE(modelErrorOf([&] { loadLlama2cTokenizer(QStringLiteral("/nonexistent/tokenizer.bin")); }),
                 QStringLiteral("/nonexistent/tokenizer.bin: file not found"));
        QCOMPARE(loadTokenizerFile(path)->vocabSize(), 512);
        QCOMPARE(loadTokenizerFile(llamaFile("tokenizer.json"))->encode(QStringLiteral("hello")), std::vector<int>{22172});
    }

    void tokenizerJsonErrors_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("problem");
        const QByteArray model = R"("model": {"type": "BPE", "byte_fallback": true, "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3}, )";
        QTest::newRow("truncated") << QByteArray("{\"model\": {\"type\": \"BPE\", \"byte_fallback\": tr")
                                   << QStringLiteral("invalid JSON at offset 44: illegal value");
        QTest::newRow("merge not in vocab") << "{" + model + R"("merges": ["a b", "b c"]}, "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}})"
                                            << QStringLiteral("model.merges[1]: token \"c\" is not in the vocabulary");
        QTest::newRow("merged token not in vocab") << "{" + model + R"("merges": [["b", "a"]]}, "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}})"
                                                   << QStringLiteral("model.merges[0]: token \"ba\" is not in the vocabulary");
        QTest::newRow("unsupported normalizer") << "{" + model + R"("merges": []}, "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Lowercase"}]}})"
                                                << QStringLiteral("unsupported normalizer \"Lowercase\" for a SentencePiece-style BPE");
        QTest::newRow("no space escaping") << "{" + model + R"("merges": []}})"
                                           << QStringLiteral("unsupported SentencePiece-style tokenizer.json: no Replace(\" \", \"▁\") normalizer and no Metaspace pre_tokenizer");
        QTest::newRow("unk not in vocab") << QByteArray(R"({"model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "vocab": {"a": 0}, "merges": []},
                                                "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}})")
                                          << QStringLiteral("unk_token \"<unk>\" is not in the vocabulary");
        QTest::newRow("Unigram") << QByteArray(R"({"model": {"type": "Unigram", "byte_fallback": true, "vocab": []}})")
                                 << QStringLiteral("unsupported tokenizer model type \"Unigram\" (expected \"BPE\")");
        QTest::newRow("id conflict") << QByteArray(R"({"model": {"type": "BPE", "byte_fallback": true, "unk_token": "a", "vocab": {"a": 0, "b": 0}, "merges": []},
                                                  "pre_tokenizer": {"type": "Metaspace", "replacement": "▁"}})")
                                     << QStringLiteral("id 0 is used by both \"a\" and \"b\"");
    }
    void tokenizerJsonErrors() {
        QFETCH(QByteArray, json);
        QFETCH(QString, problem);
        const auto [path, message] = modelErrorOfFile(QStringLiteral("tokenizer.json"), json, [](const QString& p) { loadHfTokenizerJson(p); });
        QCOMPARE(message, path + QStringLiteral(": ") + problem);
    }

    void neverThrowsOnAnyText() {
        QRandomGenerator rng(13);
        for (int n = 0; n < 200; ++n) {
            QString s;
            const int length = int(rng.bounded(40));
            for (int i = 0; i < length; ++i) s += QChar(char16_t(rng.bounded(1, 0x10000))); // includes lone surrogates
            for (const SpmTokenizer* t : {bin_.get(), json_.get(), tok512_.get()}) {
                const std::vector<int> ids = t->encode(s);
                for (int id : ids) QVERIFY(id >= 0 && id < t->vocabSize());
                QString expected = s;
                for (qsizetype i = 0; i < expected.size(); ++i) {
                    if (expected[i].isHighSurrogate() && i + 1 < expected.size() && expected[i + 1].isLowSurrogate()) ++i;
                    else if (expected[i].isSurrogate()) expected[i] = QChar(0xFFFD);
                }
                QCOMPARE(t->decode(ids), expected);
            }
        }
    }

    void longPromptAndLargeVocabulary() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // A prompt of about 2,000 tokens (the 47 llama.cpp texts repeated): the same ids from every source,
        // and the text back. The CPU times are printed; speed targets live in bench/.
        QString prompt;
        while (bin_->encode(prompt).size() < 2000)
            for (const auto& [text, ids] : readLlamaCppVectors()) prompt += text + QLatin1Char(' ');
        for (const SpmTokenizer* t : {bin_.get(), json_.get()}) {
            std::vector<int> ids;
            const double ms = cpuMs([&] { ids = t->encode(prompt); });
            qInfo("%zu tokens encoded in %.1f ms CPU", ids.size(), ms);
            QCOMPARE(t->decode(ids), prompt);
        }
        QCOMPARE(json_->encode(prompt), bin_->encode(prompt));
        // A 128k-token vocabulary from arrays (a GGUF's) is indexed, and a piece past the bytes encodes to its id.
        SpmVocab big;
        for (int b = 0; b < 256; ++b) big.pieces.push_back(QStringLiteral("<0x%1>").arg(b, 2, 16, QLatin1Char('0')).toUpper().replace("<0X", "<0x").toUtf8());
        QRandomGenerator rng(5);
        QSet<QByteArray> seen;
        while (big.pieces.size() < 128256) {
            QByteArray piece = "\xE2\x96\x81";
            const int len = 1 + int(rng.bounded(8));
            for (int i = 0; i < len; ++i) piece += char('a' + rng.bounded(26));
            if (!seen.contains(piece)) {
                seen.insert(piece);
                big.pieces.push_back(piece);
            }
        }
        for (size_t i = 0; i < big.pieces.size(); ++i) big.scores.push_back(-float(i));
        big.types.assign(big.pieces.size(), TokenType::Normal);
        std::fill(big.types.begin(), big.types.begin() + 256, TokenType::Byte);
        std::unique_ptr<SpmTokenizer> tok;
        const double ms = cpuMs([&] { tok = SpmTokenizer::fromVocab(big, QStringLiteral("big.gguf")); });
        qInfo("128256-token vocabulary indexed in %.0f ms CPU", ms);
        QCOMPARE(tok->encode(QString::fromUtf8(big.pieces[300].mid(3))), std::vector<int>{300});
    }

    void concurrentEncode() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto cases = readLlamaCppVectors();
        QStringList many;
        for (int r = 0; r < 10; ++r)
            for (const auto& c : cases) many << c.first;
        const QList<std::vector<int>> parallel = QtConcurrent::blockingMapped(many, [&](const QString& s) { return json_->encode(s); });
        for (qsizetype i = 0; i < many.size(); ++i) QCOMPARE(parallel[i], cases[size_t(i) % cases.size()].second);
    }
};

QTEST_GUILESS_MAIN(TestLlamaTokenizer)
#include "tst_llama_tokenizer.moc"
