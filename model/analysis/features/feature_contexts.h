#pragma once
// Max-activating contexts of one dictionary over a text corpus: the model runs window by window
// (corpus_windows.h), the dictionary encodes its input hook, and per feature the top N (activation, window,
// position) and a histogram of its activations are kept and committed to a contexts database
// (context_store.h) every few windows, so a cancelled or killed run resumes from the last commit. Shards
// (windows w with w % n == i) run anywhere and merge exactly (mergeFeatureContexts).
// BOS positions are not counted: they are neither contexts nor in the histograms or position counts.

#include "model/analysis/features/context_store.h"
#include "model/core/progress.h"
#include "model/features/sparse_coder.h"
#include "model/tokenizers/tokenizer.h"
#include "model/transformer/model.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <vector>

namespace attnscope {

struct FeatureContextsOptions {
    QString corpus;          ///< a .txt / .jsonl file or a folder of them
    QString db;              ///< the database; empty: defaultContextsDb(sae, shard, shards)
    QString modelLabel;      ///< the model's name or path, recorded (a resumed run must give the same)
    int windowTokens = 128;  ///< tokens per window besides BOS (lowered to n_ctx − 1)
    int top = 20;            ///< contexts kept per feature
    int shard = 0, shards = 1;
    int flushEvery = 64;     ///< windows between commits
};

/// What a pass (or a merge) left in the database.
struct FeatureContextsResult {
    QString db;
    qint64 windowsDone = 0;   ///< windows of this shard processed in total (resumed runs included)
    qint64 windowsTotal = -1; ///< windows in the corpus (−1 until a pass reached its end)
    qint64 windowsThisRun = 0;
    qint64 tokens = 0;        ///< token positions run (BOS included) in this shard's windows
    qint64 positions = 0;     ///< non-BOS positions seen (what the histograms count over)
    qint64 badUtf8Bytes = 0;  ///< bytes of the corpus that are not UTF-8 (read as U+FFFD)
    qint64 badJsonLines = 0;  ///< .jsonl lines without a string "text" (skipped)
    bool complete = false;
    bool resumed = false;
    double seconds = 0;       ///< wall time of this run
};

/// <folder of the dictionary>/attnscope-contexts.sqlite (…-shard-I-of-N.sqlite for a shard).
QString defaultContextsDb(const SparseCoder& sae, int shard, int shards);

/// Runs the pass (see the file comment), creating or resuming options.db. Throws InputError for a missing or
/// empty corpus, a bad shard (0 ≤ shard < shards), a hook the model lacks, a database made for another
/// model / dictionary / corpus / window / top / shard ("… was made with …: delete it or give another
/// --contexts-db"), or a write failure; Cancelled when progress says so (the last commit stays).
/// Progress units: corpus bytes read.
FeatureContextsResult runFeatureContexts(const Model& model, const SparseCoder& sae, const FeatureContextsOptions& options,
                                         const Progress& progress = {});

/// Merges complete shard databases (or merges of them) into `out` (created; must not exist): per feature the
/// top N of the union by ranksBefore, histograms and counts summed. Inputs may come from machines with other
/// paths: they must agree on hook, d_sae, window, top and the corpus files' relative paths and sizes (the model
/// and dictionary paths recorded are the first input's). Throws InputError when an input is missing, incomplete
/// or disagrees, or when out exists.
FeatureContextsResult mergeFeatureContexts(const QStringList& inputs, const QString& out);

/// The result fields as a database records them (for a database opened to show contexts).
FeatureContextsResult contextsSummary(const ContextStore& store);

/// {"conventions", "db", "windows_done", "windows_total", "tokens", "positions", "bad_utf8_bytes", …}.
QJsonObject contextsSummaryToJson(const FeatureContextsResult& r, const std::map<QString, QString>& meta);

/// The feature card: up to n top contexts of `feature` with tokens as text, and its histogram.
/// Throws InputError when feature is outside [0, d_sae).
QJsonObject featureContextsToJson(const ContextStore& store, const Tokenizer& tokenizer, int feature, int n);

} // namespace attnscope
