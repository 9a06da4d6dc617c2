// Features on the demo model: the spliced-in loss against an independent float64 forward, the fraction of
// variance unexplained by its definition, steering = a residual patch by α·W_dec[f], ablation keeping the error
// term, the feature DLAs summing to the logit, and the embedding-space readings against a brute-force scan.

#include "model/analysis/features/feature_activations.h"
#include "model/analysis/features/feature_intervention.h"
#include "model/analysis/features/feature_patching.h"
#include "model/analysis/features/feature_readout.h"
#include "model/analysis/features/reconstruction_quality.h"
#include "model/core/errors.h"
#include "model/features/dictionary_set.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/generate.h"
#include "model/transformer/prompt.h"
#include "support/dictionary_fixtures.h"
#include "support/reference_forward64.h"
#include "support/test_paths.h"

#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

using namespace attnscope;
using namespace attnscope::test;

namespace {

double crossEntropy(const Matrix64& logits, const std::vector<int>& tokens) {
    double sum = 0;
    for (Eigen::Index p = 0; p + 1 < logits.rows(); ++p) {
        const double m = logits.row(p).maxCoeff();
        const double lse = m + std::log((logits.row(p).array() - m).exp().sum());
        sum += lse - logits(p, tokens[size_t(p + 1)]);
    }
    return sum / double(logits.rows() - 1);
}

} // namespace

class TestFeatureAnalysis : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void splicedLossAgainstFloat64Forward();
    void steeringIsAResidualPatch();
    void ablationKeepsTheErrorTerm();
    void featureDlaSumsToTheLogit();
    void readingsAgainstBruteForce();
    void featurePatchingCells();

private:
    std::shared_ptr<const Model> model_;
    std::vector<int> tokens_;
    QTemporaryDir tmp_;
    DictionaryParams params_;
    SparseCoder sae_;     ///< JumpReLU SAE on blocks.0.hook_resid_post (d_sae 96)
    SparseCoder last_;    ///< standard SAE on blocks.1.hook_resid_post, the last residual
};

void TestFeatureAnalysis::initTestCase() {
    model_ = loadModel(demoDir());
    tokens_ = tokenizePrompt(model_->tokenizer(), QStringLiteral("In the beginning God created the heaven and the earth."), true);
    const int d = model_->config().d_model;
    params_ = roundedTo(randomParams(d, 96, d, 77), QStringLiteral("F32"));
    params_.W_enc *= 0.5; // the demo's residual norms are ~10: a moderate number of features fire
    params_.threshold *= 4;
    writeSaeLensFolder(tmp_.filePath(QStringLiteral("r0")), params_, QStringLiteral("jumprelu"),
                       QJsonObject{{"architecture", "jumprelu"}, {"d_in", d}, {"d_sae", 96}, {"apply_b_dec_to_input", true},
                                   {"metadata", QJsonObject{{"hook_name", "blocks.0.hook_resid_post"}}}});
    sae_ = openDictionaries(tmp_.filePath(QStringLiteral("r0"))).coders[0];
    writeSaeLensFolder(tmp_.filePath(QStringLiteral("r1")), params_, QStringLiteral("standard"),
                       QJsonObject{{"architecture", "standard"}, {"d_in", d}, {"d_sae", 96}, {"apply_b_dec_to_input", false},
                                   {"metadata", QJsonObject{{"hook_name", "blocks.1.hook_resid_post"}}}});
    last_ = openDictionaries(tmp_.filePath(QStringLiteral("r1"))).coders[0];
}

