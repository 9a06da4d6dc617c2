#include "model/analysis/attention/head_metrics.h"

#include "model/analysis/attention/head_detectors.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace attnscope {

const std::array<HeadMetric, kHeadMetricCount>& allHeadMetrics() {
    static const std::array<HeadMetric, kHeadMetricCount> all{HeadMetric::SelfAttention, HeadMetric::PrevToken,
                                                             HeadMetric::PatternEntropy, HeadMetric::QkDistance,
                                                             HeadMetric::QkDistanceVariance, HeadMetric::Induction};
    return all;
}

QString headMetricKey(HeadMetric metric) {
    switch (metric) {
    case HeadMetric::SelfAttention: return QStringLiteral("self_attention_score");
    case HeadMetric::PrevToken: return QStringLiteral("prev_token_score");
    case HeadMetric::PatternEntropy: return QStringLiteral("pattern_entropy");
    case HeadMetric::QkDistance: return QStringLiteral("qk_distance");
    case HeadMetric::QkDistanceVariance: return QStringLiteral("qk_distance_variance");
    case HeadMetric::Induction: return QStringLiteral("induction_score");
    }
    return {};
}

QString headMetricDescription(HeadMetric metric) { // compute-head-metrics.py METRIC_DESCRIPTIONS, word for word
    switch (metric) {
    case HeadMetric::SelfAttention:
        return QStringLiteral("Mean attention from each query position to itself (the diagonal). Heads near 1 dump nearly all "
                              "attention onto the current token.");
    case HeadMetric::PrevToken:
        return QStringLiteral("Mean attention to the immediately preceding token (first subdiagonal). High values mark "
                              "previous-token / shift heads.");
    case HeadMetric::PatternEntropy:
        return QStringLiteral("Mean Shannon entropy of each row of the attention matrix. High = dispersed attention; low = "
                              "highly peaked.");
    case HeadMetric::QkDistance:
        return QStringLiteral("Mean |q - k| weighted by attention mass. Captures how far back a head looks on average.");
    case HeadMetric::QkDistanceVariance: return QStringLiteral("Variance of |q - k| weighted by attention mass.");
    case HeadMetric::Induction:
        return QStringLiteral("Average attention from a query token to the position after a prior occurrence of the same "
                              "token. High = induction head.");
    }
    return {};
}

QString headMetricFormula(HeadMetric metric) {
    switch (metric) {
    case HeadMetric::SelfAttention: return QStringLiteral("Σ A[q][q] / Σ S");
    case HeadMetric::PrevToken: return QStringLiteral("Σ A[q][q−1] / Σ (S − 1)");
    case HeadMetric::PatternEntropy: return QStringLiteral("Σ_q −Σ_k A[q][k] ln A[q][k] / Σ S (nats)");
    case HeadMetric::QkDistance: return QStringLiteral("Σ A[q][k]·|q − k| / Σ S");
    case HeadMetric::QkDistanceVariance: return QStringLiteral("Σ A[q][k]·(q − k)² / Σ S − qk_distance²");
    case HeadMetric::Induction:
        return QStringLiteral("Σ A[q][p+1] over earlier p with token[p] = token[q], entries < 0.01 as 0, "
                              "/ #queries with such a p");
    }
    return {};
}

HeadMetricsAccumulator::HeadMetricsAccumulator(int nLayers, int nHeads, double inductionThreshold)
    : nLayers_(nLayers), nHeads_(nHeads), threshold_(inductionThreshold) {
    for (Eigen::MatrixXd& s : sums_) s = Eigen::MatrixXd::Zero(nLayers, nHeads);
}

bool HeadMetricsAccumulator::beginSequence(std::span<const int> tokens) {
    const int S = int(tokens.size());
    active_ = S >= 2;
    if (!active_) return false;
    tokens_.assign(tokens.begin(), tokens.end());
    previous_.assign(size_t(S), {});
    induction_.assign(size_t(S), {});
    for (int q = 0; q < S; ++q) {
        previous_[size_t(q)] = headDetectorTargets(HeadDetector::PreviousToken, tokens_, q);
        induction_[size_t(q)] = headDetectorTargets(HeadDetector::Induction, tokens_, q);
        if (!induction_[size_t(q)].empty()) ++inductionQueries_;
    }
    ++sequences_;
    positions_ += S;
    prevPositions_ += S - 1;
    return true;
}

