#include "model/analysis/graphs/qk_trace.h"

#include "model/analysis/common/index_checks.h"
#include "model/analysis/common/input_checks.h"
#include "model/analysis/graphs/feature_sources.h"
#include "model/core/errors.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/rotary_embedding.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

namespace attnscope {

namespace {

/// One side of the head (the query's or the key's) at one position: what comes after the projection.
struct HeadSide {
    Matrix W;       ///< [d_model, d_head] W_Q^h or W_K^kv
    RowVector bias; ///< [d_head] b_Q^h or b_K^kv (zeros without)
    Matrix A;       ///< [d_head, d_head]: the q/k norm with its divisor frozen, then RoPE at the position; x·A
};

/// The side's projection, bias and post-projection map at `position` of `layer` in the clean run. `preNorm`: the cached
/// projection before the q/k norm ([pos, heads·d_head]); column block `block` is this head's.
HeadSide headSide(const ModelConfig& cfg, int layer, const Weight& W, const Weight& b, const Weight& normW, const Matrix& preNorm,
                  int block, int position) {
    const int dh = cfg.d_head;
    HeadSide s;
    s.W = W.toMatrix();
    s.bias = b.empty() ? RowVector::Zero(dh) : RowVector(b.toMatrix().row(0));
    s.A = Matrix::Identity(dh, dh);
    if (cfg.qkNorm) { // the divisor of the whole head vector at this position, held (as circuit-tracer freezes q_norm/k_norm)
        const RowVector pre = preNorm.row(position).segment(Eigen::Index(block) * dh, dh);
        const float divisor = std::sqrt(pre.squaredNorm() / float(dh) + float(cfg.norm_eps));
        s.A.array().rowwise() *= normW.rowVector(0).array() / divisor;
    }
    if (cfg.positions == PositionKind::Rotary) {
        const std::vector<int> at(size_t(dh), position);
        applyRotary(cfg, *ropeTable(cfg, layer, position + 1), s.A, at); // the layer's own base and scaling (Gemma 3)
    }
    return s;
}

/// ln_1 with the divisor σ frozen, applied to one residual row: (C(x)/σ) ⊙ w + b.
RowVector frozenLn1(const ModelConfig& cfg, const LayerWeights& w, const RowVector& x, float sigma) {
    RowVector y = x;
    if (cfg.norm == NormKind::LayerNorm) y.array() -= y.mean();
    y = (y / sigma).cwiseProduct(w.ln1_w.rowVector(0));
    if (!w.ln1_b.empty()) y += w.ln1_b.rowVector(0);
    return y;
}

/// Throws InputError for a cell with no score: a layer, head or position out of range, a key after the query or
/// outside the layer's sliding window.
void requireCell(const ModelConfig& cfg, int nPositions, int layer, int head, int query, int key) {
    checkHead(cfg, layer, head);
    requirePosition(query, nPositions);
    requirePosition(key, nPositions);
    if (key > query)
        throw InputError(QStringLiteral("Key position %1 comes after query position %2: the causal mask hides it (no score to trace).")
                             .arg(key).arg(query));
    if (cfg.windowOf(layer) > 0 && query - key >= cfg.windowOf(layer))
        throw InputError(QStringLiteral("Key position %1 is outside layer %2's sliding window of %3 positions before query %4: masked.")
                             .arg(key).arg(layer).arg(cfg.windowOf(layer)).arg(query));
}

/// The head's side as headSide builds it, for (layer, head) at `position` (`c`: the clean run's layer): the query's (W_Q^h) or the key's (W_K^kv).
HeadSide cellSide(const ReplacementModel& rm, const LayerCache& c, int layer, int head, bool query, int position) {
    const ModelConfig& cfg = rm.model->config();
    const LayerWeights& w = rm.model->layer(layer);
    const int dh = cfg.d_head, block = query ? head : cfg.kvHeadOf(head);
    const Weight& b = query ? w.b_Q : w.b_K;
    return headSide(cfg, layer, query ? w.W_Q_head(head, dh) : w.W_K_head(block, dh), b.empty() ? Weight{} : b.colBlock(Eigen::Index(block) * dh, dh),
                    query ? w.q_norm_w : w.k_norm_w, query ? c.q_pre_norm : c.k_pre_norm, block, position);
}

/// What the side reads from a resid_pre row: (ln_1 with σ frozen, projection, bias)·A. [1, d_head]
RowVector projected(const ReplacementModel& rm, int layer, const HeadSide& s, const RowVector& resid, int position) {
    const ModelConfig& cfg = rm.model->config();
    return (frozenLn1(cfg, rm.model->layer(layer), resid, rm.ln1Scale[size_t(layer)](position)) * s.W + s.bias) * s.A;
}

/// The top `top` entries of `value` [columns] by |·| (ties: lower column), as contributors.
std::vector<QkContributor> topContributors(const Eigen::VectorXd& value, int top) {
    std::vector<int> order(size_t(value.size()));
    std::iota(order.begin(), order.end(), 0);
    const size_t n = std::min(order.size(), size_t(std::max(top, 0)));
    std::partial_sort(order.begin(), order.begin() + Eigen::Index(n), order.end(), [&](int a, int b) {
        const double x = std::abs(value(a)), y = std::abs(value(b));
        return x != y ? x > y : a < b;
    });
    std::vector<QkContributor> out;
    for (size_t i = 0; i < n && value(order[i]) != 0.0; ++i) out.push_back({order[i], value(order[i])});
    return out;
}

} // namespace

qint64 qkTraceBytes(const ModelConfig& cfg, int nPositions, qint64 writes, qint64 columns) {
    const qint64 rows = 2LL * cfg.d_head;
    const qint64 batchRows = std::min<qint64>(rows, std::max<qint64>(1, 8192 / std::max(nPositions, 1))) * nPositions;
    return writes * cfg.d_model * 4 + rows * columns * 4 * 2 // the c vectors, and their copy in double
           + 5 * batchRows * cfg.d_model * 4;                // a batch's gradients and the backward's temporaries
}

QkTracer::QkTracer(const ReplacementModel& rm) : rm_(rm) {
    const ModelConfig& cfg = rm.model->config();
    const int T = rm.nPositions();
    const std::vector<std::vector<int>> firstAt = addFeatureNodes(rm, columns_);
    errorOffset_ = int(columns_.size());
    qint64 writes = 0;
    for (int l = 0; l < rm.nLayers(); ++l)
        for (int i = rm.crossLayer() ? 0 : l; i <= l; ++i) writes += firstAt[size_t(i)][size_t(T)] - firstAt[size_t(i)][0];
    const qint64 need = qkTraceBytes(cfg, T, writes, qint64(errorOffset_) + qint64(rm.nLayers() + 1) * T);
    requireWithinBudget(need, [&](const CacheBudget& budget) {
        return QStringLiteral("Tracing attention scores over %1 active features at %2 positions needs %3, but the memory budget is %4 (%5). "
                              "Shorten the prompt.").arg(errorOffset_).arg(T).arg(formatBytes(need), formatBytes(budget.bytes), budget.origin);
    });
    for (int l = 0; l < rm.nLayers(); ++l)
        for (int p = 0; p < T; ++p) columns_.push_back({GraphNodeKind::Error, l, p, -1, 0.0f});
    tokenOffset_ = int(columns_.size());
    for (int p = 0; p < T; ++p) columns_.push_back({GraphNodeKind::Token, -1, p, rm.tokens[size_t(p)], 0.0f});
    sources_ = featureSources(rm, columns_, firstAt);
}

QkSides QkTracer::sides(int layer, int head, int query, int key, const Progress& progress) const {
    const ModelConfig& cfg = rm_.model->config();
    requireCell(cfg, rm_.nPositions(), layer, head, query, key);
    const int T = rm_.nPositions(), dh = cfg.d_head;
    const LayerWeights& w = rm_.model->layer(layer);
    const std::shared_ptr<const LayerCache> c = rm_.clean.layer(layer);
    const HeadSide qs = cellSide(rm_, *c, layer, head, true, query), ks = cellSide(rm_, *c, layer, head, false, key);

    QkSides out;
    out.layer = layer;
    out.head = head;
    out.query = query;
    out.key = key;
    out.scale = cfg.attnScale(layer);
    const Matrix& qAll = c->q_rot.size() ? c->q_rot : c->q; // learned positions: no rotation
    const Matrix& kAll = c->k_rot.size() ? c->k_rot : c->k; // expanded per query head
    out.q = qAll.row(query).segment(Eigen::Index(head) * dh, dh).transpose().cast<double>();
    out.k = kAll.row(key).segment(Eigen::Index(head) * dh, dh).transpose().cast<double>();

    // the constants: the frozen model with no source, through ln_1 (σ of the clean run), the projection and the map
    const Matrix none = replacementResidPre(rm_, {}, {}, Matrix::Zero(T, cfg.d_model), layer);
    const Vector& sigma = rm_.ln1Scale[size_t(layer)];
    out.q0 = projected(rm_, layer, qs, none.row(query), query).transpose().cast<double>();
    out.k0 = projected(rm_, layer, ks, none.row(key), key).transpose().cast<double>();

    // the c vectors: row i of (W·A)ᵀ is ∂(rotated q)_i / ∂ln_1's output; behind the frozen ln_1 at the side's position
    // it is the gradient at resid_pre of `layer`, carried down and contracted with every column
    const Matrix dq = (qs.W * qs.A).transpose(), dk = (ks.W * ks.A).transpose(); // [d_head, d_model]
    const RowVector gain = w.ln1_w.rowVector(0);
    const int nColumns = tokenOffset_ + T;
    out.cq = Matrix::Zero(dh, nColumns);
    out.ck = Matrix::Zero(dh, nColumns);
    const GraphBackward backward(rm_);
    EdgeRows rows;
    rows.sources = &sources_;
    rows.errorOffset = errorOffset_;
    rows.tokenOffset = tokenOffset_;
    const int perBatch = std::max(1, 8192 / T); // targets per backward batch: ≤ 8192 residual rows
    for (int first = 0; first < 2 * dh; first += perBatch) {
        progress.checkCancelled();
        const int n = std::min(2 * dh, first + perBatch) - first;
        Matrix G = Matrix::Zero(Eigen::Index(n) * T, cfg.d_model);
        rows.rows.clear();
        for (int b = 0; b < n; ++b) {
            const int i = first + b;
            const bool isQ = i < dh;
            const int p = isQ ? query : key;
            Matrix g = Matrix::Zero(1, cfg.d_model);
            addFrozenNormBackward(cfg, Matrix(isQ ? dq.row(i) : dk.row(i - dh)), gain, Vector::Constant(1, sigma(p)), 1, g);
            G.row(Eigen::Index(b) * T + p) = g.row(0);
            rows.rows.push_back(isQ ? &out.cq(i, 0) : &out.ck(i - dh, 0));
        }
        backward.attribute(std::move(G), {layer - 1, BackwardHop::Mlp}, rows);
    }
    return out;
}

std::vector<QkPair> topQkPairs(const Matrix& cq, const Matrix& ck, double scale, int top) {
    struct Side {
        std::vector<int> column;
        Eigen::MatrixXd c; // [d_head, nonzero columns], by decreasing norm
        std::vector<double> norm;
    };
    auto nonzero = [](const Matrix& m) {
        Side s;
        std::vector<double> norms;
        for (Eigen::Index j = 0; j < m.cols(); ++j) {
            const double n = m.col(j).cast<double>().norm();
            if (n > 0) {
                s.column.push_back(int(j));
                norms.push_back(n);
            }
        }
        std::vector<size_t> order(s.column.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return norms[a] > norms[b]; });
        std::vector<int> column;
        s.c.resize(m.rows(), Eigen::Index(order.size()));
        for (size_t i = 0; i < order.size(); ++i) {
            column.push_back(s.column[order[i]]);
            s.norm.push_back(norms[order[i]]);
            s.c.col(Eigen::Index(i)) = m.col(s.column[order[i]]).cast<double>();
        }
        s.column = std::move(column);
        return s;
    };
    if (top <= 0) return {};
    const Side q = nonzero(cq), k = nonzero(ck);
    // a min-heap on (|attribution|, then the later pair first out) of the best `top` so far
    auto worse = [](const QkPair& a, const QkPair& b) {
        const double x = std::abs(a.attribution), y = std::abs(b.attribution);
        if (x != y) return x < y;
        return a.q != b.q ? a.q > b.q : a.k > b.k;
    };
    auto heapCmp = [&](const QkPair& a, const QkPair& b) { return worse(b, a); }; // top of the heap: the worst kept
    std::priority_queue<QkPair, std::vector<QkPair>, decltype(heapCmp)> best(heapCmp);
    const double s = std::abs(scale);
    for (size_t i = 0; i < q.column.size(); ++i) {
        if (int(best.size()) == top && !k.norm.empty() && s * q.norm[i] * k.norm[0] < std::abs(best.top().attribution)) break;
        for (size_t j = 0; j < k.column.size(); ++j) {
            if (int(best.size()) == top && s * q.norm[i] * k.norm[j] < std::abs(best.top().attribution)) break;
            const QkPair p{q.column[i], k.column[j], scale * q.c.col(Eigen::Index(i)).dot(k.c.col(Eigen::Index(j)))};
            if (int(best.size()) < top) best.push(p);
            else if (worse(best.top(), p)) {
                best.pop();
                best.push(p);
            }
        }
    }
    std::vector<QkPair> out;
    while (!best.empty()) {
        out.push_back(best.top());
        best.pop();
    }
    std::reverse(out.begin(), out.end());
    return out;
}

