// Every compute kernel this CPU can run (model/core/kernels: avx512, avx2, portable), each routine of its
// table against an independent float64 (or exact integer) reference computed here, with the same
// tolerances for every kernel; and the choice of kernel from CPU features and ATTNSCOPE_ISA.

#include "model/core/kernels/kernel_choice.h"
#include "model/core/weight_panels.h"

#include <Eigen/Core>
#include <QtTest>
#include <QFloat16>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace attnscope;

namespace {

std::vector<float> randomFloats(size_t n, unsigned seed, float scale = 1.0f) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(gen);
    return v;
}

QString kernelTag(const ComputeKernels& k) { return QString::fromLatin1(k.name); }

/// float32 values stored as `type` (F32 as they are; F16 through Qt's qfloat16; BF16 rounded to nearest
/// even here), and the stored values read back as floats (what a kernel must compute with).
struct TypedWeights {
    WeightType type;
    std::vector<float> f32;
    std::vector<quint16> half;
    std::vector<float> stored;

    TypedWeights(const std::vector<float>& v, WeightType t) : type(t), stored(v) {
        if (t == WeightType::F32) {
            f32 = v;
            return;
        }
        half.resize(v.size());
        for (size_t i = 0; i < v.size(); ++i) {
            if (t == WeightType::F16) {
                const qfloat16 h(v[i]);
                std::memcpy(&half[i], &h, 2);
                stored[i] = float(h);
            } else {
                quint32 bits;
                std::memcpy(&bits, &v[i], 4);
                bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even
                half[i] = quint16(bits >> 16);
                const quint32 back = quint32(half[i]) << 16;
                std::memcpy(&stored[i], &back, 4);
            }
        }
    }
    const void* data() const { return type == WeightType::F32 ? static_cast<const void*>(f32.data()) : half.data(); }
};

const char* typeName(WeightType t) { return t == WeightType::F32 ? "F32" : t == WeightType::F16 ? "F16" : "BF16"; }

/// γ-style bound of a float32 sum of n products: n·2⁻²⁴·Σ|x||w| (+ a little slack for the final add).
double sumBound(long n, double magnitude) { return (double(n) + 2) * std::ldexp(1.0, -24) * magnitude + 1e-30; }

} // namespace

class TestComputeKernels : public QObject {
    Q_OBJECT
private slots:
    void runnableKernelsIncludePortable();
    void gemmMatchesFloat64_data();
    void gemmMatchesFloat64();
    void dotRowsMatchesFloat64AndIsRowIndependent_data();
    void dotRowsMatchesFloat64AndIsRowIndependent();
    void blockQuantizedRowsMatchFloat64_data();
    void blockQuantizedRowsMatchFloat64();
    void everyHalfWidensExactly_data();
    void everyHalfWidensExactly();
    void softmaxRowMatchesFloat64_data();
    void softmaxRowMatchesFloat64();
    void activationsMatchFloat64_data();
    void activationsMatchFloat64();
    void sumExpMatchesFloat64_data();
    void sumExpMatchesFloat64();
    void int8FirstHitIsExact_data();
    void int8FirstHitIsExact();
    void probesComputeWhatTheySay_data();
    void probesComputeWhatTheySay();
    void choiceFollowsFeaturesAndOsState();
    void forcedKernelErrorsNameTheProblem();
};

namespace {
/// One data row per runnable kernel, tagged with its name.
void kernelRows() {
    QTest::addColumn<int>("isa");
    for (KernelIsa isa : runnableKernelIsas()) QTest::newRow(qPrintable(kernelIsaName(isa))) << int(isa);
}
const ComputeKernels& fetchKernel() {
    QFETCH(int, isa);
    const ComputeKernels* k = kernelsFor(KernelIsa(isa));
    if (!k) qFatal("kernel table missing");
    return *k;
}
} // namespace

