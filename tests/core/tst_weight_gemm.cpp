// weightGemm (model/core/weight_gemm.h), the forward's projection kernel, against a float64 reference
// on shapes that exercise every edge: row counts 1–29 (full and partial 14-row panels), column tails
// that are not multiples of 32, inner sizes below, at and above the 256-deep blocks, strided weights
// (column blocks of a fused matrix), x given by pointer with a row stride, and the bias. Also: the
// result is bitwise independent of the OpenMP thread count (each column is one thread's fixed sum), and
// a weight's packed copy (weight_panels.h) gives the in-place product's bits.

#include "model/core/kernels/compute_kernels.h"
#include "model/core/weight_gemm.h"
#include "model/core/weight_panels.h"
#include "support/llama_checkpoint.h"

#include <QtTest>
#include <atomic>
#include <random>

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace attnscope;

namespace {

Matrix randomMatrix(Eigen::Index r, Eigen::Index c, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    Matrix m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = d(gen);
    return m;
}

/// x·W (+ b) in float64, and Σ|x||W| per entry (the scale of float32 rounding error).
void reference(const Matrix& x, const Weight& W, const Weight& b, Eigen::MatrixXd& y, Eigen::MatrixXd& mag) {
    const Eigen::MatrixXd xd = x.cast<double>(), wd = W.view().cast<double>();
    y = xd * wd;
    mag = xd.cwiseAbs() * wd.cwiseAbs();
    if (!b.empty())
        for (Eigen::Index r = 0; r < y.rows(); ++r) y.row(r) += b.view().row(0).cast<double>();
}

/// Largest |ours − reference| / (Σ|x||W| + 1): float32 summation of `inner` terms stays below ~inner·2⁻²⁴.
double relativeError(const Matrix& ours, const Eigen::MatrixXd& ref, const Eigen::MatrixXd& mag) {
    return ((ours.cast<double>() - ref).array().abs() / (mag.array() + 1.0)).maxCoeff();
}

} // namespace

