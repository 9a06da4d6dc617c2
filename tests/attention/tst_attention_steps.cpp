// The attention stepper (model/analysis/attention/attention_steps.h, steps_json.h) on tiny-gpt2 with the
// prompt of ../shared/testdata/tiny-gpt2/reference.json (18 positions, 4 heads, d_head 16,
// d_model 64), and on the demo model when resources/demo exists. Each step must equal the forward
// cache it was taken from; the independent checks are the picoGPT attention patterns of the
// reference (1e-5, the float32 tolerance that README gives), the embedding rows of W_E/W_pos, and the
// scores recomputed here cell by cell in double.

#include "model/analysis/attention/attention_steps.h"
#include "model/analysis/attention/steps_json.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/hf_llama_folder.h"
#include "support/llama_checkpoint.h"
#include "support/made_tokenizer.h"
#include "support/reference_json.h"
#include "support/stories_reference.h"
#include "support/test_paths.h"

#include <QJsonDocument>
#include <QtTest>
#include <cmath>
#include <list>
#include <random>

using namespace attnscope;
using namespace attnscope::test;

namespace {

const AttentionStep& step(const std::vector<AttentionStep>& steps, const QString& name) {
    for (const AttentionStep& s : steps)
        if (s.name == name) return s;
    throw std::runtime_error(("no step " + name).toStdString());
}

/// Checks every step of (layer, head) against the cache (Qt Test records a failure and returns early).
void checkAgainstCache(const Model& model, const ActivationCache& c, int layer, int head) {
    const ModelConfig& cfg = model.config();
    const int S = c.nPositions(), D = cfg.d_model, L = cfg.d_head, H = cfg.n_heads;
    const LayerCache& lc = c.layers[size_t(layer)];
    const std::vector<AttentionStep> steps = attentionSteps(model, c, layer, head);

    // names in the documented order, written out here independently of attentionStepNames
    QStringList expected{"embed", "pos_embed", "resid_pre", "ln1", "q", "k", "v", "scores", "scaled", "masked",
                         "pattern", "z", "concat", "attn_out"};
    for (int h = 0; h < H; ++h) expected << QString("head_result_%1").arg(h);
    expected << "attn_out_additive" << "resid_mid";
    QStringList names;
    for (const AttentionStep& s : steps) names << s.name;
    QCOMPARE(names, expected);
    QCOMPARE(attentionStepNames(H), expected);

    // shapes
    for (const AttentionStep& s : steps) {
        QCOMPARE(s.values.rows(), Eigen::Index(s.rows));
        QCOMPARE(s.values.cols(), Eigen::Index(s.cols));
        QCOMPARE(s.rows, S);
        QVERIFY2(!s.formula.isEmpty() && !s.shape.isEmpty() && !s.meaning.isEmpty(), qPrintable(s.name));
        QCOMPARE(s.rowAxis, AttentionStep::AxisKind::Tokens);
        int cols = D;
        if (QStringList{"q", "k", "v", "z"}.contains(s.name)) cols = L;
        if (QStringList{"scores", "scaled", "masked", "pattern"}.contains(s.name)) cols = S;
        if (s.name == "concat") cols = H * L;
        QVERIFY2(s.cols == cols, qPrintable(QString("%1 has %2 columns, expected %3").arg(s.name).arg(s.cols).arg(cols)));
        const bool square = QStringList{"scores", "scaled", "masked", "pattern"}.contains(s.name);
        QCOMPARE(s.colAxis, square ? AttentionStep::AxisKind::Tokens : AttentionStep::AxisKind::Dimensions);
        QCOMPARE(s.hasMask, s.name == "masked");
        QCOMPARE(s.kind, s.name == "pattern" ? AttentionStep::ValueKind::Probability : AttentionStep::ValueKind::Signed);
    }
    QCOMPARE(step(steps, "q").shape, QString("S×D · D×L → S×L"));
    QCOMPARE(step(steps, "embed").shape, QString("B×S×V · V×D → S×D"));
    QCOMPARE(step(steps, "embed").formula, QString("one_hot(tokens)·W_E"));
    QCOMPARE(step(steps, "pattern").colAxis, AttentionStep::AxisKind::Tokens);
    QCOMPARE(step(steps, "z").colAxis, AttentionStep::AxisKind::Dimensions);

    // embeddings: row p of W_E at the token id, row p of W_pos
    const AttentionStep& embed = step(steps, "embed");
    QVERIFY(embed.tokenIds == c.tokens);
    for (int p = 0; p < S; ++p) {
        QVERIFY(embed.values.row(p) == model.globals().W_E.view().row(c.tokens[size_t(p)]));
        if (cfg.positions == PositionKind::Learned)
            QVERIFY(step(steps, "pos_embed").values.row(p) == model.globals().W_pos.view().row(p));
    }
    const Matrix input = c.embed + c.pos_embed;
    const AttentionStep& resid = step(steps, "resid_pre");
    QCOMPARE(maxAbsDiff(resid.values, lc.resid_pre), 0.0);
    if (layer == 0) {
        QCOMPARE(maxAbsDiff(resid.values, input), 0.0);
    } else {
        QCOMPARE(maxAbsDiff(resid.values, c.layers[size_t(layer - 1)].resid_post), 0.0);
        QVERIFY(maxAbsDiff(resid.values, input) > 0.1); // really the later stream, not the embeddings
        QVERIFY(resid.formula.contains(QString("resid_post[%1]").arg(layer - 1)));
    }
    QCOMPARE(maxAbsDiff(step(steps, "ln1").values, lc.ln1), 0.0);
    const LayerWeights& w = model.layer(layer);
    QVERIFY(maxAbsDiff(step(steps, "ln1").values, applyNorm(cfg, lc.resid_pre, w.ln1_w, w.ln1_b)) <= 1e-6);

    const Matrix q = lc.q.middleCols(head * L, L), k = lc.k.middleCols(head * L, L);
    QCOMPARE(maxAbsDiff(step(steps, "q").values, q), 0.0);
    QCOMPARE(maxAbsDiff(step(steps, "k").values, k), 0.0);
    QCOMPARE(maxAbsDiff(step(steps, "v").values, lc.v.middleCols(head * L, L)), 0.0);

    // scores: unscaled Q·Kᵀ; check a few cells in double, and scores·scale against the cache
    const AttentionStep& scores = step(steps, "scores");
    for (auto [i, j] : {std::pair(0, 0), std::pair(S - 1, 0), std::pair(S - 1, S - 1), std::pair(2, S - 1)}) {
        double dot = 0;
        for (int d = 0; d < L; ++d) dot += double(q(i, d)) * double(k(j, d));
        QVERIFY(std::abs(scores.values(i, j) - dot) <= 1e-5 * std::max(1.0, std::abs(dot)));
    }
    const float scale = float(cfg.attnScale(layer));
    // the cache keeps the scores after the mask (−∞ above the diagonal, TransformerLens's hook_attn_scores)
    const Matrix& cached = lc.attn_scores[size_t(head)];
    double dScores = 0;
    for (int i = 0; i < S; ++i) {
        dScores = std::max(dScores, maxAbsDiff(Matrix(scores.values.row(i).head(i + 1) * scale), Matrix(cached.row(i).head(i + 1))));
        for (int j = i + 1; j < S; ++j) QVERIFY(std::isinf(cached(i, j)) && cached(i, j) < 0);
    }
    QVERIFY2(dScores <= 1e-5, qPrintable(QString("scores·scale vs attn_scores %1").arg(dScores)));
    QCOMPARE(scores.maxAbsDiff, dScores);
    QVERIFY(scores.note.contains("attn_scores"));
    const AttentionStep& scaled = step(steps, "scaled");
    QCOMPARE(maxAbsDiff(scaled.values, Matrix(scores.values * scale)), 0.0); // every cell, the masked ones too
    QVERIFY(std::isfinite(scaled.values(0, S - 1)));
    QVERIFY2(scaled.formula.contains(QString("√%1").arg(L)), qPrintable(scaled.formula));
    QVERIFY(scaled.meaning.contains("1/√d_head"));

    const AttentionStep& masked = step(steps, "masked");
    for (int i = 0; i < S; ++i)
        for (int j = 0; j < S; ++j) {
            if (j > i) QVERIFY(std::isnan(masked.values(i, j)));
            else QCOMPARE(masked.values(i, j), scaled.values(i, j));
        }

    QCOMPARE(maxAbsDiff(step(steps, "pattern").values, lc.pattern[size_t(head)]), 0.0);
    QCOMPARE(maxAbsDiff(step(steps, "z").values, lc.z.middleCols(head * L, L)), 0.0);
    QCOMPARE(maxAbsDiff(step(steps, "concat").values, lc.z), 0.0);
    QCOMPARE(maxAbsDiff(step(steps, "attn_out").values, lc.attn_out), 0.0);
    for (int h = 0; h < H; ++h) {
        const AttentionStep& r = step(steps, QString("head_result_%1").arg(h));
        QCOMPARE(maxAbsDiff(r.values, lc.result[size_t(h)]), 0.0);
        QVERIFY(r.meaning.contains(QString("rows %1 to %2 of W_O").arg(h * L).arg((h + 1) * L - 1)));
    }
    const AttentionStep& add = step(steps, "attn_out_additive");
    const double dAdd = maxAbsDiff(add.values, lc.attn_out);
    QVERIFY2(dAdd <= 1e-5, qPrintable(QString("additive vs concat %1").arg(dAdd)));
    QCOMPARE(add.maxAbsDiff, dAdd);
    QVERIFY(add.note.contains("max |"));
    qInfo("layer %d head %d: |scores·scale − attn_scores| ≤ %.3g, |additive − attn_out| ≤ %.3g", layer, head,
          dScores, dAdd);
    QCOMPARE(maxAbsDiff(step(steps, "resid_mid").values, lc.resid_mid), 0.0);
    QCOMPARE(maxAbsDiff(step(steps, "resid_mid").values, Matrix(lc.resid_pre + lc.attn_out)), 0.0);
}

/// Random weights for a small Llama-like variant the reference files do not cover: grouped-query
/// attention (4 query heads share 2 K/V heads), no attention biases, RMSNorm, and scores also scaled
/// by 1/(layer+1). Learned positions, because the forward pass has no rotary yet.
class RandomWeights : public WeightResolver {
public:
    explicit RandomWeights(const ModelConfig& cfg) : cfg_(cfg) {}
    GlobalWeights globals() override {
        GlobalWeights g;
        g.W_E = make(cfg_.d_vocab, cfg_.d_model);
        g.W_pos = make(cfg_.n_ctx, cfg_.d_model);
        g.ln_final_w = make(1, cfg_.d_model);
        g.W_U_T = g.W_E;
        return g;
    }
    LayerWeights layer(int) override {
        const int D = cfg_.d_model, HL = cfg_.n_heads * cfg_.d_head, KV = cfg_.n_kv_heads * cfg_.d_head;
        LayerWeights w;
        w.ln1_w = make(1, D);
        w.ln2_w = make(1, D);
        w.W_Q = make(D, HL);
        w.W_K = make(D, KV);
        w.W_V = make(D, KV);
        w.W_O = make(HL, D);
        w.W_in = make(D, cfg_.d_mlp);
        w.W_out = make(cfg_.d_mlp, D);
        return w;
    }

private:
    Weight make(int rows, int cols) {
        std::normal_distribution<float> normal(0.0f, 0.5f);
        buffers_.emplace_back(size_t(rows) * size_t(cols));
        for (float& x : buffers_.back()) x = normal(rng_);
        return Weight{buffers_.back().data(), rows, cols, cols};
    }
    ModelConfig cfg_;
    std::mt19937 rng_{7};
    std::list<std::vector<float>> buffers_;
};

std::unique_ptr<Model> groupedQueryModel() {
    ModelConfig cfg;
    cfg.modelType = "test";
    cfg.n_layers = 2;
    cfg.n_heads = 4;
    cfg.n_kv_heads = 2;
    cfg.d_model = 16;
    cfg.d_head = 4;
    cfg.d_mlp = 32;
    cfg.n_ctx = 16;
    cfg.d_vocab = 20;
    cfg.norm = NormKind::RMSNorm;
    cfg.activation = ActivationKind::Relu;
    cfg.scale_attn_by_inverse_layer_idx = true;
    return std::make_unique<Model>(cfg, ModelInfo{}, nullptr, std::make_unique<RandomWeights>(cfg));
}

} // namespace