void TestComputeKernels::runnableKernelsIncludePortable() {
    const std::vector<KernelIsa> r = runnableKernelIsas();
    QVERIFY(!r.empty());
    QCOMPARE(int(r.front()), int(KernelIsa::Portable));
    const CpuFeatures f = detectCpuFeatures();
    QCOMPARE(int(r.back()), int(bestKernelIsa(f)));
    for (KernelIsa isa : r) {
        const ComputeKernels* k = kernelsFor(isa);
        QVERIFY(k);
        QCOMPARE(QString::fromLatin1(k->name), kernelIsaName(isa));
        QVERIFY(k->mr >= 1 && k->nr >= 4 && k->rowBlock % k->mr == 0);
        QVERIFY(k->int8FirstHit && k->int8Description && *k->int8Description);
        QVERIFY(k->int8AOffset == 0 || k->int8BOffset == 0); // one signed operand
        // a u8 × s8 pair sum (×2 where two k-groups are added in int16) must fit int16
        QVERIFY((k->int8AMax == 127 && k->int8BMax == 127 && k->int8AOffset == 0) ||
                (k->int8AOffset == 64 && k->int8AMax == 63 && k->int8BMax == 63 && 4 * 126 * 63 < 32768));
    }
    // the int8 passes: the avx2 table takes AVX-VNNI where the CPU has it, and the AVX-VNNI code runs (in
    // its EVEX twin) wherever AVX512-VNNI + VL do, so int8FirstHitIsExact checks it on such machines too
    QStringList passes;
    for (const Int8Pass& p : runnableInt8Passes()) passes << QString::fromUtf8(p.description);
    if (f.avxvnni && f.osSavesYmm) {
        QCOMPARE(QString::fromUtf8(kernelsFor(KernelIsa::Avx2)->int8Description), QStringLiteral("AVX-VNNI vpdpbusd (ymm)"));
        QVERIFY(passes.contains(QStringLiteral("AVX-VNNI vpdpbusd (ymm)")));
    }
    if (f.avx512vnni && f.avx512vl && f.avx512f && f.osSavesZmm)
        QVERIFY2(passes.contains(QStringLiteral("AVX512-VNNI vpdpbusd (ymm, EVEX)")), qPrintable(passes.join(", ")));
}

void TestComputeKernels::gemmMatchesFloat64_data() {
    QTest::addColumn<int>("isa");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("inner");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("stridePad");
    QTest::addColumn<bool>("transposed");
    QTest::addColumn<int>("panelRows"); // 0: the kernel's mr
    QTest::addColumn<int>("wtype");
    struct Shape {
        const char* name;
        int rows, inner, cols, pad;
    };
    const Shape shapes[] = {{"1 row", 1, 64, 50, 0},           {"S=20", 20, 96, 96, 0},
                            {"13 rows, 39 cols", 13, 40, 39, 5}, {"15 rows, inner 257", 15, 257, 70, 3},
                            {"29 rows, 3 cols", 29, 600, 3, 11}, {"350 rows (two row blocks)", 350, 130, 200, 64},
                            {"inner 1", 17, 1, 33, 0},           {"70 rows, inner 1000 (x past L2)", 70, 1000, 70, 2}};
    for (KernelIsa isa : runnableKernelIsas())
        for (const Shape& s : shapes)
            for (bool t : {false, true})
                for (int panelRows : {0, 5})
                    for (WeightType wt : {WeightType::F32, WeightType::F16, WeightType::BF16})
                        QTest::newRow(qPrintable(QStringLiteral("%1 %2%3%4 %5").arg(kernelIsaName(isa), QString::fromLatin1(s.name),
                                                                                    t ? QStringLiteral(" (Wᵀ)") : QString(),
                                                                                    panelRows ? QStringLiteral(", 5-row panels") : QString(),
                                                                                    QString::fromLatin1(typeName(wt)))))
                            << int(isa) << s.rows << s.inner << s.cols << s.pad << t << panelRows << int(wt);
}

