#include "model/analysis/graphs/attribution_graph.h"

#include "model/core/errors.h"
#include "model/features/sparse_coder.h"
#include "model/transformer/backward.h"
#include "model/transformer/cache_budget.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnscope {

namespace {

RowVector rowOf(const Weight& w) { return w.toMatrix().row(0); }

/// The feature sources written at one layer, grouped by position: rows [begin[p], begin[p + 1]) are position p's.
struct LayerSources {
    Matrix vectors;        ///< [n, d_model] a·∂x̂/∂f (a·W_dec[f] for a plain transcoder)
    std::vector<int> node; ///< [n] their node indices
    std::vector<int> begin;
};

/// G.row(r) += C(dy.row(r) ⊙ w) / σ[r mod T]: the backward of a norm whose divisor σ is frozen (RMSNorm: no
/// centring C(v) = v − mean(v)). Rows are (target, position) pairs, T positions per target.
void addFrozenNormBackward(const ModelConfig& cfg, const Matrix& dy, const RowVector& w, const Vector& sigma, int T, Matrix& G) {
    for (Eigen::Index r = 0; r < dy.rows(); ++r) {
        RowVector g = dy.row(r).cwiseProduct(w);
        if (cfg.norm == NormKind::LayerNorm) g.array() -= g.mean();
        G.row(r) += g / sigma(r % T);
    }
}

/// One row of G for a target: the frozen norm's backward of `u` at position `p` (no norm when w is empty).
RowVector injected(const ModelConfig& cfg, const RowVector& u, const RowVector& w, const Vector& sigma, int p) {
    if (w.size() == 0) return u;
    RowVector g = u.cwiseProduct(w);
    if (cfg.norm == NormKind::LayerNorm) g.array() -= g.mean();
    return g / sigma(p);
}

/// W_U's mean column, Σ_v W_U_T[v] / d_vocab [d_model] (in double), read a row at a time.
RowVector meanUnembedding(const GlobalWeights& g, const ModelConfig& cfg) {
    Eigen::RowVectorXd sum = Eigen::RowVectorXd::Zero(cfg.d_model);
    RowVector row(cfg.d_model);
    for (int v = 0; v < cfg.d_vocab; ++v) {
        g.W_U_T.copyRow(v, row.data());
        sum += row.cast<double>();
    }
    return (sum / double(cfg.d_vocab)).cast<float>();
}

/// Carries a batch of targets' gradients down the frozen replacement model and writes their edges.
class BatchBackward {
public:
    BatchBackward(const ReplacementModel& rm, const std::vector<LayerSources>& sources, AttributionGraph& graph)
        : rm_(rm), cfg_(rm.model->config()), sources_(sources), graph_(graph), T_(rm.nPositions()) {
        for (int l = 0; l < cfg_.n_layers; ++l) {
            w1_.push_back(rowOf(rm.model->layer(l).ln1_w));
            w2_.push_back(rowOf(rm.model->layer(l).ln2_w));
        }
    }

    /// G [targets·T, d_model], row b·T + p the gradient of target b at position p, taken at resid_mid of `layer`
    /// (atResidMid: a feature target of that layer) or at its resid_post (a logit target of the last layer).
    void run(const std::vector<int>& targets, Matrix G, int layer, bool atResidMid) {
        int l = layer;
        if (atResidMid) {
            attention(l, G);
            --l;
        }
        for (; l >= 0; --l) {
            contract(targets, l, G);
            skip(l, G);
            attention(l, G);
        }
        const Matrix& embed = rm_.clean.embed;
        for (size_t b = 0; b < targets.size(); ++b)
            for (int p = 0; p < T_; ++p)
                graph_.adjacency(targets[b], graph_.tokenOffset + p) = embed.row(p).dot(G.row(Eigen::Index(b) * T_ + p));
    }

