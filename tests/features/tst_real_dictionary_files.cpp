// Dictionary files other projects published (../shared/testdata/real-world, PROVENANCE.md there), each by name:
//  - the SAELens cfg.json files written by SAELens 3.4, 6.38, 6.39 and 6.44 parse with their values; the fork's unknown
//    context_sae is refused naming the field; the folders without weights are refused naming the missing file;
//  - the OthelloGPT SAE (real weights, d 128, blocks.0.hook_mlp_out) runs on the bundled demo model, whose d_model is
//    128, against SAELens's standard-SAE formula in float64 on the tensors read from the file's bytes here;
//  - circuit-tracer's first config format (circuit-tracer 0.1 configs/*.yaml, and Neuronpedia's qwen3-4b.yaml): the
//    parse, the hf:// resolution beside the file, the error naming the first missing file, and a copy of one config
//    beside written weights, opened and run against the float64 formula.

#include "model/analysis/features/feature_activations.h"
#include "model/core/errors.h"
#include "model/features/circuit_tracer_set.h"
#include "model/features/dictionary_set.h"
#include "model/features/saelens_folder.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/dictionary_fixtures.h"
#include "support/error_capture.h"
#include "support/safetensors_writer.h"
#include "support/test_paths.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtEndian>
#include <QtTest>
#include <cstring>

using namespace attnscope;
using namespace attnscope::test;

namespace {

QString saelens(const QString& folder) { return testdata(QStringLiteral("real-world/saelens/") + folder); }
QString transcoderConfig(const QString& file) { return testdata(QStringLiteral("real-world/transcoder-configs/") + file); }

/// An F32 tensor of a safetensors file as float64 [rows, cols] (a 1-D tensor is one row), read from the bytes here: the
/// 8-byte little-endian header length, the JSON header, the data offsets. Independent of model/formats.
MatrixD readF32(const QString& path, const QString& name) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    const QByteArray bytes = f.readAll();
    const quint64 n = qFromLittleEndian<quint64>(bytes.constData());
    const QJsonObject header = QJsonDocument::fromJson(bytes.mid(8, int(n))).object();
    const QJsonObject t = header[name].toObject();
    if (t["dtype"].toString() != QLatin1String("F32")) return {};
    const QJsonArray shape = t["shape"].toArray();
    const qint64 rows = shape.size() == 2 ? shape[0].toInteger() : 1, cols = shape.last().toInteger();
    const qint64 begin = t["data_offsets"].toArray()[0].toInteger();
    MatrixD m(rows, cols);
    for (qint64 i = 0; i < rows * cols; ++i) {
        float v;
        std::memcpy(&v, bytes.constData() + 8 + n + begin + 4 * i, 4);
        m.data()[i] = v;
    }
    return m;
}

} // namespace

class TestRealDictionaryFiles : public QObject {
    Q_OBJECT
private slots:
    void saeLensConfigs_data();
    void saeLensConfigs();
    void contextSaeFork();
    void othelloSaeOnTheDemoModel();
    void circuitTracerFirstFormat_data();
    void circuitTracerFirstFormat();
    void circuitTracerFirstFormatWithWeights();
};

void TestRealDictionaryFiles::saeLensConfigs_data() {
    QTest::addColumn<QString>("folder");
    QTest::addColumn<int>("dIn");
    QTest::addColumn<int>("dSae");
    QTest::addColumn<QString>("hook");
    QTest::addColumn<bool>("applyBDec");
    QTest::addColumn<QString>("weights"); // "whole", or the missing-weights message's tail
    const QString missing = QStringLiteral(": missing: the folder has an SAELens cfg.json but not its weights");
    const QString sparsityOnly = missing + QStringLiteral(" (sparsity.safetensors holds only each feature's firing frequency)");
    QTest::newRow("SAELens 3.4.0 othello_sae (pre-6, activation_fn_str)")
        << "thijmennijdam+OthelloGPT-SAELens+othello_sae" << 128 << 128 << "blocks.0.hook_mlp_out" << false << "whole";
    QTest::newRow("SAELens 3.4.0 sparse_autoencoder_thing (pre-6)")
        << "thijmennijdam+OthelloGPT-SAELens+sparse_autoencoder_thing" << 512 << 512 << "blocks.0.hook_mlp_out" << false << "whole";
    QTest::newRow("SAELens 3.4.0 runner config (activation_fn, sae_lens_version at the top)")
        << "thijmennijdam+OthelloGPT-SAELens+cfgs" << 128 << 128 << "blocks.0.hook_mlp_out" << false << missing;
    QTest::newRow("SAELens 6.44.2 pythia-160m (v6, metadata)")
        << "AaravJain62677+SAE_Pythia_MI+output" << 768 << 6144 << "blocks.8.hook_resid_post" << true << missing;
    QTest::newRow("SAELens 6.38.0 Qwen3-4B (v6, metadata.hook_layer)")
        << "Shumatsurontek+steering-research+output" << 2560 << 20480 << "blocks.18.hook_resid_post" << true << missing;
    QTest::newRow("SAELens 6.39.0 mamba-130m (v6, sparsity only)")
        << "rithinnagaraj+ssm-transformer-universality" << 768 << 12288 << "blocks.12.hook_resid_post" << true << sparsityOnly;
}

