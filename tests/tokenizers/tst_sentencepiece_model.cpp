// tokenizer.model through libsentencepiece, on small models spm_train makes here from the Llama test
// texts. The library is the reference: a BPE model with byte fallback and identity normalization must
// give the same ids through SpmTokenizer's own score-greedy merge of its pieces and scores.

#include "model/tokenizers/sentencepiece_model_file.h"
#include "model/tokenizers/tokenizer_loader.h"
#include "model/transformer/prompt.h"
#include "tests/support/error_capture.h"
#include "tests/support/reference_json.h"
#include "tests/support/safetensors_writer.h"
#include "tests/support/test_paths.h"

#include <QJsonArray>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

class TestSentencePieceModel : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QStringList texts_;

    /// Runs spm_train on the corpus with `options`; returns the model's path.
    QString train(const QString& name, const QStringList& options) {
        const QString spmTrain = QStandardPaths::findExecutable(QStringLiteral("spm_train"));
        if (spmTrain.isEmpty()) return QString();
        QProcess p;
        p.start(spmTrain, QStringList{QStringLiteral("--input=") + dir_.filePath(QStringLiteral("corpus.txt")),
                                      QStringLiteral("--model_prefix=") + dir_.filePath(name), QStringLiteral("--num_threads=1")}
                              + options);
        if (!p.waitForFinished(60000) || p.exitCode() != 0) qFatal("spm_train failed: %s", p.readAllStandardError().constData());
        return dir_.filePath(name + QStringLiteral(".model"));
    }

private slots:
    void initTestCase() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QVERIFY(dir_.isValid());
        texts_ = QString::fromUtf8(readBytes(testdata(QStringLiteral("llama/ggml-vocab-llama-spm.gguf.inp"))))
                     .split(QStringLiteral("\n__ggml_vocab_test__\n"));
        for (const QJsonValue& v : readJsonObject(testdata(QStringLiteral("llama/llama2_spm_tokenizer_vectors.json"))).value("vectors").toArray())
            texts_ << v.toObject().value("text").toString();
        QString corpus;
        for (int r = 0; r < 3; ++r)
            for (const QString& t : texts_)
                if (!t.trimmed().isEmpty()) corpus += QString(t).replace(QLatin1Char('\n'), QLatin1Char(' ')) + QLatin1Char('\n');
        writeFile(dir_.filePath(QStringLiteral("corpus.txt")), corpus.toUtf8());
    }

    void withoutLibrary() {
        if (sentencePieceAvailable()) QSKIP("this build has libsentencepiece");
        QCOMPARE(modelErrorOf([] { loadSentencePieceModel(QStringLiteral("tokenizer.model")); }),
                 QStringLiteral("tokenizer.model: reading tokenizer.model needs libsentencepiece, and this build was made without it "
                                "(install libsentencepiece-dev and rebuild)"));
    }

    void bpeModelMatchesScoreGreedyMerge() {
        if (!sentencePieceAvailable()) QSKIP("built without libsentencepiece");
        // character_coverage < 1 leaves rare characters (emoji, Khmer, CJK) out: byte fallback.
        const QString model = train(QStringLiteral("bpe"), {"--model_type=bpe", "--vocab_size=400", "--byte_fallback=true",
                                                            "--normalization_rule_name=identity", "--remove_extra_whitespaces=false",
                                                            "--character_coverage=0.98"});
        if (model.isEmpty()) QSKIP("spm_train (Debian package sentencepiece) is not installed");
        const auto lib = loadSentencePieceModel(model);
        QCOMPARE(lib->vocabSize(), 400);
        QCOMPARE(lib->tokenString(0), QStringLiteral("<unk>"));
        QCOMPARE(lib->tokenType(0), TokenType::Unknown);
        QCOMPARE(lib->tokenType(1), TokenType::Control);
        QCOMPARE(lib->tokenId(QStringLiteral("<0x0A>")), std::optional<int>(13));
        QCOMPARE(lib->tokenType(13), TokenType::Byte);
        QCOMPARE(lib->bosId(), std::optional<int>(1));
        QCOMPARE(lib->eosId(), std::optional<int>(2));
        QVERIFY(lib->addsBos());

        // The same pieces, scores and types, merged by SpmTokenizer instead of the library.
        const auto own = SpmTokenizer::fromVocab(lib->vocab(), model);
        int bytesUsed = 0;
        for (const QString& text : texts_) {
            const std::vector<int> ids = lib->encode(text);
            QCOMPARE(own->encode(text), ids);
            QCOMPARE(lib->decode(ids), text);
            for (int id : ids) bytesUsed += lib->tokenType(id) == TokenType::Byte;
        }
        QVERIFY(bytesUsed > 20); // the comparison covered byte fallback
        QCOMPARE(tokenizePrompt(*lib, QStringLiteral("Hello"), lib->addsBos()).front(), 1);
        QCOMPARE(lib->displayToken(13), QStringLiteral("↵"));
        // a row of a padded d_vocab past the tokenizer's 400 tokens is named by its id, not left blank
        QCOMPARE(own->displayToken(400), QStringLiteral("⟨id 400⟩"));
        QCOMPARE(own->displayToken(-1), QStringLiteral("⟨id -1⟩"));
    }

    void unigramModelThroughFolder() {
        if (!sentencePieceAvailable()) QSKIP("built without libsentencepiece");
        const QString model = train(QStringLiteral("tokenizer"), {"--vocab_size=200", "--character_coverage=0.98"}); // unigram, nmt_nfkc
        if (model.isEmpty()) QSKIP("spm_train (Debian package sentencepiece) is not installed");
        const auto tok = loadTokenizerFromFolder(dir_.path()); // finds tokenizer.model
        QCOMPARE(tok->vocabSize(), 200);
        const std::vector<int> ids = tok->encode(QStringLiteral("Hello world"));
        QVERIFY(ids.size() >= 2 && ids.size() <= 11);
        QCOMPARE(tok->decode(ids), QStringLiteral("Hello world"));
        // NFKC: the full-width "Ｈ" is encoded as "H".
        QCOMPARE(tok->encode(QStringLiteral("Ｈello world")), ids);
    }

    void badFiles() {
        if (!sentencePieceAvailable()) QSKIP("built without libsentencepiece");
        const auto [path, message] = modelErrorOfFile(QStringLiteral("tokenizer.model"), QByteArray("not a protobuf \xff\xff\xff", 18),
                                                      [](const QString& p) { loadSentencePieceModel(p); });
        QVERIFY2(message.startsWith(path + QStringLiteral(": not a SentencePiece model: ")), qPrintable(message));
        QCOMPARE(modelErrorOf([] { loadSentencePieceModel(QStringLiteral("/nonexistent/tokenizer.model")); }),
                 QStringLiteral("/nonexistent/tokenizer.model: file not found"));
    }
};

QTEST_GUILESS_MAIN(TestSentencePieceModel)
#include "tst_sentencepiece_model.moc"
