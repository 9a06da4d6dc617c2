// The command line on Llama models, run as a real process: stories260K as llama2.c .bin with
// --tokenizer tok512.bin and as .gguf, --dump-json with --generate 16 (run.c's logits at the last prompt
// position ≤ 1e-4 and its first 16 greedy ids), --token-ids instead of a prompt, --tokenize (5 of run.c's 14
// encode() cases); and --tokenize on the vocab-only Llama 2 GGUF for 7 of llama.cpp's 47 vectors (no BOS)
// and 4 of the 18 cases of llama2_spm_tokenizer_vectors.json (with BOS), all exact. Each case is a process
// (~40 ms), so only a few that stress the command line's text and BOS handling (empty text, newlines,
// byte fallback, "<s>"); every case goes through the same loaders in tst_llama_stories and
// tst_llama_tokenizer.

#include "model/formats/model_loader.h"
#include "support/cli_process.h"
#include "support/reference_json.h"
#include "support/safetensors_writer.h"
#include "support/stories_reference.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

CliRun runExe(const QStringList& args) { return runCli(attnscope::test::attnscopeExe(), args); }

/// The ids --tokenize prints on stdout.
std::vector<int> tokenizedIds(const CliRun& r) {
    return intsFromJson(QJsonDocument::fromJson(r.out.toUtf8()).object().value("token_ids").toArray());
}

QString llamaFile(const char* name) { return testdata(QStringLiteral("llama/") + QLatin1String(name)); }

} // namespace

class TestCliLlama : public QObject {
    Q_OBJECT

    std::vector<StoriesPrompt> prompts_ = testdataAvailable() ? storiesPrompts() : std::vector<StoriesPrompt>{};

private slots:
    void dumpJsonWithGeneration_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QStringList>("model");
        QTest::addColumn<QStringList>("input");
        const StoriesPrompt& p = prompts_[0];
        QStringList ids;
        for (int id : p.ids) ids << QString::number(id);
        const QStringList bin{"--model", storiesFile("stories260K.bin"), "--tokenizer", storiesFile("tok512.bin")};
        const QStringList gguf{"--model", storiesFile("stories260K.gguf")};
        QTest::newRow(".bin --prompt") << bin << QStringList{"--prompt", p.text};
        QTest::newRow(".bin --token-ids") << bin << QStringList{"--token-ids", ids.join(',')};
        QTest::newRow(".gguf --prompt") << gguf << QStringList{"--prompt", p.text};
        QTest::newRow(".gguf --token-ids") << gguf << QStringList{"--token-ids", ids.join(',')};
    }
    void dumpJsonWithGeneration() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QStringList, model);
        QFETCH(QStringList, input);
        const StoriesPrompt& p = prompts_[0];
        QTemporaryDir dir;
        const QString out = dir.filePath("dump.json");
        const CliRun r = runExe(model + input + QStringList{"--generate", "16", "--dump-json", out});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QJsonObject dump = readJsonObject(out);
        QCOMPARE(intsFromJson(dump["token_ids"].toArray()), p.ids);
        QCOMPARE(intsFromJson(dump["generated_ids"].toArray()), std::vector<int>(p.continuation.begin(), p.continuation.begin() + 16));
        // each generated id's text beside it, as "tokens" beside "token_ids"
        const QJsonArray generatedTokens = dump["generated_tokens"].toArray();
        QCOMPARE(generatedTokens.size(), 16);
        const auto tok = loadTokenizerOnly(storiesFile("tok512.bin"));
        for (int i = 0; i < 16; ++i)
            QCOMPARE(generatedTokens[i].toString(), QString::fromUtf8(tok->tokenBytes(p.continuation[size_t(i)])));
        QCOMPARE(dump["top_next_tokens"].toArray()[0].toObject()["id"].toInt(), 432); // ","
        const QJsonArray last = dump["logits_last"].toArray();
        QCOMPARE(last.size(), 512);
        double d = 0;
        for (int v = 0; v < 512; ++v) d = std::max(d, std::abs(last[v].toDouble() - double(p.logits(4, v))));
        QVERIFY2(d <= 1e-4, qPrintable(QString::number(d)));
    }

    void tokenizeStories_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QString>("text");
        QTest::addColumn<std::vector<int>>("ids");
        const auto cases = storiesTokenizerCases();
        QCOMPARE(cases.size(), size_t(14));
        for (const size_t i : {0, 1, 6, 10, 11}) // "", "Once upon a time", "new\nline", "你好", "emoji 😀"
            QTest::addRow("case %d", int(i + 1)) << cases[i].text << cases[i].ids;
    }
    /// --tokenize with the checkpoint and --tokenizer tok512.bin (the model's BOS default: on).
    void tokenizeStories() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QString, text);
        QFETCH(std::vector<int>, ids);
        const CliRun r = runExe({"--model", storiesFile("stories260K.bin"), "--tokenizer", storiesFile("tok512.bin"), "--prompt", text, "--tokenize"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(tokenizedIds(r), ids);
    }

    void tokenizeVocabOnlyGguf_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("bos");
        QTest::addColumn<std::vector<int>>("ids");
        const QStringList texts = QString::fromUtf8(readFile(llamaFile("ggml-vocab-llama-spm.gguf.inp"))).split("\n__ggml_vocab_test__\n");
        const QList<QByteArray> lines = readFile(llamaFile("ggml-vocab-llama-spm.gguf.out")).split('\n');
        QCOMPARE(texts.size(), 47);
        for (const qsizetype i : {0, 2, 3, 7, 18, 28, 32}) { // ½, "", " ", "\n", 🦙 bytes, two lines, mixed scripts
            std::vector<int> ids;
            for (const QByteArray& t : lines.value(i).split(' '))
                if (!t.isEmpty()) ids.push_back(t.toInt());
            QTest::addRow("llama.cpp %d", int(i + 1)) << texts[i] << false << ids;
        }
        const QJsonArray vectors = readJsonObject(llamaFile("llama2_spm_tokenizer_vectors.json"))["vectors"].toArray();
        QCOMPARE(vectors.size(), 18);
        for (const qsizetype i : {1, 6, 13, 17}) { // a sentence, CJK with byte fallback, "" (BOS alone), "<s>"
            const QJsonObject v = vectors[i].toObject();
            std::vector<int> ids = intsFromJson(v["ids_with_bos"].toArray());
            // HF matches the literal "<s>" as BOS ([1, 1]); the CLI reads it as text after one BOS (prompt.h)
            if (v["text"].toString() == QLatin1String("<s>")) ids = {1, 529, 29879, 29958};
            QTest::addRow("vectors.json %d", int(i + 1)) << v["text"].toString() << true << ids;
        }
    }
    /// --tokenize on ggml-vocab-llama-spm.gguf (no tensors): its embedded vocabulary, without a model.
    void tokenizeVocabOnlyGguf() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QString, text);
        QFETCH(bool, bos);
        QFETCH(std::vector<int>, ids);
        const CliRun r = runExe({"--model", llamaFile("ggml-vocab-llama-spm.gguf"), "--prompt", text, bos ? "--bos" : "--no-bos", "--tokenize"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(tokenizedIds(r), ids);
    }
};

QTEST_GUILESS_MAIN(TestCliLlama)
#include "tst_cli_llama.moc"