void TestRealDictionaryFiles::saeLensConfigs() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QFETCH(QString, folder);
    QFETCH(int, dIn);
    QFETCH(int, dSae);
    QFETCH(QString, hook);
    QFETCH(bool, applyBDec);
    QFETCH(QString, weights);
    const QString path = saelens(folder);
    const SparseCoder cfg = readSaeLensConfig(path);
    QCOMPARE(cfg.architecture, QStringLiteral("standard"));
    QCOMPARE(cfg.activation, FeatureActivation::ReLU);
    QCOMPARE(cfg.d_in, dIn);
    QCOMPARE(cfg.d_sae, dSae);
    QCOMPARE(cfg.d_out, dIn);
    QCOMPARE(cfg.hookIn, hook);
    QCOMPARE(cfg.hookOut, hook);
    QCOMPARE(cfg.applyBDecToInput, applyBDec);
    QCOMPARE(int(cfg.normalization), int(InputNormalization::None));
    QCOMPARE(cfg.inputScale, 1.0);
    if (weights == QLatin1String("whole")) {
        const DictionarySet set = openDictionaries(path);
        QCOMPARE(set.kind, QStringLiteral("sae"));
        QCOMPARE(set.coders[0].W_enc.rows, Eigen::Index(dIn));
        QCOMPARE(set.coders[0].W_enc.cols, Eigen::Index(dSae));
        QCOMPARE(set.coders[0].W_dec.rows, Eigen::Index(dSae));
    } else {
        QCOMPARE(modelErrorOf([&] { openDictionaries(path); }),
                 QDir::toNativeSeparators(QDir(path).filePath(QStringLiteral("sae_weights.safetensors"))) + weights);
    }
}

// A fork's own architecture (xXCoolinXx/SAELens, 6.30.1): refused by the field that names it, with what is read instead.
void TestRealDictionaryFiles::contextSaeFork() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QString path = saelens(QStringLiteral("xXCoolinXx+SAELens+output"));
    const QString e = modelErrorOf([&] { readSaeLensConfig(path); });
    QVERIFY2(e.startsWith(QDir::toNativeSeparators(QDir(path).filePath(QStringLiteral("cfg.json"))) +
                          QStringLiteral(": architecture \"context_sae\" is not one AttnScope reads (standard, gated, topk, ")),
             qPrintable(e));
    QVERIFY(e.contains(QStringLiteral("matching_pursuit")));
}

// The one published SAE with weights under 4 MiB (SAELens 3.4.0, an OthelloGPT's blocks.0.hook_mlp_out, d 128) on the
// demo model, which has that shape: features and reconstruction against f = ReLU(x·W_enc + b_enc), x̂ = f·W_dec + b_dec
// (apply_b_dec_to_input false) in float64. W_enc is square here, so reading it transposed would go unnoticed by any
// shape check: that mistake, and subtracting b_dec, are shown to fail.
void TestRealDictionaryFiles::othelloSaeOnTheDemoModel() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QString folder = saelens(QStringLiteral("thijmennijdam+OthelloGPT-SAELens+othello_sae"));
    const std::shared_ptr<const Model> model = loadModel(demoDir());
    const DictionarySet set = openDictionaries(folder);
    requireFitsModel(set, model->config());
    const std::vector<int> tokens{4095, 17, 250, 1031, 2047, 3, 999, 4000, 12, 77, 3100, 511};
    const ActivationCache cache = runForward(*model, tokens);
    const FeatureRun run = runDictionary(*model, cache, set.coders[0]);
    QCOMPARE(run.x.rows(), Eigen::Index(tokens.size()));
    QCOMPARE(run.x.cols(), Eigen::Index(128));

    const QString weights = QDir(folder).filePath(QStringLiteral("sae_weights.safetensors"));
    DictionaryParams p;
    p.W_enc = readF32(weights, QStringLiteral("W_enc"));
    p.W_dec = readF32(weights, QStringLiteral("W_dec"));
    p.b_enc = readF32(weights, QStringLiteral("b_enc"));
    p.b_dec = readF32(weights, QStringLiteral("b_dec"));
    QCOMPARE(p.W_enc.rows(), Eigen::Index(128));
    QCOMPARE(p.b_dec.cols(), Eigen::Index(128));
    const MatrixD x = run.x.cast<double>();
    const auto [f, xhat] = referenceEncodeDecode(p, ReferenceSpec{}, x);
    int firing = 0;
    for (Eigen::Index r = 0; r < f.rows(); ++r)
        for (Eigen::Index c = 0; c < f.cols(); ++c) {
            firing += f(r, c) != 0;
            QVERIFY2((f(r, c) != 0) == (run.f(r, c) != 0.0f) && std::abs(run.f(r, c) - f(r, c)) < 1e-4 * (1 + std::abs(f(r, c))),
                     qPrintable(QStringLiteral("f[%1, %2] = %3, reference %4").arg(r).arg(c).arg(double(run.f(r, c))).arg(f(r, c))));
        }
    QVERIFY2(firing > int(tokens.size()) && firing < int(tokens.size()) * 128, qPrintable(QString::number(firing)));
    const double err = (run.xhat.cast<double>() - xhat).cwiseAbs().maxCoeff();
    QVERIFY2(err < 1e-4 * (1 + xhat.cwiseAbs().maxCoeff()), qPrintable(QString::number(err)));

    // the mistakes move the features by far more than the tolerance above (1e-4 relative to 1 + |f|)
    DictionaryParams transposed = p;
    transposed.W_enc.transposeInPlace();
    ReferenceSpec centred;
    centred.applyBDecToInput = true;
    const double offT = (referenceEncodeDecode(transposed, ReferenceSpec{}, x).first - run.f.cast<double>()).cwiseAbs().maxCoeff();
    const double offC = (referenceEncodeDecode(p, centred, x).first - run.f.cast<double>()).cwiseAbs().maxCoeff();
    qInfo("max |f| %g; transposed W_enc moves f by %g, b_dec subtracted by %g", f.cwiseAbs().maxCoeff(), offT, offC);
    QVERIFY2(offT > 1e-2, qPrintable(QString::number(offT)));
    QVERIFY2(offC > 1e-3, qPrintable(QString::number(offC)));
}

