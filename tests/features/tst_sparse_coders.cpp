// Opening sparse dictionaries in every format (SAELens v6 and pre-6.0 folders, Gemma Scope .npz and
// params.safetensors, circuit-tracer transcoder sets incl. cross-layer, Llama Scope) and encoding/decoding with
// them, each against an independent float64 implementation of that format's formulas
// (support/dictionary_fixtures.h); hook names; hostile files rejected with messages naming file and field.

#include "model/core/errors.h"
#include "model/features/dictionary_set.h"
#include "model/features/gemma_scope_params.h"
#include "model/features/hook_point.h"
#include "model/features/npz_archive.h"
#include "model/features/saelens_folder.h"
#include "model/features/sparse_coder.h"
#include "support/dictionary_fixtures.h"
#include "support/safetensors_writer.h"
#include "support/error_capture.h"
#include "support/test_paths.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <random>

using namespace attnscope;
using namespace attnscope::test;

namespace {

constexpr int kIn = 16, kSae = 48, kPos = 7;

#define EXPECT_MATCHES(...)                                                                                                            \
    do {                                                                                                                               \
        const QString why = referenceMismatch(__VA_ARGS__);                                                                                     \
        QVERIFY2(why.isEmpty(), qPrintable(why));                                                                                      \
    } while (0)

QString expectModelError(const std::function<void()>& f) {
    const QString message = attnscope::test::anyErrorOf(f);
    return message.isEmpty() ? QStringLiteral("(no error)") : message;
}

} // namespace

class TestSparseCoders : public QObject {
    Q_OBJECT
private slots:
    void saeLensArchitectures_data();
    void saeLensArchitectures();
    void gemmaScopeNpz();
    void gemmaScope2Safetensors();
    void circuitTracerSet();
    void circuitTracerCrossLayer();
    void llamaScope();
    void hookNames();
    void hostileFiles();
    void configFieldTypes_data();
    void configFieldTypes();
    void saeLensCoercions();
    void gemmaScope2Config();
    void matchingPursuitRules();
    void qwenScopeTopK();
    void refusedArchitectures();
};

void TestSparseCoders::saeLensArchitectures_data() {
    QTest::addColumn<QString>("architecture");
    QTest::addColumn<QString>("generation"); // v6 or pre6
    QTest::addColumn<QString>("norm");
    QTest::addColumn<bool>("applyBDec");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<bool>("rescale");
    QTest::newRow("standard v6") << "standard" << "v6" << "none" << true << "F32" << false;
    QTest::newRow("standard pre6, no b_dec") << "standard" << "pre6" << "none" << false << "F32" << false;
    QTest::newRow("standard constant_norm_rescale") << "standard" << "v6" << "constant_norm_rescale" << true << "F32" << false;
    QTest::newRow("standard layer_norm") << "standard" << "v6" << "layer_norm" << true << "F32" << false;
    QTest::newRow("standard expected_average folded") << "standard" << "v6" << "expected_average_only_in" << true << "F32" << false;
    QTest::newRow("standard pre6 bool normalize") << "standard" << "pre6" << "true" << true << "F32" << false;
    QTest::newRow("jumprelu BF16") << "jumprelu" << "v6" << "none" << false << "BF16" << false;
    QTest::newRow("jumprelu F16") << "jumprelu" << "v6" << "none" << true << "F16" << false;
    QTest::newRow("batchtopk saved as jumprelu") << "batchtopk" << "v6" << "none" << true << "F32" << false;
    QTest::newRow("topk v6") << "topk" << "v6" << "none" << true << "F32" << false;
    QTest::newRow("topk rescale_acts_by_decoder_norm") << "topk" << "v6" << "none" << true << "F32" << true;
    QTest::newRow("topk pre6 activation_fn_kwargs") << "topk" << "pre6" << "none" << true << "F32" << false;
    QTest::newRow("gated") << "gated" << "v6" << "none" << true << "F32" << false;
    QTest::newRow("transcoder") << "transcoder" << "v6" << "none" << false << "F32" << false;
    QTest::newRow("skip_transcoder") << "skip_transcoder" << "v6" << "none" << false << "F32" << false;
    QTest::newRow("jumprelu_transcoder BF16") << "jumprelu_transcoder" << "v6" << "none" << false << "BF16" << false;
    QTest::newRow("jumprelu_skip_transcoder") << "jumprelu_skip_transcoder" << "v6" << "none" << false << "F32" << false;
    QTest::newRow("jumprelu_skip_transcoder BF16") << "jumprelu_skip_transcoder" << "v6" << "none" << false << "BF16" << false;
    QTest::newRow("matryoshka_batchtopk with its threshold") << "matryoshka_batchtopk" << "v6" << "none" << true << "F32" << false;
    QTest::newRow("matching_pursuit") << "matching_pursuit" << "v6" << "none" << true << "F32" << false;
    QTest::newRow("matching_pursuit, no b_dec") << "matching_pursuit" << "v6" << "none" << false << "F32" << false;
    QTest::newRow("matching_pursuit layer_norm") << "matching_pursuit" << "v6" << "layer_norm" << true << "F32" << false;
}

