#include "model/analysis/graphs/attribution_graph.h"

#include "model/analysis/graphs/graph_backward.h"
#include "model/core/errors.h"
#include "model/features/sparse_coder.h"
#include "model/transformer/cache_budget.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnscope {


qint64 estimateGraphBytes(const ModelConfig& cfg, int nPositions, qint64 nFeatures, const AttributionOptions& options,
                          double writesPerFeature) {
    const qint64 n = nFeatures + qint64(cfg.n_layers + 1) * nPositions + options.maxLogits;
    const qint64 width = std::max<qint64>(cfg.d_model, qint64(cfg.n_heads) * cfg.d_head);
    const qint64 rows = std::max<qint64>(options.batchRows, nPositions);
    return n * n * 4 + 8 * n + qint64(double(nFeatures) * writesPerFeature) * cfg.d_model * 4 + 4 * rows * width * 4;
}

std::vector<GraphNode> selectLogitNodes(const ReplacementModel& rm, const AttributionOptions& options) {
    const ActivationCache& c = rm.clean;
    const int last = rm.nPositions() - 1;
    const RowVector logits = c.logits.row(c.logitRow(last));
    const double m = logits.maxCoeff();
    std::vector<double> p(static_cast<size_t>(logits.size()));
    double z = 0;
    for (Eigen::Index v = 0; v < logits.size(); ++v) z += (p[size_t(v)] = std::exp(double(logits(v)) - m));
    std::vector<int> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    const int top = std::min<int>(std::max(options.maxLogits, 1), int(order.size()));
    std::partial_sort(order.begin(), order.begin() + top, order.end(),
                      [&](int a, int b) { return p[size_t(a)] > p[size_t(b)] || (p[size_t(a)] == p[size_t(b)] && a < b); });
    // numpy's searchsorted(cumsum, desired, side="left") + 1, at most `top`
    int keep = top;
    double cum = 0;
    for (int i = 0; i < top; ++i) {
        cum += p[size_t(order[size_t(i)])] / z;
        if (cum >= options.desiredLogitProb) {
            keep = i + 1;
            break;
        }
    }
    std::vector<GraphNode> nodes;
    for (int i = 0; i < keep; ++i)
        nodes.push_back({GraphNodeKind::Logit, rm.nLayers(), last, order[size_t(i)], float(p[size_t(order[size_t(i)])] / z)});
    return nodes;
}