class TestAttentionSteps : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void stepsEqualForwardCache_data();
    void stepsEqualForwardCache();
    void patternMatchesPicoGpt();
    void jsonHasNullMaskedCells();
    void rejectsBadArguments();
    void groupedQueryVariant();
    void qwen3QkNormSteps();
    void gemma2SoftcapSteps();
    void gemma3PerLayerSteps();
    void demoModel();

private:
    std::unique_ptr<ActivationCache> cache_;
    decltype(loadModel(QString())) model_;
};

void TestAttentionSteps::initTestCase() {
    if (!testdataAvailable()) return; // the cases that read it skip
    model_ = loadModel(testdata("tiny-gpt2"));
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    cache_ = std::make_unique<ActivationCache>(runForward(*model_, intsFromJson(ref["token_ids"].toArray())));
    QCOMPARE(cache_->nPositions(), 18);
}

void TestAttentionSteps::stepsEqualForwardCache_data() {
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("head");
    QTest::newRow("L0H0") << 0 << 0;
    QTest::newRow("L0H2") << 0 << 2;
    QTest::newRow("L1H0") << 1 << 0;
    QTest::newRow("L1H3") << 1 << 3;
}

void TestAttentionSteps::stepsEqualForwardCache() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QFETCH(int, layer);
    QFETCH(int, head);
    checkAgainstCache(*model_, *cache_, layer, head);
}