void TestSparseCoders::saeLensArchitectures() {
    QFETCH(QString, architecture);
    QFETCH(QString, generation);
    QFETCH(QString, norm);
    QFETCH(bool, applyBDec);
    QFETCH(QString, dtype);
    QFETCH(bool, rescale);
    const bool transcoder = architecture.endsWith(QLatin1String("transcoder"));
    const int dout = transcoder ? 12 : kIn;
    DictionaryParams raw = randomParams(kIn, kSae, dout, 7u + unsigned(qHash(architecture + norm + generation)));
    if (architecture == QLatin1String("matching_pursuit")) raw.W_dec.rowwise().normalize(); // trained so (decoder_init_norm 1)
    const DictionaryParams p = roundedTo(raw, dtype);
    QJsonObject cfg{{"d_in", kIn}, {"d_sae", kSae}, {"dtype", "float32"}, {"apply_b_dec_to_input", applyBDec}};
    const QString hook = QStringLiteral("blocks.1.hook_resid_post");
    ReferenceSpec spec;
    spec.applyBDecToInput = applyBDec;
    spec.transcoder = transcoder;
    if (generation == QLatin1String("v6")) {
        cfg["architecture"] = architecture;
        QJsonObject meta{{"hook_name", transcoder ? QStringLiteral("blocks.1.ln2.hook_normalized") : hook}, {"sae_lens_version", "6.18.0"}};
        if (transcoder) meta["hook_name_out"] = QStringLiteral("blocks.1.hook_mlp_out");
        cfg["metadata"] = meta;
    } else {
        cfg["hook_point"] = hook;
        cfg["sae_lens_version"] = QStringLiteral("3.19.0");
        cfg["activation_fn_str"] = architecture == QLatin1String("topk") ? QStringLiteral("topk") : QStringLiteral("relu");
        if (architecture == QLatin1String("topk")) cfg["activation_fn_kwargs"] = QJsonObject{{"k", 5}};
    }
    if (transcoder) cfg["d_out"] = dout;
    if (architecture == QLatin1String("topk")) {
        if (generation == QLatin1String("v6")) cfg["k"] = 5;
        cfg["rescale_acts_by_decoder_norm"] = rescale;
        spec.activation = ReferenceSpec::TopK;
        spec.k = 5;
        spec.rescaleByDecoderNorm = rescale;
    } else if (architecture.contains(QLatin1String("jumprelu")) || architecture.endsWith(QLatin1String("batchtopk"))) {
        spec.activation = ReferenceSpec::JumpReLU;
    } else if (architecture == QLatin1String("matching_pursuit")) {
        spec.activation = ReferenceSpec::MatchingPursuit;
    } else if (architecture == QLatin1String("gated")) {
        spec.activation = ReferenceSpec::Gated;
    }
    spec.skip = architecture.endsWith(QLatin1String("skip_transcoder"));
    if (norm == QLatin1String("true")) { // pre-6.0 bool: expected_average_only_in, whose factor must be given
        cfg["normalize_activations"] = true;
        cfg["norm_scaling_factor"] = 0.75;
        spec.inputScale = 0.75;
    } else {
        cfg["normalize_activations"] = norm;
        if (norm == QLatin1String("expected_average_only_in")) {
            cfg["norm_scaling_factor"] = 1.7;
            spec.inputScale = 1.7;
        }
        if (norm == QLatin1String("constant_norm_rescale")) spec.norm = ReferenceSpec::ConstantNormRescale;
        if (norm == QLatin1String("layer_norm")) spec.norm = ReferenceSpec::LayerNorm;
    }
    QTemporaryDir tmp;
    const QString dir = tmp.filePath(QStringLiteral("sae"));
    writeSaeLensFolder(dir, p, architecture, cfg, dtype);
    const DictionarySet set = openDictionaries(dir);
    QCOMPARE(set.coders.size(), size_t(1));
    const SparseCoder& sae = set.coders[0];
    QCOMPARE(sae.format, QStringLiteral("SAELens"));
    QCOMPARE(set.kind, transcoder ? QStringLiteral("transcoder") : QStringLiteral("sae"));
    QCOMPARE(sae.d_in, kIn);
    QCOMPARE(sae.d_sae, kSae);
    QCOMPARE(sae.d_out, dout);
    QCOMPARE(sae.hookIn, transcoder ? QStringLiteral("blocks.1.ln2.hook_normalized") : hook);
    QCOMPARE(sae.hookOut, transcoder ? QStringLiteral("blocks.1.hook_mlp_out") : hook);
    int firing = 0;
    EXPECT_MATCHES(sae, p, spec, randomInput(kPos, kIn, 3), &firing);
    QVERIFY2(firing > kPos && firing < kPos * kSae, qPrintable(QString::number(firing))); // some fire, not all
    if (architecture == QLatin1String("topk")) QCOMPARE(firing, kPos * 5);
    if (architecture == QLatin1String("jumprelu_skip_transcoder")) { // JumpReLUTranscoder's encode and SkipTranscoder's forward (MRO)
        ReferenceSpec noSkip = spec, relu = spec;
        noSkip.skip = false;
        relu.activation = ReferenceSpec::ReLU;
        QVERIFY(!referenceMismatch(sae, p, noSkip, randomInput(kPos, kIn, 3)).isEmpty());
        QVERIFY(!referenceMismatch(sae, p, relu, randomInput(kPos, kIn, 3)).isEmpty());
    }
    // opening cfg.json or the weights file opens the folder
    QCOMPARE(openDictionaries(QDir(dir).filePath(QStringLiteral("cfg.json"))).coders[0].d_sae, kSae);
}

void TestSparseCoders::gemmaScopeNpz() {
#ifndef ATTNSCOPE_HAVE_MINIZIP
    QSKIP("built without minizip");
#endif
    const DictionaryParams p = randomParams(kIn, kSae, kIn, 11);
    ReferenceSpec spec;
    spec.activation = ReferenceSpec::JumpReLU;
    for (const bool deflate : {false, true}) {
        for (const bool f64 : {false, true}) {
            QTemporaryDir tmp;
            const QString dir = tmp.filePath(QStringLiteral("gemma-scope-2b-pt-res/layer_3/width_16k/average_l0_71"));
            QDir().mkpath(dir);
            const DictionaryParams r = f64 ? p : roundedTo(p, QStringLiteral("F32"));
            writeZip(QDir(dir).filePath(QStringLiteral("params.npz")),
                     {{QStringLiteral("W_enc.npy"), npyOf({kIn, kSae}, valuesOf(r.W_enc), f64)},
                      {QStringLiteral("W_dec.npy"), npyOf({kSae, kIn}, valuesOf(r.W_dec), f64)},
                      {QStringLiteral("b_enc.npy"), npyOf({kSae}, valuesOf(r.b_enc), f64)},
                      {QStringLiteral("b_dec.npy"), npyOf({kIn}, valuesOf(r.b_dec), f64)},
                      {QStringLiteral("threshold.npy"), npyOf({kSae}, valuesOf(r.threshold), f64)}},
                     deflate);
            const DictionarySet set = openDictionaries(dir); // the folder holding params.npz
            const SparseCoder& sae = set.coders[0];
            QCOMPARE(sae.format, QStringLiteral("Gemma Scope"));
            QCOMPARE(sae.hookIn, QStringLiteral("blocks.3.hook_resid_post"));
            QVERIFY(!sae.applyBDecToInput);
            EXPECT_MATCHES(sae, roundedTo(r, QStringLiteral("F32")), spec, randomInput(kPos, kIn, 5));
        }
    }
    // the hook from the folder name: mlp, att, transcoders
    QCOMPARE(gemmaScopeHooksFromPath(QStringLiteral("/x/gemma-scope-9b-pt-mlp/layer_20/width_16k/average_l0_5/params.npz")).first,
             QStringLiteral("blocks.20.hook_mlp_out"));
    QCOMPARE(gemmaScopeHooksFromPath(QStringLiteral("/x/gemma-scope-2b-pt-att/layer_4/width_16k/average_l0_5/params.npz")).first,
             QStringLiteral("blocks.4.attn.hook_z"));
    const auto tc = gemmaScopeHooksFromPath(QStringLiteral("/c/models--google--gemma-scope-2b-pt-transcoders/snapshots/ab/layer_7/width_16k/average_l0_9/params.npz"));
    QCOMPARE(tc.first, QStringLiteral("blocks.7.ln2.hook_normalized"));
    QCOMPARE(tc.second, QStringLiteral("blocks.7.hook_mlp_out"));
    QCOMPARE(gemmaScopeHooksFromPath(QStringLiteral("/somewhere/params.npz")).first, QString());
}

void TestSparseCoders::gemmaScope2Safetensors() {
    const int dout = kIn;
    const DictionaryParams p = roundedTo(randomParams(kIn, kSae, dout, 13), QStringLiteral("BF16"));
    QTemporaryDir tmp;
    const QString dir = tmp.filePath(QStringLiteral("transcoder/layer_2_width_0k_l0_medium_affine")); // 48 features: width "0k"
    QDir().mkpath(dir);
    writeFile(QDir(dir).filePath(QStringLiteral("params.safetensors")),
              safetensorsOf({{QStringLiteral("w_enc"), {{kIn, kSae}, valuesOf(p.W_enc)}},
                             {QStringLiteral("w_dec"), {{kSae, dout}, valuesOf(p.W_dec)}},
                             {QStringLiteral("b_enc"), {{kSae}, valuesOf(p.b_enc)}},
                             {QStringLiteral("b_dec"), {{dout}, valuesOf(p.b_dec)}},
                             {QStringLiteral("threshold"), {{kSae}, valuesOf(p.threshold)}},
                             {QStringLiteral("affine_skip_connection"), {{kIn, dout}, valuesOf(p.W_skip)}}},
                            QStringLiteral("BF16")));
    const SparseCoder sae = openDictionaries(QDir(dir).filePath(QStringLiteral("params.safetensors"))).coders[0];
    QCOMPARE(sae.format, QStringLiteral("Gemma Scope 2"));
    QCOMPARE(sae.hookIn, QStringLiteral("blocks.2.ln2.hook_normalized"));
    QCOMPARE(sae.hookOut, QStringLiteral("blocks.2.hook_mlp_out"));
    ReferenceSpec spec;
    spec.activation = ReferenceSpec::JumpReLU;
    spec.skip = true;
    spec.transcoder = true;
    EXPECT_MATCHES(sae, p, spec, randomInput(kPos, kIn, 17));
}

