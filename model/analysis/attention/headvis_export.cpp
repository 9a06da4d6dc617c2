#include "model/analysis/attention/headvis_export.h"

#include "model/core/errors.h"

#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonDocument>
#include <QSaveFile>
#include <algorithm>
#include <cmath>

namespace attnscope {

namespace {

constexpr int kActivationBins = 50; // ACTIVATION_HISTOGRAM_BINS
constexpr int kTopTokens = 50;      // TOP_TOKENS_PER_SIDE
const int kQkEdges[] = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}; // QK_DISTANCE_BIN_EDGES

/// _round_value: 4 decimals, null when not finite.
QJsonValue rounded(double v) {
    if (!std::isfinite(v)) return QJsonValue(QJsonValue::Null);
    return std::nearbyint(v * 1e4) / 1e4;
}

void writeFile(const QString& path, const QJsonDocument& doc, bool indented) {
    QSaveFile f(path);
    QByteArray bytes = doc.toJson(indented ? QJsonDocument::Indented : QJsonDocument::Compact);
    if (!bytes.endsWith('\n')) bytes += '\n';
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) < 0 || !f.commit())
        throw InputError(QStringLiteral("%1: cannot write: %2").arg(path, f.errorString()));
}

/// _compute_top_tokens: tokens ranked by attention mass on one side (ties: first seen first).
QJsonArray topTokens(const std::vector<HeadVisSampler::Sample>& samples, const std::map<qint64, QStringList>& tokens, bool query) {
    std::vector<std::pair<QString, double>> mass; // insertion order, as a Python dict
    std::map<QString, size_t> at;
    for (const HeadVisSampler::Sample& s : samples) {
        const QStringList& t = tokens.at(s.sequenceId);
        const int S = s.attention.seqLen;
        for (size_t i = 0; i < s.attention.indices.size(); ++i) {
            const int pos = query ? s.attention.indices[i] / S : s.attention.indices[i] % S;
            if (pos < 0 || pos >= t.size()) continue;
            auto [it, fresh] = at.try_emplace(t[pos], mass.size());
            if (fresh) mass.emplace_back(t[pos], 0.0);
            mass[it->second].second += s.attention.values[i];
        }
    }
    std::stable_sort(mass.begin(), mass.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    QJsonArray out;
    for (size_t i = 0; i < mass.size() && i < size_t(kTopTokens); ++i)
        out.append(QJsonObject{{"token", mass[i].first}, {"weight", rounded(mass[i].second)}});
    return out;
}

QJsonObject configJson(const Model& model, const HeadVisOptions& o, const HeadVisResult& r, const QString& dir) {
    const ModelConfig& c = model.config();
    QJsonArray heads, layers, metrics;
    QJsonObject descriptions;
    for (int l = 0; l < c.n_layers; ++l) {
        layers.append(l);
        for (int h = 0; h < c.n_heads; ++h) heads.append(QJsonArray{l, h});
    }
    for (HeadMetric m : allHeadMetrics()) {
        metrics.append(headMetricKey(m));
        descriptions.insert(headMetricKey(m), headMetricDescription(m));
    }
    const QString dataset = o.datasetName.isEmpty() ? QFileInfo(o.pass.corpus).fileName() : o.datasetName;
    const qint64 requested = o.pass.maxSequences > 0 ? o.pass.maxSequences : r.sequences;
    const QJsonObject pipeline{
        {"model_name", o.modelName}, {"np_model_id", o.modelName}, {"dataset_name", dataset},
        {"dataset_config_name", QJsonValue::Null}, {"dataset_split", QJsonValue::Null}, {"dataset_text_field", "text"},
        {"corpus", QFileInfo(o.pass.corpus).absoluteFilePath()}, {"n_sequences", requested},
        {"seq_len", r.windowTokens + (model.tokenizer().bosId() ? 1 : 0)}, {"batch_size", 1},
        {"exports_dir", QJsonValue::Null}, {"output_run_dir", QFileInfo(dir).absoluteFilePath()}, {"device", "cpu"},
        {"dtype", "float32"}, {"attn_implementation", "attnscope"}, {"induction_attention_threshold", kInductionAttentionThreshold},
        {"n_intervals", o.sampling.nIntervals}, {"samples_per_interval", o.sampling.samplesPerInterval},
        {"samples_per_top_interval", o.sampling.samplesPerTopInterval}, {"sparse_topk_per_row", o.sparseTopkPerRow},
        {"sparse_threshold", o.sparseThreshold}, {"sample_seed", qint64(o.sampling.seed)}, {"warmup_size", r.warmup},
        {"created_at", QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs)},
        {"actual_sequences_processed", r.sequences}, {"num_hidden_layers", c.n_layers}, {"num_attention_heads", c.n_heads},
        {"attention_layer_indices", layers}, {"generator", "AttnScope"}};
    return QJsonObject{
        {"model_name", o.modelName}, {"np_model_id", o.modelName}, {"dataset_name", dataset}, {"heads", heads},
        {"n_layers", c.n_layers}, {"n_heads", c.n_heads}, {"n_intervals", o.sampling.nIntervals}, {"metrics", metrics},
        {"metric_descriptions", descriptions}, {"head_data_pattern", "L{layer}H{head}.json"}, {"has_umap", false},
        {"umap_heads", QJsonArray()},
        {"custom_plots", QJsonArray{QJsonObject{{"key", "qk_distance_histogram"}, {"label", "Q-K distance"}},
                                    QJsonObject{{"key", "histogram"}, {"label", "Activation distribution"}}}},
        {"custom_tables", QJsonArray{QJsonObject{{"key", "top_query_tokens"}, {"label", "Top query tokens"}},
                                     QJsonObject{{"key", "top_key_tokens"}, {"label", "Top key tokens"}}}},
        {"statistics_display", QJsonObject{{"n_samples", QJsonObject{{"label", "Samples kept"}, {"format", "default"}}},
                                           {"mean_max_activation", QJsonObject{{"label", "Mean max activation"}, {"format", "default"}}}}},
        {"pipeline_config", pipeline}};
}

} // namespace

