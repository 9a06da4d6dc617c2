#include "model/analysis/features/reconstruction_quality.h"

#include "model/analysis/comparison/next_token_loss.h"
#include "model/transformer/forward.h"

#include <cmath>
#include <limits>

namespace attnscope {

double promptLoss(const Model& model, const std::vector<int>& tokens, std::shared_ptr<const ForwardHooks> hooks) {
    ForwardOptions o;
    o.cacheLayers = false;
    o.cacheHeadResults = false;
    o.hooks = std::move(hooks);
    const ActivationCache c = runForward(model, tokens, o);
    return nextTokenPredictions(c.logits, tokens, 1).loss();
}

ReconstructionQuality reconstructionQuality(const Model& model, const std::vector<int>& tokens, const ActivationCache& cache,
                                            const FeatureRun& run, const Progress& progress) {
    ReconstructionQuality q;
    const Eigen::Index S = run.target.rows();
    const Eigen::RowVectorXd mean = run.target.cast<double>().colwise().mean();
    double num = 0, den = 0;
    for (Eigen::Index p = 0; p < S; ++p) {
        const double e = (run.target.row(p).cast<double>() - run.xhat.row(p).cast<double>()).squaredNorm();
        q.squaredError.push_back(e);
        q.mse.push_back(e / double(run.target.cols()));
        num += e;
        den += (run.target.row(p).cast<double>() - mean).squaredNorm();
    }
    q.fvu = den > 0 ? num / den : std::numeric_limits<double>::quiet_NaN();
    progress.step(0, 3, QStringLiteral("clean loss"));
    q.lossClean = int(cache.logitPositions.size()) == cache.nPositions() ? nextTokenPredictions(cache.logits, tokens, 1).loss()
                                                                        : promptLoss(model, tokens, nullptr);
    if (!hookIsEditable(run.hookOut)) {
        q.lossSpliced = q.lossZeroAblated = std::numeric_limits<double>::quiet_NaN();
        return q;
    }
    progress.step(1, 3, QStringLiteral("reconstruction spliced in"));
    auto spliced = std::make_shared<ForwardHooks>();
    const Matrix xhat = run.xhat;
    addHookEdit(*spliced, run.hookOut, [xhat](Matrix& x) { x = xhat; });
    q.lossSpliced = promptLoss(model, tokens, spliced);
    progress.step(2, 3, QStringLiteral("zero ablation"));
    auto zero = std::make_shared<ForwardHooks>();
    addHookEdit(*zero, run.hookOut, [](Matrix& x) { x.setZero(); });
    q.lossZeroAblated = promptLoss(model, tokens, zero);
    progress.step(3, 3, QStringLiteral("done"));
    return q;
}

} // namespace attnscope