void TestComputeKernels::gemmMatchesFloat64() {
    const ComputeKernels& K = fetchKernel();
    QFETCH(int, rows);
    QFETCH(int, inner);
    QFETCH(int, cols);
    QFETCH(int, stridePad);
    QFETCH(bool, transposed);
    const std::vector<float> x = randomFloats(size_t(rows) * inner, 1);
    // W [inner, cols] with row stride cols + pad, or Wᵀ [cols, inner] with row stride inner + pad
    const long ldw = transposed ? inner + stridePad : cols + stridePad;
    QFETCH(int, wtype);
    const TypedWeights tw(randomFloats(size_t(transposed ? cols : inner) * ldw, 2), WeightType(wtype));
    const std::vector<float>& w = tw.stored;
    auto W = [&](long k, long j) { return transposed ? w[size_t(j * ldw + k)] : w[size_t(k * ldw + j)]; };
    std::vector<float> pack(size_t(rows) * inner), y(size_t(rows) * cols, -1.0f);
    QFETCH(int, panelRows);
    const long mr = panelRows == 0 ? K.mr : std::min<long>(panelRows, K.mr);
    for (long p = 0; p < rows; p += mr) K.packPanel(x.data(), inner, rows, inner, p, mr, pack.data());
    // in two column ranges, as two threads' blocks would be
    const long mid = std::min<long>(cols, K.nr + 3);
    K.gemmColumns(pack.data(), rows, inner, mr, tw.data(), tw.type, nullptr, ldw, transposed, 0, mid, y.data(), cols);
    if (mid < cols) K.gemmColumns(pack.data(), rows, inner, mr, tw.data(), tw.type, nullptr, ldw, transposed, mid, cols, y.data(), cols);
    double worst = 0;
    for (long i = 0; i < rows; ++i)
        for (long j = 0; j < cols; ++j) {
            double ref = 0, mag = 0;
            for (long k = 0; k < inner; ++k) {
                ref += double(x[size_t(i * inner + k)]) * W(k, j);
                mag += std::abs(double(x[size_t(i * inner + k)]) * W(k, j));
            }
            const double err = std::abs(double(y[size_t(i * cols + j)]) - ref);
            QVERIFY2(err <= sumBound(inner, mag),
                     qPrintable(QStringLiteral("%1: y(%2,%3) = %4, float64 %5").arg(kernelTag(K)).arg(i).arg(j)
                                    .arg(double(y[size_t(i * cols + j)])).arg(ref)));
            worst = std::max(worst, err / (mag + 1e-30));
        }
    QVERIFY(worst < 1e-5);

    // The weight's packed copy (weight_panels.h) for this kernel's micro-panels, through gemmPanels in two
    // column ranges that start on micro-panels (as weightGemm's blocks do): bitwise the in-place result.
    const Weight stored{tw.data(), inner, cols, ldw, tw.type, transposed};
    std::vector<unsigned char> panels(panelBytes(stored, K.nr), 0xCD); // 0xCD: no byte may be left unwritten
    packPanels(stored, K.nr, panels.data());
    const long nPanels = (cols + K.nr - 1) / K.nr, eb = stored.elementBytes();
    for (long c = cols; c < nPanels * K.nr; ++c) // the padding columns of the last panel are zero
        for (long k = 0; k < inner; ++k)
            for (long b = 0; b < eb; ++b)
                QCOMPARE(int(panels[size_t((((nPanels - 1) * inner + k) * K.nr + c - (nPanels - 1) * K.nr) * eb + b)]), 0);
    std::vector<float> yp(size_t(rows) * cols, -1.0f);
    const long midPanel = std::min<long>(cols, K.nr);
    K.gemmPanels(pack.data(), rows, inner, mr, panels.data(), tw.type, 0, midPanel, yp.data(), cols);
    if (midPanel < cols) K.gemmPanels(pack.data(), rows, inner, mr, panels.data(), tw.type, midPanel, cols, yp.data(), cols);
    for (size_t i = 0; i < y.size(); ++i)
        QVERIFY2(std::memcmp(&yp[i], &y[i], sizeof(float)) == 0,
                 qPrintable(QStringLiteral("%1: packed y(%2,%3) = %4, in place %5").arg(kernelTag(K)).arg(long(i) / cols)
                                .arg(long(i) % cols).arg(double(yp[i])).arg(double(y[i]))));
}

void TestComputeKernels::dotRowsMatchesFloat64AndIsRowIndependent_data() {
    QTest::addColumn<int>("isa");
    QTest::addColumn<int>("m");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("wtype");
    for (KernelIsa isa : runnableKernelIsas())
        for (auto [m, k] : {std::pair{1, 64}, {2, 15}, {3, 768}, {5, 771}, {63, 100}, {7, 1}})
            for (WeightType wt : {WeightType::F32, WeightType::F16, WeightType::BF16})
                QTest::newRow(qPrintable(QStringLiteral("%1 m=%2 k=%3 %4").arg(kernelIsaName(isa)).arg(m).arg(k).arg(QString::fromLatin1(typeName(wt)))))
                    << int(isa) << m << k << int(wt);
}