void TestFeatureAnalysis::splicedLossAgainstFloat64Forward() {
    const ActivationCache cache = runForward(*model_, tokens_);
    const FeatureRun run = runDictionary(*model_, cache, sae_);
    QVERIFY(run.aliveCount() > 5);
    const ReconstructionQuality q = reconstructionQuality(*model_, tokens_, cache, run);
    // float64: resid_post of layer 0, replaced by the reference x̂ of it, then layer 1 and the unembedding
    const Matrix64 resid0 = blocks64(*model_, embeddings64(*model_, tokens_), 0, 1);
    ReferenceSpec spec;
    spec.activation = ReferenceSpec::JumpReLU;
    spec.applyBDecToInput = true;
    const auto [f, xhat] = referenceEncodeDecode(params_, spec, resid0);
    const Matrix64 spliced = logits64(*model_, blocks64(*model_, xhat, 1, 2));
    const Matrix64 clean = logits64(*model_, blocks64(*model_, resid0, 1, 2));
    const Matrix64 zero = logits64(*model_, blocks64(*model_, Matrix64::Zero(resid0.rows(), resid0.cols()), 1, 2));
    QVERIFY2(std::abs(q.lossSpliced - crossEntropy(spliced, tokens_)) < 1e-4, qPrintable(QString::number(q.lossSpliced)));
    QVERIFY2(std::abs(q.lossClean - crossEntropy(clean, tokens_)) < 1e-4, qPrintable(QString::number(q.lossClean)));
    QVERIFY2(std::abs(q.lossZeroAblated - crossEntropy(zero, tokens_)) < 1e-4, qPrintable(QString::number(q.lossZeroAblated)));
    QVERIFY(q.lossSpliced > q.lossClean && q.lossZeroAblated > q.lossSpliced); // a random SAE hurts, zeroing hurts more
    // FVU by its definition, over every position (BOS included)
    const Eigen::RowVectorXd mean = resid0.colwise().mean();
    const double fvu = (resid0 - xhat).squaredNorm() / (resid0.rowwise() - mean).squaredNorm();
    QVERIFY2(std::abs(q.fvu - fvu) < 1e-4 * fvu, qPrintable(QStringLiteral("%1 vs %2").arg(q.fvu).arg(fvu)));
    QCOMPARE(int(q.mse.size()), int(tokens_.size()));
    QVERIFY(std::abs(q.mse[3] - (resid0.row(3) - xhat.row(3)).squaredNorm() / 128.0) < 1e-4 * q.mse[3]);
}

void TestFeatureAnalysis::steeringIsAResidualPatch() {
    const int feature = 17, position = 4;
    const double alpha = 6.0;
    const auto hooks = featureEditHooks(*model_, sae_, {parseFeatureEdit(QStringLiteral("17=6@4"))});
    ForwardOptions o;
    o.hooks = hooks;
    const ActivationCache steered = runForward(*model_, tokens_, o);
    auto patch = std::make_shared<ForwardHooks>();
    const RowVector d = decoderDirection(sae_, feature) * float(alpha);
    patch->resid_pre = [&](int l, Matrix& x) {
        if (l == 1) x.row(position) += d;
    };
    ForwardOptions p;
    p.hooks = patch;
    const ActivationCache patched = runForward(*model_, tokens_, p);
    QVERIFY(steered.logits == patched.logits); // bitwise: the same vector added to the same stream
    const ActivationCache clean = runForward(*model_, tokens_);
    QVERIFY((steered.logits.row(position) - clean.logits.row(position)).cwiseAbs().maxCoeff() > 1e-2);
    QVERIFY(steered.logits.row(position - 1) == clean.logits.row(position - 1)); // causal: earlier positions untouched
    // the continuation is written with the edit at every step (generation keeps the hooks)
    const auto all = featureEditHooks(*model_, sae_, {parseFeatureEdit(QStringLiteral("17=40"))});
    QVERIFY(greedyContinuation(*model_, tokens_, 6, all) != greedyContinuation(*model_, tokens_, 6));
    QCOMPARE(QString::fromStdString([] {
                 try { parseFeatureEdit(QStringLiteral("17=lots")); } catch (const InputError& e) { return std::string(e.what()); }
                 return std::string();
             }()),
             QStringLiteral("\"17=lots\" is not a feature edit: write F=α (steer by α·W_dec[F]), F=ablate or F=clamp:V, optionally @P1,P2 for positions"));
}