void TestAttentionSteps::patternMatchesPicoGpt() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QJsonObject v = readJsonObject(testdata("tiny-gpt2/reference.json"))["variants"].toObject()["float32"].toObject();
    const double d0 = maxAbsDiff(step(attentionSteps(*model_, *cache_, 0, 0), "pattern").values,
                                 matrixFromJson(v["attention_layer0_head0"].toArray()));
    const double d1 = maxAbsDiff(step(attentionSteps(*model_, *cache_, 1, 3), "pattern").values,
                                 matrixFromJson(v["attention_layer1_head3"].toArray()));
    QVERIFY2(d0 <= 1e-5 && d1 <= 1e-5, qPrintable(QString("%1 %2").arg(d0).arg(d1)));
}

void TestAttentionSteps::jsonHasNullMaskedCells() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const std::vector<AttentionStep> steps = attentionSteps(*model_, *cache_, 1, 2);
    // through text and back, as an exported file would be read
    const QByteArray text = QJsonDocument(attentionStepsToJson(steps, 1, 2)).toJson(QJsonDocument::Compact);
    const QJsonObject o = QJsonDocument::fromJson(text).object();
    QCOMPARE(o["layer"].toInt(), 1);
    QCOMPARE(o["head"].toInt(), 2);
    const QJsonArray list = o["steps"].toArray();
    QCOMPARE(list.size(), qsizetype(steps.size()));
    for (qsizetype i = 0; i < list.size(); ++i) {
        const QJsonObject s = list[i].toObject();
        QCOMPARE(s["name"].toString(), steps[size_t(i)].name);
        QCOMPARE(s["formula"].toString(), steps[size_t(i)].formula);
        QCOMPARE(s["shape"].toArray(), (QJsonArray{steps[size_t(i)].rows, steps[size_t(i)].cols}));
        QCOMPARE(s["values"].toArray().size(), qsizetype(steps[size_t(i)].rows));
        QCOMPARE(s["values"].toArray()[0].toArray().size(), qsizetype(steps[size_t(i)].cols));
    }
    const QJsonObject masked = list[9].toObject();
    QCOMPARE(masked["name"].toString(), QString("masked"));
    const QJsonArray rows = masked["values"].toArray();
    const Matrix& scaled = cache_->layers[1].attn_scores[2];
    int nulls = 0;
    for (int i = 0; i < 18; ++i)
        for (int j = 0; j < 18; ++j) {
            const QJsonValue cell = rows[i].toArray()[j];
            if (j > i) {
                QVERIFY(cell.isNull());
                ++nulls;
            } else {
                QVERIFY(cell.isDouble());
                QCOMPARE(float(cell.toDouble()), scaled(i, j));
            }
        }
    QCOMPARE(nulls, 18 * 17 / 2);
    // the pattern has real zeros above the diagonal, not nulls
    const QJsonObject pattern = list[10].toObject();
    QCOMPARE(pattern["kind"].toString(), QString("probability"));
    QVERIFY(pattern["values"].toArray()[0].toArray()[5].isDouble());
    QCOMPARE(pattern["values"].toArray()[0].toArray()[5].toDouble(), 0.0);
    QCOMPARE(list[0].toObject()["token_ids"].toArray().size(), qsizetype(18));
    QCOMPARE(list[0].toObject()["token_ids"].toArray()[1].toInt(), 464);
    QVERIFY(!text.contains("nan") && !text.contains("inf"));
}

