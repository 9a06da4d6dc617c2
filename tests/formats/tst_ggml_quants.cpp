// ggml block dequantization: for each quantized type, blocks built by hand (some byte by byte, some
// with the test encoders) dequantized exactly against values worked out from ggml's definitions
// (ggml-common.h / ggml-quants.c) in the test; edge quants, negative scales and minimums; NaN/Inf
// scales reported by block and field; round trips through test quantizers and the library's Q8_0
// quantizer, within one quantization step; and the f16 conversions.

#include "model/formats/dtype.h"
#include "model/formats/ggml_quants.h"
#include "tests/support/ggml_test_blocks.h"

#include <QRandomGenerator>
#include <QTest>
#include <QtEndian>
#include <algorithm>
#include <cmath>
#include <limits>

using namespace attnscope;
using namespace attnscope::test;

Q_DECLARE_METATYPE(attnscope::GgmlType)

namespace {

constexpr quint16 kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfQuarter = 0x3400, kHalfMinusQuarter = 0xB400,
                  kHalfMinusOne = 0xBC00, kHalfMinusOneAndHalf = 0xBE00, kHalfInf = 0x7C00, kHalfMinusInf = 0xFC00,
                  kHalfNaN = 0x7E00;

std::vector<float> dequantize(GgmlType t, const QByteArray& bytes, std::int64_t n) {
    std::vector<float> y(size_t(n), -12345.0f);
    const auto bad = dequantizeGgml(t, bytes.constData(), n, y.data());
    if (bad) qWarning("unexpected non-finite scale in block %lld", static_cast<long long>(bad->block));
    return y;
}

/// Compares element by element, reporting the first difference.
bool sameValues(const std::vector<float>& got, const std::vector<float>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i)
        if (!(got[i] == want[i])) {
            qWarning("element %zu: got %.9g, want %.9g", i, double(got[i]), double(want[i]));
            return false;
        }
    return true;
}

std::vector<int> pattern(int n, int levels, int mul, int add) {
    std::vector<int> q(static_cast<size_t>(n));
    for (int e = 0; e < n; ++e) q[size_t(e)] = (e * mul + add) % (levels + 1);
    return q;
}

} // namespace