void TestFeatureAnalysis::ablationKeepsTheErrorTerm() {
    const ActivationCache clean = runForward(*model_, tokens_);
    const FeatureRun run = runDictionary(*model_, clean, sae_);
    int silent = -1, firing = -1;
    for (int f = 0; f < sae_.d_sae && (silent < 0 || firing < 0); ++f) {
        if ((run.f.col(f).array() == 0.0f).all()) silent = silent < 0 ? f : silent;
        else if (run.f(5, f) != 0.0f && firing < 0) firing = f;
    }
    QVERIFY(silent >= 0 && firing >= 0);
    ForwardOptions o;
    o.hooks = featureEditHooks(*model_, sae_, {parseFeatureEdit(QStringLiteral("%1=ablate").arg(silent))});
    QVERIFY(runForward(*model_, tokens_, o).logits == clean.logits); // nothing to remove: the clean pass, bitwise
    // ablating a firing feature at position 5 = removing a·W_dec[f] there (decoding is linear here)
    o.hooks = featureEditHooks(*model_, sae_, {parseFeatureEdit(QStringLiteral("%1=ablate@5").arg(firing))});
    const ActivationCache ablated = runForward(*model_, tokens_, o);
    auto patch = std::make_shared<ForwardHooks>();
    const RowVector d = decoderDirection(sae_, firing) * (-run.f(5, firing));
    patch->resid_pre = [&](int l, Matrix& x) {
        if (l == 1) x.row(5) += d;
    };
    ForwardOptions p;
    p.hooks = patch;
    const ActivationCache removed = runForward(*model_, tokens_, p);
    QVERIFY((ablated.logits - removed.logits).cwiseAbs().maxCoeff() < 1e-4);
    // clamping to its own value changes nothing (up to float rounding)
    o.hooks = featureEditHooks(*model_, sae_, {parseFeatureEdit(QStringLiteral("%1=clamp:%2@5").arg(firing).arg(double(run.f(5, firing)), 0, 'g', 9))});
    QVERIFY((runForward(*model_, tokens_, o).logits - clean.logits).cwiseAbs().maxCoeff() < 1e-4);
}

void TestFeatureAnalysis::featureDlaSumsToTheLogit() {
    const ActivationCache cache = runForward(*model_, tokens_);
    const FeatureRun run = runDictionary(*model_, cache, last_);
    const int p = int(tokens_.size()) - 1, t = 262;
    double sum = 0;
    for (int f = 0; f < last_.d_sae; ++f) sum += featureLogitAttribution(*model_, cache, last_, run, f, p, t);
    // the rest of the residual (b_dec and the error term) through the same linear map, plus ln_final's bias and b_U
    const GlobalWeights& g = model_->globals();
    Eigen::RowVectorXd rest = (run.target.row(p) - run.xhat.row(p)).cast<double>();
    rest += (Eigen::RowVectorXd)params_.b_dec;
    rest.array() -= rest.mean();
    const Eigen::RowVectorXd wu = g.W_U_T.rowVector(t).cast<double>();
    double restTerm = rest.cwiseProduct(g.ln_final_w.rowVector(0).cast<double>()).dot(wu) / double(cache.ln_final_scale(p));
    restTerm += g.ln_final_b.rowVector(0).cast<double>().dot(wu) + (g.b_U.empty() ? 0.0 : double(g.b_U.at(0, t)));
    QVERIFY2(std::abs(sum + restTerm - cache.logits(p, t)) < 1e-3, qPrintable(QStringLiteral("%1 + %2 vs %3").arg(sum).arg(restTerm).arg(cache.logits(p, t))));
    QVERIFY(std::abs(sum) > 1e-2);
}