    const RowVector& ln2Gain(int l) const { return w2_[size_t(l)]; }

private:
    /// Edges from the sources written at layer l's MLP output (features and errors) into each target.
    void contract(const std::vector<int>& targets, int l, const Matrix& G) {
        const Eigen::Index B = Eigen::Index(targets.size());
        const LayerSources& s = sources_[size_t(l)];
        Matrix Gp(B, cfg_.d_model), E;
        for (int p = 0; p < T_; ++p) {
            for (Eigen::Index b = 0; b < B; ++b) Gp.row(b) = G.row(b * T_ + p);
            const int r0 = s.begin[size_t(p)], n = s.begin[size_t(p) + 1] - r0;
            if (n > 0) {
                E.noalias() = s.vectors.middleRows(r0, n) * Gp.transpose(); // [n, B]
                for (int i = 0; i < n; ++i)
                    for (Eigen::Index b = 0; b < B; ++b) graph_.adjacency(targets[size_t(b)], s.node[size_t(r0 + i)]) = E(i, b);
            }
            const RowVector e = rm_.errors[size_t(l)].row(p) * Gp.transpose();
            for (Eigen::Index b = 0; b < B; ++b) graph_.adjacency(targets[size_t(b)], graph_.errorIndex(l, p)) = e(b);
        }
    }

    /// A skip transcoder's linear path x·W_skip back to resid_mid (the rest of the MLP is a stop-gradient).
    void skip(int l, Matrix& G) {
        const SparseCoder& tc = rm_.transcoders->coders[size_t(l)];
        if (tc.W_skip.empty()) return;
        Matrix dx;
        timesTransposed(G, tc.W_skip, dx);
        if (rm_.inputHook[size_t(l)].site == HookSite::MlpIn)
            addFrozenNormBackward(cfg_, dx, w2_[size_t(l)], rm_.ln2Scale[size_t(l)], T_, G);
        else
            G += dx;
    }

    /// Layer l's attention with its clean pattern: G += ln_1ᵀ(W_V (Pᵀ (G W_Oᵀ))) per head, σ of ln_1 frozen.
    void attention(int l, Matrix& G) {
        const LayerWeights& w = rm_.model->layer(l);
        const std::shared_ptr<const LayerCache> c = rm_.clean.layer(l);
        const int H = cfg_.n_heads, dh = cfg_.d_head, group = cfg_.groupSize();
        const Eigen::Index BT = G.rows(), B = BT / T_;
        Matrix Y, back;
        timesTransposed(G, w.W_O, Y); // [B·T, n_heads·d_head]: ∂/∂z
        Matrix dV = Matrix::Zero(BT, Eigen::Index(H / group) * dh);
        for (int h = 0; h < H; ++h) {
            const Matrix Pt = c->pattern[size_t(h)].transpose();
            for (Eigen::Index b = 0; b < B; ++b)
                dV.block(b * T_, Eigen::Index(h / group) * dh, T_, dh).noalias() += Pt * Y.block(b * T_, Eigen::Index(h) * dh, T_, dh);
        }
        timesTransposed(dV, w.W_V, back); // [B·T, d_model]: ∂/∂ln1
        addFrozenNormBackward(cfg_, back, w1_[size_t(l)], rm_.ln1Scale[size_t(l)], T_, G);
    }

    const ReplacementModel& rm_;
    const ModelConfig& cfg_;
    const std::vector<LayerSources>& sources_;
    AttributionGraph& graph_;
    const int T_;
    std::vector<RowVector> w1_, w2_;
};

} // namespace