AttributionGraph attributeGraph(const ReplacementModel& rm, const AttributionOptions& options, const Progress& progress) {
    const Model& model = *rm.model;
    const ModelConfig& cfg = model.config();
    const int T = rm.nPositions(), nL = cfg.n_layers;
    AttributionGraph gr;
    gr.tokens = rm.tokens;
    gr.nLayers = nL;

    // feature nodes, by (layer, position, feature)
    std::vector<std::vector<int>> firstAt(static_cast<size_t>(nL)); // [layer][pos] index of its first node; [T] the end
    for (int l = 0; l < nL; ++l) {
        const Matrix& f = rm.activations[size_t(l)];
        for (int p = 0; p < T; ++p) {
            firstAt[size_t(l)].push_back(int(gr.nodes.size()));
            for (int j = 0; j < f.cols(); ++j)
                if (f(p, j) != 0.0f) gr.nodes.push_back({GraphNodeKind::Feature, l, p, j, f(p, j)});
        }
        firstAt[size_t(l)].push_back(int(gr.nodes.size()));
    }
    // what they write at each layer's MLP output: a per-layer transcoder's features at their own layer only, a
    // cross-layer transcoder's at every layer from theirs up
    std::vector<LayerSources> sources(static_cast<size_t>(nL));
    for (int l = 0; l < nL; ++l) {
        const Matrix x = hookActivation(rm.clean, rm.inputHook[size_t(l)]);
        const int lowest = rm.crossLayer() ? 0 : l;
        std::vector<SparseCoder> into;
        for (int i = lowest; i <= l; ++i) into.push_back(decoderInto(rm, i, l));
        LayerSources& s = sources[size_t(l)];
        std::vector<RowVector> rows;
        s.begin.assign(size_t(T) + 1, 0);
        for (int p = 0; p < T; ++p) {
            s.begin[size_t(p)] = int(rows.size());
            for (int i = lowest; i <= l; ++i)
                for (int node = firstAt[size_t(i)][size_t(p)]; node < firstAt[size_t(i)][size_t(p) + 1]; ++node) {
                    const GraphNode& fn = gr.nodes[size_t(node)];
                    s.node.push_back(node);
                    rows.push_back(fn.activation * decoderDirectionAt(into[size_t(i - lowest)], fn.id, x.row(p)));
                }
        }
        s.begin[size_t(T)] = int(rows.size());
        s.vectors.resize(Eigen::Index(rows.size()), cfg.d_model);
        for (size_t i = 0; i < rows.size(); ++i) s.vectors.row(Eigen::Index(i)) = rows[i];
    }
    gr.errorOffset = int(gr.nodes.size());
    for (int l = 0; l < nL; ++l)
        for (int p = 0; p < T; ++p) gr.nodes.push_back({GraphNodeKind::Error, l, p, -1, 0.0f});
    gr.tokenOffset = int(gr.nodes.size());
    for (int p = 0; p < T; ++p) gr.nodes.push_back({GraphNodeKind::Token, -1, p, rm.tokens[size_t(p)], 0.0f});
    gr.logitOffset = int(gr.nodes.size());
    for (const GraphNode& n : selectLogitNodes(rm, options)) gr.nodes.push_back(n);
    const int n = gr.nNodes(), nFeat = gr.nFeatures();

    qint64 writes = 0; // the rows of every layer's sources
    for (const LayerSources& s : sources) writes += s.vectors.rows();
    const qint64 need = estimateGraphBytes(cfg, T, nFeat, options, nFeat ? double(writes) / double(nFeat) : 1.0);
    const CacheBudget budget = cacheBudget();
    if (budget.bytes >= 0 && need > budget.bytes)
        throw InputError(QStringLiteral("The attribution graph of %1 positions has %2 nodes (%3 active features) and needs %4, "
                                        "but the memory budget is %5 (%6). Shorten the prompt or use a dictionary with fewer "
                                        "active features.")
                             .arg(T).arg(n).arg(nFeat).arg(formatBytes(need), formatBytes(budget.bytes), budget.origin));
    gr.adjacency = Matrix::Zero(n, n);
    gr.values.assign(size_t(n), 0.0);

    const GraphBackward backward(rm);
    const int perBatch = std::max(1, options.batchRows / std::max(1, T));
    const qint64 total = nFeat + (n - gr.logitOffset);
    qint64 done = 0;
    progress.step(0, total, QStringLiteral("attribution"));
    // a batch: targets of one kind and layer, each with its injected gradient (graph_backward.h)
    RowVector meanU;
    auto runBatch = [&](const std::vector<int>& targets) {
        Matrix G(Eigen::Index(targets.size()) * T, cfg.d_model);
        TargetGradient first;
        for (size_t b = 0; b < targets.size(); ++b) {
            TargetGradient tg = targetGradient(rm, gr, targets[b], &meanU);
            G.middleRows(Eigen::Index(b) * T, T) = tg.G;
            if (b == 0) first = std::move(tg);
        }
        backward.run(targets, std::move(G), first.layer, first.atResidMid, &gr, &sources);
        done += qint64(targets.size());
        progress.step(done, total, QStringLiteral("attribution"));
    };
    for (int i = 0; i < nFeat; ++i) gr.values[size_t(i)] = gr.nodes[size_t(i)].activation; // a firing feature's pre-activation
    for (int first = 0; first < nFeat;) {
        const int layer = gr.nodes[size_t(first)].layer;
        std::vector<int> targets;
        for (int i = first; i < nFeat && gr.nodes[size_t(i)].layer == layer && int(targets.size()) < perBatch; ++i) targets.push_back(i);
        runBatch(targets);
        first += int(targets.size());
    }
    // logits: u_t = W_U[:, t] − mean column; their value u_t·ln_final at the last position
    if (gr.logitOffset < n) {
        meanU = meanUnembedding(model);
        std::vector<int> targets;
        RowVector u(cfg.d_model);
        for (int i = gr.logitOffset; i < n; ++i) {
            targets.push_back(i);
            model.globals().W_U_T.copyRow(gr.nodes[size_t(i)].id, u.data());
            gr.values[size_t(i)] = (u - meanU).cast<double>().dot(rm.clean.ln_final.row(T - 1).cast<double>());
        }
        runBatch(targets);
    }
    progress.step(total, total, QStringLiteral("attribution"));
    return gr;
}

} // namespace attnscope
