// GPT-2 byte-level BPE tokenizer against independent references: the llama.cpp GPT-2 test
// vectors (made with HF AutoTokenizer), 40 cases from npm gpt-3-encoder (cross-checked with a
// port of OpenAI encoder.py), and the tiny-gpt2 tokenizer cases from reference.json.

#include "model/core/errors.h"
#include "model/tokenizers/byte_unicode.h"
#include "model/tokenizers/gpt2_bpe_tokenizer.h"
#include "model/tokenizers/token_display.h"
#include "model/tokenizers/tokenizer_loader.h"
#include "tests/support/error_capture.h"
#include "tests/support/test_paths.h"
#include "tests/support/time_scale.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtConcurrent>
#include <QtTest>
#include <ctime>

using namespace attnscope;
using attnscope::test::kTimeScale;
using attnscope::test::modelErrorOf;
using attnscope::test::testdata;

namespace {

std::vector<int> toIds(const QJsonArray& a) {
    std::vector<int> ids;
    for (const QJsonValue& v : a) ids.push_back(v.toInt());
    return ids;
}

QJsonObject readJson(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) qFatal("cannot open %s", qPrintable(path));
    return QJsonDocument::fromJson(f.readAll()).object();
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) qFatal("cannot open %s", qPrintable(path));
    return f.readAll();
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size()) qFatal("cannot write %s", qPrintable(path));
}

QString gpt2Vocab() { return testdata(QStringLiteral("gpt2-tokenizer/encoder.json")); }
QString gpt2Merges() { return testdata(QStringLiteral("gpt2-tokenizer/vocab.bpe")); }
QString tinyDir() { return testdata(QStringLiteral("tiny-gpt2")); }

/// tokenizer.json equivalent to the tiny-gpt2 vocab.json + merges.txt. With `pairMerges`, merges
/// are [a, b] arrays and <|endoftext|> comes only from added_tokens (as in newer HF files).
QByteArray tinyTokenizerJson(bool pairMerges) {
    QJsonObject vocab = readJson(tinyDir() + QStringLiteral("/vocab.json"));
    if (pairMerges) vocab.remove(QStringLiteral("<|endoftext|>"));
    QJsonArray merges;
    const QList<QByteArray> lines = readAll(tinyDir() + QStringLiteral("/merges.txt")).split('\n');
    for (const QByteArray& line : lines) {
        if (line.isEmpty() || line.startsWith("#version")) continue;
        const QStringList parts = QString::fromUtf8(line).split(QLatin1Char(' '));
        if (pairMerges) merges.append(QJsonArray{parts[0], parts[1]});
        else merges.append(parts.join(QLatin1Char(' ')));
    }
    const QJsonObject model{{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"dropout", QJsonValue()}};
    const QJsonArray added{QJsonObject{{"id", 511}, {"content", "<|endoftext|>"}, {"special", true}}};
    return QJsonDocument(QJsonObject{{"version", "1.0"}, {"model", model}, {"added_tokens", added}}).toJson();
}

/// Independent reference for the invalid-UTF-16 policy: unpaired surrogates become U+FFFD.
QString replaceLoneSurrogates(QString s) {
    for (qsizetype i = 0; i < s.size(); ++i) {
        const bool pair = s[i].isHighSurrogate() && i + 1 < s.size() && s[i + 1].isLowSurrogate();
        if (pair) ++i;
        else if (s[i].isSurrogate()) s[i] = QChar(0xFFFD);
    }
    return s;
}

