// Safetensors header validation against a hostile corpus (each file broken in one way), valid
// edge cases (scalar, empty tensors), the real tiny-gpt2 files, and truncation/corruption sweeps.

#include "model/core/errors.h"
#include "model/formats/safetensors_file.h"
#include "tests/support/rejection.h"
#include "tests/support/safetensors_writer.h"
#include "tests/support/temp_files.h"
#include "tests/support/test_paths.h"

#include <QRandomGenerator>
#include <QTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
/// Header JSON for one tensor entry.
QByteArray entry(const char* name, const char* dtype, const char* shape, const char* offsets) {
    return QByteArray("\"") + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}
QByteArray zeros(int n) { return QByteArray(n, '\0'); }
} // namespace

class TestSafetensors : public QObject {
    Q_OBJECT
private:
    TempFiles tmp_;
    QString write(const QString& name, const QByteArray& bytes) { return tmp_.write(name, bytes); }

private slots:
    void hostileFile_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QString>("fileName");
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("problem");

        QTest::newRow("0 bytes") << "zero.safetensors" << QByteArray() << "file is 0 bytes, too short";
        QTest::newRow("7 bytes") << "seven.safetensors" << QByteArray(7, 'x') << "file is 7 bytes, too short";
        QTest::newRow("header length 0") << "len0.safetensors" << rawSafetensors({}, "{}") << "header length is 0";
        QTest::newRow("header beyond file")
            << "beyond.safetensors" << rawSafetensors("{}", {}, 1000)
            << "header length 1000 is beyond the end of the file (2 bytes after the length field)";
        QTest::newRow("header >= 100MB")
            << "huge.safetensors" << rawSafetensors("{}", {}, 100'000'001)
            << "header length 100000001 exceeds the limit of 100000000 bytes";
        QTest::newRow("header length 2^64-1")
            << "max.safetensors" << rawSafetensors("{}", {}, ~quint64(0)) << "exceeds the limit of 100000000 bytes";
        QTest::newRow("non-UTF-8") << "latin1.safetensors" << rawSafetensors("{\"caf\xe9\":1}") << "header is not valid UTF-8";
        QTest::newRow("overlong UTF-8") << "overlong.safetensors" << rawSafetensors("{\"\xc0\xaf\":1}") << "header is not valid UTF-8";
        QTest::newRow("invalid JSON") << "badjson.safetensors" << rawSafetensors("{\"a\": ") << "header is not valid JSON";
        QTest::newRow("JSON array") << "array.safetensors" << rawSafetensors("[1, 2]") << "header is not a JSON object";
        QTest::newRow("JSON string") << "string.safetensors" << rawSafetensors("\"hi\"") << "header is not";
        QTest::newRow("metadata not object")
            << "meta.safetensors" << rawSafetensors("{\"__metadata__\": [1]}") << "__metadata__ is not a JSON object";
        QTest::newRow("metadata value not string")
            << "meta2.safetensors" << rawSafetensors("{\"__metadata__\": {\"format\": 1}}")
            << "__metadata__ value 'format' is not a string";
        QTest::newRow("entry not object") << "entry.safetensors" << rawSafetensors("{\"w\": 5}") << "tensor w entry is not a JSON object";
        QTest::newRow("no dtype")
            << "nodtype.safetensors" << rawSafetensors("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", zeros(4))
            << "tensor w has no dtype string";
        QTest::newRow("unknown dtype")
            << "dtype.safetensors" << rawSafetensors("{" + entry("w", "F17", "[1]", "[0,4]") + "}", zeros(4))
            << "tensor w has unknown dtype 'F17'";
        QTest::newRow("lower-case dtype")
            << "dtype2.safetensors" << rawSafetensors("{" + entry("w", "f32", "[1]", "[0,4]") + "}", zeros(4))
            << "tensor w has unknown dtype 'f32'";
        QTest::newRow("shape not array")
            << "shape.safetensors" << rawSafetensors("{" + entry("w", "F32", "4", "[0,4]") + "}", zeros(4))
            << "tensor w has no shape array";
        QTest::newRow("negative dim")
            << "neg.safetensors" << rawSafetensors("{" + entry("w", "F32", "[2,-1]", "[0,4]") + "}", zeros(4))
            << "tensor w shape dimension 1 is negative (-1)";
        QTest::newRow("fractional dim")
            << "frac.safetensors" << rawSafetensors("{" + entry("w", "F32", "[1.5]", "[0,4]") + "}", zeros(4))
            << "tensor w shape dimension 0 is not an integer (1.5)";
        QTest::newRow("string dim")
            << "strdim.safetensors" << rawSafetensors("{" + entry("w", "F32", "[\"4\"]", "[0,16]") + "}", zeros(16))
            << "tensor w shape dimension 0 is not a number";
        QTest::newRow("huge dim")
            << "hugedim.safetensors" << rawSafetensors("{" + entry("w", "F32", "[1e300]", "[0,4]") + "}", zeros(4))
            << "tensor w shape dimension 0 is too large";
        QTest::newRow("element count overflow")
            << "overflow.safetensors"
            << rawSafetensors("{" + entry("w", "F32", "[4294967296,4294967296]", "[0,4]") + "}", zeros(4))
            << "tensor w shape [4294967296, 4294967296] has too many elements (overflow)";
        QTest::newRow("byte count overflow")
            << "overflow2.safetensors"
            << rawSafetensors("{" + entry("w", "F64", "[2305843009213693952,2]", "[0,4]") + "}", zeros(4))
            << "has too many bytes (overflow)";
        QTest::newRow("offsets not a pair")
            << "offs.safetensors" << rawSafetensors("{" + entry("w", "F32", "[1]", "[0]") + "}", zeros(4))
            << "tensor w data_offsets is not an array [begin, end]";
        QTest::newRow("negative offset")
            << "negoff.safetensors" << rawSafetensors("{" + entry("w", "F32", "[1]", "[-4,0]") + "}", zeros(4))
            << "tensor w data_offsets begin is negative";
        QTest::newRow("offsets reversed")
            << "reversed.safetensors" << rawSafetensors("{" + entry("w", "F32", "[1]", "[4,0]") + "}", zeros(4))
            << "tensor w data_offsets [4, 0] are reversed (begin > end)";
        QTest::newRow("offsets beyond data")
            << "pastend.safetensors" << rawSafetensors("{" + entry("w", "F32", "[4]", "[0,16]") + "}", zeros(8))
            << "tensor w data_offsets end 16 is beyond the 8-byte data area";
        QTest::newRow("size/shape mismatch")
            << "mismatch.safetensors" << rawSafetensors("{" + entry("w", "F32", "[2,3]", "[0,16]") + "}", zeros(16))
            << "tensor w data_offsets [0, 16] hold 16 bytes but shape [2, 3] of F32 needs 24 bytes";
        QTest::newRow("gap")
            << "gap.safetensors"
            << rawSafetensors("{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("b", "F32", "[1]", "[8,12]") + "}", zeros(12))
            << "gap of 4 bytes in the data area before tensor b (data offset 4)";
        QTest::newRow("gap at start")
            << "gap0.safetensors" << rawSafetensors("{" + entry("a", "F32", "[1]", "[4,8]") + "}", zeros(8))
            << "gap of 4 bytes in the data area before tensor a (data offset 0)";
        QTest::newRow("overlap")
            << "overlap.safetensors"
            << rawSafetensors("{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[2]", "[4,12]") + "}", zeros(12))
            << "tensor b data_offsets [4, 12] overlap tensor a [0, 8]";
        QTest::newRow("same range twice")
            << "alias.safetensors"
            << rawSafetensors("{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("b", "F32", "[1]", "[0,4]") + "}", zeros(4))
            << "overlap tensor a [0, 4]";
        QTest::newRow("trailing bytes")
            << "trailing.safetensors" << rawSafetensors("{" + entry("a", "F32", "[1]", "[0,4]") + "}", zeros(7))
            << "3 trailing bytes after the last tensor (data area is 7 bytes, tensors cover 4)";
        QTest::newRow("no tensors, trailing bytes") << "empty_trailing.safetensors" << rawSafetensors("{}", zeros(2))
                                                    << "2 trailing bytes after the last tensor";
    }

    void hostileFile() {
        QFETCH(QString, fileName);
        QFETCH(QByteArray, bytes);
        QFETCH(QString, problem);
        const QString path = write(fileName, bytes);
        checkRejected([&] { SafetensorsFile::open(path); }, fileName, {problem});
        QCOMPARE(readFile(path), bytes); // never modified
    }

    void missingFile() {
        checkRejected([&] { SafetensorsFile::open(tmp_.path(QStringLiteral("nope.safetensors"))); },
                      QStringLiteral("nope.safetensors"), {QStringLiteral("cannot open for reading")});
    }

    void validEdgeCases() {
        // Scalar (shape [] = 1 element), empty tensors ([2,0] and [0]) at shared offsets, an I64, metadata.
        const std::vector<FixtureTensor> tensors = {
            {QStringLiteral("scalar"), QStringLiteral("F32"), {}, floatBytes({2.5f})},
            {QStringLiteral("empty"), QStringLiteral("F32"), {2, 0}, {}},
            {QStringLiteral("empty1"), QStringLiteral("BF16"), {0}, {}},
            {QStringLiteral("ids"), QStringLiteral("I64"), {2}, QByteArray("\x07\0\0\0\0\0\0\0\x09\0\0\0\0\0\0\0", 16)},
            {QStringLiteral("m"), QStringLiteral("F32"), {2, 3}, floatBytes({1, 2, 3, 4, 5, 6})},
        };
        const QString path = write(QStringLiteral("valid.safetensors"),
                                   buildSafetensors(tensors, QJsonObject{{QStringLiteral("format"), QStringLiteral("pt")}}));
        const auto f = SafetensorsFile::open(path);
        QCOMPARE(f->tensors().size(), size_t(5));
        QCOMPARE(f->header().metadata.value(QStringLiteral("format")), QStringLiteral("pt"));
        QCOMPARE(f->header().dataBytes, qint64(4 + 16 + 24));

        const SafetensorsTensor* scalar = f->find(QStringLiteral("scalar"));
        QVERIFY(scalar);
        QVERIFY(scalar->shape.empty());
        QCOMPARE(scalar->numel, qint64(1));
        float v;
        std::memcpy(&v, f->tensorData(*scalar), 4);
        QCOMPARE(v, 2.5f);

        const SafetensorsTensor* empty = f->find(QStringLiteral("empty"));
        QVERIFY(empty);
        QCOMPARE(empty->numel, qint64(0));
        QCOMPARE(empty->shape, (std::vector<std::int64_t>{2, 0}));
        QCOMPARE(empty->begin, qint64(4));
        QCOMPARE(empty->end, qint64(4));
        QCOMPARE(f->find(QStringLiteral("empty1"))->dtype, DType::BF16);

        const SafetensorsTensor* ids = f->find(QStringLiteral("ids"));
        QCOMPARE(ids->dtype, DType::I64);
        QCOMPARE(int(f->tensorData(*ids)[8]), 9);

        const SafetensorsTensor* m = f->find(QStringLiteral("m"));
        QCOMPARE(m->begin, qint64(20));
        QCOMPARE(m->byteSize(), qint64(24));
        std::memcpy(&v, f->tensorData(*m) + 5 * 4, 4);
        QCOMPARE(v, 6.0f);
        QVERIFY(f->find(QStringLiteral("__metadata__")) == nullptr);
        QVERIFY(f->find(QStringLiteral("absent")) == nullptr);
    }

    void emptyHeaderObjectIsValid() {
        const auto f = SafetensorsFile::open(write(QStringLiteral("none.safetensors"), rawSafetensors("{}")));
        QVERIFY(f->tensors().empty());
        QCOMPARE(f->fileSize(), qint64(10));
    }

    void tinyGpt2Files_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("dtype");
        QTest::addColumn<qint64>("bytes");
        QTest::newRow("F32") << "model.safetensors" << "F32" << qint64(550152);
        QTest::newRow("F16") << "model.float16.safetensors" << "F16" << qint64(276224);
        QTest::newRow("BF16") << "model.bfloat16.safetensors" << "BF16" << qint64(276248);
    }

    void tinyGpt2Files() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QString, file);
        QFETCH(QString, dtype);
        QFETCH(qint64, bytes);
        const auto f = SafetensorsFile::open(testdata(QStringLiteral("tiny-gpt2/") + file));
        QCOMPARE(f->fileSize(), bytes);
        QCOMPARE(f->tensors().size(), size_t(28));
        QCOMPARE(f->header().dataOffset % 8, qint64(0));
        const SafetensorsTensor* qkv = f->find(QStringLiteral("h.1.attn.c_attn.weight"));
        QVERIFY(qkv);
        QCOMPARE(dtypeName(qkv->dtype), dtype);
        QCOMPARE(qkv->shape, (std::vector<std::int64_t>{64, 192}));
        // The bytes are the file's: compare with the independent reader.
        const auto ref = readSafetensors(testdata(QStringLiteral("tiny-gpt2/") + file));
        const FixtureTensor& refQkv = tensorNamed(ref, QStringLiteral("h.1.attn.c_attn.weight"));
        QCOMPARE(QByteArray(reinterpret_cast<const char*>(f->tensorData(*qkv)), qsizetype(qkv->byteSize())), refQkv.data);
    }

    /// Every prefix of a valid file must be rejected with a ModelError (never a crash or hang).
    void truncationsAreRejected() {
        const QByteArray valid = buildSafetensors({{QStringLiteral("a"), QStringLiteral("F32"), {3}, floatBytes({1, 2, 3})},
                                                   {QStringLiteral("b"), QStringLiteral("F16"), {2}, QByteArray(4, '\1')}});
        for (qsizetype n = 0; n < valid.size(); ++n) {
            const QString path = write(QStringLiteral("cut.safetensors"), valid.left(n));
            try {
                SafetensorsFile::open(path);
                QFAIL(qPrintable(QStringLiteral("prefix of %1 bytes accepted").arg(n)));
            } catch (const ModelError& e) {
                QCOMPARE(e.file(), QStringLiteral("cut.safetensors"));
            }
        }
        QCOMPARE(SafetensorsFile::open(write(QStringLiteral("whole.safetensors"), valid))->tensors().size(), size_t(2));
    }

    /// Random byte corruption of the header: each result is either valid or a ModelError, and a
    /// valid result still satisfies the tiling invariant.
    void corruptedHeadersNeverCrash() {
        const QByteArray valid = buildSafetensors({{QStringLiteral("a"), QStringLiteral("F32"), {3}, floatBytes({1, 2, 3})},
                                                   {QStringLiteral("b"), QStringLiteral("F16"), {2, 1}, QByteArray(4, '\1')}});
        QRandomGenerator rng(12345);
        int rejected = 0;
        for (int trial = 0; trial < 500; ++trial) {
            QByteArray bytes = valid;
            const int flips = 1 + int(rng.bounded(3));
            for (int k = 0; k < flips; ++k) bytes[qsizetype(rng.bounded(int(bytes.size() - 12)))] = char(rng.bounded(256));
            const QString path = write(QStringLiteral("fuzz.safetensors"), bytes);
            try {
                const auto f = SafetensorsFile::open(path);
                qint64 covered = 0;
                for (const auto& t : f->tensors()) covered += t.byteSize();
                QCOMPARE(covered, f->header().dataBytes);
            } catch (const ModelError& e) {
                QCOMPARE(e.file(), QStringLiteral("fuzz.safetensors"));
                ++rejected;
            }
        }
        QVERIFY(rejected > 250); // most corruptions must be caught
    }
};

QTEST_GUILESS_MAIN(TestSafetensors)
#include "tst_safetensors.moc"