void TestSparseCoders::circuitTracerSet() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("built without yaml-cpp");
#endif
    const int n = 3;
    std::vector<DictionaryParams> ps;
    for (int l = 0; l < n; ++l) ps.push_back(roundedTo(randomParams(kIn, kSae, kIn, 100 + l, true), QStringLiteral("F32")));
    struct Case { QString yaml; bool threshold; bool skip; ReferenceSpec::Activation act; int k; };
    const std::vector<Case> cases{
        {"model_kind: transcoder_set\nfeature_input_hook: ln2.hook_normalized\nfeature_output_hook: hook_mlp_out\n"
         "transcoders:\n  - hf://org/repo/layer_0.safetensors\n  - layer_1.safetensors\n  - hf://org/repo/sub/layer_2.safetensors?revision=x\n",
         true, false, ReferenceSpec::JumpReLU, 0},
        {"model_name: meta-llama/Llama-3.2-1B\nfeature_input_hook: hook_resid_mid\nfeature_output_hook: mlp.hook_out\ntranscoders:\n"
         "  - id: a\n    layer: 1\n    filepath: layer_1.safetensors\n  - id: b\n    layer: 0\n    filepath: layer_0.safetensors\n"
         "  - id: c\n    layer: 2\n    filepath: sub/layer_2.safetensors\n",
         false, true, ReferenceSpec::ReLU, 0},
        {"model_kind: transcoder_set\nfeature_input_hook: mlp.hook_in\nfeature_output_hook: hook_mlp_out\nactivation: topk\nk: 4\n",
         false, false, ReferenceSpec::TopK, 4}};
    for (const Case& c : cases) {
        QTemporaryDir tmp;
        const QDir dir(tmp.path());
        dir.mkpath(QStringLiteral("sub"));
        for (int l = 0; l < n; ++l)
            writeFile(dir.filePath(l == 2 && c.yaml.contains(QLatin1String("sub/")) ? QStringLiteral("sub/layer_2.safetensors")
                                                                                     : QStringLiteral("layer_%1.safetensors").arg(l)),
                      circuitTracerLayer(ps[size_t(l)], c.threshold, c.skip));
        writeFile(dir.filePath(QStringLiteral("config.yaml")), c.yaml.toUtf8());
        const DictionarySet set = openDictionaries(tmp.path());
        QCOMPARE(set.kind, QStringLiteral("transcoder_set"));
        QCOMPARE(int(set.coders.size()), n);
        for (int l = 0; l < n; ++l) {
            const SparseCoder& sae = set.coders[size_t(l)];
            QCOMPARE(sae.format, QStringLiteral("circuit-tracer"));
            QVERIFY(sae.hookIn.startsWith(QStringLiteral("blocks.%1.").arg(l)));
            QVERIFY(sae.hookOut.startsWith(QStringLiteral("blocks.%1.").arg(l)));
            ReferenceSpec spec;
            spec.activation = c.act;
            spec.k = c.k;
            spec.relu = c.act == ReferenceSpec::ReLU; // circuit-tracer's JumpReLU and TopK keep negative values
            spec.skip = c.skip;
            spec.transcoder = true;
            EXPECT_MATCHES(sae, ps[size_t(l)], spec, randomInput(kPos, kIn, 40 + l));
        }
        // the negative thresholds make the missing ReLU visible: some activations are negative
        if (c.act == ReferenceSpec::JumpReLU) {
            const Matrix f = encodeFeatures(set.coders[0], randomInput(kPos, kIn, 40).cast<float>());
            QVERIFY(f.minCoeff() < 0);
        }
    }
    // a gap in the layers is refused
    QTemporaryDir gap;
    writeFile(QDir(gap.path()).filePath(QStringLiteral("layer_0.safetensors")), circuitTracerLayer(ps[0], false, false));
    writeFile(QDir(gap.path()).filePath(QStringLiteral("layer_2.safetensors")), circuitTracerLayer(ps[2], false, false));
    writeFile(QDir(gap.path()).filePath(QStringLiteral("config.yaml")),
              "feature_input_hook: hook_resid_mid\nfeature_output_hook: hook_mlp_out\ntranscoders:\n"
              "  - {id: a, layer: 0, filepath: layer_0.safetensors}\n  - {id: c, layer: 2, filepath: layer_2.safetensors}\n");
    QCOMPARE(expectModelError([&] { openDictionaries(gap.path()); }),
             QDir::toNativeSeparators(QDir(gap.path()).filePath(QStringLiteral("config.yaml"))) +
                 QStringLiteral(": no transcoder for layer 1 (each layer 0 … 2 needs one)"));
}

void TestSparseCoders::circuitTracerCrossLayer() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("built without yaml-cpp");
#endif
    const int n = 3, dt = 20;
    QTemporaryDir tmp;
    const QDir dir(tmp.path());
    std::mt19937 g(5);
    std::normal_distribution<double> nd(0, 0.3);
    std::vector<DictionaryParams> ps;
    std::vector<MatrixD> dec(n); // [dt, (n − i)·d_model]
    for (int i = 0; i < n; ++i) {
        ps.push_back(roundedTo(randomParams(kIn, dt, kIn, 200 + i), QStringLiteral("F32")));
        dec[size_t(i)] = MatrixD(dt, (n - i) * kIn);
        for (Eigen::Index j = 0; j < dec[size_t(i)].size(); ++j) dec[size_t(i)].data()[j] = double(float(nd(g)));
        writeFile(dir.filePath(QStringLiteral("W_enc_%1.safetensors").arg(i)),
                  safetensorsOf({{QStringLiteral("W_enc_%1").arg(i), {{dt, kIn}, transposedValuesOf(ps.back().W_enc)}},
                                 {QStringLiteral("b_enc_%1").arg(i), {{dt}, valuesOf(ps.back().b_enc)}},
                                 {QStringLiteral("b_dec_%1").arg(i), {{kIn}, valuesOf(ps.back().b_dec)}},
                                 {QStringLiteral("threshold_%1").arg(i), {{dt}, valuesOf(ps.back().threshold)}}}));
        writeFile(dir.filePath(QStringLiteral("W_dec_%1.safetensors").arg(i)),
                  safetensorsOf({{QStringLiteral("W_dec_%1").arg(i), {{dt, n - i, kIn}, valuesOf(dec[size_t(i)])}}}));
    }
    writeFile(dir.filePath(QStringLiteral("config.yaml")),
              "model_kind: cross_layer_transcoder\nfeature_input_hook: blocks.{layer}.hook_resid_mid\nfeature_output_hook: hook_mlp_out\n");
    const DictionarySet set = openDictionaries(tmp.path());
    QCOMPARE(set.kind, QStringLiteral("cross_layer_transcoder"));
    QCOMPARE(int(set.coders.size()), n);
    QCOMPARE(set.coders[1].hookIn, QStringLiteral("blocks.1.hook_resid_mid"));
    for (int i = 0; i < n; ++i) {
        QCOMPARE(int(set.crossLayerDecoders[size_t(i)].size()), n - i);
        for (int j = i; j < n; ++j) // W_dec_i[:, j − i, :] element by element
            for (int f : {0, 7, dt - 1})
                for (int d : {0, 5, kIn - 1})
                    QCOMPARE(double(set.crossLayerDecoders[size_t(i)][size_t(j - i)].at(f, d)), dec[size_t(i)](f, (j - i) * kIn + d));
        DictionaryParams p = ps[size_t(i)];
        p.W_dec = dec[size_t(i)].leftCols(kIn); // the same-layer slice
        ReferenceSpec spec;
        spec.activation = ReferenceSpec::JumpReLU;
        spec.relu = false;
        spec.transcoder = true;
        EXPECT_MATCHES(set.coders[size_t(i)], p, spec, randomInput(kPos, kIn, 60 + i));
    }
}

