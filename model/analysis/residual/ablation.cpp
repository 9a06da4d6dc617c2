#include "model/analysis/residual/ablation.h"

#include "model/analysis/common/input_checks.h"
#include "model/core/errors.h"

#include <QCoreApplication>

namespace attnscope {

namespace {

void checkOptions(const ModelConfig& cfg, int nPositions, const AblationOptions& o) {
    const int p = o.position < 0 ? nPositions - 1 : o.position;
    requirePosition(p, nPositions);
    requireToken(cfg, o.token);
    if (o.counterToken >= 0) requireToken(cfg, o.counterToken);
    for (const HeadAblation& a : o.ablations)
        if (a.layer < 0 || a.layer >= cfg.n_layers || a.head < 0 || a.head >= cfg.n_heads)
            throw InputError(QCoreApplication::translate("analysis", "Cannot ablate L%1H%2: the model has %3 layers of %4 heads.")
                                 .arg(a.layer).arg(a.head).arg(cfg.n_layers).arg(cfg.n_heads));
}

/// Logits at position p: [d_vocab]. The cache must hold that row (forward ran with allLogits, or p is last).
RowVector logitsAt(const ActivationCache& cache, int p) {
    const int row = cache.logitRow(p);
    if (row < 0)
        throw InputError(QCoreApplication::translate("analysis", "The run kept no logits for position %1.").arg(p));
    return cache.logits.row(row);
}

double target(const RowVector& logits, const AblationOptions& o) {
    return double(logits(o.token)) - (o.counterToken >= 0 ? double(logits(o.counterToken)) : 0.0);
}

} // namespace

AblationPreview previewAblation(const Model& model, const ActivationCache& clean, const AblationOptions& options,
                                const Progress& progress) {
    const ModelConfig& cfg = model.config();
    checkOptions(cfg, clean.nPositions(), options);
    AblationPreview out;
    out.position = options.position < 0 ? clean.nPositions() - 1 : options.position;
    ForwardOptions fwd;
    fwd.cacheHeadResults = false;
    // same logits layout as the clean run (GEMV vs GEMM round differently), so an ablation that
    // changes nothing gives bit-identical logits
    fwd.allLogits = clean.logits.rows() > 1 || out.position != clean.nPositions() - 1;
    fwd.ablations = options.ablations;
    const ActivationCache ablated = runForward(model, clean.tokens, fwd, progress);

    out.logitsBefore = logitsAt(clean, out.position);
    out.logitsAfter = logitsAt(ablated, out.position);
    out.before = target(out.logitsBefore, options);
    out.after = target(out.logitsAfter, options);
    out.delta = out.after - out.before;
    out.topBefore = topTokens(out.logitsBefore, options.topK);
    out.topAfter = topTokens(out.logitsAfter, options.topK);
    return out;
}

AblationPreview previewAblation(const Model& model, std::span<const int> tokens, const AblationOptions& options,
                                const Progress& progress) {
    if (!tokens.empty()) checkOptions(model.config(), int(tokens.size()), options); // else runForward explains
    ForwardOptions fwd;
    fwd.cacheHeadResults = false;
    fwd.allLogits = options.position >= 0 && options.position != int(tokens.size()) - 1;
    const ActivationCache clean = runForward(model, tokens, fwd, progress);
    return previewAblation(model, clean, options, progress);
}

} // namespace attnscope