/// Straight transcription of OpenAI encoder.py bpe() + the encoder lookup, on token strings, for
/// one pretokenized word: rescans the whole word for the lowest-ranked pair on every step.
std::vector<int> referenceBpe(const QString& word, const QHash<QString, int>& ranks, const QJsonObject& encoder) {
    QStringList symbols;
    for (char c : word.toUtf8()) symbols << QString(byteToUnicode(uchar(c)));
    while (symbols.size() > 1) {
        int best = -1;
        QString first, second;
        for (qsizetype i = 0; i + 1 < symbols.size(); ++i) {
            const auto it = ranks.constFind(symbols[i] + QLatin1Char(' ') + symbols[i + 1]);
            if (it != ranks.constEnd() && (best < 0 || *it < best)) {
                best = *it;
                first = symbols[i];
                second = symbols[i + 1];
            }
        }
        if (best < 0) break;
        QStringList merged;
        for (qsizetype i = 0; i < symbols.size();) {
            if (i + 1 < symbols.size() && symbols[i] == first && symbols[i + 1] == second) {
                merged << first + second;
                i += 2;
            } else {
                merged << symbols[i++];
            }
        }
        symbols = merged;
    }
    std::vector<int> ids;
    for (const QString& s : symbols) ids.push_back(encoder.value(s).toInt(-1));
    return ids;
}

} // namespace

class TestTokenizer : public QObject {
    Q_OBJECT

    std::unique_ptr<Gpt2BpeTokenizer> gpt2_;
    std::unique_ptr<Gpt2BpeTokenizer> tiny_;

