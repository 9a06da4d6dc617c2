#include "model/transformer/generate.h"

#include "model/analysis/common/top_tokens.h"
#include "model/transformer/forward.h"

namespace attnscope {

std::vector<int> greedyContinuation(const Model& model, std::vector<int> tokens, int n, const Progress& progress) {
    std::vector<int> out;
    ForwardOptions opt;
    opt.cacheLayers = false;
    opt.cacheHeadResults = false;
    opt.allLogits = false;
    ActivationCache cache;
    for (int i = 0; i < n && int(tokens.size()) < model.config().n_ctx; ++i) {
        progress.step(i, n, QStringLiteral("token %1 of %2").arg(i + 1).arg(n));
        cache = runForward(model, tokens, opt, {}, std::move(cache));
        const int next = topTokens(cache.logits.row(0), 1).front().id;
        tokens.push_back(next);
        out.push_back(next);
    }
    progress.step(n, n, QStringLiteral("done"));
    return out;
}

} // namespace attnscope
