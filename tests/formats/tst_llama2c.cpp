// llama2.c checkpoints: the real stories260K.bin (header, layout offsets, shapes, spot values taken
// from the file by an independent reader, freq_cis against cos/sin), an untied classifier, and hostile
// headers made by patching the real file (impossible sizes, wrong divisibility, wrong lengths), each
// rejected with a clear message, quickly and without modifying the file; truncation and corruption sweeps.

#include "model/core/errors.h"
#include "model/formats/llama2c_file.h"
#include "tests/support/rejection.h"
#include "tests/support/safetensors_writer.h"
#include "tests/support/temp_files.h"
#include "tests/support/test_paths.h"

#include <QRandomGenerator>
#include <QTest>
#include <QtEndian>
#include <cmath>
#include <limits>

using namespace attnscope;
using namespace attnscope::test;

namespace {

QString storiesBin() { return testdata(QStringLiteral("stories260K/stories260K.bin")); }

/// `bytes` with header field i (0 = dim ... 6 = seq_len) set to v.
QByteArray withField(QByteArray bytes, int i, qint32 v) {
    qToLittleEndian<qint32>(v, bytes.data() + 4 * i);
    return bytes;
}

/// A small valid checkpoint: dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, vocab 4, seq_len 2 (tied).
QByteArray smallCheckpoint() {
    QByteArray b;
    for (const qint32 v : {8, 16, 1, 2, 1, 4, 2}) b += QByteArray(reinterpret_cast<const char*>(&v), 4);
    // floats: emb 32, rms_att 8, wq 64, wk 32, wv 32, wo 64, rms_ffn 8, w1 128, w2 128, w3 128, rms_final 8,
    // freq_cis 2·2 + 2·2
    const int floats = 32 + 8 + 64 + 32 + 32 + 64 + 8 + 128 * 3 + 8 + 8;
    std::vector<float> v(floats);
    for (int i = 0; i < floats; ++i) v[size_t(i)] = float(i);
    return b + floatBytes(v);
}

} // namespace