void TestSparseCoders::llamaScope() {
    const int dm = kIn;
    const DictionaryParams p = roundedTo(randomParams(dm, kSae, dm, 31), QStringLiteral("BF16"));
    QTemporaryDir tmp;
    const QDir dir(tmp.path());
    dir.mkpath(QStringLiteral("checkpoints"));
    writeFile(dir.filePath(QStringLiteral("checkpoints/final.safetensors")),
              safetensorsOf({{QStringLiteral("encoder.weight"), {{kSae, dm}, transposedValuesOf(p.W_enc)}},
                             {QStringLiteral("encoder.bias"), {{kSae}, valuesOf(p.b_enc)}},
                             {QStringLiteral("decoder.weight"), {{dm, kSae}, transposedValuesOf(p.W_dec)}},
                             {QStringLiteral("decoder.bias"), {{dm}, valuesOf(p.b_dec)}}},
                            QStringLiteral("BF16")));
    const double normIn = 6.5, theta = 0.12;
    writeFile(dir.filePath(QStringLiteral("hyperparams.json")),
              QJsonDocument(QJsonObject{{"d_model", dm}, {"d_sae", kSae}, {"hook_point_in", "blocks.0.hook_resid_post"},
                                        {"hook_point_out", "blocks.0.hook_resid_post"}, {"act_fn", "jumprelu"},
                                        {"jump_relu_threshold", theta},
                                        {"dataset_average_activation_norm", QJsonObject{{"in", normIn}, {"out", normIn}}}})
                  .toJson());
    const SparseCoder sae = openDictionaries(tmp.path()).coders[0];
    QCOMPARE(sae.format, QStringLiteral("Llama Scope"));
    // SAELens: the input scale s = √d_model / norm_in folded into the weights, the scalar threshold times s
    DictionaryParams folded = p;
    folded.threshold = RowD();
    ReferenceSpec spec;
    spec.activation = ReferenceSpec::JumpReLU;
    spec.inputScale = std::sqrt(double(dm)) / normIn;
    spec.thresholdScalar = double(float(theta * spec.inputScale));
    EXPECT_MATCHES(sae, folded, spec, randomInput(kPos, dm, 33) * 3.0);
}

void TestSparseCoders::hookNames() {
    ModelConfig cfg;
    cfg.n_layers = 4;
    cfg.d_model = 32;
    cfg.n_heads = 4;
    cfg.d_head = 6;
    cfg.d_mlp = 64;
    QCOMPARE(parseHookName(QStringLiteral("blocks.3.hook_resid_post"))->name(), QStringLiteral("blocks.3.hook_resid_post"));
    QCOMPARE(parseHookName(QStringLiteral("blocks.2.mlp.hook_in"))->name(), QStringLiteral("blocks.2.ln2.hook_normalized"));
    QCOMPARE(parseHookName(QStringLiteral("blocks.2.mlp.hook_out"))->name(), QStringLiteral("blocks.2.hook_mlp_out"));
    QCOMPARE(parseHookName(QStringLiteral("hook_resid_mid"), 1)->name(), QStringLiteral("blocks.1.hook_resid_mid"));
    QCOMPARE(parseHookName(QStringLiteral("blocks.0.attn.hook_z"))->width(cfg), 24);
    QVERIFY(!parseHookName(QStringLiteral("blocks.0.hook_nothing")));
    QCOMPARE(expectModelError([&] { requireHook(cfg, QStringLiteral("blocks.4.hook_resid_pre"), 32, QStringLiteral("f")); }),
             QStringLiteral("f: hook blocks.4.hook_resid_pre names layer 4 but the model has 4 layers (0..3)"));
    QCOMPARE(expectModelError([&] { requireHook(cfg, QStringLiteral("blocks.1.hook_mlp_out"), 768, QStringLiteral("f")); }),
             QStringLiteral("f: the dictionary reads 768 values per position but blocks.1.hook_mlp_out has 32 (d_model) in this model"));
    QVERIFY(expectModelError([&] { requireHook(cfg, QStringLiteral("blocks.1.hook_q"), 32, QStringLiteral("f")); })
                .startsWith(QStringLiteral("f: hook blocks.1.hook_q is not a hook point AttnScope reads (known: hook_embed, ")));
}