void TestComputeKernels::dotRowsMatchesFloat64AndIsRowIndependent() {
    const ComputeKernels& K = fetchKernel();
    QFETCH(int, m);
    QFETCH(int, k);
    const long n = 203, ldx = k + 3, ldw = k + 1;
    QFETCH(int, wtype);
    const std::vector<float> x = randomFloats(size_t(m) * ldx, 3);
    const TypedWeights tw(randomFloats(size_t(n) * ldw, 4), WeightType(wtype));
    const std::vector<float>& wt = tw.stored;
    std::vector<float> y(size_t(m) * n, -7.0f);
    K.dotRows(x.data(), m, k, ldx, tw.data(), tw.type, nullptr, ldw, 0, 100, y.data(), n);
    K.dotRows(x.data(), m, k, ldx, tw.data(), tw.type, nullptr, ldw, 100, n, y.data(), n);
    for (long i = 0; i < m; ++i)
        for (long j = 0; j < n; ++j) {
            double ref = 0, mag = 0;
            for (long t = 0; t < k; ++t) {
                const double p = double(x[size_t(i * ldx + t)]) * wt[size_t(j * ldw + t)];
                ref += p;
                mag += std::abs(p);
            }
            QVERIFY2(std::abs(y[size_t(i * n + j)] - ref) <= sumBound(k, mag),
                     qPrintable(QStringLiteral("y(%1,%2) = %3, float64 %4").arg(i).arg(j).arg(y[size_t(i * n + j)]).arg(ref)));
        }
    // each row alone gives the same bits (the lens batches rows of several boundaries)
    for (long i = 0; i < m; ++i) {
        std::vector<float> one(static_cast<size_t>(n));
        K.dotRows(x.data() + i * ldx, 1, k, ldx, tw.data(), tw.type, nullptr, ldw, 0, n, one.data(), n);
        QVERIFY(std::memcmp(one.data(), y.data() + i * n, size_t(n) * sizeof(float)) == 0);
    }
}

namespace {
/// A block format of this test's own: 16 elements in 17 bytes, byte 0 a signed exponent e, then 16 int8
/// q, x = q·2^e (exact in float32, so the reference is exact too).
void decodeTestBlocks(const void* blocks, long nBlocks, float* out) {
    const auto* b = static_cast<const signed char*>(blocks);
    for (long i = 0; i < nBlocks; ++i, b += 17)
        for (int j = 0; j < 16; ++j) out[i * 16 + j] = std::ldexp(float(b[1 + j]), b[0]);
}
const BlockDecoder kTestBlocks{16, 17, &decodeTestBlocks, "test"};
} // namespace

void TestComputeKernels::blockQuantizedRowsMatchFloat64_data() {
    QTest::addColumn<int>("isa");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("inner");
    QTest::addColumn<int>("cols");
    for (KernelIsa isa : runnableKernelIsas())
        for (auto [rows, inner, cols] : {std::tuple{1, 64, 50}, {20, 272, 97}, {70, 512, 33}, {5, 16, 7}})
            QTest::newRow(qPrintable(QStringLiteral("%1 %2x%3x%4").arg(kernelIsaName(isa)).arg(rows).arg(inner).arg(cols)))
                << int(isa) << rows << inner << cols;
}

void TestComputeKernels::blockQuantizedRowsMatchFloat64() {
    // W [inner, cols] stored as cols rows of inner/16 blocks (+1 padding block per row): through the GEMM
    // (rows decoded into micro-panels) and through the dot products (rows decoded four at a time)
    const ComputeKernels& K = fetchKernel();
    QFETCH(int, rows);
    QFETCH(int, inner);
    QFETCH(int, cols);
    const long ldw = inner + 16, blocksPerRow = ldw / 16;
    std::mt19937 gen(5);
    std::uniform_int_distribution<int> q(-128, 127), e(-9, -4);
    std::vector<signed char> stored(size_t(cols * blocksPerRow * 17));
    std::vector<double> W(size_t(inner) * cols); // W(k, j) at [k·cols + j]
    for (long j = 0; j < cols; ++j)
        for (long b = 0; b < blocksPerRow; ++b) {
            signed char* blk = &stored[size_t((j * blocksPerRow + b) * 17)];
            blk[0] = static_cast<signed char>(e(gen));
            for (int t = 0; t < 16; ++t) {
                blk[1 + t] = static_cast<signed char>(q(gen));
                if (b * 16 + t < inner) W[size_t((b * 16 + t) * cols + j)] = std::ldexp(double(blk[1 + t]), blk[0]);
            }
        }
    const std::vector<float> x = randomFloats(size_t(rows) * inner, 9);
    auto check = [&](const std::vector<float>& y, const char* path) {
        for (long i = 0; i < rows; ++i)
            for (long j = 0; j < cols; ++j) {
                double ref = 0, mag = 0;
                for (long k = 0; k < inner; ++k) {
                    ref += double(x[size_t(i * inner + k)]) * W[size_t(k * cols + j)];
                    mag += std::abs(double(x[size_t(i * inner + k)]) * W[size_t(k * cols + j)]);
                }
                QVERIFY2(std::abs(y[size_t(i * cols + j)] - ref) <= sumBound(inner, mag),
                         qPrintable(QStringLiteral("%1 %2: y(%3,%4) = %5, float64 %6").arg(kernelTag(K), path).arg(i).arg(j)
                                        .arg(y[size_t(i * cols + j)]).arg(ref)));
            }
    };
    std::vector<float> pack(size_t(rows) * inner), y(size_t(rows) * cols, -1.0f);
    for (long p = 0; p < rows; p += K.mr) K.packPanel(x.data(), inner, rows, inner, p, K.mr, pack.data());
    K.gemmColumns(pack.data(), rows, inner, K.mr, stored.data(), WeightType::Blocks, &kTestBlocks, ldw, true, 0, cols,
                  y.data(), cols);
    check(y, "gemm");
    std::fill(y.begin(), y.end(), -1.0f);
    K.dotRows(x.data(), rows, inner, inner, stored.data(), WeightType::Blocks, &kTestBlocks, ldw, 0, cols, y.data(), cols);
    check(y, "dot products");
}

