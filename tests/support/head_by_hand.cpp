#include "support/head_by_hand.h"

#include "model/features/sparse_coder.h"
#include "model/transformer/model.h"

#include <cmath>

namespace attnscope::test {

double headPartByHand(const Model& model, const ActivationCache& clean, const DictionarySet& set, const GraphNode& target,
                      const GraphNode& source, int head) {
    const ModelConfig& cfg = model.config();
    const int L = target.layer;
    const LayerWeights& w = model.layer(L);
    auto sigma = [](const RowVector& x) {
        const Eigen::ArrayXd d = x.cast<double>().array() - x.cast<double>().mean();
        return std::sqrt((d * d).mean() + 1e-5);
    };
    const Eigen::RowVectorXd v = (double(source.activation) * decoderDirection(set.coders[size_t(source.layer)], source.id)).cast<double>();
    Eigen::RowVectorXd x = v.array() - v.mean();
    x = x.cwiseProduct(w.ln1_w.toMatrix().row(0).cast<double>()) / sigma(clean.stored(L).resid_pre.row(source.position));
    const Eigen::RowVectorXd vh = x * w.W_V_head(head, cfg.d_head).toMatrix().cast<double>();
    const double p = clean.stored(L).pattern[size_t(head)](target.position, source.position);
    Eigen::RowVectorXd out = p * vh * w.W_O_head(head, cfg.d_head).toMatrix().cast<double>();
    out = (out.array() - out.mean()).matrix().cwiseProduct(w.ln2_w.toMatrix().row(0).cast<double>()) /
          sigma(clean.stored(L).resid_mid.row(target.position));
    return out.dot(encoderDirection(set.coders[size_t(L)], target.id).cast<double>());
}

std::pair<int, int> strongestOneHopEdge(const AttributionGraph& graph) {
    int bestT = -1, bestS = -1;
    for (int t = 0; t < graph.nFeatures(); ++t)
        for (int s = 0; s < graph.nFeatures(); ++s) {
            const GraphNode &a = graph.nodes[size_t(t)], &b = graph.nodes[size_t(s)];
            if (a.layer == 1 && b.layer == 0 && b.position < a.position &&
                (bestT < 0 || std::abs(graph.adjacency(t, s)) > std::abs(graph.adjacency(bestT, bestS)))) {
                bestT = t;
                bestS = s;
            }
        }
    return {bestT, bestS};
}

} // namespace attnscope::test