void TestAttentionSteps::rejectsBadArguments() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    try {
        attentionSteps(*model_, *cache_, 2, 0);
        QFAIL("no error for layer 2");
    } catch (const InputError& e) {
        QVERIFY2(e.message().contains("Layer 2") && e.message().contains("0 to 1"), e.what());
    }
    try {
        attentionSteps(*model_, *cache_, 0, 4);
        QFAIL("no error for head 4");
    } catch (const InputError& e) {
        QVERIFY2(e.message().contains("Head 4") && e.message().contains("0 to 3"), e.what());
    }
    ForwardOptions opt;
    opt.cacheHeadResults = false;
    // without cached per-head results (the app's pass) the steps compute z_h·W_O^h themselves
    const std::vector<int> ids{511, 464, 269};
    const ActivationCache noResults = runForward(*model_, ids, opt);
    const ActivationCache withResults = runForward(*model_, ids);
    QVERIFY(noResults.layers[1].result.empty());
    const auto computed = attentionSteps(*model_, noResults, 1, 0);
    const auto cached = attentionSteps(*model_, withResults, 1, 0);
    for (int h = 0; h < 4; ++h) {
        const QString name = QStringLiteral("head_result_%1").arg(h);
        QVERIFY(maxAbsDiff(step(computed, name).values, step(cached, name).values) <= 1e-6);
        QVERIFY(step(computed, name).values.cwiseAbs().maxCoeff() > 1e-3f);
    }
    QCOMPARE(step(computed, "attn_out_additive").maxAbsDiff <= 1e-5, true);
}