    void checkCase(const Tokenizer& tok, const QString& text, const std::vector<int>& expected) {
        const std::vector<int> ids = tok.encode(text);
        QCOMPARE(ids, expected);
        QCOMPARE(tok.decode(ids), text);
        QCOMPARE(tok.decodeBytes(ids), text.toUtf8());
    }

private slots:
    void initTestCase() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // CPU time, printed only: speed targets live in bench/ ("open + tokenizer ready").
        QElapsedTimer timer;
        timer.start();
        const std::clock_t cpuStart = std::clock();
        gpt2_ = Gpt2BpeTokenizer::fromVocabAndMerges(gpt2Vocab(), gpt2Merges());
        const double cpuMs = 1000.0 * double(std::clock() - cpuStart) / CLOCKS_PER_SEC;
        qInfo("GPT-2 vocab (50257) + merges (50000) loaded in %.0f ms CPU, %lld ms wall", cpuMs, timer.elapsed());
        tiny_ = Gpt2BpeTokenizer::fromVocabAndMerges(tinyDir() + QStringLiteral("/vocab.json"),
                                                     tinyDir() + QStringLiteral("/merges.txt"));
    }

    void byteUnicodeTable() {
        // encoder.py bytes_to_unicode(): printable Latin-1 keeps its code point, the other 68
        // bytes get U+0100.. in byte order.
        QCOMPARE(byteToUnicode(' '), QChar(0x120));
        QCOMPARE(byteToUnicode('\n'), QChar(0x10A));
        QCOMPARE(byteToUnicode(0x00), QChar(0x100));
        QCOMPARE(byteToUnicode(0x7F), QChar(0x121));
        QCOMPARE(byteToUnicode(0xAD), QChar(0x143));
        QCOMPARE(byteToUnicode('A'), QChar('A'));
        QCOMPARE(byteToUnicode(0xF0), QChar(0xF0));
        for (int b = 0; b < 256; ++b) QCOMPARE(unicodeToByte(byteToUnicode(uchar(b))), b);
        QCOMPARE(unicodeToByte(QChar(0x144)), -1);
        QCOMPARE(bytesToUnicodeString(" the\n"), QStringLiteral("Ġthe\u010A"));
        QCOMPARE(unicodeStringToBytes(u"Ġthe"), QByteArray(" the"));
        QCOMPARE(unicodeStringToBytes(u"a€b"), QByteArray("a\xE2\x82\xAC" "b")); // outside the table: UTF-8
    }

    void vocabulary() {
        QCOMPARE(gpt2_->vocabSize(), 50257);
        QCOMPARE(gpt2_->mergeCount(), 50000);
        QCOMPARE(gpt2_->bosId(), std::optional<int>(50256));
        QCOMPARE(gpt2_->tokenString(262), QStringLiteral("Ġthe"));
        QCOMPARE(gpt2_->tokenId(QStringLiteral("Ġthe")), std::optional<int>(262));
        QCOMPARE(gpt2_->tokenId(QStringLiteral("Ġworld")), std::optional<int>(995));
        QCOMPARE(gpt2_->tokenString(50256), QStringLiteral("<|endoftext|>"));
        QCOMPARE(gpt2_->tokenId(QStringLiteral("not a token")), std::nullopt);
        QCOMPARE(gpt2_->tokenString(-1), QString());
        QCOMPARE(gpt2_->tokenString(50257), QString());
        QCOMPARE(tiny_->vocabSize(), 512);
        QCOMPARE(tiny_->mergeCount(), 255);
        QCOMPARE(tiny_->bosId(), std::optional<int>(511));
    }

    void llamaCppVectors_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QString>("text");
        QTest::addColumn<std::vector<int>>("ids");
        const QString inp = QString::fromUtf8(readAll(testdata(QStringLiteral("gpt2-tokenizer/ggml-vocab-gpt-2.gguf.inp"))));
        QStringList texts = inp.split(QStringLiteral("\n__ggml_vocab_test__\n"));
        QCOMPARE(texts.takeLast(), QString()); // the file ends with a separator
        const QList<QByteArray> lines = readAll(testdata(QStringLiteral("gpt2-tokenizer/ggml-vocab-gpt-2.gguf.out"))).split('\n');
        QCOMPARE(texts.size(), 46);
        QVERIFY(lines.size() >= 46);
        for (int i = 0; i < 46; ++i) {
            std::vector<int> ids;
            for (const QByteArray& tok : lines[i].split(' '))
                if (!tok.isEmpty()) ids.push_back(tok.toInt());
            QTest::addRow("case %d", i + 1) << texts[i] << ids;
        }
    }
    void llamaCppVectors() {
        QFETCH(QString, text);
        QFETCH(std::vector<int>, ids);
        checkCase(*gpt2_, text, ids);
    }

    void casesJson_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QString>("text");
        QTest::addColumn<std::vector<int>>("ids");
        QTest::addColumn<QStringList>("tokens");
        const QJsonArray cases = readJson(testdata(QStringLiteral("gpt2-tokenizer/cases.json"))).value("cases").toArray();
        QCOMPARE(cases.size(), 40);
        for (const QJsonValue& v : cases) {
            const QJsonObject c = v.toObject();
            const QString text = c.value("text").toString();
            QCOMPARE(text.toUtf8().toHex(), c.value("utf8_hex").toString().toLatin1());
            QStringList tokens;
            for (const QJsonValue& t : c.value("tokens").toArray()) tokens << t.toString();
            QTest::newRow(qPrintable(c.value("name").toString())) << text << toIds(c.value("ids").toArray()) << tokens;
        }
    }
    void casesJson() {
        QFETCH(QString, text);
        QFETCH(std::vector<int>, ids);
        QFETCH(QStringList, tokens);
        checkCase(*gpt2_, text, ids);
        QStringList strings;
        for (int id : gpt2_->encode(text)) strings << gpt2_->tokenString(id);
        QCOMPARE(strings, tokens);
        for (const QString& t : tokens) QCOMPARE(gpt2_->tokenString(*gpt2_->tokenId(t)), t);
    }

    void matchesReferenceBpeOnRandomWords() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // Random single-pretoken words (letters, optional leading space), including long repetitive
        // ones where merge order matters most, against the naive encoder.py algorithm.
        QHash<QString, int> ranks;
        const QList<QByteArray> lines = readAll(gpt2Merges()).split('\n');
        for (qsizetype i = 1; i < lines.size(); ++i)
            if (!lines[i].isEmpty()) ranks.insert(QString::fromUtf8(lines[i]), int(i - 1));
        QCOMPARE(ranks.size(), 50000);
        const QJsonObject encoder = readJson(gpt2Vocab());
        QRandomGenerator rng(7);
        const QString alphabets[] = {QStringLiteral("abcdefghijklmnopqrstuvwxyz"), QStringLiteral("ab"), QStringLiteral("aeiou"),
                                     QStringLiteral("éèàçñü"), QStringLiteral("日本語の"), QStringLiteral("ΑΒΓαβγ")};
        for (int n = 0; n < 400; ++n) {
            const QString& alphabet = alphabets[n % std::size(alphabets)];
            const int length = n % 10 == 0 ? 100 + int(rng.bounded(300)) : 1 + int(rng.bounded(24));
            QString word = rng.bounded(2) ? QStringLiteral(" ") : QString();
            for (int i = 0; i < length; ++i) word += alphabet[rng.bounded(int(alphabet.size()))];
            QCOMPARE(gpt2_->encode(word), referenceBpe(word, ranks, encoder));
        }
        for (const QString& word : {QString(301, QLatin1Char('a')), QStringLiteral("ab").repeated(150), QStringLiteral(" ") + QString(77, QLatin1Char('e'))})
            QCOMPARE(gpt2_->encode(word), referenceBpe(word, ranks, encoder));
    }

    void endOfTextIsPlainText() {
        QCOMPARE(gpt2_->encode(QStringLiteral("<|endoftext|>")), (std::vector<int>{27, 91, 437, 1659, 5239, 91, 29}));
        const int eot = 50256;
        QCOMPARE(gpt2_->decode(std::span<const int>(&eot, 1)), QStringLiteral("<|endoftext|>"));
    }

    void tinyReference() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QJsonObject ref = readJson(tinyDir() + QStringLiteral("/reference.json"));
        const QJsonArray cases = ref.value("tokenizer_cases").toArray();
        QCOMPARE(cases.size(), 6);
        for (const QJsonValue& v : cases) {
            const QJsonObject c = v.toObject();
            checkCase(*tiny_, c.value("text").toString(), toIds(c.value("ids").toArray()));
        }
        checkCase(*tiny_, ref.value("prompt").toString(), toIds(ref.value("prompt_token_ids").toArray()));
        std::vector<int> withBos = toIds(ref.value("token_ids").toArray());
        QCOMPARE(withBos.front(), *tiny_->bosId());
        withBos.erase(withBos.begin());
        QCOMPARE(tiny_->encode(ref.value("prompt").toString()), withBos);
    }

    void tokenizerJsonMatchesVocabAndMerges_data() {
        QTest::addColumn<bool>("pairMerges");
        QTest::newRow("\"a b\" merges") << false;
        QTest::newRow("[a, b] merges, <|endoftext|> only in added_tokens") << true;
    }
    void tokenizerJsonMatchesVocabAndMerges() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(bool, pairMerges);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("tokenizer.json"));
        writeFile(path, tinyTokenizerJson(pairMerges));
        const auto fromJson = Gpt2BpeTokenizer::fromTokenizerJson(path);
        QCOMPARE(fromJson->vocabSize(), tiny_->vocabSize());
        QCOMPARE(fromJson->mergeCount(), tiny_->mergeCount());
        QCOMPARE(fromJson->bosId(), std::optional<int>(511));
        for (int id = 0; id < tiny_->vocabSize(); ++id) {
            QCOMPARE(fromJson->tokenString(id), tiny_->tokenString(id));
            QCOMPARE(fromJson->tokenBytes(id), tiny_->tokenBytes(id));
        }
        const QJsonObject ref = readJson(tinyDir() + QStringLiteral("/reference.json"));
        for (const QJsonValue& v : ref.value("tokenizer_cases").toArray()) {
            const QJsonObject c = v.toObject();
            checkCase(*fromJson, c.value("text").toString(), toIds(c.value("ids").toArray()));
        }
        checkCase(*fromJson, ref.value("prompt").toString(), toIds(ref.value("prompt_token_ids").toArray()));
        // Same ids as the vocab.json + merges.txt tokenizer on every GPT-2 test text.
        for (const QJsonValue& v : readJson(testdata(QStringLiteral("gpt2-tokenizer/cases.json"))).value("cases").toArray()) {
            const QString text = v.toObject().value("text").toString();
            QCOMPARE(fromJson->encode(text), tiny_->encode(text));
        }
    }

    void displayStrings() {
        const Tokenizer& t = *gpt2_;
        auto id = [&](const QString& s) { return *gpt2_->tokenId(s); };
        QCOMPARE(t.displayToken(262), QStringLiteral("␣the"));
        QCOMPARE(t.displayToken(198), QStringLiteral("↵"));
        QCOMPARE(t.displayToken(197), QStringLiteral("→"));
        QCOMPARE(t.displayToken(220), QStringLiteral("␣"));
        QCOMPARE(t.displayToken(id(QStringLiteral("ĊĊ"))), QStringLiteral("↵↵"));
        QCOMPARE(t.displayToken(15496), QStringLiteral("Hello"));
        QCOMPARE(t.displayToken(201), QStringLiteral("\\x0D"));               // "\r"
        QCOMPARE(t.displayToken(id(QStringLiteral("ð"))), QStringLiteral("\\xF0")); // lone lead byte
        QCOMPARE(t.displayToken(8582), QStringLiteral("\\xF0\\x9F"));          // "ðŁ": half an emoji
        QCOMPARE(t.displayToken(id(QStringLiteral("Ã©"))), QStringLiteral("é"));
        QCOMPARE(t.displayToken(id(QStringLiteral("Ġcaf"))) + t.displayToken(id(QStringLiteral("Ã©"))), QStringLiteral("␣café"));
        QCOMPARE(t.displayToken(50256), QStringLiteral("<|endoftext|>"));
        QCOMPARE(t.displayToken(-5), QStringLiteral("⟨id -5⟩")); // no such token: named by its id
        QCOMPARE(t.displayToken(99999), QStringLiteral("⟨id 99999⟩"));
        // Straight from bytes: DEL and a C1 control are escaped; invalid UTF-8 (overlong, bare
        // continuation) escapes every byte.
        QCOMPARE(displayTokenBytes("   "), QStringLiteral("␣␣␣"));
        QCOMPARE(displayTokenBytes("\n    "), QStringLiteral("↵␣␣␣␣"));
        QCOMPARE(displayTokenBytes("a\x7F"), QStringLiteral("a\\x7F"));
        QCOMPARE(displayTokenBytes("\xC2\x85"), QStringLiteral("\\xC2\\x85"));
        QCOMPARE(displayTokenBytes("\xC0\xAF"), QStringLiteral("\\xC0\\xAF"));
        QCOMPARE(displayTokenBytes("ab\x9F"), QStringLiteral("\\x61\\x62\\x9F"));
        QCOMPARE(displayTokenBytes("\xF0\x9F\x98\x80"), QStringLiteral("😀"));
        QCOMPARE(displayTokenBytes(QByteArray()), QString());
    }

    void decodeUnknownIds() {
        const std::vector<int> ids{15496, -1, 50257, 1 << 30, 995};
        QCOMPARE(gpt2_->decode(ids), QStringLiteral("Hello world"));
        QCOMPARE(gpt2_->decodeBytes({}), QByteArray());
        // Half an emoji decodes to U+FFFD as text, but the bytes are kept exactly.
        const std::vector<int> half{8582};
        QCOMPARE(gpt2_->decodeBytes(half), QByteArray("\xF0\x9F"));
        QCOMPARE(gpt2_->decode(half), QString::fromUtf8("\xF0\x9F"));
        QVERIFY(gpt2_->decode(half).contains(QChar(0xFFFD)));
    }

    // Each row: file contents ("<tiny>": the tiny-gpt2 file, "<missing>": no file), which file the
    // message must blame, and the problem after "<file>: " (a trailing "*" matches a prefix).
    void vocabAndMergesErrors_data() {
        QTest::addColumn<QByteArray>("vocab");
        QTest::addColumn<QByteArray>("merges");
        QTest::addColumn<bool>("blameMerges");
        QTest::addColumn<QString>("problem");
        auto row = [](const char* name, QByteArray vocab, QByteArray merges, bool blameMerges, const QString& problem) {
            QTest::newRow(name) << vocab << merges << blameMerges << problem;
        };
        row("missing vocab", "<missing>", "<tiny>", false, QStringLiteral("file not found"));
        row("missing merges", "<tiny>", "<missing>", true, QStringLiteral("file not found"));
        row("invalid JSON", "{\"a\": 1,, }", "<tiny>", false, QStringLiteral("invalid JSON at offset *"));
        row("JSON array", "[1, 2]", "<tiny>", false, QStringLiteral("invalid JSON: expected an object at the top level"));
        row("fractional id", "{\"a\": 1.5}", "<tiny>", false, QStringLiteral("token \"a\" has a non-integer id"));
        row("negative id", "{\"a\": -3}", "<tiny>", false, QStringLiteral("token \"a\" has an invalid id -3"));
        // fuzz_tokenizer_files regression: an id beyond qint64 was cast from double (undefined behaviour)
        row("id beyond int64", "{\"a\": 1.19223e+22}", "<tiny>", false, QStringLiteral("token \"a\" has an invalid id 1.19223e+22"));
        row("id beyond the limit", "{\"a\": 16777216}", "<tiny>", false, QStringLiteral("token \"a\" has an invalid id 1.67772e+07"));
        row("shared id", "{\"a\": 0, \"b\": 0}", "<tiny>", false, QStringLiteral("id 0 is used by both \"a\" and \"b\""));
        // A merge naming a token that is not in the vocabulary: rejected, with file and line ...
        row("merge part not in vocab", "<tiny>", "#version: 0.2\n\xC4\xA0 t\nzz q\n", true,
            QStringLiteral("line 3: token \"zz\" is not in the vocabulary"));
        // ... or whose result is not in the vocabulary ("Ġt" + "Ġt").
        row("merge result not in vocab", "<tiny>", "\xC4\xA0t \xC4\xA0t\n", true,
            QStringLiteral("line 1: token \"ĠtĠt\" is not in the vocabulary"));
        row("three tokens", "<tiny>", "#version: 0.2\na b c\n", true,
            QStringLiteral("line 2: expected two tokens separated by one space, got \"a b c\""));
        row("not byte-level", "{\"a\": 0, \"b\": 1}", "#version: 0.2\n", false,
            QStringLiteral("not a byte-level BPE vocabulary: no token for byte 0x00 (\"Ā\")"));
    }
    void vocabAndMergesErrors() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QByteArray, vocab);
        QFETCH(QByteArray, merges);
        QFETCH(bool, blameMerges);
        QFETCH(QString, problem);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        auto place = [&](const QByteArray& content, const QString& name) {
            if (content == "<tiny>") return tinyDir() + QLatin1Char('/') + name;
            if (content != "<missing>") writeFile(dir.filePath(name), content);
            return dir.filePath(name);
        };
        const QString vocabPath = place(vocab, QStringLiteral("vocab.json"));
        const QString mergesPath = place(merges, QStringLiteral("merges.txt"));
        const QString msg = modelErrorOf([&] { Gpt2BpeTokenizer::fromVocabAndMerges(vocabPath, mergesPath); });
        const QString expected = (blameMerges ? mergesPath : vocabPath) + QStringLiteral(": ") + problem;
        if (problem.endsWith(QLatin1Char('*'))) QVERIFY2(msg.startsWith(expected.chopped(1)), qPrintable(msg));
        else QCOMPARE(msg, expected);
    }

    void tokenizerJsonErrors_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("problem");
        QTest::newRow("Unigram") << QByteArray("{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}")
                                 << QStringLiteral("unsupported tokenizer model type \"Unigram\" (expected \"BPE\")");
        QTest::newRow("bad merge entry")
            << QByteArray("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\", 7]}}")
            << QStringLiteral("model.merges[1]: expected a string \"a b\" or a pair [a, b]");
        QTest::newRow("pair merge not in vocab")
            << QByteArray("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [[\"a\", \"x\"]]}}")
            << QStringLiteral("model.merges[0]: token \"x\" is not in the vocabulary");
        QTest::newRow("added token id conflict")
            << QByteArray("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": []},"
                          " \"added_tokens\": [{\"id\": 5, \"content\": \"b\"}]}")
            << QStringLiteral("added token \"b\" has id 5 but the vocabulary gives it id 1");
        QTest::newRow("truncated") << QByteArray("{\"model\": {\"type\": \"BPE\"") << QStringLiteral("invalid JSON at offset *");
    }
    void tokenizerJsonErrors() {
        QFETCH(QByteArray, json);
        QFETCH(QString, problem);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("tokenizer.json"));
        writeFile(path, json);
        const QString msg = modelErrorOf([&] { Gpt2BpeTokenizer::fromTokenizerJson(path); });
        const QString expected = path + QStringLiteral(": ") + problem;
        if (problem.endsWith(QLatin1Char('*'))) QVERIFY2(msg.startsWith(expected.chopped(1)), qPrintable(msg));
        else QCOMPARE(msg, expected);
    }

    void loadFromFolder() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto tok = loadTokenizerFromFolder(tinyDir());
        QCOMPARE(tok->vocabSize(), 512);
        QCOMPARE(tok->encode(QStringLiteral("Hello world")), (std::vector<int>{39, 68, 297, 78, 476, 335}));

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QCOMPARE(modelErrorOf([&] { loadTokenizerFromFolder(dir.path()); }),
                 dir.path() + QStringLiteral(": no tokenizer: expected vocab.json and merges.txt, tokenizer.json, "
                                                "tokenizer.model or llama2.c's tokenizer.bin"));
        // vocab.json alone is not enough; tokenizer.json is the fallback.
        QVERIFY(QFile::copy(tinyDir() + QStringLiteral("/vocab.json"), dir.filePath(QStringLiteral("vocab.json"))));
        QVERIFY(!modelErrorOf([&] { loadTokenizerFromFolder(dir.path()); }).isEmpty());
        writeFile(dir.filePath(QStringLiteral("tokenizer.json")), tinyTokenizerJson(true));
        const auto fromJson = loadTokenizerFromFolder(dir.path());
        QCOMPARE(fromJson->encode(QStringLiteral("Hello world")), (std::vector<int>{39, 68, 297, 78, 476, 335}));
        QCOMPARE(fromJson->bosId(), std::optional<int>(511));
    }

    void invalidUtf16() {
        const QChar hi(0xD83D), lo(0xDE00);
        const QList<QString> inputs{
            QString(hi),
            QString(lo),
            QStringLiteral("a") + hi + QStringLiteral("b"),
            QStringLiteral("a") + lo + hi + QStringLiteral(" b"),  // reversed pair
            QStringLiteral("end ") + hi,
            QString(hi) + hi + lo,                                 // lone, then a valid pair (😀)
        };
        for (const QString& s : inputs) {
            const QString expected = replaceLoneSurrogates(s);
            const std::vector<int> ids = gpt2_->encode(s);
            QVERIFY(!ids.empty());
            QCOMPARE(ids, gpt2_->encode(expected));
            QCOMPARE(gpt2_->decode(ids), expected);
        }
        // U+FFFD is bytes EF BF BD, GPT-2 token 4210 "ï¿½".
        QCOMPARE(gpt2_->encode(QString(hi)), (std::vector<int>{4210}));
        QCOMPARE(gpt2_->encode(QString(QChar(0))), (std::vector<int>{188})); // NUL is byte token "Ā"
    }

    // A prompt that starts with U+FEFF (text pasted from a file with a byte-order mark) keeps it through
    // encode → decode, as Hugging Face's decode does; QString::fromUtf8 drops a leading EF BB BF, so
    // decode lost it (found by fuzz_prompt).
    void byteOrderMark() {
        const QString bom(QChar(0xFEFF));
        for (const QString& text : {bom + QStringLiteral("Hello"), bom, bom + bom + QStringLiteral(" x")}) {
            const std::vector<int> ids = gpt2_->encode(text);
            QVERIFY(gpt2_->decodeBytes(ids).startsWith("\xEF\xBB\xBF"));
            QCOMPARE(gpt2_->decode(ids), text);
        }
        QCOMPARE(utf8Text("\xEF\xBB\xBF" "a"), bom + QStringLiteral("a"));
        QCOMPARE(utf8Text("a\xF0\x9F\xC0z"), QString::fromUtf8("a\xF0\x9F\xC0z")); // invalid or cut sequences: U+FFFD as before
        QCOMPARE(displayTokenBytes("\xEF\xBB\xBF"), bom);               // not an empty label
    }

    void longInputs() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QString mixed;
        const QJsonArray cases = readJson(testdata(QStringLiteral("gpt2-tokenizer/cases.json"))).value("cases").toArray();
        for (int i = 0; mixed.size() < 100 * 1024; ++i) mixed += cases.at(i % cases.size()).toObject().value("text").toString() + QLatin1Char('\n');
        QString random;
        QRandomGenerator rng(42);
        for (int i = 0; i < 100 * 1024; ++i) random += QChar(char16_t(rng.bounded(1, 0x10000)));
        const QList<QString> inputs{
            mixed,
            QString(100 * 1024, QLatin1Char('a')),      // one 100K-letter word
            QString(100 * 1024, QLatin1Char(' ')),
            QString(100 * 1024, QChar(0x65E5)),          // "日" x 100K: 300 KB of UTF-8 in one word
            QStringLiteral("ab1!").repeated(25 * 1024),
            random,                                      // includes lone surrogates
        };
        for (const QString& s : inputs) {
            QElapsedTimer timer;
            timer.start();
            const std::vector<int> ids = gpt2_->encode(s);
            const qint64 ms = timer.elapsed();
            QVERIFY(!ids.empty());
            qInfo("%lld UTF-16 units -> %zu tokens in %lld ms", qint64(s.size()), ids.size(), ms);
            QVERIFY2(ms < 5000 * kTimeScale, qPrintable(QStringLiteral("encoding took %1 ms").arg(ms)));
            QCOMPARE(gpt2_->decode(ids), replaceLoneSurrogates(s));
        }
        // 100K 'a' with GPT-2 merges: "aa" pairs merge first, the result is periodic.
        const std::vector<int> aaaa = gpt2_->encode(QString(1024, QLatin1Char('a')));
        QVERIFY(aaaa.size() < 1024 / 2);
    }

    void concurrentEncodeMatchesSequential() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // A fresh tokenizer (empty cache) hit from several threads at once.
        const auto tok = Gpt2BpeTokenizer::fromVocabAndMerges(gpt2Vocab(), gpt2Merges());
        QStringList texts;
        for (const QJsonValue& v : readJson(testdata(QStringLiteral("gpt2-tokenizer/cases.json"))).value("cases").toArray())
            texts << v.toObject().value("text").toString();
        QStringList many;
        for (int r = 0; r < 20; ++r) many += texts;
        const QList<std::vector<int>> parallel =
            QtConcurrent::blockingMapped(many, [&](const QString& s) { return tok->encode(s); });
        for (qsizetype i = 0; i < many.size(); ++i) QCOMPARE(parallel[i], gpt2_->encode(many[i]));
    }
};

QTEST_GUILESS_MAIN(TestTokenizer)
#include "tst_tokenizer.moc"