QJsonArray headVisScatterJson(const HeadMetrics& metrics) {
    QJsonArray rows;
    for (int l = 0; l < metrics.nLayers(); ++l)
        for (int h = 0; h < metrics.nHeads(); ++h) {
            QJsonObject row{{"layer", l}, {"head", h}};
            for (HeadMetric m : allHeadMetrics()) row.insert(headMetricKey(m), rounded(metrics[m](l, h)));
            rows.append(row);
        }
    return rows;
}

QJsonObject headVisHeadJson(const std::vector<HeadVisSampler::Sample>& samples, const std::map<qint64, QStringList>& tokens,
                            const std::vector<qint64>& histogram, double meanMaxActivation) {
    QJsonArray sequences;
    std::vector<double> qk(std::size(kQkEdges) - 1, 0.0);
    for (const HeadVisSampler::Sample& s : samples) {
        QJsonArray indices, values;
        for (size_t i = 0; i < s.attention.indices.size(); ++i) {
            const int flat = s.attention.indices[i], S = s.attention.seqLen;
            indices.append(flat);
            values.append(s.attention.values[i]);
            const int d = std::abs(flat / S - flat % S);
            const int bin = int(std::upper_bound(std::begin(kQkEdges), std::end(kQkEdges), d) - std::begin(kQkEdges)) - 1;
            if (bin >= 0 && bin < int(qk.size())) qk[size_t(bin)] += s.attention.values[i];
        }
        sequences.append(QJsonObject{{"sequence_id", s.sequenceId}, {"interval", s.interval},
                                     {"tokens", QJsonArray::fromStringList(tokens.at(s.sequenceId))},
                                     {"attention_indices", indices}, {"attention_values", values},
                                     {"seq_len", s.attention.seqLen}, {"max_activation", rounded(s.maxActivation)}});
    }
    QJsonArray qkEdges, qkValues, edges, counts;
    for (int e : kQkEdges) qkEdges.append(e);
    for (double v : qk) qkValues.append(rounded(v));
    for (int i = 0; i <= kActivationBins; ++i) edges.append(rounded(double(i) / kActivationBins));
    for (qint64 n : histogram) counts.append(n);
    return QJsonObject{{"sequences", sequences},
                       {"qk_distance_histogram", QJsonObject{{"bin_edges", qkEdges}, {"bin_values", qkValues}}},
                       {"top_query_tokens", topTokens(samples, tokens, true)},
                       {"top_key_tokens", topTokens(samples, tokens, false)},
                       {"histogram", QJsonObject{{"bin_edges", edges}, {"bin_values", counts}}},
                       {"statistics", QJsonObject{{"n_samples", qint64(samples.size())}, {"mean_max_activation", rounded(meanMaxActivation)}}}};
}