void TestAttentionSteps::groupedQueryVariant() {
    const auto model = groupedQueryModel();
    const ActivationCache c = runForward(*model, std::vector<int>{3, 1, 4, 1, 5, 9, 2});
    for (int layer : {0, 1})
        for (int head : {0, 3}) {
            checkAgainstCache(*model, c, layer, head);
            if (QTest::currentTestFailed()) return;
        }
    // layer 1 scores are scaled by 1/(√4·2) = 1/4, and the text says why
    const std::vector<AttentionStep> steps = attentionSteps(*model, c, 1, 3);
    const AttentionStep& scaled = step(steps, "scaled");
    QCOMPARE(scaled.formula, QString("scores · 1/(√4·2)"));
    QVERIFY(scaled.meaning.contains("1/(layer+1)"));
    QCOMPARE(maxAbsDiff(Matrix(step(steps, "scores").values / 4.0f), scaled.values), 0.0);
    // head 3 uses K/V head 1 (heads 2 and 3 share it); no biases in the formulas
    QCOMPARE(step(steps, "k").formula, QString("ln1·W_K^1"));
    QCOMPARE(step(steps, "q").formula, QString("ln1·W_Q^h"));
    QCOMPARE(step(steps, "attn_out").formula, QString("concat·W_O"));
    QCOMPARE(maxAbsDiff(step(steps, "k").values, step(attentionSteps(*model, c, 1, 2), "k").values), 0.0);
    QVERIFY(maxAbsDiff(step(steps, "k").values, step(attentionSteps(*model, c, 1, 1), "k").values) > 0.01);
    QVERIFY(step(steps, "ln1").formula.contains("mean(resid_pre²)"));
}