void TestFeatureAnalysis::readingsAgainstBruteForce() {
    const int feature = 9;
    const FeatureReadout r = readFeature(*model_, sae_, feature, 5);
    const GlobalWeights& g = model_->globals();
    Eigen::RowVectorXd dir = params_.W_dec.row(feature);
    dir.array() -= dir.mean();
    dir = dir.cwiseProduct(g.ln_final_w.rowVector(0).cast<double>());
    const Eigen::MatrixXd U = g.W_U_T.toMatrix().cast<double>();
    const Eigen::VectorXd scores = U * dir.transpose();
    std::vector<int> ids(size_t(scores.size()));
    std::iota(ids.begin(), ids.end(), 0);
    std::sort(ids.begin(), ids.end(), [&](int a, int b) { return scores(a) > scores(b); });
    QCOMPARE(int(r.decoderTop.size()), 5);
    for (int i = 0; i < 5; ++i) QCOMPARE(r.decoderTop[size_t(i)].id, ids[size_t(i)]);
    QCOMPARE(r.decoderBottom[0].id, ids.back());
    const Eigen::MatrixXd E = g.W_E.toMatrix().cast<double>();
    const Eigen::VectorXd enc = E * params_.W_enc.col(feature);
    Eigen::Index best;
    enc.maxCoeff(&best);
    QCOMPARE(r.encoderTop[0].id, int(best));
    QVERIFY(std::abs(r.encoderTop[0].score - enc(best)) < 1e-4);
}

void TestFeatureAnalysis::featurePatchingCells() {
    const std::vector<int> clean = tokenizePrompt(model_->tokenizer(), QStringLiteral("In the beginning God created the heaven"), true);
    const std::vector<int> corrupt = tokenizePrompt(model_->tokenizer(), QStringLiteral("In the beginning Moses created the heaven"), true);
    QCOMPARE(clean.size(), corrupt.size());
    PatchingMetric metric;
    metric.kind = PatchingMetricKind::Logit;
    metric.token = model_->tokenizer().encode(QStringLiteral(" and")).front();
    const PatchingRuns runs = preparePatchingRuns(*model_, clean, corrupt);
    const FeaturePatching fp = featurePatching(*model_, runs, sae_, metric, 6);
    QVERIFY(fp.cells.size() > 6);
    for (size_t i = 1; i < fp.cells.size(); ++i) QVERIFY(std::abs(fp.cells[i - 1].attribution) >= std::abs(fp.cells[i].attribution));
    for (int i = 0; i < 6; ++i) {
        const FeaturePatchingCell& c = fp.cells[size_t(i)];
        // the patched run = the corrupted run with (clean − corrupt)·W_dec[f] added to resid_post 0 at the position
        auto patch = std::make_shared<ForwardHooks>();
        const RowVector d = decoderDirection(sae_, c.feature) * (c.clean - c.corrupt);
        const int pos = c.position;
        patch->resid_pre = [&](int l, Matrix& x) {
            if (l == 1) x.row(pos) += d;
        };
        ForwardOptions o;
        o.hooks = patch;
        const ActivationCache r = runForward(*model_, corrupt, o);
        const double want = double(r.logits(r.nPositions() - 1, metric.token)) - fp.metricCorrupt;
        QVERIFY2(std::abs(c.patched - want) < 1e-4, qPrintable(QStringLiteral("%1 vs %2").arg(c.patched).arg(want)));
        // the attribution: the first-order change along that vector, by central differences of the metric
        auto along = [&](double eps) {
            auto h = std::make_shared<ForwardHooks>();
            const RowVector step = d * float(eps);
            h->resid_pre = [step, pos](int l, Matrix& x) {
                if (l == 1) x.row(pos) += step;
            };
            ForwardOptions oo;
            oo.hooks = h;
            const ActivationCache rr = runForward(*model_, corrupt, oo);
            return double(rr.logits(rr.nPositions() - 1, metric.token));
        };
        const double fd = (along(1e-2) - along(-1e-2)) / 2e-2;
        QVERIFY2(std::abs(c.attribution - fd) < 2e-3 * (1 + std::abs(fd)), qPrintable(QStringLiteral("%1 vs %2").arg(c.attribution).arg(fd)));
    }
    QVERIFY(std::isnan(fp.cells[6].patched));
}

QTEST_GUILESS_MAIN(TestFeatureAnalysis)
#include "tst_feature_analysis.moc"
