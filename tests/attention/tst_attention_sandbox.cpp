// The by-hand attention worksheet (model/analysis/attention/attention_sandbox.h) against values worked out by
// hand below. Default example, worksheet (Columns) convention, tokens are the columns of X:
//
//   features f1..f6 of x1 = (1,0,1,0,1,0), x2 = (0,1,1,0,0,1), x3 = (1,0,0,1,0,1), x4 = (0,1,0,1,1,0)
//   W_Q rows: f1+f3, f2+f5, f4+f6   ->  q1 = (2,1,0), q2 = (1,1,1), q3 = (1,0,2), q4 = (0,2,1)
//   W_K rows: f1+f5, f2+f3, f4+f6   ->  k1 = (2,1,0), k2 = (0,2,1), k3 = (1,0,2), k4 = (1,1,1)
//   W_V rows: f1+f4, f3+f6, f2+f5   ->  v1 = (1,1,1), v2 = (0,2,1), v3 = (2,1,0), v4 = (1,0,2)
//
//   KᵀQ (row i = key k_i, column j = query q_j, entry k_i·q_j):
//        q1 q2 q3 q4
//   k1 [  5  3  2  2 ]     e.g. k1·q1 = 2·2 + 1·1 + 0·0 = 5,  k4·q3 = 1 + 0 + 2 = 3
//   k2 [  2  3  2  5 ]
//   k3 [  2  3  5  2 ]
//   k4 [  3  3  3  3 ]
//
//   worksheet scaling ⌊x/2⌋ (d_k = 3, round(√3) = 2):  5 -> 2, 3 -> 1, 2 -> 1
//   [ 2 1 1 1 ; 1 1 1 2 ; 1 1 2 1 ; 1 1 1 1 ]
//
//   worksheet softmax 3^x per column: column 1 = (9,3,3,3)/18 = (1/2, 1/6, 1/6, 1/6)
//                                     column 2 = (3,3,3,3)/12 = (1/4, 1/4, 1/4, 1/4)
//                                     column 3 = (3,3,9,3)/18 = (1/6, 1/6, 1/2, 1/6)
//                                     column 4 = (3,9,3,3)/18 = (1/6, 1/2, 1/6, 1/6)
//
//   Z = V·A, column j = Σ_i A(i,j) v_i:
//     z1 = v1/2 + (v2+v3+v4)/6 = (1/2,1/2,1/2) + (3,3,3)/6 = (1, 1, 1)
//     z2 = (v1+v2+v3+v4)/4 = (4,4,4)/4 = (1, 1, 1)
//     z3 = v3/2 + (v1+v2+v4)/6 = (1,1/2,0) + (2,3,4)/6 = (4/3, 1, 2/3)
//     z4 = v2/2 + (v1+v3+v4)/6 = (0,1,1/2) + (4,2,3)/6 = (2/3, 4/3, 1)
//
//   Causal (query j sees keys 1..j; worksheet arithmetic), scaled column j restricted to keys ≤ j:
//     column 1 = (1),           A = (1, 0, 0, 0)
//     column 2 = (1, 1)  -> (3,3)/6 = (1/2, 1/2, 0, 0)
//     column 3 = (1, 1, 2) -> (3,3,9)/15 = (1/5, 1/5, 3/5, 0)
//     column 4 = unchanged (1/6, 1/2, 1/6, 1/6)
//     z1 = v1 = (1,1,1); z2 = (v1+v2)/2 = (1/2, 3/2, 1); z3 = (v1+v2)/5 + 3v3/5 = (7/5, 6/5, 2/5); z4 = (2/3, 4/3, 1)
//
// Exact arithmetic uses e^(x/√3) on the same KᵀQ; the expected values are computed in double from
// the hand matrix above (not from the code under test).

#include "model/analysis/attention/attention_sandbox.h"
#include "model/core/errors.h"
#include "support/reference_json.h"

#include <QtTest>
#include <cmath>

using namespace attnscope;
using namespace attnscope::test;

namespace {

Matrix mat(int rows, int cols, std::initializer_list<double> v) {
    Matrix m(rows, cols);
    auto it = v.begin();
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) m(i, j) = float(*it++);
    return m;
}