/// A random Qwen 3 (HF folder): q and k are the projections, q_norm and k_norm their per-head RMSNorms (recomputed
/// here in double from the projection and the q_norm/k_norm weights read from the checkpoint), RoPE rotates the
/// normed vectors, and the order is q, k, v, q_norm, k_norm, q_rot, k_rot.
void TestAttentionSteps::qwen3QkNormSteps() {
    QTemporaryDir dir;
    const LlamaCheckpoint ck = randomLlama(smallLlamaSpec("qwen3", 32, 4, 2, 16, 48), 21);
    writeHfLlamaFolder(ck, dir.path(), Storage::F32, madeTokenizer512(), "tokenizer.bin");
    const auto model = loadModel(dir.path());
    const ActivationCache c = runForward(*model, std::vector<int>{1, 40, 300, 12, 77, 500});
    const int head = 3, layer = 1, L = 16, kv = 1;
    const std::vector<AttentionStep> steps = attentionSteps(*model, c, layer, head);
    QStringList names;
    for (const AttentionStep& s : steps) names << s.name;
    QCOMPARE(names, attentionStepNames(4, true, true));
    QCOMPARE(names.mid(4, 7), QStringList({"q", "k", "v", "q_norm", "k_norm", "q_rot", "k_rot"}));
    const LlamaLayerTensors& t = ck.layers[size_t(layer)];
    for (const auto& [raw, normed, weight] : {std::tuple{"q", "q_norm", &t.q_norm}, std::tuple{"k", "k_norm", &t.k_norm}}) {
        const Matrix& x = step(steps, raw).values;
        const Matrix& y = step(steps, normed).values;
        QCOMPARE(y.cols(), Eigen::Index(L));
        double worst = 0;
        for (Eigen::Index i = 0; i < x.rows(); ++i) {
            const double rms = std::sqrt(x.row(i).cast<double>().squaredNorm() / L + 1e-6);
            for (int e = 0; e < L; ++e) worst = std::max(worst, std::abs(double(x(i, e)) / rms * (*weight)[size_t(e)] - y(i, e)));
        }
        QVERIFY2(worst < 1e-5, qPrintable(QString("%1: %2").arg(normed).arg(worst)));
    }
    // the cache's q is the normed one, and k_norm is the K/V head's
    QCOMPARE(maxAbsDiff(step(steps, "q_norm").values, Matrix(c.layers[size_t(layer)].q.middleCols(head * L, L))), 0.0);
    QCOMPARE(maxAbsDiff(step(steps, "k").values, Matrix(c.layers[size_t(layer)].k_pre_norm.middleCols(kv * L, L))), 0.0);
    QVERIFY(step(steps, "q_norm").meaning.contains("root mean square"));
    QCOMPARE(step(steps, "scores").maxAbsDiff, 0.0);
}

/// A random Gemma 2: the softcapped step is c·tanh(scaled / c) (recomputed here in double), which the cached scores
/// match; layer 0 is windowed and layer 1 not; attn_out is the post-normed output, still the sum of the head results.
void TestAttentionSteps::gemma2SoftcapSteps() {
    QTemporaryDir dir;
    writeHfLlamaFolder(randomLlama(smallGemma2Spec(), 22), dir.path(), Storage::F32, madeTokenizer512(), "tokenizer.bin");
    const auto model = loadModel(dir.path());
    const ActivationCache c = runForward(*model, std::vector<int>{1, 40, 300, 12, 77, 500});
    for (int layer : {0, 1}) {
        const std::vector<AttentionStep> steps = attentionSteps(*model, c, layer, 3);
        QStringList names;
        for (const AttentionStep& s : steps) names << s.name;
        QCOMPARE(names, attentionStepNames(4, true, false, true));
        const Matrix& scaled = step(steps, "scaled").values;
        const Matrix& capped = step(steps, "softcapped").values;
        double worst = 0, bent = 0;
        for (Eigen::Index i = 0; i < scaled.rows(); ++i)
            for (Eigen::Index j = 0; j <= i; ++j) {
                worst = std::max(worst, std::abs(1.5 * std::tanh(double(scaled(i, j)) / 1.5) - capped(i, j)));
                bent = std::max(bent, std::abs(double(scaled(i, j)) - capped(i, j)));
            }
        QVERIFY2(worst < 1e-5, qPrintable(QString::number(worst)));
        QVERIFY(bent > 0.1); // the cap binds
        QVERIFY(step(steps, "scores").maxAbsDiff < 1e-5);
        QCOMPARE(step(steps, "masked").formula.contains("j ≤ i − 3"), layer == 0);
        QVERIFY(step(steps, "attn_out").formula.startsWith("ln1_post("));
        QVERIFY(maxAbsDiff(step(steps, "attn_out_additive").values, step(steps, "attn_out").values) < 1e-5);
    }
}