void TestSparseCoders::hostileFiles() {
    const DictionaryParams p = randomParams(kIn, kSae, kIn, 9);
    QJsonObject base{{"architecture", "jumprelu"}, {"d_in", kIn}, {"d_sae", kSae},
                     {"metadata", QJsonObject{{"hook_name", "blocks.0.hook_resid_pre"}}}};
    QTemporaryDir tmp;
    auto folder = [&](const QString& name, const DictionaryParams& q, const QString& arch, const QJsonObject& cfg) {
        const QString d = tmp.filePath(name);
        writeSaeLensFolder(d, q, arch, cfg);
        return d;
    };
    auto label = [&](const QString& d, const QString& f) { return QDir::toNativeSeparators(QDir(d).filePath(f)); };
    // shape mismatch against cfg.json
    QJsonObject wide = base;
    wide["d_sae"] = kSae + 1;
    QString d = folder(QStringLiteral("shape"), p, QStringLiteral("jumprelu"), wide);
    QCOMPARE(expectModelError([&] { openDictionaries(d); }),
             label(d, QStringLiteral("sae_weights.safetensors")) +
                 QStringLiteral(": tensor W_enc has shape [16, 48] but cfg.json (d_in 16, d_sae 49) implies [16, 49]"));
    // a NaN threshold
    DictionaryParams nan = p;
    nan.threshold(3) = std::numeric_limits<double>::quiet_NaN();
    d = folder(QStringLiteral("nan"), nan, QStringLiteral("jumprelu"), base);
    QCOMPARE(expectModelError([&] { openDictionaries(d); }),
             label(d, QStringLiteral("sae_weights.safetensors")) + QStringLiteral(": tensor threshold holds NaN or infinite values"));
    // k > d_sae
    QJsonObject topk = base;
    topk["architecture"] = QStringLiteral("topk");
    topk["k"] = kSae + 1;
    d = folder(QStringLiteral("k"), p, QStringLiteral("topk"), topk);
    QCOMPARE(expectModelError([&] { openDictionaries(d); }), label(d, QStringLiteral("cfg.json")) + QStringLiteral(": k = 49 must be between 1 and d_sae = 48"));
    // an unknown architecture
    QJsonObject unknown = base;
    unknown["architecture"] = QStringLiteral("matryoshka_quantum");
    d = folder(QStringLiteral("arch"), p, QStringLiteral("standard"), unknown);
    QVERIFY(expectModelError([&] { openDictionaries(d); })
                .startsWith(label(d, QStringLiteral("cfg.json")) + QStringLiteral(": architecture \"matryoshka_quantum\" is not one AttnScope reads (")));
    // expected_average_only_in without its factor
    QJsonObject avg = base;
    avg["normalize_activations"] = QStringLiteral("expected_average_only_in");
    d = folder(QStringLiteral("avg"), p, QStringLiteral("jumprelu"), avg);
    QVERIFY(expectModelError([&] { openDictionaries(d); }).contains(QStringLiteral("gives no norm_scaling_factor")));
    // pickles are refused, never read
    const QString pt = tmp.filePath(QStringLiteral("openai/v5_32k_layer_3.pt"));
    QDir().mkpath(tmp.filePath(QStringLiteral("openai")));
    writeFile(pt, QByteArray("\x80\x04\x95", 3));
    QVERIFY(expectModelError([&] { openDictionaries(pt); }).contains(QStringLiteral("never unpickles")));
    QVERIFY(expectModelError([&] { openDictionaries(tmp.filePath(QStringLiteral("openai"))); }).contains(QStringLiteral("gpt2-small-resid-post-v5-32k")));
#ifdef ATTNSCOPE_HAVE_MINIZIP
    // .npy headers: truncated, claiming more than the entry, not a dict; a zip entry claiming gigabytes
    const QByteArray good = npyOf({kIn}, valuesOf(p.b_dec));
    auto npz = [&](const QString& name, const QByteArray& entry) {
        const QString dir = tmp.filePath(QStringLiteral("npz-") + name + QStringLiteral("/gemma-scope-2b-pt-res/layer_0/w"));
        QDir().mkpath(dir);
        writeZip(QDir(dir).filePath(QStringLiteral("params.npz")), {{QStringLiteral("b_dec.npy"), entry}}, false);
        return QDir(dir).filePath(QStringLiteral("params.npz"));
    };
    QString z = npz(QStringLiteral("trunc"), good.left(9));
    QCOMPARE(expectModelError([&] { NpzArchive::open(z); }), QStringLiteral("params.npz: entry b_dec.npy: not a .npy array (no \\x93NUMPY magic)"));
    QByteArray bigHeader = good;
    bigHeader[8] = char(0xFF);
    bigHeader[9] = char(0x7F);
    z = npz(QStringLiteral("big"), bigHeader);
    QCOMPARE(expectModelError([&] { NpzArchive::open(z); }),
             QStringLiteral("params.npz: entry b_dec.npy: .npy header claims 32767 bytes but only %1 follow").arg(good.size() - 10));
    QByteArray shortData = good;
    shortData.chop(4);
    z = npz(QStringLiteral("short"), shortData);
    QCOMPARE(expectModelError([&] { NpzArchive::open(z); }),
             QStringLiteral("params.npz: entry b_dec.npy: shape (16,) of <f4 needs 64 bytes but the array holds 60"));
    // a zip whose entry claims 4 GiB: patch the sizes in the local and central headers of a stored entry
    z = npz(QStringLiteral("claim"), good);
    QByteArray bytes = readFile(z);
    for (const char* sig : {"PK\x03\x04", "PK\x01\x02"}) {
        const int at = bytes.indexOf(QByteArray(sig, 4));
        const int off = sig[2] == 3 ? 22 : 24; // uncompressed size field
        bytes[at + off] = char(0xFF); bytes[at + off + 1] = char(0xFF); bytes[at + off + 2] = char(0xFF); bytes[at + off + 3] = char(0xFF);
    }
    writeFile(z, bytes);
    const QString claim = expectModelError([&] { NpzArchive::open(z); });
    QVERIFY2(claim.startsWith(QStringLiteral("params.npz: entry b_dec.npy: claims 4294967295 bytes")), qPrintable(claim));
#endif
}


// Every dictionary config's fields are checked for their JSON / YAML type (config_fields.h): a wrong one is refused
// naming the file and the field, never read as a default. One row per reader and field kind.
void TestSparseCoders::configFieldTypes_data() {
    QTest::addColumn<QString>("format");   // saelens, gemmascope2, llamascope, yaml
    QTest::addColumn<QString>("patch");    // JSON object merged into a good config, or YAML text replacing a good line
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("message");  // after "FILE: "
    // the bug of issue 45: SAELens reads any non-empty string as true
    QTest::newRow("saelens bool") << "saelens" << R"({"apply_b_dec_to_input": "yes"})" << "cfg.json"
                                  << R"(field "apply_b_dec_to_input" must be a boolean (true or false), not the string "yes")";
    QTest::newRow("saelens bool as 1") << "saelens" << R"({"rescale_acts_by_decoder_norm": 1})" << "cfg.json"
                                       << R"(field "rescale_acts_by_decoder_norm" must be a boolean (true or false), not the number 1)";
    QTest::newRow("saelens number") << "saelens" << R"({"d_sae": "48"})" << "cfg.json"
                                    << R"(field "d_sae" must be an integer between 1 and 1000000000, not the string "48")";
    QTest::newRow("saelens fraction") << "saelens" << R"({"d_in": 16.5})" << "cfg.json"
                                      << R"(field "d_in" must be an integer between 1 and 1000000000, not the number 16.5)";
    QTest::newRow("saelens string") << "saelens" << R"({"metadata": {"hook_name": 5}})" << "cfg.json"
                                    << R"(field "metadata.hook_name" must be a string, not the number 5)";
    QTest::newRow("saelens architecture") << "saelens" << R"({"architecture": ["jumprelu"]})" << "cfg.json"
                                          << R"(field "architecture" must be a string, not an array)";
    QTest::newRow("saelens unused string") << "saelens" << R"({"dtype": 32})" << "cfg.json"
                                           << R"(field "dtype" must be a string, not the number 32)";
    QTest::newRow("saelens head index") << "saelens" << R"({"metadata": {"hook_name": "blocks.0.hook_resid_pre", "hook_head_index": "none"}})"
                                        << "cfg.json" << R"(field "metadata.hook_head_index" must be an integer between 0 and 1048576, not the string "none")";
    QTest::newRow("saelens normalize") << "saelens" << R"({"normalize_activations": 0})" << "cfg.json"
                                       << R"(field "normalize_activations" must be a string (or, before SAELens 6, a boolean), not the number 0)";
    QTest::newRow("saelens norm factor") << "saelens" << R"({"normalize_activations": "expected_average_only_in", "norm_scaling_factor": "2"})"
                                         << "cfg.json" << R"(field "norm_scaling_factor" must be a number, not the string "2")";
    QTest::newRow("saelens metadata") << "saelens" << R"({"metadata": "blocks.0.hook_resid_pre"})" << "cfg.json"
                                      << R"(field "metadata" must be an object, not the string "blocks.0.hook_resid_pre")";
    QTest::newRow("gemma scope 2 bool") << "gemmascope2" << R"({"affine_connection": "false"})" << "config.json"
                                        << R"(field "affine_connection" must be a boolean (true or false), not the string "false")";
    QTest::newRow("gemma scope 2 number") << "gemmascope2" << R"({"width": "16k"})" << "config.json"
                                          << R"(field "width" must be an integer between 1 and 1000000000, not the string "16k")";
    QTest::newRow("gemma scope 2 l0") << "gemmascope2" << R"({"l0": "big"})" << "config.json"
                                      << R"(field "l0" must be a number, not the string "big")";
    QTest::newRow("gemma scope 2 string") << "gemmascope2" << R"({"hf_hook_point_in": 12})" << "config.json"
                                          << R"(field "hf_hook_point_in" must be a string, not the number 12)";
    QTest::newRow("llama scope string") << "llamascope" << R"({"act_fn": true})" << "hyperparams.json"
                                        << R"(field "act_fn" must be a string, not true)";
    QTest::newRow("llama scope number") << "llamascope" << R"({"jump_relu_threshold": "0.75"})" << "hyperparams.json"
                                        << R"(field "jump_relu_threshold" must be a number, not the string "0.75")";
    QTest::newRow("llama scope nested") << "llamascope" << R"({"dataset_average_activation_norm": {"in": "29.1"}})" << "hyperparams.json"
                                        << R"(field "dataset_average_activation_norm.in" must be a number, not the string "29.1")";
    // YAML as circuit-tracer's yaml.safe_load (PyYAML, YAML 1.1) types it
    QTest::newRow("yaml string") << "yaml" << "feature_input_hook: 12" << "config.yaml"
                                 << R"(field "feature_input_hook" must be a string, not the YAML integer 12)";
    QTest::newRow("yaml string bool") << "yaml" << "model_kind: yes" << "config.yaml"
                                      << R"(field "model_kind" must be a string, not the YAML boolean yes)";
    QTest::newRow("yaml string list") << "yaml" << "activation: [relu]" << "config.yaml"
                                      << R"(field "activation" must be a string, not a YAML sequence)";
    QTest::newRow("yaml number") << "yaml" << "k: \"4\"" << "config.yaml"
                                 << R"(field "k" must be an integer between 0 and 1000000000, not the YAML string 4)";
    QTest::newRow("yaml number float") << "yaml" << "k: 4.0" << "config.yaml"
                                       << R"(field "k" must be an integer between 0 and 1000000000, not the YAML number 4.0)";
    QTest::newRow("yaml entry") << "yaml" << "transcoders:\n  - id: a\n    layer: '0'\n    filepath: layer_0.safetensors" << "config.yaml"
                                << R"(field "transcoders[0].layer" must be an integer between 0 and 4096, not the YAML string 0)";
    QTest::newRow("yaml list") << "yaml" << "transcoders: layer_0.safetensors" << "config.yaml"
                               << R"(field "transcoders" must be a list of paths or of {layer, filepath}, not the YAML string layer_0.safetensors)";
}

