#pragma once
// HeadVis's six head metrics (Luger, Kamath et al. 2026, "Visualizing Attention Heads",
// transformer-circuits.pub/2026/headvis), as Neuronpedia's pipeline computes them
// (hijohnnylin/neuronpedia utils/neuronpedia-utils/neuronpedia_utils/headvis/compute-head-metrics.py,
// compute_attention_metrics_for_batch and run_head_metrics): sums over every sequence of a corpus (or over one
// prompt), each divided by its own count at the end. With A a head's pattern [query_pos, key_pos] on a sequence
// of S tokens (sums over every sequence with S ≥ 2; shorter ones are skipped, as the pipeline's
// valid_sequence_mask does):
//   self_attention_score = Σ_q A[q][q] / Σ S                       (q = 0, where A[0][0] = 1, included)
//   prev_token_score     = Σ_{q≥1} A[q][q−1] / Σ (S − 1)            (the previous-token detector's rows)
//   pattern_entropy      = Σ_q −Σ_k A[q][k]·ln max(A[q][k], FLT_MIN) / Σ S      (nats; row 0 adds 0)
//   qk_distance          = Σ_q Σ_k A[q][k]·|q − k| / Σ S
//   qk_distance_variance = Σ_q Σ_k A[q][k]·(q − k)² / Σ S − qk_distance²
//   induction_score      = Σ_q Σ_{k∈T(q)} A[q][k]·[A[q][k] ≥ 0.01] / #{q : T(q) ≠ ∅}
// where T(q) = {p + 1 : p < q, token[p] = token[q]} (the induction detector's rows, head_detectors.h) and 0.01 is
// the pipeline's --induction-attention-threshold. Each row of A sums to 1, so qk_distance and its variance are the
// mean and variance of |q − k| under the attention mass of all rows pooled. A metric whose count is 0 is NaN.

#include "model/analysis/attention/corpus_pass.h"
#include "model/core/progress.h"
#include "model/core/tensor.h"
#include "model/transformer/activation_cache.h"

#include <Eigen/Core>
#include <QString>
#include <array>
#include <span>
#include <vector>

namespace attnscope {

enum class HeadMetric { SelfAttention, PrevToken, PatternEntropy, QkDistance, QkDistanceVariance, Induction };
inline constexpr int kHeadMetricCount = 6;
/// The pipeline's default --induction-attention-threshold: induction entries below it count 0.
inline constexpr double kInductionAttentionThreshold = 0.01;

/// The six in HeadVis's order (scatter_data.json's columns).
const std::array<HeadMetric, kHeadMetricCount>& allHeadMetrics();
/// HeadVis's key, e.g. "self_attention_score".
QString headMetricKey(HeadMetric metric);
/// The pipeline's description of the metric (config.json's metric_descriptions), for tooltips.
QString headMetricDescription(HeadMetric metric);
/// The formula as text, e.g. "Σ A[q][q] / Σ S".
QString headMetricFormula(HeadMetric metric);

/// The six metrics of every head and the counts they were divided by.
struct HeadMetrics {
    std::array<Eigen::MatrixXd, kHeadMetricCount> values; ///< each [n_layers, n_heads]
    qint64 sequences = 0;        ///< sequences counted (S ≥ 2)
    qint64 positions = 0;        ///< Σ S: self-attention, entropy and the distances divide by it
    qint64 prevPositions = 0;    ///< Σ (S − 1): prev_token_score
    qint64 inductionQueries = 0; ///< queries with T(q) ≠ ∅: induction_score
    const Eigen::MatrixXd& operator[](HeadMetric m) const { return values[size_t(m)]; }
    int nLayers() const { return int(values[0].rows()); }
    int nHeads() const { return int(values[0].cols()); }
};

/// The running sums (float64) of the file comment, sequence by sequence.
class HeadMetricsAccumulator {
public:
    HeadMetricsAccumulator(int nLayers, int nHeads, double inductionThreshold = kInductionAttentionThreshold);
    /// Starts a sequence of `tokens` and counts its positions; false (nothing counted, addLayer then ignored) when
    /// it has fewer than 2 tokens.
    bool beginSequence(std::span<const int> tokens);
    /// Adds the patterns of layer `layer` ([head][query_pos, key_pos], S × S, causal) of the sequence begun last.
    void addLayer(int layer, const std::vector<Matrix>& patterns);
    /// The metrics so far (NaN where a count is 0).
    HeadMetrics result() const;

private:
    int nLayers_, nHeads_;
    double threshold_;
    std::array<Eigen::MatrixXd, kHeadMetricCount> sums_; ///< selfAttention … induction; [QkDistanceVariance]: Σ A·d²
    qint64 sequences_ = 0, positions_ = 0, prevPositions_ = 0, inductionQueries_ = 0;
    bool active_ = false;
    std::vector<int> tokens_;
    std::vector<std::vector<int>> previous_, induction_; ///< the detectors' rows of the current sequence
};

/// The metrics over the prompt of `cache` (one sequence; a residuals-only cache recomputes each layer once).
/// Progress units: layers; throws Cancelled when progress says so.
HeadMetrics headMetrics(const ActivationCache& cache, const Progress& progress = {});

/// The metrics over a corpus (corpus_pass.h); throws as runCorpusPass does. Progress units: windows.
HeadMetrics headMetricsOverCorpus(const Model& model, const CorpusPassOptions& options, const Progress& progress = {});

} // namespace attnscope