class TestLlama2c : public QObject {
    Q_OBJECT
private:
    TempFiles tmp_;
    QByteArray real_ = readFile(storiesBin());
    QString write(const QString& name, const QByteArray& bytes) { return tmp_.write(name, bytes); }

private slots:
    void header() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto f = Llama2cFile::open(storiesBin());
        QCOMPARE(f->label(), QStringLiteral("stories260K.bin"));
        const Llama2cConfig& c = f->config();
        QCOMPARE(c.dim, 64);
        QCOMPARE(c.hiddenDim, 172);
        QCOMPARE(c.nLayers, 5);
        QCOMPARE(c.nHeads, 8);
        QCOMPARE(c.nKvHeads, 4);
        QCOMPARE(c.vocabSize, 512);
        QCOMPARE(c.seqLen, 512);
        QVERIFY(c.sharedClassifier);
        QCOMPARE(c.headSize(), 8);
        QCOMPARE(c.kvDim(), 32);
        const Llama2cLayout& l = f->layout();
        QCOMPARE(l.fileSize, std::int64_t(1056540));
        const auto at = [&](Llama2cWeight w) { return l.arrays[size_t(w)].offset; };
        QCOMPARE(at(Llama2cWeight::TokenEmbedding), std::int64_t(28));
        QCOMPARE(at(Llama2cWeight::RmsAtt), std::int64_t(28 + 512 * 64 * 4));
        QCOMPARE(at(Llama2cWeight::Wq), std::int64_t(28 + (512 * 64 + 5 * 64) * 4));
        QCOMPARE(at(Llama2cWeight::Wk), at(Llama2cWeight::Wq) + 5 * 64 * 64 * 4);
        QCOMPARE(at(Llama2cWeight::Wv), at(Llama2cWeight::Wk) + 5 * 32 * 64 * 4);
        QCOMPARE(at(Llama2cWeight::RmsFinal), std::int64_t(1056540 - 4 * (2 * 512 * 4) - 4 * 64));
        QCOMPARE(at(Llama2cWeight::FreqCisImag), std::int64_t(1056540 - 512 * 4 * 4));
        QCOMPARE(at(Llama2cWeight::Classifier), std::int64_t(28)); // tied
        QCOMPARE(llama2cWeightName(Llama2cWeight::W2), QStringLiteral("w2"));
        QCOMPARE(llama2cWeightName(Llama2cWeight::Classifier), QStringLiteral("wcls"));
    }

    void shapesAndValues() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto f = Llama2cFile::open(storiesBin());
        using W = Llama2cWeight;
        const auto shape = [&](W w, int layer) { return f->tensor(w, layer).shape; };
        using S = std::vector<std::int64_t>;
        QCOMPARE(shape(W::TokenEmbedding, -1), (S{512, 64}));
        QCOMPARE(shape(W::RmsAtt, 0), (S{64}));
        QCOMPARE(shape(W::Wq, 1), (S{64, 64}));
        QCOMPARE(shape(W::Wk, 2), (S{32, 64}));
        QCOMPARE(shape(W::Wv, 3), (S{32, 64}));
        QCOMPARE(shape(W::Wo, 4), (S{64, 64}));
        QCOMPARE(shape(W::W1, 0), (S{172, 64}));
        QCOMPARE(shape(W::W2, 0), (S{64, 172}));
        QCOMPARE(shape(W::W3, 0), (S{172, 64}));
        QCOMPARE(shape(W::RmsFinal, -1), (S{64}));
        QCOMPARE(shape(W::FreqCisReal, -1), (S{512, 4}));
        QCOMPARE(f->tensor(W::W1, 0).numel, std::int64_t(172 * 64));

        // Values read from the file with Python's struct module at the offsets of run.c's layout.
        const auto at = [&](W w, int layer, std::int64_t i) { return f->tensor(w, layer).data[i]; };
        QCOMPARE(at(W::TokenEmbedding, -1, 64), -0.12708568572998047f); // row 1, column 0
        QCOMPARE(at(W::TokenEmbedding, -1, 66), 0.6062895059585571f);
        QCOMPARE(at(W::TokenEmbedding, -1, 512 * 64 - 1), -0.424032598733902f);
        QCOMPARE(at(W::RmsAtt, 0, 0), 0.9722429513931274f);
        QCOMPARE(at(W::RmsAtt, 4, 63), 1.0649559497833252f);
        QCOMPARE(at(W::Wq, 0, 0), 0.04439278692007065f);
        QCOMPARE(at(W::Wq, 4, 64 * 64 - 1), -0.18901382386684418f);
        QCOMPARE(at(W::Wk, 2, 3 * 64), 0.10806576907634735f); // row 3
        QCOMPARE(at(W::Wv, 1, 5), -0.060463689267635345f);
        QCOMPARE(at(W::Wo, 3, 10 * 64 + 20), -0.0039359768852591515f);
        QCOMPARE(at(W::RmsFfn, 2, 7), 0.7773282527923584f);
        QCOMPARE(at(W::W1, 0, 172 * 64 - 1), -0.13062290847301483f);
        QCOMPARE(at(W::W2, 0, 64 * 172 - 1), -0.11420675367116928f);
        QCOMPARE(at(W::W2, 1, 1), 0.04073818773031235f);
        QCOMPARE(at(W::W3, 4, 0), 0.012497296556830406f);
        QCOMPARE(at(W::RmsFinal, -1, 0), 2.4583089351654053f);
        QCOMPARE(at(W::RmsFinal, -1, 63), 1.7077769041061401f);
        QCOMPARE(f->tensor(W::Classifier).data, f->tensor(W::TokenEmbedding).data);

        // freq_cis: cos/sin(pos · 10000^(−2i/head_size)), as float32 from PyTorch.
        const float* re = f->tensor(W::FreqCisReal).data;
        const float* im = f->tensor(W::FreqCisImag).data;
        double worst = 0;
        for (int pos = 0; pos < 512; ++pos)
            for (int i = 0; i < 4; ++i) {
                const double angle = pos * std::pow(10000.0, -2.0 * i / 8);
                worst = std::max({worst, std::fabs(re[pos * 4 + i] - std::cos(angle)), std::fabs(im[pos * 4 + i] - std::sin(angle))});
            }
        QVERIFY2(worst < 1e-5, qPrintable(QString::number(worst)));
        QCOMPARE(re[4], 0.5403023362159729f); // cos(1)

        QVERIFY_THROWS_EXCEPTION(std::out_of_range, f->tensor(W::Wq, 5));
        QVERIFY_THROWS_EXCEPTION(std::out_of_range, f->tensor(W::Wq, -1));
        QVERIFY_THROWS_EXCEPTION(std::out_of_range, f->tensor(W::RmsFinal, 0));
    }

    void untiedClassifier() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // The real file with vocab_size negated and a wcls (the embedding negated) appended.
        QByteArray bytes = withField(real_, 5, -512);
        QByteArray wcls = real_.mid(28, 512 * 64 * 4);
        for (qsizetype i = 3; i < wcls.size(); i += 4) wcls[i] = char(wcls[i] ^ 0x80); // flip the sign bits
        bytes += wcls;
        const auto f = Llama2cFile::open(write(QStringLiteral("untied.bin"), bytes));
        QVERIFY(!f->config().sharedClassifier);
        QCOMPARE(f->config().vocabSize, 512);
        QCOMPARE(f->layout().arrays[size_t(Llama2cWeight::Classifier)].offset, std::int64_t(1056540));
        const Llama2cTensorView c = f->tensor(Llama2cWeight::Classifier);
        QCOMPARE(c.shape, (std::vector<std::int64_t>{512, 64}));
        QCOMPARE(c.data[64], 0.12708568572998047f);
        QCOMPARE(f->tensor(Llama2cWeight::TokenEmbedding).data[64], -0.12708568572998047f);
    }

    void hostileHeader_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("problem");
        const QByteArray& r = real_;
        const QString realHeader = QStringLiteral("dim 64, hidden_dim 172, n_layers 5, n_heads 8, n_kv_heads 4, vocab_size 512, seq_len 512");
        QTest::newRow("empty") << QByteArray() << "file is 0 bytes, too short for the 28-byte llama2.c header";
        QTest::newRow("27 bytes") << r.left(27) << "file is 27 bytes, too short for the 28-byte llama2.c header";
        QTest::newRow("version 2 export") << withField(withField(r, 0, 0x616b3432), 1, 2)
                                          << "this is a llama2.c version 2 export (magic \"ak42\"); only the legacy version-0 layout is supported";
        QTest::newRow("dim 0") << withField(r, 0, 0) << "header dim is 0; it must be positive (dim 0, hidden_dim 172,";
        QTest::newRow("dim negative") << withField(r, 0, -64) << "header dim is -64; it must be positive";
        QTest::newRow("hidden_dim 0") << withField(r, 1, 0) << "header hidden_dim is 0; it must be positive";
        QTest::newRow("n_layers -1") << withField(r, 2, -1) << "header n_layers is -1; it must be positive";
        QTest::newRow("n_heads 0") << withField(r, 3, 0) << "header n_heads is 0; it must be positive";
        QTest::newRow("n_kv_heads 0") << withField(r, 4, 0) << "header n_kv_heads is 0; it must be positive";
        QTest::newRow("seq_len -512") << withField(r, 6, -512) << "header seq_len is -512; it must be positive";
        QTest::newRow("vocab_size 0") << withField(r, 5, 0) << "header vocab_size is 0; it must be non-zero (negative means an untied classifier)";
        QTest::newRow("vocab_size INT_MIN") << withField(r, 5, std::numeric_limits<qint32>::min())
                                            << "header vocab_size is -2147483648; it must be non-zero";
        QTest::newRow("dim not divisible by heads") << withField(r, 3, 7) << "header dim 64 is not divisible by n_heads 7";
        QTest::newRow("kv heads do not divide heads") << withField(r, 4, 3) << "header n_heads 8 is not a multiple of n_kv_heads 3";
        QTest::newRow("more kv heads than heads") << withField(r, 4, 16) << "header n_heads 8 is not a multiple of n_kv_heads 16";
        QTest::newRow("odd head size") << withField(withField(r, 0, 24), 4, 8) << "head size dim / n_heads = 3 is odd";
        QTest::newRow("sizes overflow int64")
            << withField(withField(withField(withField(r, 0, 2147483646), 2, 2147483647), 3, 1), 4, 1)
            << "the header describes more than 2^63 bytes of weights (dim 2147483646, hidden_dim 172, n_layers 2147483647";
        QTest::newRow("huge but no overflow") << withField(withField(r, 0, 65536), 2, 1000)
                                              << "file is 1056540 bytes, but its header (dim 65536, hidden_dim 172, n_layers 1000";
        QTest::newRow("4 bytes short") << r.left(r.size() - 4)
                                       << QStringLiteral("file is 1056536 bytes, but its header (%1) describes 1056540 bytes").arg(realHeader);
        QTest::newRow("4 trailing bytes") << r + QByteArray(4, '\0')
                                          << QStringLiteral("file is 1056544 bytes, but its header (%1) describes 1056540 bytes").arg(realHeader);
        QTest::newRow("untied header, no wcls")
            << withField(r, 5, -512)
            << "describes 1187612 bytes; it would fit exactly with a tied classifier (positive vocab_size)";
        QTest::newRow("tied header, extra wcls")
            << r + QByteArray(512 * 64 * 4, '\0')
            << QStringLiteral("file is 1187612 bytes, but its header (%1) describes 1056540 bytes; it would fit exactly with an "
                              "untied classifier (negative vocab_size)").arg(realHeader);
    }

    void hostileHeader() {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, problem);
        const QString path = write(QStringLiteral("hostile.bin"), bytes);
        checkRejected([&] { Llama2cFile::open(path); }, QStringLiteral("hostile.bin"), {problem});
        QCOMPARE(readFile(path), bytes); // never modified
    }

    void missingFile() {
        checkRejected([&] { Llama2cFile::open(tmp_.path(QStringLiteral("nope.bin"))); }, QStringLiteral("nope.bin"),
                      {QStringLiteral("cannot open for reading")});
    }

    void smallCheckpointAndTruncations() {
        const QByteArray good = smallCheckpoint();
        const auto f = Llama2cFile::fromBytes(good, QStringLiteral("small.bin"));
        QCOMPARE(f->config().kvDim(), 4);
        QCOMPARE(f->tensor(Llama2cWeight::Wk, 0).shape, (std::vector<std::int64_t>{4, 8}));
        QCOMPARE(f->tensor(Llama2cWeight::Wk, 0).data[0], float(32 + 8 + 64));
        QCOMPARE(f->tensor(Llama2cWeight::FreqCisImag).data[3], float(32 + 8 + 64 + 32 + 32 + 64 + 8 + 128 * 3 + 8 + 4 + 3));
        for (qsizetype n = 0; n < good.size(); ++n) {
            try {
                Llama2cFile::fromBytes(good.left(n), QStringLiteral("cut.bin"));
                QFAIL(qPrintable(QStringLiteral("prefix of %1 bytes accepted").arg(n)));
            } catch (const ModelError& e) {
                QCOMPARE(e.file(), QStringLiteral("cut.bin"));
            }
        }
    }

    /// Random header values: a ModelError or a layout that fits the file exactly; never a crash.
    void randomHeadersNeverCrash() {
        const QByteArray good = smallCheckpoint();
        QRandomGenerator rng(777);
        int rejected = 0;
        for (int trial = 0; trial < 5000; ++trial) {
            QByteArray bytes = good;
            const int field = int(rng.bounded(7));
            const qint32 values[] = {0, -1, 1, 2, 3, 4, 8, 16, std::numeric_limits<qint32>::max(), std::numeric_limits<qint32>::min(),
                                     qint32(rng.generate())};
            bytes = withField(bytes, field, values[rng.bounded(int(std::size(values)))]);
            try {
                const auto f = Llama2cFile::fromBytes(bytes, QStringLiteral("r.bin"));
                QCOMPARE(f->layout().fileSize, std::int64_t(bytes.size()));
            } catch (const ModelError&) {
                ++rejected;
            }
        }
        QVERIFY(rejected > 2500);
    }
};

QTEST_GUILESS_MAIN(TestLlama2c)
#include "tst_llama2c.moc"