const Matrix handQ = mat(3, 4, {2, 1, 1, 0, 1, 1, 0, 2, 0, 1, 2, 1});
const Matrix handK = mat(3, 4, {2, 0, 1, 1, 1, 2, 0, 1, 0, 1, 2, 1});
const Matrix handV = mat(3, 4, {1, 0, 2, 1, 1, 2, 1, 0, 1, 1, 0, 2});
const Matrix handKtQ = mat(4, 4, {5, 3, 2, 2, 2, 3, 2, 5, 2, 3, 5, 2, 3, 3, 3, 3});
const Matrix handFloorHalf = mat(4, 4, {2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 2, 1, 1, 1, 1, 1});
const double s6 = 1.0 / 6;
const Matrix handA3 = mat(4, 4, {0.5, 0.25, s6, s6, s6, 0.25, s6, 0.5, s6, 0.25, 0.5, s6, s6, 0.25, s6, s6});
const Matrix handZ3 = mat(3, 4, {1, 1, 4.0 / 3, 2.0 / 3, 1, 1, 1, 4.0 / 3, 1, 1, 2.0 / 3, 1});
const Matrix handA3Causal = mat(4, 4, {1, 0.5, 0.2, s6, 0, 0.5, 0.2, 0.5, 0, 0, 0.6, s6, 0, 0, 0, s6});
const Matrix handZ3Causal = mat(3, 4, {1, 0.5, 1.4, 2.0 / 3, 1, 1.5, 1.2, 4.0 / 3, 1, 1, 0.4, 1});

/// Column-wise e^(x/√3) softmax of the hand KᵀQ in double.
Matrix exactSoftmaxOfHandScores() {
    Matrix a(4, 4);
    for (int j = 0; j < 4; ++j) {
        double sum = 0;
        for (int i = 0; i < 4; ++i) sum += std::exp(handKtQ(i, j) / std::sqrt(3.0));
        for (int i = 0; i < 4; ++i) a(i, j) = float(std::exp(handKtQ(i, j) / std::sqrt(3.0)) / sum);
    }
    return a;
}

bool isNan(float v) { return std::isnan(v); }

} // namespace

class TestAttentionSandbox : public QObject {
    Q_OBJECT
private slots:
    void worksheetArithmeticMatchesHand();
    void exactArithmeticMatchesHandScores();
    void rowConventionIsTranspose_data();
    void rowConventionIsTranspose();
    void causalMask();
    void otherHeadSizes();
    void rejectsMismatchedShapes();
};

void TestAttentionSandbox::worksheetArithmeticMatchesHand() {
    const SandboxResult r = runSandbox(defaultSandboxInputs());
    QCOMPARE(r.d_k, 3);
    QCOMPARE(r.worksheetDivisor, 2);
    QCOMPARE(r.X.rows(), Eigen::Index(6));
    QCOMPARE(r.X.cols(), Eigen::Index(4));
    const SandboxMatrices& w = r.worksheet;
    QCOMPARE(maxAbsDiff(w.Q, handQ), 0.0);
    QCOMPARE(maxAbsDiff(w.K, handK), 0.0);
    QCOMPARE(maxAbsDiff(w.V, handV), 0.0);
    QCOMPARE(maxAbsDiff(w.scores, handKtQ), 0.0);
    QCOMPARE(maxAbsDiff(w.scaled, handFloorHalf), 0.0);
    QVERIFY2(maxAbsDiff(w.A, handA3) < 1e-6, qPrintable(QString::number(maxAbsDiff(w.A, handA3))));
    QVERIFY2(maxAbsDiff(w.Z, handZ3) < 1e-6, qPrintable(QString::number(maxAbsDiff(w.Z, handZ3))));
    // Q, K, V and KᵀQ are integer products: the same in both arithmetics
    QCOMPARE(maxAbsDiff(r.exact.scores, handKtQ), 0.0);
    QCOMPARE(maxAbsDiff(r.exact.V, handV), 0.0);
}