class TestWeightGemm : public QObject {
    Q_OBJECT
private slots:
    void matchesFloat64Reference_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("inner");
        QTest::addColumn<int>("cols");
        QTest::addColumn<int>("stridePad");
        QTest::addColumn<bool>("bias");
        QTest::newRow("1 row (last-position logits)") << 1 << 64 << 50 << 0 << false;
        QTest::newRow("S=20 streaming, two panels") << 20 << 96 << 96 << 0 << true;
        QTest::newRow("13 rows, tail 7 cols") << 13 << 40 << 39 << 5 << true;
        QTest::newRow("14 rows exactly, 32 cols") << 14 << 256 << 32 << 0 << false;
        QTest::newRow("15 rows, inner 257 (two depth blocks)") << 15 << 257 << 70 << 3 << true;
        QTest::newRow("29 rows, inner 600, 3 cols") << 29 << 600 << 3 << 11 << false;
        QTest::newRow("350 rows (two row blocks), 200 cols") << 350 << 130 << 200 << 64 << true;
        QTest::newRow("inner 1") << 17 << 1 << 33 << 0 << true;
    }
    void matchesFloat64Reference() {
        QFETCH(int, rows);
        QFETCH(int, inner);
        QFETCH(int, cols);
        QFETCH(int, stridePad);
        QFETCH(bool, bias);
        const Matrix x = randomMatrix(rows, inner, 1);
        const Matrix wStore = randomMatrix(inner, cols + stridePad, 2); // W = its first cols columns (strided)
        const Matrix bStore = randomMatrix(1, cols, 3);
        const Weight W{wStore.data(), inner, cols, wStore.cols()};
        const Weight b = bias ? Weight{bStore.data(), 1, cols, cols} : Weight{};
        Matrix y;
        weightGemm(x, W, b, y);
        QCOMPARE(y.rows(), Eigen::Index(rows));
        QCOMPARE(y.cols(), Eigen::Index(cols));
        Eigen::MatrixXd ref, mag;
        reference(x, W, b, ref, mag);
        const double err = relativeError(y, ref, mag);
        QVERIFY2(err <= 4.0 * inner * 6e-8 + 1e-7, qPrintable(QString("relative error %1").arg(err)));
        // and the same numbers as Eigen's float32 product to rounding
        Matrix eig = x * W.view();
        if (bias) eig.rowwise() += b.view().row(0);
        QVERIFY((y - eig).cwiseAbs().maxCoeff() <= 1e-4f * float(std::max(1, inner / 16)));
    }

    void pointerFormWithRowStride() {
        // x = columns 64..127 of a [40, 192] matrix (a head's z inside z [pos, n_heads·d_head]), W a row
        // block of a [192, 50] matrix (W_O^h), y written into columns 0..49 of a [40, 60] buffer
        const Matrix z = randomMatrix(40, 192, 4), wo = randomMatrix(192, 50, 5);
        const Weight Wh{wo.data() + 64 * 50, 64, 50, 50};
        Matrix y = Matrix::Constant(40, 60, 7.0f);
        weightGemm(z.data() + 64, 40, 64, z.cols(), Wh, y.data(), y.cols(), false);
        Eigen::MatrixXd ref, mag;
        reference(Matrix(z.middleCols(64, 64)), Wh, Weight{}, ref, mag);
        QVERIFY(relativeError(Matrix(y.leftCols(50)), ref, mag) <= 64 * 6e-8 * 4);
        QCOMPARE(y.rightCols(10).minCoeff(), 7.0f); // untouched beyond W.cols
        QCOMPARE(y.rightCols(10).maxCoeff(), 7.0f);
    }

    void bitwiseIndependentOfThreadCount() {
#ifdef _OPENMP
        const Matrix x = randomMatrix(100, 300, 6), w = randomMatrix(300, 1000, 7);
        const Weight W{w.data(), 300, 1000, 1000};
        const int before = omp_get_max_threads();
        omp_set_num_threads(1);
        Matrix one;
        weightGemm(x, W, Weight{}, one);
        omp_set_num_threads(std::max(2, before));
        Matrix many;
        weightGemm(x, W, Weight{}, many);
        omp_set_num_threads(before);
        QCOMPARE(std::memcmp(one.data(), many.data(), size_t(one.size()) * sizeof(float)), 0);
        QVERIFY(one.cwiseAbs().maxCoeff() > 10.0f); // real values, not zeros
#else
        QSKIP("built without OpenMP");
#endif
    }

    void transposedMatchesFloat64Reference_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("inner");
        QTest::addColumn<int>("cols");
        QTest::newRow("1 row (Eigen path)") << 1 << 96 << 77;
        QTest::newRow("20 rows (Eigen path)") << 20 << 300 << 40;
        QTest::newRow("64 rows (kernel), tail 1") << 64 << 64 << 33;
        QTest::newRow("130 rows, inner 300, tail 5") << 130 << 300 << 101;
        QTest::newRow("150 rows, 513 cols") << 150 << 130 << 513;
    }
    void transposedMatchesFloat64Reference() {
        QFETCH(int, rows);
        QFETCH(int, inner);
        QFETCH(int, cols);
        const Matrix x = randomMatrix(rows, inner, 11);
        const Matrix wtStore = randomMatrix(cols, inner + 9, 12); // Wᵀ with a row stride beyond its width
        const Weight WT{wtStore.data(), cols, inner, wtStore.cols()};
        Matrix y;
        weightGemmTransposed(x, WT, y);
        QCOMPARE(y.rows(), Eigen::Index(rows));
        QCOMPARE(y.cols(), Eigen::Index(cols));
        const Eigen::MatrixXd xd = x.cast<double>(), wd = WT.view().transpose().cast<double>();
        const Eigen::MatrixXd ref = xd * wd, mag = xd.cwiseAbs() * wd.cwiseAbs();
        const double err = relativeError(y, ref, mag);
        QVERIFY2(err <= 4.0 * inner * 6e-8 + 1e-7, qPrintable(QString("relative error %1").arg(err)));
        // a row's values do not depend on which other rows share the call (≥ 64 rows: the kernel path)
        if (rows >= 128) {
            Matrix part;
            weightGemmTransposed(Matrix(x.topRows(rows / 2)), WT, part);
            QCOMPARE(std::memcmp(part.data(), y.data(), size_t(part.size()) * sizeof(float)), 0);
        }
    }

    void multiEqualsSingleProductsAndRunsEachEpilogueOncePerEntry_data() {
        QTest::addColumn<int>("rows");
        QTest::newRow("20 rows: packed x in L2, narrow blocks") << 20;
        QTest::newRow("300 rows: wide blocks") << 300;
        QTest::newRow("1000 rows: several row blocks, each a work unit") << 1000;
    }
    void multiEqualsSingleProductsAndRunsEachEpilogueOncePerEntry() {
        // weightGemmMulti (W_Q, W_K, W_V of one ln1): each y bitwise what weightGemm gives; every entry's
        // epilogue runs exactly once, after the entry is final; beyond one row block, on blocks of rows
        QFETCH(int, rows);
        const Matrix x = randomMatrix(rows, 300, 21), wa = randomMatrix(300, 96, 22), wb = randomMatrix(300, 70, 23),
                     wide = randomMatrix(300, 200, 24);
        const std::vector<Weight> Ws{{wa.data(), 300, 96, 96}, {wb.data(), 300, 70, 70}, {wide.data() + 50, 300, 40, 200}};
        std::vector<Matrix> ys(3), seen(3);
        std::vector<Eigen::MatrixXi> calls(3);
        std::atomic<int> partialRowBlocks{0};
        std::vector<GemmTarget> targets;
        for (size_t t = 0; t < 3; ++t) {
            ys[t] = Matrix::Constant(rows, Ws[t].cols + 3, -1.0f); // row stride beyond the product's width
            seen[t] = Matrix::Zero(rows, Ws[t].cols);
            calls[t] = Eigen::MatrixXi::Zero(rows, Ws[t].cols);
            targets.push_back({Ws[t], ys[t].data(), ys[t].cols(), [&, t](const YBlock& b) {
                                   // blocks are disjoint: no two threads write the same entries
                                   calls[t].block(b.r0, b.c0, b.r1 - b.r0, b.c1 - b.c0).array() += 1;
                                   seen[t].block(b.r0, b.c0, b.r1 - b.r0, b.c1 - b.c0) =
                                       ys[t].block(b.r0, b.c0, b.r1 - b.r0, b.c1 - b.c0);
                                   if (b.r1 - b.r0 < rows) ++partialRowBlocks;
                               }});
        }
        weightGemmMulti(x.data(), rows, 300, 300, targets);
        for (size_t t = 0; t < 3; ++t) {
            Matrix single;
            weightGemm(x, Ws[t], Weight{}, single);
            const Matrix y = ys[t].leftCols(Ws[t].cols);
            QCOMPARE(std::memcmp(Matrix(y).data(), single.data(), size_t(single.size()) * sizeof(float)), 0);
            QCOMPARE(std::memcmp(seen[t].data(), single.data(), size_t(single.size()) * sizeof(float)), 0);
            QCOMPARE(calls[t].minCoeff(), 1);
            QCOMPARE(calls[t].maxCoeff(), 1);
            QCOMPARE(ys[t].rightCols(3).maxCoeff(), -1.0f); // untouched beyond W.cols
            QVERIFY(single.cwiseAbs().maxCoeff() > 10.0f);
        }
        // rows beyond one L2 row block (weightGemmRowBlock) are split into row blocks, below it never
        QCOMPARE(partialRowBlocks.load() > 0, rows > weightGemmRowBlock());
    }

    void transposedEqualsInPlaceBitwise_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("inner");
        QTest::addColumn<int>("cols");
        QTest::newRow("64 rows, inner 768, 32 cols") << 64 << 768 << 32;
        QTest::newRow("100 rows, inner 300 (16-row tail 12), tail 17") << 100 << 300 << 113;
        QTest::newRow("70 rows, inner 15, 64 cols") << 70 << 15 << 64;
        QTest::newRow("340 rows (two row blocks), inner 529, 257 cols") << 340 << 529 << 257;
    }
    void transposedEqualsInPlaceBitwise() {
        // The transposed path copies Wᵀ's micro-panels (16×16 register transposes) and runs the kernel
        // of the in-place path on them: with W = (Wᵀ)ᵀ stored explicitly, both give the same bits.
        QFETCH(int, rows);
        QFETCH(int, inner);
        QFETCH(int, cols);
        const Matrix x = randomMatrix(rows, inner, 21);
        const Matrix wtStore = randomMatrix(cols, inner + 3, 22);
        const Weight WT{wtStore.data(), cols, inner, wtStore.cols()};
        const Matrix W = WT.view().transpose();
        Matrix yt, y;
        weightGemmTransposed(x, WT, yt);
        weightGemm(x, Weight{W.data(), W.rows(), W.cols(), W.cols()}, Weight{}, y);
        QCOMPARE(yt.rows(), y.rows());
        QCOMPARE(yt.cols(), y.cols());
        QCOMPARE(std::memcmp(yt.data(), y.data(), size_t(y.size()) * sizeof(float)), 0);
    }

    void packedCopyEqualsInPlaceBitwise_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<bool>("transposed");
        for (int rows : {1, 5, 20, 128, 350})
            for (bool t : {false, true})
                QTest::newRow(qPrintable(QStringLiteral("%1 rows%2").arg(rows).arg(t ? QStringLiteral(", Wᵀ stored") : QString())))
                    << rows << t;
    }
    void packedCopyEqualsInPlaceBitwise() {
        // A weight with its packed copy attached (weight_panels.h, as Model::layer attaches them): the
        // product reads the micro-panels from the copy and gives the in-place product's bits. The weight is
        // a column block of a wider stored matrix (W_Q inside c_attn), 300 deep (two depth blocks), 70
        // columns (a tail panel on every kernel). A column block of it, which keeps the pointer but not the
        // geometry, is read in place. Wᵀ stored: few rows go through dot products and pack nothing.
        QFETCH(int, rows);
        QFETCH(bool, transposed);
        const Matrix x = randomMatrix(rows, 300, 31);
        Matrix store = randomMatrix(transposed ? 70 : 300, transposed ? 310 : 200, 32);
        const Weight plain = transposed ? Weight{store.data() + 5, 300, 70, 310, WeightType::F32, true}
                                        : Weight{store.data() + 50, 300, 70, 200};
        const WeightPanels panels(plain, computeKernels().nr);
        Weight packed = plain;
        packed.panels = &panels;
        Matrix yPlain, yPacked, yBlock, yBlockPlain;
        weightGemm(x, plain, Weight{}, yPlain);
        QCOMPARE(panels.packedBytes(), size_t(0)); // nothing packed before the first product that uses it
        weightGemm(x, packed, Weight{}, yPacked);
        const bool dots = transposed && rows < transposedKernelMinRows(WeightType::F32);
        QCOMPARE(panels.packedBytes(), dots ? size_t(0) : panelBytes(plain, computeKernels().nr));
        QCOMPARE(std::memcmp(yPacked.data(), yPlain.data(), size_t(yPlain.size()) * sizeof(float)), 0);
        Eigen::MatrixXd ref, mag;
        const Matrix dense = plain.toMatrix();
        reference(x, Weight{dense.data(), 300, 70, 70}, Weight{}, ref, mag);
        QVERIFY(relativeError(yPacked, ref, mag) < 1e-5);
        QVERIFY(yPacked.cwiseAbs().maxCoeff() > 10.0f);
        weightGemm(x, packed.colBlock(3, 40), Weight{}, yBlock);
        weightGemm(x, plain.colBlock(3, 40), Weight{}, yBlockPlain);
        QCOMPARE(std::memcmp(yBlock.data(), yBlockPlain.data(), size_t(yBlock.size()) * sizeof(float)), 0);
        QVERIFY(relativeError(yBlock, ref.middleCols(3, 40), mag.middleCols(3, 40)) < 1e-5);

        // Once packed, reading the weight (toMatrix, copyRow, as the analyses do) takes the values from the
        // copy, not from the stored memory it replaced: overwritten here, the packed weight and its blocks
        // still read the values it was packed from; the plain view reads the new ones.
        const Matrix before = plain.toMatrix(), blockBefore = plain.colBlock(3, 40).rowBlock(7, 64).toMatrix();
        store.setConstant(0.5f);
        QCOMPARE(plain.toMatrix().maxCoeff(), 0.5f);
        QCOMPARE(plain.toMatrix().minCoeff(), 0.5f);
        const Matrix after = packed.toMatrix(), blockAfter = packed.colBlock(3, 40).rowBlock(7, 64).toMatrix();
        std::vector<float> row(size_t(plain.cols));
        packed.copyRow(11, row.data());
        if (dots) { // nothing packed: read in place
            QCOMPARE(after.maxCoeff(), 0.5f);
            return;
        }
        QCOMPARE(after.rows(), before.rows());
        QCOMPARE(after.cols(), before.cols());
        QCOMPARE(std::memcmp(after.data(), before.data(), size_t(before.size()) * sizeof(float)), 0);
        QCOMPARE(std::memcmp(blockAfter.data(), blockBefore.data(), size_t(blockBefore.size()) * sizeof(float)), 0);
        QCOMPARE(std::memcmp(row.data(), before.row(11).data(), row.size() * sizeof(float)), 0);
        QVERIFY(before.cwiseAbs().maxCoeff() > 1.0f);
    }

    void packed16BitWeightsStoredTransposedUseTheGemmFromFewRows() {
        // A BF16 weight stored [out, in] (nn.Linear, as Llama's safetensors) with its packed copy attached
        // switches to the GEMM kernel at ComputeKernels::packedGemmMinRows16 rows (2 on the SIMD kernels), not
        // at the in-place threshold: within that class a row's bits do not depend on how many rows share the
        // product, the values agree with float64, and from the in-place threshold on packed and in-place agree
        // bitwise again (one class for both).
        const ComputeKernels& K = computeKernels();
        const Eigen::Index inner = 300, cols = 70;
        const Matrix dense = randomMatrix(cols, inner, 41); // Wᵀ as stored
        std::vector<quint16> bf16(size_t(dense.size()));
        for (size_t i = 0; i < bf16.size(); ++i) bf16[i] = test::toBf16Bits(dense.data()[i]); // the reference decodes these bits
        const Weight plain{bf16.data(), inner, cols, inner, WeightType::BF16, true};
        const WeightPanels panels(plain, computeKernels().nr);
        Weight packed = plain;
        packed.panels = &panels;
        QCOMPARE(transposedKernelMinRows(packed), Eigen::Index(K.packedGemmMinRows16));
        QCOMPARE(transposedKernelMinRows(plain), Eigen::Index(K.transposedGemmMinRows16));
        QCOMPARE(K.packedGemmMinRows16, K.isa == KernelIsa::Portable ? 64L : 2L);
        const Eigen::Index big = std::max<Eigen::Index>(64, K.transposedGemmMinRows16);
        const Matrix x = randomMatrix(big, inner, 42);
        Matrix yBig, ySmall, yPlain;
        weightGemm(x, packed, Weight{}, yBig);
        QCOMPARE(panels.packedBytes(), panelBytes(plain, K.nr));
        const Eigen::Index few = K.packedGemmMinRows16;
        weightGemm(Matrix(x.topRows(few)), packed, Weight{}, ySmall);
        QCOMPARE(std::memcmp(ySmall.data(), yBig.data(), size_t(ySmall.size()) * sizeof(float)), 0);
        weightGemm(x, plain, Weight{}, yPlain);
        QCOMPARE(std::memcmp(yPlain.data(), yBig.data(), size_t(yBig.size()) * sizeof(float)), 0);
        Eigen::MatrixXd ref, mag;
        const Matrix decoded = plain.toMatrix();
        reference(x, Weight{decoded.data(), inner, cols, cols}, Weight{}, ref, mag);
        QVERIFY(relativeError(yBig, ref, mag) < 1e-5);
        QVERIFY(yBig.cwiseAbs().maxCoeff() > 10.0f);
    }

    void emptyInnerGivesZerosPlusBias() {
        const Matrix x(3, 0);
        const Matrix bStore = randomMatrix(1, 5, 8);
        const float* none = bStore.data();
        Matrix y;
        weightGemm(x, Weight{none, 0, 5, 5}, Weight{bStore.data(), 1, 5, 5}, y);
        QCOMPARE(y.rows(), Eigen::Index(3));
        for (int r = 0; r < 3; ++r) QCOMPARE(y.row(r), bStore.row(0));
    }
};

QTEST_GUILESS_MAIN(TestWeightGemm)
#include "tst_weight_gemm.moc"