/// A random Gemma 3 (6 layers, the last global): q_norm and k_norm use the gain 1 + w (recomputed here from the
/// checkpoint's w), q_rot is q_norm rotated by the layer's own RoPE (base 10 000 on sliding layer 0, 1 000 000 divided by
/// the linear factor 8 on global layer 5; recomputed here in double), the text names that base, and only layer 0 is
/// windowed; k_norm and k_rot the same way, the masked scores' window and the pattern recomputed from them, each step
/// against the forward's cache.
void TestAttentionSteps::gemma3PerLayerSteps() {
    QTemporaryDir dir;
    const LlamaCheckpoint ck = randomLlama(smallGemma3Spec(), 23);
    writeHfLlamaFolder(ck, dir.path(), Storage::F32, madeTokenizer512(), "tokenizer.bin");
    const auto model = loadModel(dir.path());
    const ActivationCache c = runForward(*model, std::vector<int>{2, 40, 300, 12, 77, 500, 9, 260});
    const int head = 1, L = 16, half = L / 2;
    for (const auto& [layer, base, factor] : {std::tuple{0, 1e4, 1.0}, std::tuple{5, 1e6, 8.0}}) {
        const std::vector<AttentionStep> steps = attentionSteps(*model, c, layer, head);
        QStringList names;
        for (const AttentionStep& s : steps) names << s.name;
        QCOMPARE(names, attentionStepNames(4, true, true));
        const LlamaLayerTensors& t = ck.layers[size_t(layer)];
        const Matrix& x = step(steps, "q").values;
        const Matrix& y = step(steps, "q_norm").values;
        const Matrix& r = step(steps, "q_rot").values;
        double worstNorm = 0, worstRot = 0;
        for (Eigen::Index i = 0; i < x.rows(); ++i) {
            const double rms = std::sqrt(x.row(i).cast<double>().squaredNorm() / L + 1e-6);
            for (int e = 0; e < L; ++e)
                worstNorm = std::max(worstNorm, std::abs(double(x(i, e)) / rms * (1.0 + t.q_norm[size_t(e)]) - y(i, e)));
            for (int e = 0; e < half; ++e) { // rotate_half pairs (e, e + L/2)
                const double a = double(i) * std::pow(base, -2.0 * e / L) / factor;
                const double y0 = y(i, e), y1 = y(i, e + half);
                worstRot = std::max({worstRot, std::abs(y0 * std::cos(a) - y1 * std::sin(a) - r(i, e)),
                                     std::abs(y1 * std::cos(a) + y0 * std::sin(a) - r(i, e + half))});
            }
        }
        QVERIFY2(worstNorm < 1e-5, qPrintable(QString("layer %1 q_norm: %2").arg(layer).arg(worstNorm)));
        QVERIFY2(worstRot < 1e-5, qPrintable(QString("layer %1 q_rot: %2").arg(layer).arg(worstRot)));
        // the keys the same way (one K/V head: head 1 reads K/V head 0), against the forward's cache too
        const LayerCache& lc = c.layers[size_t(layer)];
        const Matrix& kx = step(steps, "k").values;
        const Matrix& ky = step(steps, "k_norm").values;
        const Matrix& kr = step(steps, "k_rot").values;
        double worstK = 0;
        for (Eigen::Index i = 0; i < kx.rows(); ++i) {
            const double rms = std::sqrt(kx.row(i).cast<double>().squaredNorm() / L + 1e-6);
            for (int e = 0; e < L; ++e) worstK = std::max(worstK, std::abs(double(kx(i, e)) / rms * (1.0 + t.k_norm[size_t(e)]) - ky(i, e)));
            for (int e = 0; e < half; ++e) {
                const double a = double(i) * std::pow(base, -2.0 * e / L) / factor;
                worstK = std::max({worstK, std::abs(double(ky(i, e)) * std::cos(a) - double(ky(i, e + half)) * std::sin(a) - kr(i, e)),
                                   std::abs(double(ky(i, e + half)) * std::cos(a) + double(ky(i, e)) * std::sin(a) - kr(i, e + half))});
            }
        }
        QVERIFY2(worstK < 1e-5, qPrintable(QString("layer %1 k_norm/k_rot: %2").arg(layer).arg(worstK)));
        QVERIFY(maxAbsDiff(ky, lc.k.middleCols(head * L, L)) < 1e-6);
        QVERIFY(maxAbsDiff(r, lc.q_rot.middleCols(head * L, L)) < 1e-6);
        QVERIFY(maxAbsDiff(kr, lc.k_rot.middleCols(head * L, L)) < 1e-6);
        // scaled = scores / √query_pre_attn_scalar; masked keeps (i − 3, i] on the sliding layer and [0, i] on the global
        // one; pattern = softmax of each masked row, recomputed here in double, and the cache's pattern
        const Matrix& scores = step(steps, "scores").values;
        const Matrix& scaled = step(steps, "scaled").values;
        const Matrix& masked = step(steps, "masked").values;
        const Matrix& pattern = step(steps, "pattern").values;
        QVERIFY(maxAbsDiff(pattern, lc.pattern[size_t(head)]) < 1e-6);
        double worstScale = 0, worstPattern = 0;
        int kept = 0;
        for (Eigen::Index i = 0; i < masked.rows(); ++i) {
            const Eigen::Index lo = layer == 0 ? std::max<Eigen::Index>(0, i - 2) : 0;
            double m = -INFINITY, sum = 0;
            for (Eigen::Index j = 0; j <= i; ++j) {
                worstScale = std::max(worstScale, std::abs(double(scores(i, j)) / 4.0 - scaled(i, j)));
                QCOMPARE(std::isfinite(masked(i, j)), j >= lo);
                if (j >= lo) m = std::max(m, double(masked(i, j))), ++kept;
            }
            for (Eigen::Index j = lo; j <= i; ++j) sum += std::exp(double(masked(i, j)) - m);
            for (Eigen::Index j = 0; j <= i; ++j)
                worstPattern = std::max(worstPattern, std::abs((j >= lo ? std::exp(double(masked(i, j)) - m) / sum : 0.0) - pattern(i, j)));
        }
        QCOMPARE(kept, layer == 0 ? 1 + 2 + 3 * 6 : 8 * 9 / 2);
        QVERIFY2(worstScale < 1e-5 && worstPattern < 1e-6, qPrintable(QString("layer %1: %2 %3").arg(layer).arg(worstScale).arg(worstPattern)));
        QVERIFY(maxAbsDiff(step(steps, "z").values, lc.z.middleCols(head * L, L)) == 0);
        QVERIFY(step(steps, "attn_out_additive").maxAbsDiff < 1e-5); // the heads' shares through the post-norm sum to attn_out
        QVERIFY(maxAbsDiff(step(steps, "resid_mid").values, lc.resid_mid) == 0);
        QVERIFY2(step(steps, "q_rot").meaning.contains(QString("θ_i = %1^(−2i/16)").arg(base)), qPrintable(step(steps, "q_rot").meaning));
        QCOMPARE(step(steps, "q_rot").meaning.contains("divided by 8 (linear scaling)"), layer == 5);
        QCOMPARE(step(steps, "q_rot").meaning.contains("sliding-window layer"), layer == 0);
        QCOMPARE(step(steps, "masked").formula.contains("j ≤ i − 3"), layer == 0);
        QVERIFY(step(steps, "scores").maxAbsDiff < 1e-5);
        QVERIFY(step(steps, "q_norm").meaning.contains("1 + the stored weight"));
    }
}

void TestAttentionSteps::demoModel() {
    if (!QFileInfo::exists(demoDir() + "/model.safetensors")) QSKIP("resources/demo has no trained model yet");
    auto model = loadModel(demoDir());
    const auto& tok = model->tokenizer();
    std::vector<int> ids{*tok.bosId()};
    for (int id : tok.encode("In the beginning God created the heaven and the earth.")) ids.push_back(id);
    const ActivationCache c = runForward(*model, ids);
    const int last = model->config().n_layers - 1;
    checkAgainstCache(*model, c, 0, 0);
    if (QTest::currentTestFailed()) return;
    checkAgainstCache(*model, c, last, model->config().n_heads - 1);
}

QTEST_GUILESS_MAIN(TestAttentionSteps)
#include "tst_attention_steps.moc"
