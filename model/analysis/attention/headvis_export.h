#pragma once
// HeadVis's data tree (Luger, Kamath et al. 2026; Neuronpedia's pipeline, hijohnnylin/neuronpedia
// utils/neuronpedia-utils/neuronpedia_utils/headvis/README.md "Output tree" and compute-head-metrics.py's writers)
// for every head of a model over a corpus, into one run folder:
//   config.json                 the frontend's config and the run's pipeline_config
//   scatter_data.json           [{layer, head, self_attention_score, …, induction_score}] (head_metrics.h)
//   server_config.json          {} (static-only mode)
//   attributions/manifest.json  {}
//   heads/L{layer}H{head}.json  sequences (sparse attention samples per activation interval, headvis_sampling.h),
//                               qk_distance_histogram, top_query_tokens, top_key_tokens, histogram, statistics
// Numbers are rounded to 4 decimals and non-finite ones written as null, as the pipeline's _round_value does.
// Neuronpedia's loaders (load-head-metrics.py, load-head-sequences.py) read such a folder when it sits at
// <exports>/<model id>/headvis/<dataset>/.

#include "model/analysis/attention/corpus_pass.h"
#include "model/analysis/attention/head_metrics.h"
#include "model/analysis/attention/headvis_sampling.h"
#include "model/core/progress.h"
#include "model/transformer/model.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <map>
#include <vector>

namespace attnscope {

struct HeadVisOptions {
    CorpusPassOptions pass;         ///< the corpus, window length and --n-sequences (maxSequences)
    QString modelName;              ///< config.json's model_name and np_model_id
    QString datasetName;            ///< dataset_name; empty: the corpus path's file name
    HeadVisSampling sampling;       ///< intervals, slots, seed
    int sparseTopkPerRow = 8;       ///< --sparse-topk-per-row
    double sparseThreshold = 0.005; ///< --sparse-threshold (> 0)
};

/// What writeHeadVis computed and wrote.
struct HeadVisResult {
    HeadMetrics metrics;
    qint64 sequences = 0;  ///< sequences processed (actual_sequences_processed)
    int warmup = 0;        ///< sequences that set the interval boundaries (not sampled)
    int windowTokens = 0;  ///< chunk length used (corpus_pass.h)
    QStringList files;     ///< written, relative to the folder
    double seconds = 0;
};

/// Runs the model over options.pass (corpus_pass.h) and writes the tree of the file comment into `dir` (created;
/// files there are replaced). Throws InputError for a bad corpus, options out of range or a file that cannot be
/// written ("DIR/heads/L0H0.json: cannot write: …"), Cancelled when progress says so. Progress units: windows.
HeadVisResult writeHeadVis(const Model& model, const HeadVisOptions& options, const QString& dir, const Progress& progress = {});

/// scatter_data.json: one row per head, layer-major, the six metrics rounded to 4 decimals (null when not finite).
QJsonArray headVisScatterJson(const HeadMetrics& metrics);

/// heads/L{l}H{h}.json of one head: its samples (tokens of each from `tokens`, by sequence id), the attention-mass
/// histogram of |q − k| over their entries (bins [0, 1, 2, 4, …, 4096)), the 50 tokens with the most attention
/// mass as query and as key, the max_activation histogram of all sequences (50 bins over [0, 1]) and statistics.
QJsonObject headVisHeadJson(const std::vector<HeadVisSampler::Sample>& samples, const std::map<qint64, QStringList>& tokens,
                            const std::vector<qint64>& histogram, double meanMaxActivation);

} // namespace attnscope