void TestRealDictionaryFiles::circuitTracerFirstFormat_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("modelName");
    QTest::addColumn<int>("layers");
    QTest::addColumn<QString>("input");
    QTest::addColumn<QString>("output");
    QTest::addColumn<QString>("lastId");
    QTest::addColumn<QString>("lastInRepo"); // where the last entry is looked for first, relative to the file's folder
    const QString ct = QStringLiteral("safety-research+circuit-tracer+circuit_tracer+configs/");
    QTest::newRow("gemmascope-l0-0.yaml") << ct + "gemmascope-l0-0.yaml" << "google/gemma-2-2b" << 26 << "ln2.hook_normalized"
                                          << "hook_mlp_out" << "gemma-2-2b-gemmascope-25-l0-41" << "layer_25/width_16k/average_l0_41/params.npz";
    QTest::newRow("gemmascope-l0-1.yaml") << ct + "gemmascope-l0-1.yaml" << "google/gemma-2-2b" << 26 << "ln2.hook_normalized"
                                          << "hook_mlp_out" << "gemma-2-2b-gemmascope-25-l0-68" << "layer_25/width_16k/average_l0_68/params.npz";
    QTest::newRow("gemmascope-l0-2.yaml") << ct + "gemmascope-l0-2.yaml" << "google/gemma-2-2b" << 26 << "ln2.hook_normalized"
                                          << "hook_mlp_out" << "gemma-2-2b-gemmascope-25-l0-110" << "layer_25/width_16k/average_l0_110/params.npz";
    QTest::newRow("llama-relu.yaml") << ct + "llama-relu.yaml" << "meta-llama/Llama-3.2-1B" << 16 << "hook_resid_mid" << "mlp.hook_out"
                                     << "Llama-3.2-131k-relu-15" << "layer_15.safetensors";
    QTest::newRow("neuronpedia qwen3-4b.yaml") << "hijohnnylin+neuronpedia+apps+graph/qwen3-4b.yaml" << "Qwen/Qwen3-4B" << 36
                                               << "hook_resid_mid" << "mlp.hook_out" << "qwen3-4b-35" << "layer_35.safetensors";
}