void TestComputeKernels::everyHalfWidensExactly_data() { kernelRows(); }

void TestComputeKernels::everyHalfWidensExactly() {
    // All 65536 binary16 values through the kernels' vector load (rows of 16: the value first, then 1.0s;
    // x = e₀, so y_j = v_j·1 + 0·1 + …): equal to Qt's qfloat16 conversion (NaN as NaN, −0 as +0 after
    // the sum with +0), for dotRows and gemmColumns on a weight stored [out, in].
    const ComputeKernels& K = fetchKernel();
    constexpr long kRow = 16, n = 65536;
    std::vector<quint16> wt(size_t(n * kRow), 0x3c00); // 1.0
    for (long j = 0; j < n; ++j) wt[size_t(j * kRow)] = quint16(j);
    std::vector<float> x(kRow, 0.0f), y(static_cast<size_t>(n));
    x[0] = 1.0f;
    K.dotRows(x.data(), 1, kRow, kRow, wt.data(), WeightType::F16, nullptr, kRow, 0, n, y.data(), n);
    std::vector<float> pack(kRow), yg(static_cast<size_t>(n));
    K.packPanel(x.data(), kRow, 1, kRow, 0, 1, pack.data());
    K.gemmColumns(pack.data(), 1, kRow, 1, wt.data(), WeightType::F16, nullptr, kRow, true, 0, n, yg.data(), n);
    for (long j = 0; j < n; ++j) {
        qfloat16 h;
        const quint16 bits = quint16(j);
        std::memcpy(static_cast<void*>(&h), &bits, 2); // qfloat16 holds exactly the 16 bits
        const float ref = float(h) + 0.0f;
        for (const float got : {y[size_t(j)], yg[size_t(j)]}) {
            if (std::isnan(ref)) QVERIFY2(std::isnan(got), qPrintable(QStringLiteral("half 0x%1").arg(j, 4, 16, QChar('0'))));
            else QVERIFY2(got == ref, qPrintable(QStringLiteral("half 0x%1: %2, qfloat16 %3").arg(j, 4, 16, QChar('0')).arg(got).arg(ref)));
        }
    }
}

void TestComputeKernels::softmaxRowMatchesFloat64_data() { kernelRows(); }

void TestComputeKernels::softmaxRowMatchesFloat64() {
    const ComputeKernels& K = fetchKernel();
    const long n = 77;
    for (long kept : {1L, 5L, 16L, 17L, 40L, 77L}) {
        std::vector<float> s = randomFloats(size_t(n), unsigned(kept), 4.0f), p(size_t(n), 9.0f);
        s[0] = 60.0f; // a large score: the max is subtracted
        const std::vector<float> orig = s;
        const float scale = 0.125f;
        K.causalSoftmaxRow(s.data(), p.data(), kept, n, scale);
        double m = -1e300, z = 0;
        for (long i = 0; i < kept; ++i) m = std::max(m, double(orig[size_t(i)]) * scale);
        for (long i = 0; i < kept; ++i) z += std::exp(double(orig[size_t(i)]) * scale - m);
        double total = 0;
        for (long i = 0; i < kept; ++i) {
            QCOMPARE(s[size_t(i)], orig[size_t(i)] * scale); // scaled in place, exactly
            const double ref = std::exp(double(orig[size_t(i)]) * scale - m) / z;
            QVERIFY2(std::abs(p[size_t(i)] - ref) <= 1e-6 * ref + 1e-37,
                     qPrintable(QStringLiteral("%1 kept %2: p[%3] = %4, float64 %5").arg(kernelTag(K)).arg(kept).arg(i).arg(p[size_t(i)]).arg(ref)));
            total += p[size_t(i)];
        }
        QVERIFY(std::abs(total - 1.0) < 1e-5);
        for (long i = kept; i < n; ++i) {
            QCOMPARE(p[size_t(i)], 0.0f);
            QCOMPARE(s[size_t(i)], -std::numeric_limits<float>::infinity());
        }
    }
}