void TestSparseCoders::configFieldTypes() {
    QFETCH(QString, format);
    QFETCH(QString, patch);
    QFETCH(QString, field);
    QFETCH(QString, message);
    QTemporaryDir tmp;
    const QDir dir(tmp.path());
    const DictionaryParams p = randomParams(kIn, kSae, kIn, 5);
    auto merged = [&](QJsonObject base) {
        const QJsonObject add = QJsonDocument::fromJson(patch.toUtf8()).object();
        for (auto it = add.begin(); it != add.end(); ++it) base[it.key()] = it.value();
        return base;
    };
    QString path = tmp.path();
    if (format == QLatin1String("saelens")) {
        writeSaeLensFolder(tmp.path(), p, QStringLiteral("standard"),
                           merged({{"architecture", "standard"}, {"d_in", kIn}, {"d_sae", kSae},
                                   {"metadata", QJsonObject{{"hook_name", "blocks.0.hook_resid_pre"}}}}));
    } else if (format == QLatin1String("gemmascope2")) {
        writeFile(dir.filePath(QStringLiteral("params.safetensors")),
                  safetensorsOf({{QStringLiteral("w_enc"), {{kIn, kSae}, valuesOf(p.W_enc)}}, {QStringLiteral("w_dec"), {{kSae, kIn}, valuesOf(p.W_dec)}},
                                 {QStringLiteral("b_enc"), {{kSae}, valuesOf(p.b_enc)}}, {QStringLiteral("b_dec"), {{kIn}, valuesOf(p.b_dec)}},
                                 {QStringLiteral("threshold"), {{kSae}, valuesOf(p.threshold)}}}, QStringLiteral("F32")));
        writeFile(dir.filePath(QStringLiteral("config.json")),
                  QJsonDocument(merged({{"hf_hook_point_in", "model.layers.0.output"}, {"width", kSae}, {"l0", 20}, {"architecture", "jump_relu"},
                                        {"affine_connection", false}, {"type", "sae"}, {"model_name", "google/gemma-3-1b-pt"}})).toJson());
        path = dir.filePath(QStringLiteral("params.safetensors"));
    } else if (format == QLatin1String("llamascope")) {
        dir.mkpath(QStringLiteral("checkpoints"));
        writeFile(dir.filePath(QStringLiteral("checkpoints/final.safetensors")), QByteArray("\0\0\0\0\0\0\0\0", 8));
        writeFile(dir.filePath(QStringLiteral("hyperparams.json")),
                  QJsonDocument(merged({{"d_model", kIn}, {"d_sae", kSae}, {"hook_point_in", "blocks.0.hook_resid_post"}, {"act_fn", "jumprelu"},
                                        {"jump_relu_threshold", 0.5}, {"dataset_average_activation_norm", QJsonObject{{"in", 2.0}, {"out", 2.0}}}}))
                      .toJson());
    } else {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
        QSKIP("built without yaml-cpp");
#endif
        writeFile(dir.filePath(QStringLiteral("layer_0.safetensors")), QByteArray("\0\0\0\0\0\0\0\0", 8));
        QStringList lines{QStringLiteral("model_kind: transcoder_set"), QStringLiteral("feature_input_hook: ln2.hook_normalized"),
                          QStringLiteral("feature_output_hook: hook_mlp_out"), QStringLiteral("activation: relu"),
                          QStringLiteral("transcoders:\n  - layer_0.safetensors")};
        const QString key = patch.section(QLatin1Char(':'), 0, 0);
        for (QString& l : lines)
            if (l.startsWith(key + QLatin1Char(':'))) l = patch;
        if (!lines.contains(patch)) lines.append(patch);
        writeFile(dir.filePath(QStringLiteral("config.yaml")), lines.join(QLatin1Char('\n')).toUtf8());
    }
    const QString label = QDir::toNativeSeparators(dir.filePath(field));
    try {
        openDictionaries(path);
        QFAIL("opened");
    } catch (const InputError& e) {
        QCOMPARE(e.message(), label + QStringLiteral(": ") + message);
    }
}

// Where SAELens itself reads two types, AttnScope follows it: normalize_activations is a bool before SAELens 6
// (handle_pre_6_0_config: true = expected_average_only_in, false = none) and a string after; a fractional k is a
// batchtopk SAE's (SAELens ≥ 6.11), unused once it is saved with its threshold; null is "not given" everywhere.
void TestSparseCoders::saeLensCoercions() {
    const DictionaryParams p = randomParams(kIn, kSae, kIn, 21);
    QTemporaryDir tmp;
    const QJsonObject base{{"d_in", kIn}, {"d_sae", kSae}, {"hook_point", "blocks.0.hook_resid_pre"}, {"hook_point_head_index", QJsonValue()},
                           {"activation_fn_str", "relu"}, {"apply_b_dec_to_input", true}};
    QJsonObject pre6 = base;
    pre6["normalize_activations"] = true;
    pre6["norm_scaling_factor"] = 0.25;
    writeSaeLensFolder(tmp.filePath(QStringLiteral("true")), p, QStringLiteral("standard"), pre6);
    const SparseCoder a = readSaeLensFolder(tmp.filePath(QStringLiteral("true")));
    QCOMPARE(a.inputScale, 0.25);
    pre6["normalize_activations"] = false;
    pre6["norm_scaling_factor"] = QJsonValue();
    writeSaeLensFolder(tmp.filePath(QStringLiteral("false")), p, QStringLiteral("standard"), pre6);
    QCOMPARE(int(readSaeLensFolder(tmp.filePath(QStringLiteral("false"))).normalization), int(InputNormalization::None));
    QJsonObject batch{{"architecture", "batchtopk"}, {"d_in", kIn}, {"d_sae", kSae}, {"k", 12.5}, {"normalize_activations", QJsonValue()},
                      {"metadata", QJsonObject{{"hook_name", "blocks.0.hook_resid_pre"}, {"hook_head_index", QJsonValue()}}}};
    writeSaeLensFolder(tmp.filePath(QStringLiteral("batch")), p, QStringLiteral("jumprelu"), batch);
    QCOMPARE(readSaeLensFolder(tmp.filePath(QStringLiteral("batch"))).activation, FeatureActivation::JumpReLU);
    QJsonObject topk = batch;
    topk["architecture"] = QStringLiteral("topk");
    writeSaeLensFolder(tmp.filePath(QStringLiteral("topk")), p, QStringLiteral("topk"), topk);
    QCOMPARE(expectModelError([&] { readSaeLensFolder(tmp.filePath(QStringLiteral("topk"))); }),
             QDir::toNativeSeparators(tmp.filePath(QStringLiteral("topk/cfg.json"))) +
                 QStringLiteral(": field \"k\" must be an integer between 0 and 1000000000, not the number 12.5"));
}