class TestGgmlQuants : public QObject {
    Q_OBJECT
private slots:
    void halfConversion() {
        QCOMPARE(halfToFloat(0x3C00), 1.0f);
        QCOMPARE(halfToFloat(0xC000), -2.0f);
        QCOMPARE(halfToFloat(0x7BFF), 65504.0f);
        QCOMPARE(halfToFloat(0x0001), std::ldexp(1.0f, -24)); // smallest subnormal
        QCOMPARE(halfToFloat(0x3555), 0.25f * (1 + 0x155 / 1024.0f)); // exponent 13, mantissa 0x155
        QVERIFY(std::isinf(halfToFloat(kHalfInf)) && halfToFloat(kHalfInf) > 0);
        QVERIFY(std::isnan(halfToFloat(kHalfNaN)));
        QCOMPARE(floatToHalf(1.0f), quint16(0x3C00));
        QCOMPARE(floatToHalf(-0.25f), quint16(0xB400));
        QCOMPARE(floatToHalf(1.0f + std::ldexp(1.0f, -11)), quint16(0x3C00));     // tie → even
        QCOMPARE(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), quint16(0x3C02)); // tie → even (up)
        QCOMPARE(floatToHalf(65504.0f), quint16(0x7BFF));
        QCOMPARE(floatToHalf(65520.0f), quint16(0x7C00)); // rounds to Inf
        QCOMPARE(floatToHalf(std::ldexp(1.0f, -25)), quint16(0x0000));
        QCOMPARE(floatToHalf(3 * std::ldexp(1.0f, -25)), quint16(0x0002));
        QCOMPARE(floatToHalf(std::numeric_limits<float>::quiet_NaN()) & 0x7C00, 0x7C00);
        QVERIFY((floatToHalf(std::numeric_limits<float>::quiet_NaN()) & 0x03FF) != 0);
    }

    void floatTypes() {
        const QByteArray f32 = leF32(1.5f) + leF32(-2.0f);
        QVERIFY(sameValues(dequantize(GgmlType::F32, f32, 2), {1.5f, -2.0f}));
        const QByteArray f16 = leU16(0x3C00) + leU16(0xC500) + leU16(0x0001); // 1, -5, 2^-24
        QVERIFY(sameValues(dequantize(GgmlType::F16, f16, 3), {1.0f, -5.0f, std::ldexp(1.0f, -24)}));
        const QByteArray bf16 = leU16(0x3F80) + leU16(0xC0A0) + leU16(0x3F81); // 1, -5, 1 + 2^-7
        QVERIFY(sameValues(dequantize(GgmlType::BF16, bf16, 3), {1.0f, -5.0f, 1.0f + std::ldexp(1.0f, -7)}));
        QVERIFY(!findNonFiniteScale(GgmlType::F16, leU16(kHalfNaN).constData(), 1)); // weights, not scales
    }

    void blockGeometry() {
        QCOMPARE(ggmlRowBytes(GgmlType::Q8_0, 64), std::int64_t(68));
        QCOMPARE(ggmlRowBytes(GgmlType::Q4_0, 32), std::int64_t(18));
        QCOMPARE(ggmlRowBytes(GgmlType::Q4_1, 32), std::int64_t(20));
        QCOMPARE(ggmlRowBytes(GgmlType::Q5_0, 32), std::int64_t(22));
        QCOMPARE(ggmlRowBytes(GgmlType::Q5_1, 32), std::int64_t(24));
        QCOMPARE(ggmlRowBytes(GgmlType::Q4_K, 512), std::int64_t(288));
        QCOMPARE(ggmlRowBytes(GgmlType::Q5_K, 256), std::int64_t(176));
        QCOMPARE(ggmlRowBytes(GgmlType::Q6_K, 256), std::int64_t(210));
        QCOMPARE(ggmlRowBytes(GgmlType::BF16, 3), std::int64_t(6));
        QCOMPARE(ggmlTypeName(11), QStringLiteral("Q3_K"));
        QCOMPARE(ggmlTypeName(GgmlType::BF16), QStringLiteral("BF16"));
        QVERIFY(ggmlTypeName(99).isEmpty());
        QVERIFY(!ggmlTypeFromId(11));
        QCOMPARE(ggmlTypeFromId(14), std::optional<GgmlType>(GgmlType::Q6_K));
    }

    void q8_0() {
        // Block 0: d = 0.5, q = -128, 127, 0, 1, -1, then j − 16. Block 1: d = −0.25, q = 3 − j.
        std::vector<int> q0(32), q1(32);
        for (int j = 0; j < 32; ++j) {
            q0[size_t(j)] = j - 16;
            q1[size_t(j)] = 3 - j;
        }
        q0[0] = -128;
        q0[1] = 127;
        q0[2] = 0;
        q0[3] = 1;
        q0[4] = -1;
        const QByteArray bytes = blockQ8_0(kHalfHalf, q0) + blockQ8_0(kHalfMinusQuarter, q1);
        QCOMPARE(bytes.size(), 68);
        QCOMPARE(uchar(bytes[2]), uchar(0x80)); // int8 −128 right after the 2-byte scale
        std::vector<float> want;
        for (int j = 0; j < 32; ++j) want.push_back(float(q0[size_t(j)]) * 0.5f);
        for (int j = 0; j < 32; ++j) want.push_back(float(3 - j) * -0.25f);
        const std::vector<float> got = dequantize(GgmlType::Q8_0, bytes, 64);
        QVERIFY(sameValues(got, want));
        QCOMPARE(got[0], -64.0f);
        QCOMPARE(got[1], 63.5f);
        QCOMPARE(got[32], -0.75f);
        QCOMPARE(got[63], 7.0f);
    }

    void q4_0() {
        // Byte by byte: d = 0.5 (00 38), qs[j] = j | (15 − j) << 4. Low nibbles are elements 0..15, high
        // nibbles 16..31; x = (q − 8)·d.
        QByteArray bytes("\x00\x38", 2);
        for (int j = 0; j < 16; ++j) bytes += char(j | ((15 - j) << 4));
        bytes += blockQ4_0(kHalfMinusOne, pattern(32, 15, 5, 1)); // second block: d = −1
        std::vector<float> want;
        for (int j = 0; j < 16; ++j) want.push_back(float(j - 8) * 0.5f);
        for (int j = 0; j < 16; ++j) want.push_back(float(7 - j) * 0.5f);
        for (int j = 0; j < 32; ++j) want.push_back(-float((j * 5 + 1) % 16 - 8));
        const std::vector<float> got = dequantize(GgmlType::Q4_0, bytes, 64);
        QVERIFY(sameValues(got, want));
        QCOMPARE(got[0], -4.0f);  // q = 0
        QCOMPARE(got[15], 3.5f);  // q = 15
        QCOMPARE(got[16], 3.5f);  // q = 15 (high nibble of byte 0)
        QCOMPARE(got[31], -4.0f); // q = 0
    }

    void q4_1() {
        // d = 0.25, m = −1.5: x = q·d + m. Second block: d = −0.25 (a negative scale), m = 1.
        const std::vector<int> q = pattern(32, 15, 7, 0);
        const QByteArray bytes = blockQ4_1(kHalfQuarter, kHalfMinusOneAndHalf, q) + blockQ4_1(kHalfMinusQuarter, kHalfOne, q);
        QCOMPARE(bytes.mid(0, 4), QByteArray("\x00\x34\x00\xbe", 4));
        std::vector<float> want;
        for (int j = 0; j < 32; ++j) want.push_back(float(q[size_t(j)]) * 0.25f - 1.5f);
        for (int j = 0; j < 32; ++j) want.push_back(float(q[size_t(j)]) * -0.25f + 1.0f);
        const std::vector<float> got = dequantize(GgmlType::Q4_1, bytes, 64);
        QVERIFY(sameValues(got, want));
        QCOMPARE(got[0], -1.5f); // q = 0: the minimum
        QCOMPARE(got[9], 2.25f); // q = 63 % 16 = 15
        QCOMPARE(got[41], -2.75f); // second block, q = 15: 15 · −0.25 + 1
    }

    void q5_0() {
        // Byte by byte: d = 0.5; qh = 0x80000001 (bit 0: element 0, bit 31: element 31); qs all 0x0F
        // (elements 0..15 low nibble 15, 16..31 high nibble 0). x = (q − 16)·d.
        QByteArray bytes("\x00\x38\x01\x00\x00\x80", 6);
        bytes += QByteArray(16, '\x0F');
        const std::vector<float> lit = dequantize(GgmlType::Q5_0, bytes, 32);
        QCOMPARE(lit[0], 7.5f);   // q = 15 | 16 = 31 (edge)
        QCOMPARE(lit[1], -0.5f);  // q = 15
        QCOMPARE(lit[16], -8.0f); // q = 0 (edge)
        QCOMPARE(lit[31], 0.0f);  // q = 0 | 16
        // Encoded: all q 0..31, negative scale in the second block.
        const std::vector<int> q = pattern(32, 31, 1, 0), r = pattern(32, 31, 13, 7);
        const QByteArray enc = blockQ5_0(kHalfHalf, q) + blockQ5_0(kHalfMinusQuarter, r);
        std::vector<float> want;
        for (int j = 0; j < 32; ++j) want.push_back(float(q[size_t(j)] - 16) * 0.5f);
        for (int j = 0; j < 32; ++j) want.push_back(float(r[size_t(j)] - 16) * -0.25f);
        QVERIFY(sameValues(dequantize(GgmlType::Q5_0, enc, 64), want));
    }

    void q5_1() {
        // d = 0.25, m = −1.5: x = q·d + m, q in 0..31 (bit 4 from qh).
        const std::vector<int> q = pattern(32, 31, 11, 3);
        const QByteArray bytes = blockQ5_1(kHalfQuarter, kHalfMinusOneAndHalf, q) + blockQ5_1(kHalfMinusOne, kHalfHalf, q);
        std::vector<float> want;
        for (int j = 0; j < 32; ++j) want.push_back(float(q[size_t(j)]) * 0.25f - 1.5f);
        for (int j = 0; j < 32; ++j) want.push_back(float(q[size_t(j)]) * -1.0f + 0.5f);
        const std::vector<float> got = dequantize(GgmlType::Q5_1, bytes, 64);
        QVERIFY(sameValues(got, want));
        // element 26: q = (26·11 + 3) % 32 = 1; element 17: q = 190 % 32 = 30
        QCOMPARE(got[26], -1.25f);
        QCOMPARE(got[17], 6.0f);
    }

    void q4_K_literal() {
        // Byte by byte (ggml block_q4_K: d, dmin, scales[12], qs[128]); d = 0.5, dmin = 0.25.
        // scales: byte 0 = 0x83 (sc0 = 3, top bits 2 of sc4), byte 4 = 0x42 (mn0 = 2, top bits 1 of mn4),
        // byte 8 = 0xC5 (sc4 low 5, mn4 low 12) → sc4 = 0x25 = 37, mn4 = 0x1C = 28.
        QByteArray b("\x00\x38\x00\x34", 4);
        QByteArray scales(12, '\0');
        scales[0] = char(0x83);
        scales[4] = char(0x42);
        scales[8] = char(0xC5);
        b += scales;
        QByteArray qs(128, '\0');
        qs[0] = char(0x9A); // element 0 (sub-block 0): q = 10; element 32 (sub-block 1): q = 9
        qs[64] = char(0x07); // element 128 (sub-block 4): q = 7; element 160 (sub-block 5): 0
        b += qs;
        const std::vector<float> y = dequantize(GgmlType::Q4_K, b, 256);
        QCOMPARE(y[0], 0.5f * 3 * 10 - 0.25f * 2);    // 14.5
        QCOMPARE(y[1], -0.5f);                        // q = 0: −dmin·mn0
        QCOMPARE(y[32], 0.0f);                        // sub-block 1 has sc = mn = 0
        QCOMPARE(y[128], 0.5f * 37 * 7 - 0.25f * 28); // 122.5
        QCOMPARE(y[129], -7.0f);
        QCOMPARE(y[160], 0.0f);
    }

    void q4_K() {
        const std::vector<int> sc{1, 63, 0, 17, 32, 63, 5, 40}, mn{0, 63, 3, 9, 63, 1, 33, 2};
        std::vector<int> q = pattern(256, 15, 7, 3);
        q[0] = 0;
        q[255] = 15;
        const QByteArray bytes = blockQ4_K(kHalfHalf, kHalfQuarter, sc, mn, q) + blockQ4_K(kHalfMinusOne, kHalfMinusQuarter, mn, sc, q);
        QCOMPARE(bytes.size(), 288);
        std::vector<float> want;
        for (int e = 0; e < 256; ++e)
            want.push_back(0.5f * float(sc[size_t(e / 32)]) * float(q[size_t(e)]) - 0.25f * float(mn[size_t(e / 32)]));
        for (int e = 0; e < 256; ++e) // negative d and dmin, scales and minimums swapped
            want.push_back(-1.0f * float(mn[size_t(e / 32)]) * float(q[size_t(e)]) + 0.25f * float(sc[size_t(e / 32)]));
        const std::vector<float> got = dequantize(GgmlType::Q4_K, bytes, 512);
        QVERIFY(sameValues(got, want));
        QCOMPARE(got[0], 0.0f);                   // q = 0, mn0 = 0
        QCOMPARE(got[255], 0.5f * 40 * 15 - 0.5f); // q = 15, sub-block 7
    }

    void q5_K() {
        const std::vector<int> sc{63, 0, 1, 2, 62, 33, 63, 16}, mn{5, 63, 0, 63, 31, 32, 15, 48};
        std::vector<int> q = pattern(256, 31, 9, 5);
        q[0] = 31;
        q[100] = 0;
        q[255] = 16; // only the fifth bit
        const QByteArray bytes = blockQ5_K(kHalfQuarter, kHalfHalf, sc, mn, q);
        QCOMPARE(bytes.size(), 176);
        std::vector<float> want;
        for (int e = 0; e < 256; ++e)
            want.push_back(0.25f * float(sc[size_t(e / 32)]) * float(q[size_t(e)]) - 0.5f * float(mn[size_t(e / 32)]));
        const std::vector<float> got = dequantize(GgmlType::Q5_K, bytes, 256);
        QVERIFY(sameValues(got, want));
        QCOMPARE(got[0], 0.25f * 63 * 31 - 2.5f);
        QCOMPARE(got[255], 0.25f * 16 * 16 - 24.0f);

        // Byte by byte: the fifth bit of element 32·h + l in chunk c is bit 2c + h of qh[l].
        QByteArray lit("\x00\x3c\x00\x00", 4); // d = 1, dmin = 0
        QByteArray scales(12, '\0');
        scales[1] = 1; // sc1 = 1
        scales[8] = 1; // sc4 = 1
        lit += scales;
        QByteArray qh(32, '\0');
        qh[3] = char(0x02 | 0x10); // element 32 + 3 (chunk 0, high half) and element 128 + 3 (chunk 2, low half)
        lit += qh + QByteArray(128, '\0');
        const std::vector<float> y = dequantize(GgmlType::Q5_K, lit, 256);
        QCOMPARE(y[35], 16.0f);
        QCOMPARE(y[131], 16.0f);
        QCOMPARE(y[3], 0.0f);
        QCOMPARE(y[163], 0.0f);
    }

    void q6_K_literal() {
        // Byte by byte (block_q6_K: ql[128], qh[64], scales[16], d): d = 1, scales 0, 2, 4, 6 = 1, −1, 2, 3.
        QByteArray b(210, '\0');
        b[0] = char(0x21);   // ql[0]: element 0 low 1, element 64 low 2
        b[32] = char(0x43);  // ql[32]: element 32 low 3, element 96 low 4
        b[128] = char(0xE4); // qh[0] = 11 10 01 00: high bits of elements 96, 64, 32, 0
        b[192] = 1;
        b[194] = char(-1);
        b[196] = 2;
        b[198] = 3;
        b[208] = 0x00;
        b[209] = 0x3C;
        const std::vector<float> y = dequantize(GgmlType::Q6_K, b, 256);
        QCOMPARE(y[0], 1.0f * (1 - 32));          // q = 1 | 0 << 4
        QCOMPARE(y[32], -1.0f * ((3 | 16) - 32));  // sub-block 2, q = 19
        QCOMPARE(y[64], 2.0f * ((2 | 32) - 32));   // sub-block 4, q = 34
        QCOMPARE(y[96], 3.0f * ((4 | 48) - 32));   // sub-block 6, q = 52
        QCOMPARE(y[1], -32.0f);                    // q = 0 (edge), sub-block 0
        QCOMPARE(y[16], 0.0f);                     // sub-block 1: scale 0
    }

    void q6_K() {
        std::vector<int> sc(16);
        for (int j = 0; j < 16; ++j) sc[size_t(j)] = (j * 37) % 256 - 128; // includes −128 and negatives
        sc[1] = 127;
        std::vector<int> q = pattern(256, 63, 29, 11);
        q[0] = 0;
        q[17] = 63;
        const QByteArray bytes = blockQ6_K(kHalfHalf, sc, q) + blockQ6_K(kHalfMinusQuarter, sc, q);
        QCOMPARE(bytes.size(), 420);
        std::vector<float> want;
        for (int e = 0; e < 256; ++e) want.push_back(0.5f * float(sc[size_t(e / 16)]) * float(q[size_t(e)] - 32));
        for (int e = 0; e < 256; ++e) want.push_back(-0.25f * float(sc[size_t(e / 16)]) * float(q[size_t(e)] - 32));
        const std::vector<float> got = dequantize(GgmlType::Q6_K, bytes, 512);
        QVERIFY(sameValues(got, want));
        QCOMPARE(got[0], 0.5f * -128 * -32);
        QCOMPARE(got[17], 0.5f * 127 * 31);
    }

    void nonFiniteScale_data() {
        QTest::addColumn<GgmlType>("type");
        QTest::addColumn<int>("fieldOffset");
        QTest::addColumn<QString>("field");
        QTest::addColumn<int>("bits");
        QTest::newRow("Q8_0 d inf") << GgmlType::Q8_0 << 0 << "d" << int(kHalfInf);
        QTest::newRow("Q4_0 d nan") << GgmlType::Q4_0 << 0 << "d" << int(kHalfNaN);
        QTest::newRow("Q4_1 m -inf") << GgmlType::Q4_1 << 2 << "m" << int(kHalfMinusInf);
        QTest::newRow("Q5_0 d -inf") << GgmlType::Q5_0 << 0 << "d" << int(kHalfMinusInf);
        QTest::newRow("Q5_1 d nan") << GgmlType::Q5_1 << 0 << "d" << int(kHalfNaN);
        QTest::newRow("Q4_K dmin nan") << GgmlType::Q4_K << 2 << "dmin" << int(kHalfNaN);
        QTest::newRow("Q5_K d inf") << GgmlType::Q5_K << 0 << "d" << int(kHalfInf);
        QTest::newRow("Q6_K d nan") << GgmlType::Q6_K << 208 << "d" << int(kHalfNaN);
    }

    void nonFiniteScale() {
        QFETCH(GgmlType, type);
        QFETCH(int, fieldOffset);
        QFETCH(QString, field);
        QFETCH(int, bits);
        const int stride = ggmlBlockBytes(type), n = ggmlBlockSize(type);
        // Three blocks of patterned bytes with finite scales (1.0 in every f16 field), then break block 2.
        QByteArray bytes(3 * stride, '\0');
        for (int i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 7 + 3);
        for (int b = 0; b < 3; ++b)
            for (const int at : type == GgmlType::Q6_K ? std::vector<int>{208} : std::vector<int>{0, 2})
                qToLittleEndian<quint16>(kHalfOne, bytes.data() + b * stride + at);
        std::vector<float> y(size_t(3 * n));
        QVERIFY(!dequantizeGgml(type, bytes.constData(), 3 * n, y.data()));
        const std::vector<float> block0(y.begin(), y.begin() + n);
        QVERIFY(std::any_of(block0.begin(), block0.end(), [](float v) { return v != 0 && std::isfinite(v); }));
        qToLittleEndian<quint16>(quint16(bits), bytes.data() + 2 * stride + fieldOffset);
        const auto bad = dequantizeGgml(type, bytes.constData(), 3 * n, y.data());
        QVERIFY(bad.has_value());
        QCOMPARE(bad->block, std::int64_t(2));
        QCOMPARE(QString::fromLatin1(bad->field), field);
        QCOMPARE(std::isnan(bad->value), std::isnan(halfToFloat(quint16(bits))));
        if (!std::isnan(bad->value)) QCOMPARE(bad->value, halfToFloat(quint16(bits)));
        QVERIFY(std::equal(block0.begin(), block0.end(), y.begin())); // the other blocks are still dequantized
        const auto scan = findNonFiniteScale(type, bytes.constData(), 3 * n);
        QVERIFY(scan.has_value());
        QCOMPARE(scan->block, std::int64_t(2));
        QVERIFY(!findNonFiniteScale(type, bytes.constData(), 2 * n)); // blocks 0 and 1 only
    }

    void roundTrip_data() {
        QTest::addColumn<GgmlType>("type");
        QTest::addColumn<double>("stepFraction"); // the error bound, in quantization steps
        // Half a step plus the f16 rounding of the scales (relative 2^-11, times the largest quant); Q4_0
        // and Q5_0 are one step off at the clamp (ggml maps the largest magnitude to −8/−16, so +max
        // would be +8/+16 and is clamped to 7/15).
        QTest::newRow("Q8_0 (library quantizer)") << GgmlType::Q8_0 << 0.5 + 128.0 / 2048;
        QTest::newRow("Q4_0") << GgmlType::Q4_0 << 1.0 + 16.0 / 2048;
        QTest::newRow("Q4_1") << GgmlType::Q4_1 << 0.6;
        QTest::newRow("Q5_0") << GgmlType::Q5_0 << 1.0 + 32.0 / 2048;
        QTest::newRow("Q5_1") << GgmlType::Q5_1 << 0.6;
        QTest::newRow("Q4_K") << GgmlType::Q4_K << 0.5;
        QTest::newRow("Q5_K") << GgmlType::Q5_K << 0.5;
        QTest::newRow("Q6_K") << GgmlType::Q6_K << 0.5;
    }

    void roundTrip() {
        QFETCH(GgmlType, type);
        QFETCH(double, stepFraction);
        QRandomGenerator rng(20240613u + quint32(type));
        const int n = 4 * 256;
        std::vector<float> x(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
            const double scale = std::pow(10.0, double((i / 32) % 5) - 2); // 0.01 .. 100 per 32 elements
            x[size_t(i)] = float((rng.generateDouble() * 2 - 1) * scale);
        }
        QByteArray bytes;
        std::vector<float> step(static_cast<size_t>(n));
        if (type == GgmlType::Q8_0) {
            bytes.resize(n / 32 * 34);
            quantizeRowQ8_0(x.data(), n, bytes.data());
            for (int i = 0; i < n; ++i) step[size_t(i)] = std::fabs(f16Value(qFromLittleEndian<quint16>(bytes.constData() + 34 * (i / 32))));
        } else {
            const TestQuantized t = quantizeForTest(quint32(type), x);
            bytes = t.bytes;
            step = t.step;
        }
        QCOMPARE(bytes.size(), qsizetype(ggmlRowBytes(type, n)));
        const std::vector<float> y = dequantize(type, bytes, n);
        double worst = 0;
        for (int i = 0; i < n; ++i) {
            const double err = std::fabs(double(y[size_t(i)]) - double(x[size_t(i)]));
            const double bound = stepFraction * double(step[size_t(i)]) + 1e-6 * std::fabs(double(x[size_t(i)]));
            QVERIFY2(err <= bound, qPrintable(QStringLiteral("element %1: x %2, y %3, step %4")
                                                  .arg(i).arg(double(x[size_t(i)])).arg(double(y[size_t(i)])).arg(double(step[size_t(i)]))));
            QVERIFY(step[size_t(i)] > 0 && step[size_t(i)] < 100); // a real, finite step
            worst = std::max(worst, err / double(step[size_t(i)]));
        }
        QVERIFY2(worst > 0.1, "suspiciously exact round trip"); // quantization must lose something
    }

    void quantizeQ8_0Values() {
        // d = max|x| / 127 = 1 → f16 0x3C00; q = round(x / d), halves away from zero (roundf).
        std::vector<float> x(64, 0.0f);
        x[0] = 127;
        x[1] = -63.5f;
        x[2] = 1;
        x[3] = 0.49f;
        x[4] = -0.5f;
        x[5] = -127;
        QByteArray b(68, '\x55');
        quantizeRowQ8_0(x.data(), 64, b.data());
        QCOMPARE(qFromLittleEndian<quint16>(b.constData()), quint16(0x3C00));
        QCOMPARE(int(qint8(b[2])), 127);
        QCOMPARE(int(qint8(b[3])), -64);
        QCOMPARE(int(qint8(b[4])), 1);
        QCOMPARE(int(qint8(b[5])), 0);
        QCOMPARE(int(qint8(b[6])), -1);
        QCOMPARE(int(qint8(b[7])), -127);
        QCOMPARE(int(qint8(b[33])), 0);
        // the all-zero second block: d = 0, q = 0
        QCOMPARE(b.mid(34), QByteArray(34, '\0'));
    }

    void quantizeQ8_0NonFinite() {
        std::vector<float> x(96, 0.5f);
        x[40] = std::numeric_limits<float>::quiet_NaN();   // block 1
        x[70] = 1e7f;                                      // block 2: d = 78740 > 65504 → Inf
        QByteArray b(3 * 34, '\0');
        quantizeRowQ8_0(x.data(), 96, b.data());
        const auto bad = findNonFiniteScale(GgmlType::Q8_0, b.constData(), 96);
        QVERIFY(bad.has_value());
        QCOMPARE(bad->block, std::int64_t(1));
        QVERIFY(std::isnan(bad->value));
        QCOMPARE(b.mid(36, 32), QByteArray(32, '\0')); // zero quants in the NaN block
        const auto bad2 = findNonFiniteScale(GgmlType::Q8_0, b.constData() + 68, 32);
        QVERIFY(bad2.has_value());
        QVERIFY(std::isinf(bad2->value));
        QVERIFY(!findNonFiniteScale(GgmlType::Q8_0, b.constData(), 32));
    }
};

QTEST_APPLESS_MAIN(TestGgmlQuants)
#include "tst_ggml_quants.moc"