void TestComputeKernels::activationsMatchFloat64_data() { kernelRows(); }

void TestComputeKernels::activationsMatchFloat64() {
    const ComputeKernels& K = fetchKernel();
    std::vector<float> x = randomFloats(301, 7, 3.0f);
    for (float v : {0.0f, -0.0f, 1e-20f, -30.0f, 30.0f, -100.0f, 100.0f, 5e-4f}) x.push_back(v);
    std::vector<float> g = x, s = x;
    K.geluNew(g.data(), long(g.size()));
    K.silu(s.data(), long(s.size()));
    for (size_t i = 0; i < x.size(); ++i) {
        const double v = x[i];
        const double gRef = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        const double sRef = v / (1 + std::exp(-v));
        QVERIFY2(std::abs(g[i] - gRef) <= 4e-7 * std::abs(v) + 1e-30,
                 qPrintable(QStringLiteral("%1: gelu_new(%2) = %3, float64 %4").arg(kernelTag(K)).arg(v).arg(g[i]).arg(gRef)));
        QVERIFY2(std::abs(s[i] - sRef) <= 4e-7 * std::abs(v) + 1e-30,
                 qPrintable(QStringLiteral("%1: silu(%2) = %3, float64 %4").arg(kernelTag(K)).arg(v).arg(s[i]).arg(sRef)));
    }
}

void TestComputeKernels::sumExpMatchesFloat64_data() { kernelRows(); }

void TestComputeKernels::sumExpMatchesFloat64() {
    const ComputeKernels& K = fetchKernel();
    for (long n : {1L, 15L, 16L, 50257L}) {
        std::vector<float> x = randomFloats(size_t(n), unsigned(n), 5.0f);
        float m = x[0];
        for (float v : x) m = std::max(m, v);
        double ref = 0;
        for (float v : x) ref += std::exp(double(v) - m);
        const double ours = K.sumExp(x.data(), n, m);
        QVERIFY2(std::abs(ours - ref) <= 3e-7 * ref,
                 qPrintable(QStringLiteral("%1 n=%2: %3 vs float64 %4").arg(kernelTag(K)).arg(n).arg(ours, 0, 'g', 12).arg(ref, 0, 'g', 12)));
    }
}

void TestComputeKernels::int8FirstHitIsExact_data() {
    // every int8 pass this CPU can run: the tables' and the twins (the AVX-VNNI code in EVEX encoding)
    QTest::addColumn<int>("pass");
    const std::vector<Int8Pass> passes = runnableInt8Passes();
    for (size_t i = 0; i < passes.size(); ++i) QTest::newRow(passes[i].description) << int(i);
}