// Gemma Scope 2's config.json beside params.safetensors: its hooks (Gemma 3 module names) used when the path names
// none, checked against the tensors.
void TestSparseCoders::gemmaScope2Config() {
    QCOMPARE(gemmaScope2Hook(QStringLiteral("model.layers.17.output")), QStringLiteral("blocks.17.hook_resid_post"));
    QCOMPARE(gemmaScope2Hook(QStringLiteral("model.layers.5.pre_feedforward_layernorm.output")), QStringLiteral("blocks.5.ln2.hook_normalized"));
    QCOMPARE(gemmaScope2Hook(QStringLiteral("model.layers.5.post_feedforward_layernorm.output")), QStringLiteral("blocks.5.hook_mlp_out"));
    QCOMPARE(gemmaScope2Hook(QStringLiteral("model.layers.11.self_attn.o_proj.input")), QStringLiteral("blocks.11.attn.hook_z"));
    QCOMPARE(gemmaScope2Hook(QStringLiteral("model.embed_tokens")), QString());
    const DictionaryParams p = randomParams(kIn, kSae, kIn, 23);
    QTemporaryDir tmp;
    const QDir dir(tmp.filePath(QStringLiteral("some/folder")));
    QDir().mkpath(dir.path());
    const QString params = dir.filePath(QStringLiteral("params.safetensors"));
    writeFile(params, safetensorsOf({{QStringLiteral("w_enc"), {{kIn, kSae}, valuesOf(p.W_enc)}}, {QStringLiteral("w_dec"), {{kSae, kIn}, valuesOf(p.W_dec)}},
                                     {QStringLiteral("b_enc"), {{kSae}, valuesOf(p.b_enc)}}, {QStringLiteral("b_dec"), {{kIn}, valuesOf(p.b_dec)}},
                                     {QStringLiteral("threshold"), {{kSae}, valuesOf(p.threshold)}}}, QStringLiteral("F32")));
    QJsonObject cfg{{"hf_hook_point_in", "model.layers.3.pre_feedforward_layernorm.output"},
                    {"hf_hook_point_out", "model.layers.3.post_feedforward_layernorm.output"}, {"width", kSae}, {"l0", 20},
                    {"model_name", "google/gemma-3-1b-pt"}, {"architecture", "jump_relu"}, {"affine_connection", false}, {"type", "transcoder"}};
    const QString cfgPath = dir.filePath(QStringLiteral("config.json"));
    writeFile(cfgPath, QJsonDocument(cfg).toJson());
    const SparseCoder sae = readGemmaScopeFile(params);
    QCOMPARE(sae.hookIn, QStringLiteral("blocks.3.ln2.hook_normalized"));
    QCOMPARE(sae.hookOut, QStringLiteral("blocks.3.hook_mlp_out"));
    QCOMPARE(sae.architecture, QStringLiteral("jumprelu_transcoder"));
    cfg["width"] = kSae * 2;
    writeFile(cfgPath, QJsonDocument(cfg).toJson());
    QCOMPARE(expectModelError([&] { readGemmaScopeFile(params); }),
             QDir::toNativeSeparators(params) + QStringLiteral(": w_enc has 48 features but config.json says width 96"));
    cfg["width"] = kSae;
    cfg["affine_connection"] = true;
    writeFile(cfgPath, QJsonDocument(cfg).toJson());
    QCOMPARE(expectModelError([&] { readGemmaScopeFile(params); }),
             QDir::toNativeSeparators(params) + QStringLiteral(": config.json says affine_connection but there is no affine_skip_connection"));
    cfg["affine_connection"] = false;
    cfg["architecture"] = QStringLiteral("topk");
    writeFile(cfgPath, QJsonDocument(cfg).toJson());
    QCOMPARE(expectModelError([&] { readGemmaScopeFile(params); }),
             QDir::toNativeSeparators(cfgPath) + QStringLiteral(": architecture \"topk\" is not supported (jump_relu)"));
}

// Matching pursuit (SAELens matching_pursuit_sae.py): each stopping rule read from cfg.json and applied as SAELens applies
// it, against the float64 pursuit; and the plausible mistakes fail: no residual update (every step scored against the
// input), b_dec added although apply_b_dec_to_input is false, the support rule ignored.
void TestSparseCoders::matchingPursuitRules() {
    DictionaryParams raw = randomParams(kIn, kSae, kIn, 77);
    raw.W_dec.rowwise().normalize();
    const DictionaryParams p = roundedTo(raw, QStringLiteral("F32"));
    const MatrixD x = randomInput(kPos, kIn, 78);
    QTemporaryDir tmp;
    struct Case { const char* name; QJsonObject extra; double threshold; int maxIter; bool stopDup; };
    const std::vector<Case> cases{
        {"defaults", {}, 1e-2, -1, true},
        {"one iteration", {{"max_iterations", 1}}, 1e-2, 1, true},
        {"residual threshold only", {{"stop_on_duplicate_support", false}, {"residual_threshold", 2.5}}, 2.5, -1, false},
        {"max_iterations only", {{"stop_on_duplicate_support", false}, {"residual_threshold", 0}, {"max_iterations", 40}}, 0, 40, false},
        {"null fields are the defaults", {{"max_iterations", QJsonValue()}, {"residual_threshold", QJsonValue()}}, 1e-2, -1, true}};
    for (const Case& c : cases) {
        QJsonObject cfg{{"architecture", "matching_pursuit"}, {"d_in", kIn}, {"d_sae", kSae}, {"apply_b_dec_to_input", false},
                        {"normalize_activations", "none"}, {"metadata", QJsonObject{{"hook_name", "blocks.0.hook_resid_post"}, {"sae_lens_version", "6.49.0"}}}};
        for (auto it = c.extra.begin(); it != c.extra.end(); ++it) cfg[it.key()] = it.value();
        const QString dir = tmp.filePath(QLatin1String(c.name));
        writeSaeLensFolder(dir, p, QStringLiteral("matching_pursuit"), cfg);
        const SparseCoder sae = readSaeLensFolder(dir);
        QCOMPARE(sae.activation, FeatureActivation::MatchingPursuit);
        QCOMPARE(sae.maxIterations, c.maxIter);
        QCOMPARE(sae.stopOnDuplicateSupport, c.stopDup);
        QVERIFY(sae.b_dec.empty()); // tied SAE without apply_b_dec_to_input: b_dec is neither subtracted nor added
        ReferenceSpec spec;
        spec.activation = ReferenceSpec::MatchingPursuit;
        spec.residualThreshold = c.threshold;
        spec.maxIterations = c.maxIter;
        spec.stopOnDuplicateSupport = c.stopDup;
        int firing = 0;
        QVERIFY2(referenceMismatch(sae, p, spec, x, &firing).isEmpty(), qPrintable(QLatin1String(c.name) + QStringLiteral(": ") + referenceMismatch(sae, p, spec, x)));
        if (c.maxIter == 1) QCOMPARE(firing, kPos);
        else QVERIFY2(firing > kPos, qPrintable(QStringLiteral("%1: %2 firing").arg(QLatin1String(c.name)).arg(firing)));
        // the residual is updated: scoring every step against the input itself reselects the first feature at once
        ReferenceSpec noUpdate = spec;
        noUpdate.residualUpdate = false;
        if (c.maxIter != 1) QVERIFY(!referenceMismatch(sae, p, noUpdate, x).isEmpty());
        if (c.maxIter == 40) { // the support rule matters: with it, rows stop at their first repeated feature
            ReferenceSpec withDup = spec;
            withDup.stopOnDuplicateSupport = true;
            QVERIFY(!referenceMismatch(sae, p, withDup, x).isEmpty());
        }
    }
    // without apply_b_dec_to_input no b_dec is added on decoding (SAELens's MatchingPursuitSAE.decode): no features, x̂ = 0
    const SparseCoder sae = readSaeLensFolder(tmp.filePath(QStringLiteral("defaults")));
    QCOMPARE(p.b_dec.cwiseAbs().maxCoeff() > 0.01, true);
    QCOMPARE(decodeFeatures(sae, Matrix::Zero(kPos, kSae), x.cast<float>()).cwiseAbs().maxCoeff(), 0.0f);
    // W_enc is W_dec transposed: what the feature reads is what it writes
    for (int f : {0, 17, kSae - 1}) QVERIFY(encoderDirection(sae, f) == decoderDirection(sae, f));
    // a field of the wrong type is named
    QJsonObject bad{{"architecture", "matching_pursuit"}, {"d_in", kIn}, {"d_sae", kSae}, {"stop_on_duplicate_support", "yes"},
                    {"metadata", QJsonObject{{"hook_name", "blocks.0.hook_resid_post"}}}};
    writeSaeLensFolder(tmp.filePath(QStringLiteral("bad")), p, QStringLiteral("matching_pursuit"), bad);
    QCOMPARE(expectModelError([&] { readSaeLensFolder(tmp.filePath(QStringLiteral("bad"))); }),
             QDir::toNativeSeparators(tmp.filePath(QStringLiteral("bad/cfg.json"))) +
                 QStringLiteral(": field \"stop_on_duplicate_support\" must be a boolean (true or false), not the string \"yes\""));
}

