#include "model/analysis/graphs/feature_sources.h"

#include "model/features/sparse_coder.h"

namespace attnscope {

std::vector<std::vector<int>> addFeatureNodes(const ReplacementModel& rm, std::vector<GraphNode>& nodes) {
    const int T = rm.nPositions();
    std::vector<std::vector<int>> firstAt(static_cast<size_t>(rm.nLayers()));
    for (int l = 0; l < rm.nLayers(); ++l) {
        const Matrix& f = rm.activations[size_t(l)];
        for (int p = 0; p < T; ++p) {
            firstAt[size_t(l)].push_back(int(nodes.size()));
            for (int j = 0; j < f.cols(); ++j)
                if (f(p, j) != 0.0f) nodes.push_back({GraphNodeKind::Feature, l, p, j, f(p, j)});
        }
        firstAt[size_t(l)].push_back(int(nodes.size()));
    }
    return firstAt;
}

std::vector<LayerSources> featureSources(const ReplacementModel& rm, const std::vector<GraphNode>& nodes,
                                         const std::vector<std::vector<int>>& firstAt) {
    const int T = rm.nPositions(), nL = rm.nLayers();
    std::vector<LayerSources> sources(static_cast<size_t>(nL));
    for (int l = 0; l < nL; ++l) {
        const Matrix x = hookActivation(rm.clean, rm.inputHook[size_t(l)]);
        const int lowest = rm.crossLayer() ? 0 : l;
        std::vector<SparseCoder> into;
        for (int i = lowest; i <= l; ++i) into.push_back(decoderInto(rm, i, l));
        LayerSources& s = sources[size_t(l)];
        qint64 count = 0;
        for (int i = lowest; i <= l; ++i) count += firstAt[size_t(i)][size_t(T)] - firstAt[size_t(i)][0];
        s.vectors.resize(Eigen::Index(count), rm.model->config().d_model);
        s.begin.assign(size_t(T) + 1, 0);
        for (int p = 0; p < T; ++p) {
            s.begin[size_t(p)] = int(s.node.size());
            for (int i = lowest; i <= l; ++i)
                for (int node = firstAt[size_t(i)][size_t(p)]; node < firstAt[size_t(i)][size_t(p) + 1]; ++node) {
                    const GraphNode& fn = nodes[size_t(node)];
                    s.vectors.row(Eigen::Index(s.node.size())) = fn.activation * decoderDirectionAt(into[size_t(i - lowest)], fn.id, x.row(p));
                    s.node.push_back(node);
                }
        }
        s.begin[size_t(T)] = int(s.node.size());
        releaseDecoderPages(*rm.transcoders, l); // the rows are copied: a mapped W_dec's pages go back
    }
    return sources;
}

} // namespace attnscope