QkTrace QkTracer::trace(int layer, int head, int query, int key, int top, const Progress& progress) const {
    const QkSides s = sides(layer, head, query, key, progress);
    QkTrace t;
    t.layer = layer;
    t.head = head;
    t.query = query;
    t.key = key;
    t.score = s.scale * s.q.dot(s.k);
    t.pattern = rm_.clean.layer(layer)->pattern[size_t(head)](query, key);
    const Eigen::MatrixXd cq = s.cq.cast<double>(), ck = s.ck.cast<double>();
    const Eigen::VectorXd sumQ = cq.rowwise().sum(), sumK = ck.rowwise().sum();
    t.pairsTotal = s.scale * sumQ.dot(sumK);
    t.constant = s.scale * s.q0.dot(s.k0);
    t.qConstant = s.scale * s.q0.dot(sumK);
    t.kConstant = s.scale * sumQ.dot(s.k0);
    t.checkError = std::abs(t.pairsTotal + t.qConstant + t.kConstant + t.constant - t.score);
    t.qMarginals = topContributors(s.scale * (cq.transpose() * s.k), top);
    t.kMarginals = topContributors(s.scale * (ck.transpose() * s.q), top);
    t.pairs = topQkPairs(s.cq, s.ck, s.scale, top);
    return t;
}

