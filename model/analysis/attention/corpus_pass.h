#pragma once
// The model run over a text corpus window by window, for statistics of every head's attention (head_metrics.h,
// headvis_export.h). The corpus is read as the feature-contexts pass reads it (model/analysis/features/corpus_windows.h:
// a .txt / .jsonl file or a folder of them; each window is BOS, when the tokenizer has one, and a chunk of at most
// `windowTokens` tokens), in order, up to `maxSequences` windows.

#include "model/analysis/features/corpus_windows.h"
#include "model/core/progress.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <QString>
#include <functional>

namespace attnscope {

struct CorpusPassOptions {
    QString corpus;          ///< a .txt / .jsonl file or a folder of them
    int windowTokens = 128;  ///< tokens per window besides BOS (lowered to fit n_ctx)
    int maxSequences = 2000; ///< windows run at most (HeadVis's --n-sequences default); ≤ 0: the whole corpus
};

/// What a pass read.
struct CorpusPassSummary {
    qint64 windows = 0;      ///< windows run
    qint64 tokens = 0;       ///< token positions run (BOS included)
    qint64 badUtf8Bytes = 0; ///< corpus bytes that are not UTF-8 (read as U+FFFD)
    int windowTokens = 0;    ///< the chunk length used (options.windowTokens lowered to n_ctx − 1 with BOS, n_ctx without)
};

/// The windows a pass over options.corpus would run (tokenizing it up to options.maxSequences windows; no model
/// run). Throws InputError as listCorpusFiles and CorpusWindows do.
qint64 countCorpusWindows(const Model& model, const CorpusPassOptions& options);

/// Runs the model on each window in order (no per-head results, logits of the last position only; the cache of
/// one window is reused for the next) and hands it to `onWindow` with its cache. Progress units: windows of
/// `expectedWindows` (countCorpusWindows; ≤ 0: not known, reported as done of done + 1). Throws InputError for a
/// missing or empty corpus or an unreadable file, Cancelled when progress says so.
CorpusPassSummary runCorpusPass(const Model& model, const CorpusPassOptions& options, qint64 expectedWindows,
                                const Progress& progress,
                                const std::function<void(const CorpusWindow& window, const ActivationCache& cache)>& onWindow);

} // namespace attnscope