void TestAttentionSandbox::exactArithmeticMatchesHandScores() {
    const SandboxResult r = runSandbox(defaultSandboxInputs());
    QCOMPARE(r.exactDivisor, std::sqrt(3.0));
    const Matrix scaled = handKtQ / float(std::sqrt(3.0));
    QVERIFY(maxAbsDiff(r.exact.scaled, scaled) < 1e-6);
    const Matrix a = exactSoftmaxOfHandScores();
    QVERIFY(maxAbsDiff(r.exact.A, a) < 1e-6);
    // query 2 scores every key 3: uniform in both arithmetics
    for (int i = 0; i < 4; ++i) QCOMPARE(r.exact.A(i, 1), 0.25f);
    // the exact weight of k1 for q1 is e^{5/√3}/(e^{5/√3}+2e^{2/√3}+e^{3/√3}) = 0.59916 (worksheet: 1/2)
    QVERIFY(std::abs(r.exact.A(0, 0) - 0.59916f) < 1e-5f);
    QVERIFY(maxAbsDiff(r.exact.Z, Matrix(handV * a)) < 1e-6);
}

void TestAttentionSandbox::rowConventionIsTranspose_data() {
    QTest::addColumn<bool>("causal");
    QTest::newRow("full") << false;
    QTest::newRow("causal") << true;
}

void TestAttentionSandbox::rowConventionIsTranspose() {
    QFETCH(bool, causal);
    SandboxInputs in = defaultSandboxInputs();
    in.causal = causal;
    const SandboxResult c = runSandbox(in, SandboxConvention::Columns);
    const SandboxResult r = runSandbox(in, SandboxConvention::Rows);
    QCOMPARE(r.X.rows(), Eigen::Index(4)); // [n, d_in] as GPT-2 lays out the residual stream
    QCOMPARE(r.W_Q.rows(), Eigen::Index(6)); // [d_in, d_k]: Conv1D layout
    QCOMPARE(maxAbsDiff(r.X, Matrix(c.X.transpose())), 0.0);
    QCOMPARE(maxAbsDiff(r.W_V, Matrix(c.W_V.transpose())), 0.0);
    for (const auto& [rm, cm] : {std::pair(&r.exact, &c.exact), std::pair(&r.worksheet, &c.worksheet)}) {
        QCOMPARE(maxAbsDiff(rm->Q, Matrix(cm->Q.transpose())), 0.0);
        QCOMPARE(maxAbsDiff(rm->K, Matrix(cm->K.transpose())), 0.0);
        QCOMPARE(maxAbsDiff(rm->V, Matrix(cm->V.transpose())), 0.0);
        QCOMPARE(maxAbsDiff(rm->scores, Matrix(cm->scores.transpose())), 0.0);
        QVERIFY(maxAbsDiff(rm->A, Matrix(cm->A.transpose())) < 1e-6);
        QVERIFY(maxAbsDiff(rm->Z, Matrix(cm->Z.transpose())) < 1e-6);
        // rows of the row-convention pattern sum to 1 (softmax over keys per query)
        QVERIFY((rm->A.rowwise().sum().array() - 1.0f).abs().maxCoeff() < 1e-6f);
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
                QCOMPARE(isNan(rm->scaled(i, j)), isNan(cm->scaled(j, i)));
                if (!isNan(rm->scaled(i, j))) QCOMPARE(rm->scaled(i, j), cm->scaled(j, i));
            }
    }
    // the worksheet weights in the row convention are the hand fractions transposed
    QVERIFY(maxAbsDiff(r.worksheet.A, Matrix((causal ? handA3Causal : handA3).transpose())) < 1e-6);
}