HeadVisResult writeHeadVis(const Model& model, const HeadVisOptions& o, const QString& dir, const Progress& progress) {
    QElapsedTimer timer;
    timer.start();
    const HeadVisSampling& sp = o.sampling;
    if (sp.nIntervals < 1 || sp.samplesPerInterval < 1 || sp.samplesPerTopInterval < 1 || o.sparseTopkPerRow < 1)
        throw InputError(QStringLiteral("HeadVis: intervals, samples per interval, samples per top interval and sparse top-k "
                                        "must each be at least 1"));
    if (!(o.sparseThreshold > 0 && o.sparseThreshold < 1))
        throw InputError(QStringLiteral("HeadVis: the sparse threshold must be in (0, 1), got %1").arg(o.sparseThreshold));
    const int L = model.config().n_layers, H = model.config().n_heads;
    HeadVisResult r;
    const qint64 expected = countCorpusWindows(model, o.pass);
    r.warmup = headVisWarmupSize(expected);
    if (!QDir().mkpath(QDir(dir).filePath(QStringLiteral("heads"))) || !QDir().mkpath(QDir(dir).filePath(QStringLiteral("attributions"))))
        throw InputError(QStringLiteral("%1: cannot create the folder").arg(dir));

    HeadMetricsAccumulator metrics(L, H);
    std::vector<HeadVisSampler> samplers;
    for (int l = 0; l < L; ++l)
        for (int h = 0; h < H; ++h) samplers.emplace_back(sp, l, h);
    std::vector<std::vector<double>> warmupValues(size_t(L * H));              // [head][warmup sequence]
    std::vector<std::vector<qint64>> histogram(size_t(L * H), std::vector<qint64>(kActivationBins, 0));
    std::vector<double> maxSum(size_t(L * H), 0.0);
    std::map<qint64, QStringList> tokens;
    qint64 nextId = 0;
    bool sampling = false;
    const CorpusPassSummary pass = runCorpusPass(model, o.pass, expected, progress, [&](const CorpusWindow& w, const ActivationCache& cache) {
        if (!metrics.beginSequence(w.ids)) return; // fewer than 2 tokens
        const qint64 id = nextId++;
        bool kept = false;
        for (int l = 0; l < L; ++l) {
            const std::shared_ptr<const LayerCache> lc = cache.layer(l);
            metrics.addLayer(l, lc->pattern);
            for (int h = 0; h < H; ++h) {
                const size_t i = size_t(l * H + h);
                const Matrix& pattern = lc->pattern[size_t(h)];
                const double m = headVisMaxActivation(pattern);
                ++histogram[i][size_t(std::clamp(int(float(m) * kActivationBins), 0, kActivationBins - 1))];
                maxSum[i] += m;
                if (!sampling) {
                    warmupValues[i].push_back(m);
                } else if (samplers[i].offer(id, m)) {
                    samplers[i].keep(headVisSparse(pattern, o.sparseTopkPerRow, o.sparseThreshold));
                    kept = true;
                }
            }
        }
        if (kept) {
            QStringList t;
            for (int tok : w.ids) t << model.tokenizer().decode(std::span<const int>(&tok, 1));
            tokens[id] = t;
        }
        if (!sampling && nextId >= r.warmup) { // boundaries after the warmup, from its values
            for (size_t i = 0; i < samplers.size(); ++i) samplers[i].setBoundaries(headVisBoundaries(std::move(warmupValues[i]), sp.nIntervals));
            warmupValues.clear();
            sampling = true;
        }
    });
    r.sequences = nextId;
    r.windowTokens = pass.windowTokens;
    r.metrics = metrics.result();
    progress.checkCancelled();

    const QDir out(dir);
    auto write = [&](const QString& name, const QJsonDocument& doc, bool indented = false) {
        writeFile(out.filePath(name), doc, indented);
        r.files << name;
    };
    write(QStringLiteral("scatter_data.json"), QJsonDocument(headVisScatterJson(r.metrics)));
    for (int l = 0; l < L; ++l)
        for (int h = 0; h < H; ++h) {
            const size_t i = size_t(l * H + h);
            const double mean = r.sequences > 0 ? maxSum[i] / double(r.sequences) : std::nan("");
            write(QStringLiteral("heads/L%1H%2.json").arg(l).arg(h),
                  QJsonDocument(headVisHeadJson(samplers[i].samples(), tokens, histogram[i], mean)));
        }
    write(QStringLiteral("server_config.json"), QJsonDocument(QJsonObject()));
    write(QStringLiteral("attributions/manifest.json"), QJsonDocument(QJsonObject()));
    write(QStringLiteral("config.json"), QJsonDocument(configJson(model, o, r, dir)), true);
    r.seconds = timer.elapsed() / 1000.0;
    return r;
}

} // namespace attnscope