void TestComputeKernels::int8FirstHitIsExact() {
    // Random ã ∈ [−127, 127] and b̃ ∈ [−int8BMax, int8BMax] laid out with the kernel's offsets, thresholds
    // at, just above and below the rows' maxima: the group returned must be the first one in which a cell's
    // exact integer dot product reaches its row's threshold (brute force here), with and without a tail
    // (head dims pruned by the Cauchy–Schwarz bound of the tail).
    QFETCH(int, pass);
    const Int8Pass K = runnableInt8Passes()[size_t(pass)];
    std::mt19937 gen(11);
    std::uniform_int_distribution<int> qa(-K.aMax, K.aMax), qb(-K.bMax, K.bMax);
    for (int r : {4, 12, 64}) {
        for (bool withTail : {false, true}) {
            const int nkg = r / 4, nkgHead = withTail && nkg >= 2 ? nkg / 2 : nkg, groups = 9, cols = groups * 64;
            std::vector<int> a(size_t(6) * r), b(size_t(cols) * r); // ã [row][k], b̃ [column][k]
            for (auto& v : a) v = qa(gen);
            for (auto& v : b) v = qb(gen);
            a[0] = K.aMax, a[1] = -K.aMax, b[0] = -K.bMax, b[1] = K.bMax; // the extremes (no int16 saturation)
            std::vector<uint8_t> aBytes(a.size());
            for (size_t i = 0; i < a.size(); ++i) aBytes[i] = uint8_t(a[i] + K.aOffset);
            alignas(64) static uint8_t packed[9 * 16 * 256];
            std::vector<int> bSum(static_cast<size_t>(cols)), bSumHead(static_cast<size_t>(cols)), aSum(6), aSumHead(6);
            std::vector<int> aTail(6), bTailMax(static_cast<size_t>(groups));
            auto norm = [](const int* v, int k0, int k1) { // an integer ≥ the norm
                double s = 0;
                for (int k = k0; k < k1; ++k) s += double(v[k]) * v[k];
                return int(std::ceil(std::sqrt(s)));
            };
            for (int j = 0; j < cols; ++j) {
                for (int k = 0; k < r; ++k) {
                    const int v = b[size_t(j) * r + size_t(k)];
                    packed[(size_t(j / 64) * nkg + size_t(k / 4)) * 256 + size_t(j % 64) * 4 + size_t(k % 4)] = uint8_t(v + K.bOffset);
                    bSum[size_t(j)] += v;
                    if (k < 4 * nkgHead) bSumHead[size_t(j)] += v;
                }
                bTailMax[size_t(j / 64)] = std::max(bTailMax[size_t(j / 64)], norm(&b[size_t(j) * r], 4 * nkgHead, r));
            }
            for (int row = 0; row < 6; ++row) {
                for (int k = 0; k < r; ++k) {
                    aSum[size_t(row)] += a[size_t(row * r + k)];
                    if (k < 4 * nkgHead) aSumHead[size_t(row)] += a[size_t(row * r + k)];
                }
                aTail[size_t(row)] = norm(&a[size_t(row * r)], 4 * nkgHead, r);
            }
            Int8Operands o;
            o.aOffset = K.aOffset;
            o.bOffset = K.bOffset;
            o.a = aBytes.data();
            o.aStride = r;
            o.aTailNorm = aTail.data();
            o.aSum = aSum.data();
            o.aSumHead = aSumHead.data();
            o.b = packed;
            o.nkg = nkg;
            o.nkgHead = nkgHead;
            o.bTailNormMax = bTailMax.data();
            o.bSum = bSum.data();
            o.bSumHead = bSumHead.data();
            const std::vector<int16_t> a16(a.begin(), a.end()), b16(b.begin(), b.end()); // the portable loop's copies
            o.a16 = a16.data();
            o.b16 = b16.data();
            std::vector<std::vector<int>> dots(6, std::vector<int>(size_t(cols)));
            for (int row = 0; row < 6; ++row)
                for (int j = 0; j < cols; ++j) {
                    int d = 0;
                    for (int k = 0; k < r; ++k) d += a[size_t(row * r + k)] * b[size_t(j) * r + size_t(k)];
                    dots[size_t(row)][size_t(j)] = d;
                }
            std::uniform_int_distribution<int> pick(0, 5);
            for (int trial = 0; trial < 40; ++trial) {
                int thr[6];
                for (int row = 0; row < 6; ++row) {
                    const int mode = pick(gen);
                    int rowMax = std::numeric_limits<int>::min();
                    for (int d : dots[size_t(row)]) rowMax = std::max(rowMax, d);
                    thr[row] = mode == 0 ? 1 << 30 : mode == 1 ? rowMax : mode == 2 ? rowMax + 1 : mode == 3 ? -(1 << 30) : rowMax - pick(gen) * 50;
                }
                for (long g0 : {0L, 3L}) {
                    long expected = groups;
                    for (long g = g0; g < groups && expected == groups; ++g)
                        for (int row = 0; row < 6 && expected == groups; ++row)
                            for (int c = 0; c < 64; ++c)
                                if (dots[size_t(row)][size_t(g * 64 + c)] >= thr[row]) {
                                    expected = g;
                                    break;
                                }
                    const long got = K.firstHit(o, 0, g0, groups, thr);
                    QVERIFY2(got == expected, qPrintable(QStringLiteral("%1 r=%2%3 trial %4 from %5: group %6, expected %7")
                                                             .arg(QString::fromUtf8(K.description)).arg(r).arg(withTail ? " (tail)" : "").arg(trial)
                                                             .arg(g0).arg(got).arg(expected)));
                }
            }
        }
    }
}

void TestComputeKernels::probesComputeWhatTheySay_data() { kernelRows(); }