qint64 estimateGraphBytes(const ModelConfig& cfg, int nPositions, qint64 nFeatures, const AttributionOptions& options) {
    const qint64 n = nFeatures + qint64(cfg.n_layers + 1) * nPositions + options.maxLogits;
    const qint64 width = std::max<qint64>(cfg.d_model, qint64(cfg.n_heads) * cfg.d_head);
    const qint64 rows = std::max<qint64>(options.batchRows, nPositions);
    return n * n * 4 + 8 * n + nFeatures * cfg.d_model * 4 + 4 * rows * width * 4;
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

    // feature nodes and what each writes
    std::vector<LayerSources> sources(static_cast<size_t>(nL));
    for (int l = 0; l < nL; ++l) {
        const SparseCoder& tc = rm.transcoders->coders[size_t(l)];
        const Matrix& f = rm.activations[size_t(l)];
        const Matrix x = hookActivation(rm.clean, rm.inputHook[size_t(l)]);
        LayerSources& s = sources[size_t(l)];
        std::vector<RowVector> rows;
        s.begin.assign(size_t(T) + 1, 0);
        for (int p = 0; p < T; ++p) {
            s.begin[size_t(p)] = int(rows.size());
            for (int j = 0; j < f.cols(); ++j)
                if (f(p, j) != 0.0f) {
                    s.node.push_back(int(gr.nodes.size()));
                    gr.nodes.push_back({GraphNodeKind::Feature, l, p, j, f(p, j)});
                    rows.push_back(f(p, j) * decoderDirectionAt(tc, j, x.row(p)));
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

    const qint64 need = estimateGraphBytes(cfg, T, nFeat, options);
    const CacheBudget budget = cacheBudget();
    if (budget.bytes >= 0 && need > budget.bytes)
        throw InputError(QStringLiteral("The attribution graph of %1 positions has %2 nodes (%3 active features) and needs %4, "
                                        "but the memory budget is %5 (%6). Shorten the prompt or use a dictionary with fewer "
                                        "active features.")
                             .arg(T).arg(n).arg(nFeat).arg(formatBytes(need), formatBytes(budget.bytes), budget.origin));
    gr.adjacency = Matrix::Zero(n, n);
    gr.values.assign(size_t(n), 0.0);

    BatchBackward backward(rm, sources, gr);
    const GlobalWeights& g = model.globals();
    const int perBatch = std::max(1, options.batchRows / std::max(1, T));
    const qint64 total = nFeat + (n - gr.logitOffset);
    qint64 done = 0;
    progress.step(0, total, QStringLiteral("attribution"));

    // feature targets, a layer at a time: W_enc[f] injected at the transcoder's input
    for (int first = 0; first < nFeat;) {
        const int layer = gr.nodes[size_t(first)].layer;
        std::vector<int> targets;
        for (int i = first; i < nFeat && gr.nodes[size_t(i)].layer == layer && int(targets.size()) < perBatch; ++i) targets.push_back(i);
        const SparseCoder& tc = rm.transcoders->coders[size_t(layer)];
        const bool throughLn2 = rm.inputHook[size_t(layer)].site == HookSite::MlpIn;
        Matrix G = Matrix::Zero(Eigen::Index(targets.size()) * T, cfg.d_model);
        for (size_t b = 0; b < targets.size(); ++b) {
            const GraphNode& t = gr.nodes[size_t(targets[b])];
            const RowVector u = encoderDirection(tc, t.id) * float(tc.inputScale);
            G.row(Eigen::Index(b) * T + t.position) =
                injected(cfg, u, throughLn2 ? backward.ln2Gain(layer) : RowVector(), rm.ln2Scale[size_t(layer)], t.position);
            gr.values[size_t(targets[b])] = t.activation;
        }
        backward.run(targets, std::move(G), layer, true);
        first += int(targets.size());
        done += qint64(targets.size());
        progress.step(done, total, QStringLiteral("attribution"));
    }

    // logit targets: u_t = W_U[:, t] − mean column, injected at ln_final of the last position
    if (gr.logitOffset < n) {
        const RowVector meanU = meanUnembedding(g, cfg), wf = rowOf(g.ln_final_w);
        std::vector<int> targets;
        Matrix G = Matrix::Zero(Eigen::Index(n - gr.logitOffset) * T, cfg.d_model);
        RowVector row(cfg.d_model);
        for (int i = gr.logitOffset; i < n; ++i) {
            const Eigen::Index b = Eigen::Index(targets.size());
            targets.push_back(i);
            g.W_U_T.copyRow(gr.nodes[size_t(i)].id, row.data());
            const RowVector u = row - meanU;
            G.row(b * T + T - 1) = injected(cfg, u, wf, rm.lnFinalScale, T - 1);
            gr.values[size_t(i)] = u.cast<double>().dot(rm.clean.ln_final.row(T - 1).cast<double>());
        }
        backward.run(targets, std::move(G), nL - 1, false);
    }
    progress.step(total, total, QStringLiteral("attribution"));
    return gr;
}

} // namespace attnscope