void TestAttentionSandbox::causalMask() {
    SandboxInputs in = defaultSandboxInputs();
    in.causal = true;
    const SandboxResult c = runSandbox(in);
    QVERIFY(c.causal);
    QVERIFY2(maxAbsDiff(c.worksheet.A, handA3Causal) < 1e-6, qPrintable(QString::number(maxAbsDiff(c.worksheet.A, handA3Causal))));
    QVERIFY(maxAbsDiff(c.worksheet.Z, handZ3Causal) < 1e-6);
    // key i > query j is masked: NaN in scaled (column convention: below the diagonal), kept in KᵀQ
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            QCOMPARE(isNan(c.worksheet.scaled(i, j)), i > j);
            QCOMPARE(isNan(c.exact.scaled(i, j)), i > j);
            if (i > j) QCOMPARE(c.exact.A(i, j), 0.0f);
        }
    QCOMPARE(maxAbsDiff(c.exact.scores, handKtQ), 0.0);
    QCOMPARE(c.exact.A(0, 0), 1.0f); // query 1 sees only key 1
    // exact, query 2: keys 1 and 2 both score 3 -> 1/2 each
    QVERIFY(std::abs(c.exact.A(0, 1) - 0.5f) < 1e-7f);
}

void TestAttentionSandbox::otherHeadSizes() {
    // d_k = 4: a zero row appended to W_Q and W_K adds nothing to KᵀQ; √4 = 2 is exact, so the
    // exact scaling is KᵀQ/2 and the worksheet one ⌊KᵀQ/2⌋ (the same hand table as for d_k = 3)
    const SandboxInputs big = resizedSandboxInputs(defaultSandboxInputs(), 6, 4, 4, 3);
    QCOMPARE(big.W_Q.rows(), Eigen::Index(4));
    QCOMPARE(big.W_Q.row(3).squaredNorm(), 0.0f);
    QCOMPARE(big.W_Q(2, 5), 1.0f); // kept
    const SandboxResult r = runSandbox(big);
    QCOMPARE(r.worksheetDivisor, 2);
    QCOMPARE(maxAbsDiff(r.exact.scores, handKtQ), 0.0);
    QCOMPARE(maxAbsDiff(r.exact.scaled, Matrix(handKtQ / 2.0f)), 0.0);
    QCOMPARE(maxAbsDiff(r.worksheet.scaled, handFloorHalf), 0.0);
    // d_k = 2 (first two rows of W_Q/W_K): round(√2) = 1, so worksheet scaling is ⌊x⌋ = x.
    // k1·q1 = (2,1)·(2,1) = 5, k4·q3 = (1,1)·(1,0) = 1
    const SandboxResult two = runSandbox(resizedSandboxInputs(defaultSandboxInputs(), 6, 4, 2, 3));
    QCOMPARE(two.worksheetDivisor, 1);
    QCOMPARE(two.worksheet.scaled(0, 0), 5.0f);
    QCOMPARE(two.worksheet.scaled(3, 2), 1.0f);
    QCOMPARE(maxAbsDiff(two.worksheet.scaled, two.worksheet.scores), 0.0);
    // blank template is carried through for exporters
    SandboxInputs blank = defaultSandboxInputs();
    blank.blankTemplate = true;
    QVERIFY(runSandbox(blank).blankTemplate);
    QVERIFY(!runSandbox(defaultSandboxInputs()).blankTemplate);
    try {
        resizedSandboxInputs(defaultSandboxInputs(), 6, 0, 3, 3);
        QFAIL("no error for n = 0");
    } catch (const InputError& e) {
        QVERIFY2(e.message().contains("n = 0"), e.what());
    }
}

void TestAttentionSandbox::rejectsMismatchedShapes() {
    SandboxInputs in = defaultSandboxInputs();
    in.W_Q = Matrix::Ones(3, 5);
    try {
        runSandbox(in);
        QFAIL("no error for W_Q with 5 columns");
    } catch (const InputError& e) {
        QVERIFY2(e.message().contains("W_Q is 3×5") && e.message().contains("d_in = 6"), e.what());
    }
    in = defaultSandboxInputs();
    in.W_K = Matrix::Ones(2, 6);
    try {
        runSandbox(in);
        QFAIL("no error for d_k mismatch");
    } catch (const InputError& e) {
        QVERIFY2(e.message().contains("W_Q has 3 rows but W_K has 2"), e.what());
    }
    in = defaultSandboxInputs();
    in.X = Matrix();
    QVERIFY_THROWS_EXCEPTION(InputError, runSandbox(in));
}

QTEST_GUILESS_MAIN(TestAttentionSandbox)
#include "tst_attention_sandbox.moc"
