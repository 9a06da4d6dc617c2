#include "model/analysis/attention/corpus_pass.h"

#include "model/transformer/forward.h"

#include <algorithm>

namespace attnscope {

namespace {

/// The chunk length that fits the context with the window's BOS.
int fittedWindowTokens(const Model& model, int windowTokens) {
    const int bos = model.tokenizer().bosId() ? 1 : 0;
    return std::clamp(windowTokens, 1, std::max(1, model.config().n_ctx - bos));
}

} // namespace

qint64 countCorpusWindows(const Model& model, const CorpusPassOptions& options) {
    CorpusWindows reader(listCorpusFiles(options.corpus), model.tokenizer(), fittedWindowTokens(model, options.windowTokens));
    CorpusWindow w;
    qint64 n = 0;
    while ((options.maxSequences <= 0 || n < options.maxSequences) && reader.next(&w)) ++n;
    return n;
}

CorpusPassSummary runCorpusPass(const Model& model, const CorpusPassOptions& options, qint64 expectedWindows,
                                const Progress& progress,
                                const std::function<void(const CorpusWindow&, const ActivationCache&)>& onWindow) {
    CorpusPassSummary s;
    s.windowTokens = fittedWindowTokens(model, options.windowTokens);
    CorpusWindows reader(listCorpusFiles(options.corpus), model.tokenizer(), s.windowTokens);
    ForwardOptions fo;
    fo.cacheHeadResults = false;
    fo.allLogits = false;
    ActivationCache cache;
    CorpusWindow w;
    while ((options.maxSequences <= 0 || s.windows < options.maxSequences) && reader.next(&w)) {
        progress.step(s.windows, expectedWindows > 0 ? expectedWindows : s.windows + 1, QStringLiteral("window %1").arg(w.index));
        cache = runForward(model, w.ids, fo, {}, std::move(cache));
        onWindow(w, cache);
        ++s.windows;
        s.tokens += qint64(w.ids.size());
    }
    s.badUtf8Bytes = reader.badUtf8Bytes();
    progress.step(s.windows, std::max(s.windows, expectedWindows), QString());
    return s;
}

} // namespace attnscope
