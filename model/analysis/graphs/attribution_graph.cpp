#include "model/analysis/graphs/attribution_graph.h"

#include "model/analysis/common/token_json.h"
#include "model/analysis/graphs/feature_sources.h"
#include "model/analysis/graphs/graph_backward.h"
#include "model/core/errors.h"
#include "model/core/team_loop.h"
#include "model/features/sparse_coder.h"
#include "model/transformer/cache_budget.h"

#include <algorithm>
#include <functional>
#include <cmath>
#include <numeric>

namespace attnscope {

qint64 GraphMemory::peak() const {
    const qint64 attribution = sources + rows + batch + vectors;
    // packing frees the stored rows' blocks as it writes the square's rows: at most one block's square rows beyond them
    const qint64 packing = square ? std::max(rows + packingOverlap, square) + vectors : 0;
    const qint64 prune = (square ? square : rows) + pruning + vectors;
    return std::max({attribution, packing, prune}) + unembedding;
}

GraphMemory estimateGraphMemory(const ModelConfig& cfg, int nPositions, qint64 nActiveFeatures, qint64 writes, int nLogits,
                                const AttributionOptions& options) {
    const qint64 T = nPositions, other = qint64(cfg.n_layers + 1) * T + nLogits; // errors, tokens, logits
    const qint64 n = nActiveFeatures + other;
    const bool bounded = options.maxFeatureNodes > 0 && options.maxFeatureNodes < nActiveFeatures;
    const qint64 visited = bounded ? options.maxFeatureNodes : nActiveFeatures, m = visited + other;
    const qint64 width = std::max<qint64>(cfg.d_model, qint64(cfg.n_heads) * cfg.d_head);
    const qint64 batchRows = std::max<qint64>(options.batchRows, T);
    GraphMemory g;
    g.sources = writes * cfg.d_model * 4;
    const qint64 blockRows = 256, storedRows = (visited + nLogits + blockRows - 1) / blockRows * blockRows; // StoredRows' blocks
    g.rows = (bounded ? storedRows : n) * n * 4;
    g.square = bounded ? m * m * 4 : 0;
    g.packingOverlap = bounded ? blockRows * m * 4 : 0;
    // G, ∂/∂z, dV, the norm's input and output, a skip's and a post-norm's copies: 7 [batch·pos, width] float32
    g.batch = 7 * batchRows * width * 4 + batchRows / std::max<qint64>(T, 1) * n * 4;
    g.vectors = 8 * n * 8;
    g.unembedding = qint64(cfg.d_vocab) * cfg.d_model * 4;
    // the kept nodes' normalised copy, and one double score per possible edge (rows of features and logits)
    g.pruning = m * m * 4 + (visited + nLogits) * m * 8;
    return g;
}

void requireGraphFits(const ModelConfig& cfg, int nPositions, qint64 nActiveFeatures, qint64 writes, int nLogits,
                      const AttributionOptions& options) {
    const GraphMemory mem = estimateGraphMemory(cfg, nPositions, nActiveFeatures, writes, nLogits, options);
    const qint64 need = mem.peak();
    const qint64 nodes = options.maxFeatureNodes > 0 ? std::min<qint64>(options.maxFeatureNodes, nActiveFeatures) : nActiveFeatures;
    requireWithinBudget(need, [&](const CacheBudget& budget) {
        return QStringLiteral("The attribution graph of %1 positions (%2 active features, %3 of them as nodes) needs %4 (rows %5, "
                              "pruning %6), but the memory budget is %7 (%8). Use fewer feature nodes (--max-feature-nodes) or a "
                              "shorter prompt.")
            .arg(nPositions).arg(nActiveFeatures).arg(nodes)
            .arg(formatBytes(need), formatBytes(mem.rows + mem.square), formatBytes(mem.pruning), formatBytes(budget.bytes), budget.origin);
    });
}

std::vector<GraphNode> selectLogitNodes(const ReplacementModel& rm, const AttributionOptions& options) {
    const ActivationCache& c = rm.clean;
    const int last = rm.nPositions() - 1;
    const RowVector logits = c.logits.row(c.logitRow(last));
    const double m = logits.maxCoeff();
    std::vector<double> p(static_cast<size_t>(logits.size()));
    double z = 0;
    for (Eigen::Index v = 0; v < logits.size(); ++v) z += (p[size_t(v)] = std::exp(double(logits(v)) - m));
    if (!options.targets.empty()) {
        std::vector<GraphNode> nodes;
        const int dVocab = rm.model->config().d_vocab;
        for (size_t i = 0; i < options.targets.size(); ++i) {
            const AttributionTarget& t = options.targets[i];
            if (t.tokenId >= 0) {
                if (t.tokenId >= dVocab) throw InputError(QStringLiteral("target token %1 is outside the vocabulary").arg(t.tokenId));
                nodes.push_back({GraphNodeKind::Logit, rm.nLayers(), last, t.tokenId, float(p[size_t(t.tokenId)] / z)});
            } else {
                if (t.direction.size() != rm.model->config().d_model)
                    throw InputError(QStringLiteral("target \"%1\" has %2 entries but d_model is %3")
                                         .arg(t.label).arg(t.direction.size()).arg(rm.model->config().d_model));
                nodes.push_back({GraphNodeKind::Logit, rm.nLayers(), last, dVocab + int(i), float(t.weight)});
            }
        }
        return nodes;
    }
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

RowVector targetDirection(const ReplacementModel& rm, const AttributionGraph& graph, int node, const RowVector& meanU) {
    const GraphNode& n = graph.nodes[size_t(node)];
    if (n.kind != GraphNodeKind::Logit) throw InputError(QStringLiteral("node %1 is not a logit node").arg(node));
    if (n.id >= graph.dVocab) return graph.options.targets[size_t(n.id - graph.dVocab)].direction;
    RowVector u(rm.model->config().d_model);
    rm.model->globals().W_U_T.copyRow(n.id, u.data());
    return u - meanU;
}

QString targetLabel(const AttributionGraph& graph, const Tokenizer& tokenizer, int node) {
    const GraphNode& n = graph.nodes[size_t(node)];
    if (n.kind == GraphNodeKind::Logit && n.id >= graph.dVocab && graph.dVocab > 0)
        return graph.options.targets[size_t(n.id - graph.dVocab)].label;
    return tokenText(tokenizer, n.id);
}

namespace {

/// The rows a bounded build stores, in visit order: [rows, columns] float32 in blocks of kBlockRows rows, each block
/// allocated (zeroed) when its first row is needed and freed as soon as packing has copied it, so the packed square
/// never sits beside all of them.
class StoredRows {
public:
    static constexpr int kBlockRows = 256;
    explicit StoredRows(Eigen::Index columns) : columns_(columns) {}

    /// A new row for `node`, zeroed; its index is size() − 1.
    float* add(int node) {
        const int r = int(node_.size());
        if (r % kBlockRows == 0) blocks_.push_back(Matrix::Zero(kBlockRows, columns_));
        node_.push_back(node);
        return row(r);
    }
    float* row(int r) { return &blocks_[size_t(r / kBlockRows)](r % kBlockRows, 0); }
    const float* row(int r) const { return &blocks_[size_t(r / kBlockRows)](r % kBlockRows, 0); }
    int node(int r) const { return node_[size_t(r)]; }
    int size() const { return int(node_.size()); }
    Eigen::Index columns() const { return columns_; }
    /// Frees the block holding row r once it is the last row of its block (packing walks the rows in order).
    void release(int r) {
        if (r % kBlockRows == kBlockRows - 1 || r == size() - 1) blocks_[size_t(r / kBlockRows)] = Matrix();
    }

private:
    Eigen::Index columns_;
    std::vector<Matrix> blocks_;
    std::vector<int> node_;
};

/// circuit-tracer's compute_partial_influences (graph.py) in double over the stored rows: N = |R| with each row divided
/// by max(its sum, 1e-8); prod starts as the logit probabilities on the logit columns; then prod ← prod[row's node] · N,
/// summed into the influences, until prod is exactly 0 (the graph is acyclic). [columns]
std::vector<double> partialInfluences(const StoredRows& R, const AttributionGraph& gr) {
    const Eigen::Index n = R.columns();
    const int nRows = R.size();
    std::vector<double> scale(size_t(nRows), 0.0);
    teamFor(nRows, qint64(nRows) * n > (1 << 20), [&](int r) {
        const float* row = R.row(r);
        double sum = 0;
        for (Eigen::Index c = 0; c < n; ++c) sum += std::abs(double(row[c]));
        scale[size_t(r)] = 1.0 / std::max(sum, 1e-8);
    });
    std::vector<double> prod(size_t(n), 0.0), influence(size_t(n), 0.0), weight(size_t(nRows), 0.0);
    for (int i = gr.logitOffset; i < gr.nNodes(); ++i) prod[size_t(i)] = gr.nodes[size_t(i)].activation;
    constexpr Eigen::Index kBlock = 2048;
    const Eigen::Index blocks = (n + kBlock - 1) / kBlock;
    for (int iter = 0; iter < 128; ++iter) {
        std::vector<int> live;
        for (int r = 0; r < nRows; ++r)
            if ((weight[size_t(r)] = prod[size_t(R.node(r))] * scale[size_t(r)]) != 0) live.push_back(r);
        if (live.empty()) return influence;
        bool any = false;
        std::fill(prod.begin(), prod.end(), 0.0);
        teamFor(blocks, qint64(live.size()) * n > (1 << 18), [&](Eigen::Index b) {
            const Eigen::Index c0 = b * kBlock, c1 = std::min(n, c0 + kBlock);
            double* out = prod.data();
            for (int r : live) {
                const double w = weight[size_t(r)];
                const float* row = R.row(r);
                for (Eigen::Index c = c0; c < c1; ++c) out[c] += w * std::abs(double(row[c]));
            }
        });
        for (Eigen::Index c = 0; c < n; ++c)
            if (prod[size_t(c)] != 0) {
                any = true;
                influence[size_t(c)] += prod[size_t(c)];
            }
        if (!any) return influence;
    }
    throw InputError(QStringLiteral("the partial influences did not converge in 128 steps: the graph has a cycle"));
}

/// Phases 3–5: computes rows of the graph's column space, batch by batch; rowOf(node) gives each target's row.
class RowBuilder {
public:
    using RowOf = std::function<float*(int node)>;

    RowBuilder(const ReplacementModel& rm, AttributionGraph& gr, const std::vector<LayerSources>& sources,
               const AttributionOptions& options, const Progress& progress, qint64 totalRows)
        : rm_(rm), gr_(gr), backward_(rm), progress_(progress), totalRows_(totalRows) {
        perBatch_ = std::max(1, options.batchRows / std::max(1, rm.nPositions()));
        out_.sources = &sources;
        out_.errorOffset = gr.errorOffset;
        out_.tokenOffset = gr.tokenOffset;
    }

    /// The edges into nodes[b] (all feature nodes of one layer, or all logits) into rowOf(nodes[b]).
    void run(const std::vector<int>& nodes, const RowOf& rowOf, const QString& phase) {
        const int T = rm_.nPositions();
        Matrix G(Eigen::Index(nodes.size()) * T, rm_.model->config().d_model);
        InjectionPoint at;
        out_.rows.clear();
        for (size_t b = 0; b < nodes.size(); ++b) {
            TargetGradient tg = targetGradient(rm_, gr_, nodes[b], &meanU_);
            G.middleRows(Eigen::Index(b) * T, T) = tg.G;
            at = tg.at;
            out_.rows.push_back(rowOf(nodes[b]));
        }
        backward_.attribute(std::move(G), at, out_);
        done_ += qint64(nodes.size());
        progress_.step(done_, totalRows_, phase);
    }

    /// The logit nodes' rows (and values: u_t·ln_final at the last position), in batches of at most perBatch.
    void logits(const RowOf& rowOf) {
        const Model& model = *rm_.model;
        const int T = rm_.nPositions(), n = gr_.nNodes();
        if (gr_.logitOffset >= n) return;
        meanU_ = meanUnembedding(model);
        for (int i = gr_.logitOffset; i < n; ++i)
            gr_.values[size_t(i)] = targetDirection(rm_, gr_, i, meanU_).cast<double>().dot(rm_.clean.ln_final.row(T - 1).cast<double>());
        for (int first = gr_.logitOffset; first < n; first += perBatch_) {
            std::vector<int> nodes(size_t(std::min(n, first + perBatch_) - first));
            std::iota(nodes.begin(), nodes.end(), first);
            run(nodes, rowOf, QStringLiteral("logit rows"));
        }
    }

    /// Rows of `features` (ascending node indices), in batches of one layer and at most perBatch targets.
    void features(const std::vector<int>& features, const RowOf& rowOf, const QString& phase) {
        for (size_t first = 0; first < features.size();) {
            const int layer = gr_.nodes[size_t(features[first])].layer;
            std::vector<int> nodes;
            for (size_t i = first; i < features.size() && gr_.nodes[size_t(features[i])].layer == layer && int(nodes.size()) < perBatch_; ++i)
                nodes.push_back(features[i]);
            run(nodes, rowOf, phase);
            releaseEncoderPages(*rm_.transcoders, layer); // the targets' encoder rows mapped the pages around them
            first += nodes.size();
        }
    }

private:
    const ReplacementModel& rm_;
    AttributionGraph& gr_;
    const GraphBackward backward_;
    const Progress& progress_;
    const qint64 totalRows_;
    int perBatch_ = 1;
    qint64 done_ = 0;
    EdgeRows out_;
    RowVector meanU_;
};

/// Phase 5 of a bounded build: the visited features' rows and columns, with the errors, tokens and logits, as the
/// graph (nodes renumbered). The square is written row by row as the stored rows' blocks are freed, so the two
/// are never whole side by side; its error and token rows are zero.
void packVisited(AttributionGraph& gr, StoredRows& R, const std::vector<char>& visited) {
    const int nFeat = gr.nFeatures(), n = gr.nNodes();
    std::vector<int> keep; // old node indices, in the new order
    for (int i = 0; i < nFeat; ++i)
        if (visited[size_t(i)]) keep.push_back(i);
    const int nVisited = int(keep.size());
    for (int i = nFeat; i < n; ++i) keep.push_back(i);
    std::vector<int> newIndex(size_t(n), -1);
    for (size_t j = 0; j < keep.size(); ++j) newIndex[size_t(keep[j])] = int(j);
    const Eigen::Index m = Eigen::Index(keep.size());
    Matrix A(m, m); // not zeroed: each row is written once below, so its pages are touched only then
    std::vector<char> written(size_t(m), 0);
    for (int r0 = 0; r0 < R.size(); r0 += StoredRows::kBlockRows) {
        const int r1 = std::min(R.size(), r0 + StoredRows::kBlockRows);
        teamFor(r1 - r0, true, [&](int k) {
            const int r = r0 + k;
            float* dst = &A(newIndex[size_t(R.node(r))], 0);
            const float* src = R.row(r);
            for (Eigen::Index j = 0; j < m; ++j) dst[j] = src[keep[size_t(j)]];
        });
        for (int r = r0; r < r1; ++r) {
            written[size_t(newIndex[size_t(R.node(r))])] = 1;
            R.release(r);
        }
    }
    for (Eigen::Index j = 0; j < m; ++j)
        if (!written[size_t(j)]) A.row(j).setZero(); // error and token rows
    std::vector<GraphNode> nodes;
    std::vector<double> values;
    for (int i : keep) {
        nodes.push_back(gr.nodes[size_t(i)]);
        values.push_back(gr.values[size_t(i)]);
    }
    const int shift = nFeat - nVisited;
    gr.nodes = std::move(nodes);
    gr.values = std::move(values);
    gr.errorOffset -= shift;
    gr.tokenOffset -= shift;
    gr.logitOffset -= shift;
    gr.adjacency = std::move(A);
}

} // namespace

AttributionGraph attributeGraph(const ReplacementModel& rm, const AttributionOptions& options, const Progress& progress) {
    const ModelConfig& cfg = rm.model->config();
    const int T = rm.nPositions(), nL = cfg.n_layers;
    AttributionGraph gr;
    gr.tokens = rm.tokens;
    gr.nLayers = nL;
    gr.options = options;
    gr.dVocab = cfg.d_vocab;

    const std::vector<std::vector<int>> firstAt = addFeatureNodes(rm, gr.nodes);
    gr.errorOffset = int(gr.nodes.size());
    gr.nActiveFeatures = gr.errorOffset;
    for (int l = 0; l < nL; ++l)
        for (int p = 0; p < T; ++p) gr.nodes.push_back({GraphNodeKind::Error, l, p, -1, 0.0f});
    gr.tokenOffset = int(gr.nodes.size());
    for (int p = 0; p < T; ++p) gr.nodes.push_back({GraphNodeKind::Token, -1, p, rm.tokens[size_t(p)], 0.0f});
    gr.logitOffset = int(gr.nodes.size());
    for (const GraphNode& n : selectLogitNodes(rm, options)) gr.nodes.push_back(n);
    const int n = gr.nNodes(), nFeat = gr.nFeatures(), nLogits = n - gr.logitOffset;
    const bool bounded = options.maxFeatureNodes > 0 && options.maxFeatureNodes < nFeat;
    const int nVisit = bounded ? options.maxFeatureNodes : nFeat;

    qint64 writes = 0; // a cross-layer feature writes at every layer from its own up
    for (int l = 0; l < nL; ++l)
        for (int i = rm.crossLayer() ? 0 : l; i <= l; ++i) writes += firstAt[size_t(i)][size_t(T)] - firstAt[size_t(i)][0];
    requireGraphFits(cfg, T, nFeat, writes, nLogits, options);
    progress.step(0, nVisit + nLogits, QStringLiteral("feature sources"));
    std::vector<LayerSources> sources = featureSources(rm, gr.nodes, firstAt);
    gr.values.assign(size_t(n), 0.0);
    for (int i = 0; i < nFeat; ++i) gr.values[size_t(i)] = gr.nodes[size_t(i)].activation; // a firing feature's pre-activation
    RowBuilder builder(rm, gr, sources, options, progress, nVisit + nLogits);

    if (!bounded) { // every row, in node order: the adjacency's rows are the nodes
        gr.adjacency = Matrix::Zero(n, n);
        const RowBuilder::RowOf row = [&](int node) { return &gr.adjacency(node, 0); };
        std::vector<int> all(static_cast<size_t>(nFeat));
        std::iota(all.begin(), all.end(), 0);
        builder.features(all, row, QStringLiteral("feature rows"));
        builder.logits(row);
        progress.step(nVisit + nLogits, nVisit + nLogits, QStringLiteral("feature rows"));
        return gr;
    }

    // bounded: logit rows first, then queues of the features of highest partial influence
    StoredRows R(n);
    std::vector<char> visited(static_cast<size_t>(nFeat), 0);
    const RowBuilder::RowOf row = [&](int node) {
        if (node < nFeat) visited[size_t(node)] = 1;
        return R.add(node);
    };
    builder.logits(row);
    const int queueSize = std::max(1, options.updateInterval) * std::max(1, options.featureBatch);
    int nVisited = 0, queues = 0;
    const int nQueues = (nVisit + queueSize - 1) / queueSize;
    while (nVisited < nVisit) {
        const std::vector<double> influence = partialInfluences(R, gr);
        std::vector<int> rank(static_cast<size_t>(nFeat));
        std::iota(rank.begin(), rank.end(), 0);
        std::stable_sort(rank.begin(), rank.end(), [&](int a, int b) { return influence[size_t(a)] > influence[size_t(b)]; });
        std::vector<int> pending;
        const int want = std::min(queueSize, nVisit - nVisited);
        for (int f : rank) {
            if (int(pending.size()) == want) break;
            if (!visited[size_t(f)]) pending.push_back(f);
        }
        std::sort(pending.begin(), pending.end()); // by layer: a backward batch starts at one layer
        ++queues;
        builder.features(pending, row, QStringLiteral("feature rows, queue %1/%2").arg(queues).arg(nQueues));
        nVisited += int(pending.size());
    }
    sources.clear();
    sources.shrink_to_fit();
    progress.step(nVisit + nLogits, nVisit + nLogits, QStringLiteral("packing the visited features"));
    packVisited(gr, R, visited);
    return gr;
}

} // namespace attnscope
