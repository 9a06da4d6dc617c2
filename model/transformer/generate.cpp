#include "model/transformer/generate.h"

#include "model/transformer/forward.h"

namespace attnscope {

namespace {
/// Index of the largest logit, the lowest index among equal ones (as topTokens ranks ties); a NaN never wins
/// over an earlier entry, and a NaN first entry stays (as topTokens(row, 1)).
int argmax(const Eigen::Ref<const RowVector>& logits) {
    int best = 0;
    for (Eigen::Index i = 1; i < logits.size(); ++i)
        if (logits(i) > logits(best)) best = int(i);
    return best;
}
} // namespace

std::vector<int> greedyContinuation(const Model& model, std::vector<int> tokens, int n, const Progress& progress) {
    return greedyContinuation(model, std::move(tokens), n, nullptr, progress);
}

std::vector<int> greedyContinuation(const Model& model, std::vector<int> tokens, int n, std::shared_ptr<const ForwardHooks> hooks,
                                    const Progress& progress) {
    std::vector<int> out;
    ForwardOptions opt;
    opt.hooks = std::move(hooks);
    opt.cacheLayers = false;
    opt.cacheHeadResults = false;
    opt.allLogits = false;
    ActivationCache cache;
    for (int i = 0; i < n && int(tokens.size()) < model.config().n_ctx; ++i) {
        progress.step(i, n, QStringLiteral("token %1 of %2").arg(i + 1).arg(n));
        cache = runForward(model, tokens, opt, {}, std::move(cache));
        const int next = argmax(cache.logits.row(0));
        tokens.push_back(next);
        out.push_back(next);
    }
    progress.step(n, n, QStringLiteral("done"));
    return out;
}

} // namespace attnscope