// Qwen Scope's TopK SAEs (Qwen/SAE-Res-*, SAELens ≥ 6.43, decoderesearch/SAELens#677): SAELens's qwen_scope loader
// transposes the published W_enc [d_sae, d_in] and W_dec [d_in, d_sae] and makes a topk SAE whose k is the repository's
// L0; saved with save_model, the folder is a topk one with the loader's metadata (hf_hook_name, dataset_path null). The
// published layer{n}.sae.pt itself is a pickle, refused by name.
void TestSparseCoders::qwenScopeTopK() {
    const DictionaryParams p = roundedTo(randomParams(kIn, kSae, kIn, 91), QStringLiteral("BF16"));
    QTemporaryDir tmp;
    const QJsonObject cfg{{"architecture", "topk"}, {"d_in", kIn}, {"d_sae", kSae}, {"k", 6}, {"dtype", "bfloat16"}, {"device", "cpu"},
                          {"apply_b_dec_to_input", false}, {"normalize_activations", "none"}, {"reshape_activations", "none"},
                          {"rescale_acts_by_decoder_norm", false},
                          {"metadata", QJsonObject{{"model_name", "Qwen/Qwen3-1.7B-Base"}, {"hook_name", "blocks.3.hook_resid_post"},
                                                   {"hf_hook_name", "model.layers.3"}, {"dataset_path", QJsonValue()},
                                                   {"hook_head_index", QJsonValue()}, {"sae_lens_version", "6.43.0"}}}};
    writeSaeLensFolder(tmp.filePath(QStringLiteral("layer3")), p, QStringLiteral("topk"), cfg, QStringLiteral("BF16"));
    const DictionarySet set = openDictionaries(tmp.filePath(QStringLiteral("layer3")));
    const SparseCoder& sae = set.coders[0];
    QCOMPARE(sae.hookIn, QStringLiteral("blocks.3.hook_resid_post"));
    QCOMPARE(sae.k, 6);
    ReferenceSpec spec;
    spec.activation = ReferenceSpec::TopK;
    spec.k = 6;
    int firing = 0;
    EXPECT_MATCHES(sae, p, spec, randomInput(kPos, kIn, 92), &firing);
    QCOMPARE(firing, kPos * 6);
    // subtracting b_dec (SAELens's default when apply_b_dec_to_input is absent) would change the features
    ReferenceSpec centred = spec;
    centred.applyBDecToInput = true;
    QVERIFY(!referenceMismatch(sae, p, centred, randomInput(kPos, kIn, 92)).isEmpty());
    const QString pickle = tmp.filePath(QStringLiteral("layer3.sae.pt"));
    writeFile(pickle, QByteArray("\x80\x02}q\x00.", 6));
    QVERIFY(expectModelError([&] { openDictionaries(pickle); })
                .startsWith(QDir::toNativeSeparators(pickle) + QStringLiteral(": a Qwen Scope SAE saved as a PyTorch pickle; AttnScope never unpickles")));
}

// SAELens architectures that are refused, each by name with the reason; a BatchTopK or Matryoshka training checkpoint
// (cfg architecture batchtopk / matryoshka_batchtopk, topk_threshold instead of the threshold save_inference_model writes).
void TestSparseCoders::refusedArchitectures() {
    const DictionaryParams p = randomParams(kIn, kSae, kIn, 93);
    QTemporaryDir tmp;
    QJsonObject cfg{{"d_in", kIn}, {"d_sae", kSae}, {"metadata", QJsonObject{{"hook_name", "blocks.0.hook_resid_post"}}}};
    cfg["architecture"] = QStringLiteral("temporal");
    cfg["n_heads"] = 4;
    cfg["normalize_activations"] = QStringLiteral("constant_scalar_rescale");
    writeSaeLensFolder(tmp.filePath(QStringLiteral("temporal")), p, QStringLiteral("standard"), cfg);
    const QString temporal = expectModelError([&] { openDictionaries(tmp.filePath(QStringLiteral("temporal"))); });
    QVERIFY2(temporal.startsWith(QDir::toNativeSeparators(tmp.filePath(QStringLiteral("temporal/cfg.json"))) +
                                 QStringLiteral(": architecture \"temporal\" is not supported: a TemporalSAE")),
             qPrintable(temporal));
    QVERIFY(temporal.contains(QStringLiteral("earlier positions")));
    for (const char* arch : {"batchtopk", "matryoshka_batchtopk"}) {
        QJsonObject training{{"architecture", arch}, {"d_in", kIn}, {"d_sae", kSae}, {"k", 8.5}, {"topk_threshold_lr", 0.01},
                             {"rescale_acts_by_decoder_norm", true}, {"matryoshka_widths", QJsonArray{16, 48}},
                             {"metadata", QJsonObject{{"hook_name", "blocks.0.hook_resid_post"}}}};
        const QString dir = tmp.filePath(QLatin1String(arch));
        writeSaeLensFolder(dir, p, QStringLiteral("standard"), training); // W_enc, b_enc, W_dec, b_dec, no threshold
        QCOMPARE(expectModelError([&] { openDictionaries(dir); }),
                 QDir::toNativeSeparators(QDir(dir).filePath(QStringLiteral("sae_weights.safetensors"))) +
                     QStringLiteral(": a %1 SAE needs its threshold tensor: this is a training checkpoint (topk_threshold, decoder "
                                    "not folded); SAELens's save_inference_model writes the SAE to run, as jumprelu with that threshold")
                         .arg(QLatin1String(arch)));
    }
}

QTEST_GUILESS_MAIN(TestSparseCoders)
#include "tst_sparse_coders.moc"