void TestComputeKernels::probesComputeWhatTheySay() {
    const ComputeKernels& K = fetchKernel();
    QVERIFY(K.lanes == 4 || K.lanes == 8 || K.lanes == 16);
    QVERIFY(K.fmaChainCount >= 8);
    const float f = K.fmaChains(1000, 1.0f);
    QVERIFY(std::isfinite(f));
    // acc ← acc·a + b from acc₀ = seed·i: a sum over the chains and lanes
    double ref = 0;
    for (int i = 0; i < K.fmaChainCount; ++i) {
        double acc = float(i);
        for (int it = 0; it < 1000; ++it) acc = acc * double(0.999999f) + double(1e-7f);
        ref += acc * K.lanes;
    }
    QVERIFY2(std::abs(f - ref) <= 1e-4 * std::abs(ref), qPrintable(QStringLiteral("%1 vs %2").arg(f).arg(ref)));
    alignas(64) static float buf[4096];
    for (int i = 0; i < 4096; ++i) buf[i] = float(i % 7);
    double s = 0;
    for (int i = 0; i < 4096; ++i) s += buf[i];
    QCOMPARE(double(K.sumFloats(buf, 4096)), s);
}

void TestComputeKernels::choiceFollowsFeaturesAndOsState() {
    CpuFeatures none;
    QCOMPARE(int(bestKernelIsa(none)), int(KernelIsa::Portable));
    CpuFeatures avx2;
    avx2.avx = avx2.avx2 = avx2.fma = avx2.f16c = avx2.osSavesYmm = true;
#if defined(__x86_64__)
    QCOMPARE(int(bestKernelIsa(avx2)), int(KernelIsa::Avx2));
    CpuFeatures avx512 = avx2;
    avx512.avx512f = avx512.avx512bw = avx512.avx512dq = avx512.avx512vl = true;
    // the CPU has AVX-512 but the OS does not save its registers (XCR0): the next kernel down
    QCOMPARE(int(bestKernelIsa(avx512)), int(KernelIsa::Avx2));
    avx512.osSavesZmm = true;
    QCOMPARE(int(bestKernelIsa(avx512)), int(KernelIsa::Avx512));
    CpuFeatures noOs = avx2;
    noOs.osSavesYmm = false; // AVX2 in cpuid, ymm state not enabled: portable
    QCOMPARE(int(bestKernelIsa(noOs)), int(KernelIsa::Portable));
    CpuFeatures noFma = avx2;
    noFma.fma = false;
    QCOMPARE(int(bestKernelIsa(noFma)), int(KernelIsa::Portable));
#else
    QCOMPARE(int(bestKernelIsa(avx2)), int(KernelIsa::Portable)); // no x86 kernels in this build
#endif
    QCOMPARE(int(chooseKernels(QString(), none).isa), int(KernelIsa::Portable));
    QVERIFY(chooseKernels(QString(), none).error.isEmpty());
    QCOMPARE(int(chooseKernels(QStringLiteral(" Portable "), avx2).isa), int(KernelIsa::Portable));
    QVERIFY(chooseKernels(QStringLiteral("portable"), avx2).error.isEmpty());
}

void TestComputeKernels::forcedKernelErrorsNameTheProblem() {
    CpuFeatures avx2;
    avx2.avx = avx2.avx2 = avx2.fma = avx2.f16c = avx2.osSavesYmm = true;
    avx2.avx512f = true; // in cpuid, but without BW/DQ/VL and without the OS state
    const KernelChoice c = chooseKernels(QStringLiteral("avx512"), avx2);
    QVERIFY(!c.error.isEmpty());
    QVERIFY2(c.error.contains(QStringLiteral("ATTNSCOPE_ISA=avx512")), qPrintable(c.error));
#if defined(__x86_64__)
    QCOMPARE(int(c.isa), int(KernelIsa::Avx2)); // the best runnable one, should the caller go on anyway
    QVERIFY2(c.error.contains(QStringLiteral("AVX512BW")) && c.error.contains(QStringLiteral("XCR0"))
                 && !c.error.contains(QStringLiteral("AVX512F,")), qPrintable(c.error));
    QVERIFY2(c.error.contains(QStringLiteral("It can run: portable, avx2.")), qPrintable(c.error));
#endif
    const KernelChoice unknown = chooseKernels(QStringLiteral("sse9"), avx2);
    QVERIFY2(unknown.error.contains(QStringLiteral("ATTNSCOPE_ISA=sse9 names no compute kernel"))
                 && unknown.error.contains(QStringLiteral("avx512, avx2 or portable")),
             qPrintable(unknown.error));
}

QTEST_GUILESS_MAIN(TestComputeKernels)
#include "tst_compute_kernels.moc"
