// Every hook point's gradient against PyTorch autograd over an independent float64 PyTorch forward
// (tests/data/gradients/*.json, written by tools/gradient_references.py; its README says how), with and
// without each stop-gradient switch: tiny-gpt2, stories260K, a random Mistral with grouped-query heads, a
// sliding window and an untied head, a random Qwen 3 (q/k norms) and a random Gemma 2 (post-norms, soft-caps);
// the metrics logit_diff, logprob and kl. Within 1e-4 of each hook's
// largest gradient entry.

#include "model/analysis/gradients/metric_gradients.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/reference_json.h"
#include "support/stories_reference.h"
#include "support/test_paths.h"

#include <QDir>
#include <QJsonArray>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

QString referenceDir() { return attnscope::test::sourceFile(QStringLiteral("tests/data/gradients")); }

/// The gradient cache's field for a hook name; pattern hooks as [head·query, key] (heads stacked).
Matrix ours(const GradientCache& g, const QString& hook) {
    if (hook == QLatin1String("hook_embed")) return g.embed;
    const QStringList parts = hook.split(QLatin1Char('.'));
    const LayerGradients& l = g.layers[size_t(parts[1].toInt())];
    const QString name = parts.mid(2).join(QLatin1Char('.'));
    if (name == QLatin1String("attn.hook_pattern")) {
        const Eigen::Index S = l.pattern.front().rows();
        Matrix stacked(Eigen::Index(l.pattern.size()) * S, S);
        for (size_t h = 0; h < l.pattern.size(); ++h) stacked.middleRows(Eigen::Index(h) * S, S) = l.pattern[h];
        return stacked;
    }
    const std::map<QString, const Matrix*> fields{
        {"hook_resid_pre", &l.resid_pre}, {"hook_resid_mid", &l.resid_mid}, {"hook_resid_post", &l.resid_post},
        {"hook_attn_out", &l.attn_out},   {"hook_mlp_out", &l.mlp_out},     {"mlp.hook_post", &l.mlp_post},
        {"attn.hook_q", &l.q},            {"attn.hook_k", &l.k},            {"attn.hook_v", &l.v},
        {"attn.hook_z", &l.z}};
    const auto it = fields.find(name);
    if (it == fields.end()) qFatal("unknown hook %s", qPrintable(hook));
    return *it->second;
}

/// {"shape", "data"} as a matrix: [rows = product of all but the last dim, last dim].
Matrix referenceOf(const QJsonObject& o) {
    const QJsonArray shape = o["shape"].toArray(), data = o["data"].toArray();
    const Eigen::Index cols = shape.last().toInteger();
    Matrix m(data.size() / cols, cols);
    for (qsizetype i = 0; i < data.size(); ++i) m(Eigen::Index(i) / cols, Eigen::Index(i) % cols) = float(data[i].toDouble());
    return m;
}

} // namespace

class TestGradientReferences : public QObject {
    Q_OBJECT
private slots:
    void matchesPyTorchAutograd_data() {
        QTest::addColumn<QString>("file");
        for (const char* f : {"tiny-gpt2.json", "stories260K.json", "llama-gqa-swa.json", "qwen3-qknorm.json", "gemma2-softcap.json"}) QTest::newRow(f) << QString(f);
    }

    void matchesPyTorchAutograd() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QString, file);
        const QJsonObject ref = readJsonObject(referenceDir() + QLatin1Char('/') + file);
        QVERIFY(ref["source"].toString().contains("autograd"));
        const QString path = QDir(attnscope::test::sourceFile(QString())).filePath(ref["model"].toString());
        const auto model = ref["format"].toString() == QLatin1String("llama2c") ? loadModel(path, {}, LoadOptions{storiesFile("tok512.bin")})
                                                                               : loadModel(path);
        const std::vector<int> tokens = intsFromJson(ref["tokens"].toArray());
        const ActivationCache cache = runForward(*model, tokens);
        int compared = 0;
        for (const QJsonValue mv : ref["metrics"].toArray()) {
            const QJsonObject mo = mv.toObject();
            PatchingMetric metric;
            const QString kind = mo["kind"].toString();
            metric.kind = kind == "logit_diff" ? PatchingMetricKind::LogitDiff : kind == "logprob" ? PatchingMetricKind::LogProb : PatchingMetricKind::KL;
            metric.token = mo["token"].toInt(-1);
            metric.counterToken = mo["counter_token"].toInt(-1);
            metric.position = mo["position"].toInt();
            RowVector clean;
            if (metric.kind == PatchingMetricKind::KL) clean = matrixFromJson(QJsonArray{QJsonValue(mo["reference_logits"].toArray())}).row(0);
            // the forward first: the last position's logits as PyTorch's float64 forward gives them
            const RowVector refLogits = matrixFromJson(QJsonArray{QJsonValue(mo["logits_last"].toArray())}).row(0);
            const RowVector logits = cache.logits.row(cache.logitRow(metric.position));
            QVERIFY2((logits - refLogits).cwiseAbs().maxCoeff() <= 1e-4f * (1 + refLogits.cwiseAbs().maxCoeff()), qPrintable(kind));
            for (const QJsonValue vv : mo["variants"].toArray()) {
                const QJsonObject v = vv.toObject();
                const QJsonArray freeze = v["freeze"].toArray();
                BackwardOptions o;
                o.stops = StopGradients{freeze.contains("norm"), freeze.contains("attention"), freeze.contains("mlp")};
                const MetricGradients g = metricGradients(*model, cache, metric, clean, o);
                QVERIFY2(std::abs(g.value - mo["value"].toDouble()) <= 1e-4 * (1 + std::abs(g.value)), qPrintable(kind));
                const QJsonObject grads = v["gradients"].toObject();
                QVERIFY(grads.size() >= 1 + 11 * model->config().n_layers);
                for (auto it = grads.begin(); it != grads.end(); ++it) {
                    const Matrix want = referenceOf(it.value().toObject()), got = ours(g.gradients, it.key());
                    QCOMPARE(got.rows(), want.rows());
                    QCOMPARE(got.cols(), want.cols());
                    const float scale = want.cwiseAbs().maxCoeff(), err = (got - want).cwiseAbs().maxCoeff();
                    QVERIFY2(err <= 1e-4f * scale + 1e-7f,
                             qPrintable(QStringLiteral("%1 %2 freeze [%3] %4: max error %5 of max %6")
                                            .arg(file, kind, QJsonDocument(freeze).toJson(QJsonDocument::Compact), it.key())
                                            .arg(err).arg(scale)));
                    ++compared;
                }
            }
        }
        qInfo() << file << compared << "hook gradients compared";
        QVERIFY(compared >= 5 * (1 + 11 * model->config().n_layers));
    }
};

QTEST_GUILESS_MAIN(TestGradientReferences)
#include "tst_gradient_references.moc"