void TestRealDictionaryFiles::circuitTracerFirstFormat() {
    ATTNSCOPE_REQUIRE_TESTDATA();
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("built without yaml-cpp");
#endif
    QFETCH(QString, file);
    QFETCH(QString, modelName);
    QFETCH(int, layers);
    QFETCH(QString, input);
    QFETCH(QString, output);
    QFETCH(QString, lastId);
    QFETCH(QString, lastInRepo);
    const QString path = transcoderConfig(file);
    const CircuitTracerConfig c = readCircuitTracerConfig(path);
    QCOMPARE(c.kind, QString());
    QCOMPARE(c.modelName, modelName);
    QCOMPARE(c.input, input);
    QCOMPARE(c.output, output);
    QCOMPARE(int(c.transcoders.size()), layers);
    const QDir dir = QFileInfo(path).absoluteDir();
    for (int l = 0; l < layers; ++l) {
        const CircuitTracerEntry& t = c.transcoders[size_t(l)];
        QCOMPARE(t.layer, l);
        QVERIFY(t.entry.startsWith(QLatin1String("hf://")));
        QVERIFY(t.file.isEmpty()); // the weights are not here
        QVERIFY2(!t.lookedFor.isEmpty() && t.lookedFor[0].startsWith(dir.absolutePath() + QLatin1Char('/')), qPrintable(t.lookedFor.join(',')));
    }
    const CircuitTracerEntry& last = c.transcoders.back();
    QCOMPARE(last.id, lastId);
    QCOMPARE(dir.relativeFilePath(last.lookedFor[0]), lastInRepo);
    // the file name alone is looked for only when no other entry has it (Gemma Scope's 26 params.npz must not all be one
    // file beside the config) and it is not the path already looked at: never here
    QCOMPARE(last.lookedFor.size(), 1);
    // opening it names the first missing file and where it was looked for
    const CircuitTracerEntry& first = c.transcoders.front();
    QStringList looked;
    for (const QString& l : first.lookedFor) looked << QDir::toNativeSeparators(dir.relativeFilePath(l));
    QCOMPARE(modelErrorOf([&] { openDictionaries(path); }),
             QDir::toNativeSeparators(path) + QStringLiteral(": transcoder %1 (layer 0) is not in the folder (looked for %2): download the "
                                                             "repository's files next to %3")
                                                  .arg(first.entry, looked.join(QStringLiteral(" or ")), QFileInfo(path).fileName()));
}

// llama-relu.yaml copied beside written weights (small random circuit-tracer layer files at the paths its hf:// entries
// name, the skip transcoders' W_skip included): the set opens through the copied .yaml, its hooks are the config's,
// and each layer encodes and decodes as circuit-tracer's ReLU skip transcoder in float64.
void TestRealDictionaryFiles::circuitTracerFirstFormatWithWeights() {
    ATTNSCOPE_REQUIRE_TESTDATA();
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("built without yaml-cpp");
#endif
    QTemporaryDir tmp;
    const QString yaml = tmp.filePath(QStringLiteral("llama-relu.yaml"));
    QVERIFY(QFile::copy(transcoderConfig(QStringLiteral("safety-research+circuit-tracer+circuit_tracer+configs/llama-relu.yaml")), yaml));
    const int dm = 12, dt = 40;
    std::vector<DictionaryParams> ps;
    for (int l = 0; l < 16; ++l) {
        ps.push_back(roundedTo(randomParams(dm, dt, dm, 300 + l), QStringLiteral("F32")));
        writeFile(tmp.filePath(QStringLiteral("layer_%1.safetensors").arg(l)), circuitTracerLayer(ps.back(), false, true));
    }
    const DictionarySet set = openDictionaries(yaml);
    QCOMPARE(set.kind, QStringLiteral("transcoder_set"));
    QCOMPARE(int(set.coders.size()), 16);
    for (int l : {0, 7, 15}) {
        const SparseCoder& sae = set.coders[size_t(l)];
        QCOMPARE(sae.hookIn, QStringLiteral("blocks.%1.hook_resid_mid").arg(l));
        QCOMPARE(sae.hookOut, QStringLiteral("blocks.%1.mlp.hook_out").arg(l));
        QCOMPARE(QFileInfo(sae.path).fileName(), QStringLiteral("layer_%1.safetensors").arg(l));
        ReferenceSpec spec;
        spec.skip = true;
        spec.transcoder = true;
        const QString why = referenceMismatch(sae, ps[size_t(l)], spec, randomInput(6, dm, 400 + l));
        QVERIFY2(why.isEmpty(), qPrintable(why));
    }
    // the folder that holds it opens it too (the Features tab opens folders), and the same weights
    const DictionarySet byFolder = openDictionaries(tmp.path());
    QCOMPARE(int(byFolder.coders.size()), 16);
    QCOMPARE(byFolder.coders[9].path, set.coders[9].path);
    // a layer's file removed: named, with its layer and where it was looked for
    QVERIFY(QFile::remove(tmp.filePath(QStringLiteral("layer_9.safetensors"))));
    QCOMPARE(modelErrorOf([&] { openDictionaries(yaml); }),
             QDir::toNativeSeparators(yaml) + QStringLiteral(": transcoder hf://mntss/skip-transcoder-Llama-3.2-1B-131k-nobos/"
                                                             "layer_9.safetensors?revision=new-training (layer 9) is not in the folder "
                                                             "(looked for layer_9.safetensors): download the repository's files next to "
                                                             "llama-relu.yaml"));
}

QTEST_GUILESS_MAIN(TestRealDictionaryFiles)
#include "tst_real_dictionary_files.moc"