void HeadMetricsAccumulator::addLayer(int layer, const std::vector<Matrix>& patterns) {
    if (!active_) return;
    const int S = int(tokens_.size());
    const double tiny = double(std::numeric_limits<float>::min()); // torch.finfo(torch.float32).tiny
    for (int h = 0; h < nHeads_ && h < int(patterns.size()); ++h) {
        const Matrix& A = patterns[size_t(h)];
        double self = 0, prev = 0, entropy = 0, dist = 0, dist2 = 0, induction = 0;
        for (int q = 0; q < S; ++q) {
            self += A(q, q);
            for (int k : previous_[size_t(q)]) prev += A(q, k);
            for (int k = 0; k <= q; ++k) { // causal: A[q][k] = 0 for k > q
                const double a = A(q, k), d = q - k;
                entropy -= a * std::log(std::max(a, tiny));
                dist += a * d;
                dist2 += a * d * d;
            }
            for (int k : induction_[size_t(q)])
                if (A(q, k) >= threshold_) induction += A(q, k);
        }
        sums_[size_t(HeadMetric::SelfAttention)](layer, h) += self;
        sums_[size_t(HeadMetric::PrevToken)](layer, h) += prev;
        sums_[size_t(HeadMetric::PatternEntropy)](layer, h) += entropy;
        sums_[size_t(HeadMetric::QkDistance)](layer, h) += dist;
        sums_[size_t(HeadMetric::QkDistanceVariance)](layer, h) += dist2;
        sums_[size_t(HeadMetric::Induction)](layer, h) += induction;
    }
}

HeadMetrics HeadMetricsAccumulator::result() const {
    HeadMetrics m;
    m.sequences = sequences_;
    m.positions = positions_;
    m.prevPositions = prevPositions_;
    m.inductionQueries = inductionQueries_;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    auto mean = [&](HeadMetric metric, qint64 count) {
        return count > 0 ? Eigen::MatrixXd(sums_[size_t(metric)] / double(count)) : Eigen::MatrixXd::Constant(nLayers_, nHeads_, nan);
    };
    for (HeadMetric metric : {HeadMetric::SelfAttention, HeadMetric::PatternEntropy, HeadMetric::QkDistance})
        m.values[size_t(metric)] = mean(metric, positions_);
    m.values[size_t(HeadMetric::PrevToken)] = mean(HeadMetric::PrevToken, prevPositions_);
    m.values[size_t(HeadMetric::Induction)] = mean(HeadMetric::Induction, inductionQueries_);
    const Eigen::MatrixXd& mu = m.values[size_t(HeadMetric::QkDistance)];
    m.values[size_t(HeadMetric::QkDistanceVariance)] = mean(HeadMetric::QkDistanceVariance, positions_) - mu.cwiseProduct(mu);
    return m;
}

HeadMetrics headMetrics(const ActivationCache& cache, const Progress& progress) {
    HeadMetricsAccumulator acc(cache.nLayers(), cache.nHeads());
    if (acc.beginSequence(cache.tokens))
        for (int l = 0; l < cache.nLayers(); ++l) {
            progress.step(l, cache.nLayers(), QStringLiteral("head metrics: layer %1").arg(l));
            acc.addLayer(l, cache.layer(l, progress)->pattern);
        }
    progress.step(cache.nLayers(), cache.nLayers(), QString());
    return acc.result();
}

HeadMetrics headMetricsOverCorpus(const Model& model, const CorpusPassOptions& options, const Progress& progress) {
    HeadMetricsAccumulator acc(model.config().n_layers, model.config().n_heads);
    const qint64 expected = countCorpusWindows(model, options);
    runCorpusPass(model, options, expected, progress, [&](const CorpusWindow& w, const ActivationCache& cache) {
        if (acc.beginSequence(w.ids))
            for (int l = 0; l < cache.nLayers(); ++l) acc.addLayer(l, cache.layer(l)->pattern);
    });
    return acc.result();
}

} // namespace attnscope