QkTracer::Ablation QkTracer::ablate(int layer, int head, int query, int key, const std::vector<int>& columns) const {
    const ModelConfig& cfg = rm_.model->config();
    requireCell(cfg, rm_.nPositions(), layer, head, query, key);
    std::vector<Matrix> acts, errs;
    Matrix embed = rm_.clean.embed;
    for (int c : columns) {
        if (c < 0 || c >= int(columns_.size()))
            throw InputError(QStringLiteral("QK trace column %1: the columns are 0 … %2").arg(c).arg(columns_.size() - 1));
        const GraphNode& n = columns_[size_t(c)];
        if (n.kind == GraphNodeKind::Feature) {
            if (acts.empty()) acts = rm_.activations;
            acts[size_t(n.layer)](n.position, n.id) = 0;
        } else if (n.kind == GraphNodeKind::Error) {
            if (errs.empty()) errs = rm_.errors;
            errs[size_t(n.layer)].row(n.position).setZero();
        } else {
            embed.row(n.position).setZero();
        }
    }
    // the query's row of scores and pattern, by hand from a resid_pre
    const int window = cfg.windowOf(layer), first = window > 0 ? std::max(0, query - window + 1) : 0;
    const double cap = cfg.attn_logit_softcap, scale = cfg.attnScale(layer);
    const std::shared_ptr<const LayerCache> c = rm_.clean.layer(layer);
    const HeadSide qs = cellSide(rm_, *c, layer, head, true, query);
    std::vector<HeadSide> ks;
    for (int p = first; p <= query; ++p) ks.push_back(cellSide(rm_, *c, layer, head, false, p));
    auto row = [&](const Matrix& resid, double& score, double& pattern) {
        const Eigen::RowVectorXd q = projected(rm_, layer, qs, resid.row(query), query).cast<double>();
        Eigen::VectorXd s(query - first + 1);
        for (int p = first; p <= query; ++p) {
            const double raw = scale * q.dot(projected(rm_, layer, ks[size_t(p - first)], resid.row(p), p).cast<double>());
            if (p == key) score = raw;
            s(p - first) = cap > 0 ? cap * std::tanh(raw / cap) : raw;
        }
        const Eigen::ArrayXd e = (s.array() - s.maxCoeff()).exp();
        pattern = e(key - first) / e.sum();
    };
    Ablation a;
    row(replacementResidPre(rm_, rm_.activations, rm_.errors, rm_.clean.embed, layer), a.scoreBefore, a.patternBefore);
    row(replacementResidPre(rm_, acts.empty() ? rm_.activations : acts, errs.empty() ? rm_.errors : errs, embed, layer), a.scoreAfter,
        a.patternAfter);
    return a;
}

int QkTracer::graphNode(const AttributionGraph& graph, int column) const {
    if (column < 0 || column >= int(columns_.size())) return -1;
    const GraphNode& c = columns_[size_t(column)];
    if (c.kind == GraphNodeKind::Error) return graph.errorIndex(c.layer, c.position);
    if (c.kind == GraphNodeKind::Token) return graph.tokenOffset + c.position;
    // features are ordered by (layer, position, id) in both
    const auto key = [](const GraphNode& n) { return std::tuple(n.layer, n.position, n.id); };
    const auto begin = graph.nodes.begin(), end = graph.nodes.begin() + graph.nFeatures();
    const auto it = std::lower_bound(begin, end, key(c), [&](const GraphNode& n, const auto& k) { return key(n) < k; });
    return it != end && key(*it) == key(c) ? int(it - begin) : -1;
}

} // namespace attnscope
