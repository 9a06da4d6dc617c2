#include "support/gemma_scope2_files.h"

#include "support/safetensors_writer.h"

#include <QDir>
#include <QJsonDocument>
#include <random>

namespace attnscope::test {

namespace {

using Tensors = std::vector<std::pair<QString, std::pair<std::vector<qint64>, std::vector<double>>>>;

MatrixD normalMatrix(int r, int c, double sd, std::mt19937& g) {
    std::normal_distribution<double> n(0.0, sd);
    MatrixD m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = double(float(n(g))); // float32-exact values
    return m;
}

} // namespace

void writeGemmaScope2Folder(const QString& dir, const DictionaryParams& p, const QJsonObject& config, const QString& dtype) {
    QDir().mkpath(dir);
    const qint64 din = p.W_enc.rows(), dsae = p.W_enc.cols(), dout = p.W_dec.cols();
    Tensors t{{QStringLiteral("w_enc"), {{din, dsae}, valuesOf(p.W_enc)}},
              {QStringLiteral("w_dec"), {{dsae, dout}, valuesOf(p.W_dec)}},
              {QStringLiteral("b_enc"), {{dsae}, valuesOf(p.b_enc)}},
              {QStringLiteral("b_dec"), {{dout}, valuesOf(p.b_dec)}},
              {QStringLiteral("threshold"), {{dsae}, valuesOf(p.threshold)}}};
    if (p.W_skip.size() > 0) t.push_back({QStringLiteral("affine_skip_connection"), {{din, dout}, valuesOf(p.W_skip)}});
    writeFile(QDir(dir).filePath(QStringLiteral("params.safetensors")), safetensorsOf(t, dtype));
    if (!config.isEmpty()) writeFile(QDir(dir).filePath(QStringLiteral("config.json")), QJsonDocument(config).toJson());
}

void writeGemmaScope2MultiLayer(const QString& dir, const std::vector<MultiLayerParams>& layers) {
    QDir().mkpath(dir);
    const qint64 n = qint64(layers.size());
    for (qint64 i = 0; i < n; ++i) {
        const MultiLayerParams& l = layers[size_t(i)];
        const qint64 din = l.own.W_enc.rows(), dsae = l.own.W_enc.cols();
        std::vector<double> dec; // [d_sae, n_layers, d_in] row-major
        for (qint64 f = 0; f < dsae; ++f)
            for (qint64 j = 0; j < n; ++j)
                for (qint64 c = 0; c < din; ++c) dec.push_back(l.W_dec[size_t(j)](f, c));
        Tensors t{{QStringLiteral("w_enc"), {{din, dsae}, valuesOf(l.own.W_enc)}},
                  {QStringLiteral("w_dec"), {{dsae, n, din}, dec}},
                  {QStringLiteral("b_enc"), {{dsae}, valuesOf(l.own.b_enc)}},
                  {QStringLiteral("b_dec"), {{din}, valuesOf(l.own.b_dec)}},
                  {QStringLiteral("threshold"), {{dsae}, valuesOf(l.own.threshold)}}};
        if (l.own.W_skip.size() > 0) t.push_back({QStringLiteral("affine_skip_connection"), {{din, din}, valuesOf(l.own.W_skip)}});
        writeFile(QDir(dir).filePath(QStringLiteral("params_layer_%1.safetensors").arg(i)), safetensorsOf(t));
    }
}

std::vector<MultiLayerParams> randomMultiLayer(int n, int d_in, int d_sae, unsigned seed, bool causal, bool skip) {
    std::mt19937 g(seed);
    std::vector<MultiLayerParams> out;
    for (int i = 0; i < n; ++i) {
        MultiLayerParams l;
        l.own = roundedTo(randomParams(d_in, d_sae, d_in, seed * 31 + unsigned(i)), QStringLiteral("F32"));
        if (!skip) l.own.W_skip.resize(0, 0);
        for (int j = 0; j < n; ++j)
            l.W_dec.push_back(causal && j < i ? MatrixD::Zero(d_sae, d_in) : normalMatrix(d_sae, d_in, 1.0 / std::sqrt(double(d_sae)), g));
        out.push_back(std::move(l));
    }
    return out;
}

std::pair<std::vector<MatrixD>, std::vector<MatrixD>> referenceMultiLayer(const std::vector<MultiLayerParams>& p,
                                                                          const std::vector<MatrixD>& x, bool onlyFromBelow) {
    const size_t n = p.size();
    std::vector<MatrixD> f, xhat;
    for (size_t i = 0; i < n; ++i) {
        MatrixD pre = x[i] * p[i].own.W_enc;
        pre.rowwise() += p[i].own.b_enc;
        for (Eigen::Index r = 0; r < pre.rows(); ++r)
            for (Eigen::Index c = 0; c < pre.cols(); ++c) {
                const double v = pre(r, c);
                pre(r, c) = v > p[i].own.threshold(c) && v > 0 ? v : 0.0; // ReLU(pre)·(pre > θ)
            }
        f.push_back(pre);
    }
    for (size_t j = 0; j < n; ++j) {
        MatrixD out = MatrixD::Zero(x[j].rows(), x[j].cols());
        out.rowwise() += p[j].own.b_dec;
        for (size_t i = 0; i < n; ++i)
            if (!onlyFromBelow || i <= j) out += f[i] * p[i].W_dec[j];
        if (p[j].own.W_skip.size() > 0) out += x[j] * p[j].own.W_skip;
        xhat.push_back(out);
    }
    return {f, xhat};
}

std::vector<DictionaryParams> writeRandomGemmaScope2Transcoders(const QString& siteDir, int nLayers, int d_model, unsigned seed,
                                                                int firing, bool affine) {
    std::vector<DictionaryParams> out;
    for (int l = 0; l < nLayers; ++l) {
        DictionaryParams p = roundedTo(randomParams(d_model, 1024, d_model, seed + unsigned(l) * 7919u), QStringLiteral("F32"));
        p.W_enc *= 2.0; // larger pre-activations: most of the `firing` features fire on a normalised input
        p.b_enc.array() -= 0.1;
        for (int f = firing; f < 1024; ++f) p.threshold(f) = 1e6;
        p = roundedTo(p, QStringLiteral("F32"));
        if (!affine) p.W_skip.resize(0, 0);
        const QString b = QStringLiteral("model.layers.%1.").arg(l);
        const QJsonObject cfg{{"hf_hook_point_in", b + QStringLiteral("pre_feedforward_layernorm.output")},
                              {"hf_hook_point_out", b + QStringLiteral("post_feedforward_layernorm.output")},
                              {"width", 1024}, {"l0", 20}, {"model_name", "google/gemma-3-1b-pt"}, {"architecture", "jump_relu"},
                              {"affine_connection", affine}, {"type", "transcoder"}};
        writeGemmaScope2Folder(QDir(siteDir).filePath(QStringLiteral("layer_%1_width_1k_l0_small%2").arg(l).arg(affine ? "_affine" : "")), p, cfg);
        out.push_back(std::move(p));
    }
    return out;
}

} // namespace attnscope::test
