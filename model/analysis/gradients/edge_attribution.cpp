#include "model/analysis/gradients/edge_attribution.h"

#include "model/analysis/circuits/patched_forward.h"
#include "model/analysis/common/input_checks.h"
#include "model/analysis/gradients/input_attribution.h"
#include "model/analysis/gradients/metric_gradients.h"
#include "model/core/errors.h"
#include "model/core/weight_gemm.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/forward.h"

#include <QCoreApplication>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("edge_attribution", text); }

using Index = Eigen::Index;

/// Where the nodes sit in EdgeGraph's vectors (edgeGraph's order).
struct NodeIndex {
    int H = 0, nLayers = 0;
    int head(int l, int h) const { return 1 + l * (H + 1) + h; }
    int mlp(int l) const { return 1 + l * (H + 1) + H; }
    int senders() const { return 1 + nLayers * (H + 1); }
    /// Receiver of head h's q (x = 0), k (1) or v (2) input in layer l; the MLP's; the logits'.
    int headInput(int l, int h, int x) const { return l * (3 * H + 1) + 3 * h + x; }
    int mlpInput(int l) const { return l * (3 * H + 1) + 3 * H; }
    int logits() const { return nLayers * (3 * H + 1); }
    /// The senders a receiver reads: a prefix of the senders.
    int sendersBefore(const EdgeReceiver& r) const {
        switch (r.kind) {
        case EdgeReceiver::Kind::Logits: return senders();
        case EdgeReceiver::Kind::Mlp: return mlp(r.layer);
        default: return head(r.layer, 0);
        }
    }
};

NodeIndex nodeIndex(const ModelConfig& cfg) { return NodeIndex{cfg.n_heads, cfg.n_layers}; }

/// edges[receiverStart[r] + s] is the edge from sender s to receiver r.
std::vector<size_t> receiverStarts(const EdgeGraph& graph, const NodeIndex& ix) {
    std::vector<size_t> starts(graph.receivers.size());
    size_t at = 0;
    for (size_t r = 0; r < graph.receivers.size(); ++r) {
        starts[r] = at;
        at += size_t(ix.sendersBefore(graph.receivers[r]));
    }
    return starts;
}

/// A [S, d_model] block of a [node, S·d_model] matrix's row.
Eigen::Map<Matrix> nodeRows(Matrix& m, int node, Index S, Index D) { return Eigen::Map<Matrix>(m.row(node).data(), S, D); }

/// Post-norm models: the factor w/σ [pos, d_model] that takes a part of layer l's attention output before its
/// post-norm to its share of the normed attn_out in this run (forward.h postNormFactors), σ from the run's stored z
/// (z·W_O + b_O); empty for the other models.
Matrix attentionShareFactors(const Model& model, const ActivationCache& run, int l) {
    const ModelConfig& cfg = model.config();
    if (!cfg.postNorms) return {};
    const LayerWeights& w = model.layer(l);
    Matrix pre;
    weightGemm(run.stored(l).z, w.W_O, w.b_O, pre);
    return postNormFactors(cfg, pre, w.ln1_post_w);
}

/// What every sender writes in one run, [sender, pos·d_model]: the token embedding, each head's z_h·W_O^h and each
/// MLP's output. Head results are computed from the stored z (caches keep z in every layout). On post-norm models a
/// head writes its share z_h·W_O^h ⊙ w/σ of the normed attention output, σ the post-attention norm's divisor of this
/// run, so that a layer's heads sum to its attn_out in each run.
Matrix senderOutputs(const Model& model, const ActivationCache& run, const NodeIndex& ix) {
    const ModelConfig& cfg = model.config();
    const Index S = run.nPositions(), D = cfg.d_model, L = cfg.d_head;
    Matrix out(ix.senders(), S * D);
    nodeRows(out, 0, S, D) = run.embed;
    for (int l = 0; l < cfg.n_layers; ++l) {
        const LayerCache& c = run.stored(l);
        const LayerWeights& w = model.layer(l);
        const Matrix share = attentionShareFactors(model, run, l);
        for (int h = 0; h < cfg.n_heads; ++h) {
            weightGemm(c.z.data() + h * L, S, L, c.z.cols(), w.W_O_head(h, int(L)), out.row(ix.head(l, h)).data(), D, false);
            if (share.size()) nodeRows(out, ix.head(l, h), S, D).array() *= share.array();
        }
        nodeRows(out, ix.mlp(l), S, D) = c.mlp_out;
    }
    return out;
}

/// Head h's projection W (W_Q's, or its K/V group's W_K/W_V columns) as a weight the GEMM reads transposed: a
/// block-quantized weight is decoded once per layer into `decoded`.
Weight headColumns(const Weight& W, int col, int L, Matrix& decoded) {
    if (W.type != WeightType::Blocks) return W.colBlock(col, L);
    if (decoded.size() == 0) decoded = W.toMatrix();
    return f32Weight(decoded.data() + col, decoded.rows(), L, decoded.cols());
}

/// ∂metric/∂(each receiver's input) of layer l, [receiver of the layer (3·n_heads + 1), pos·d_model], from one
/// run's gradients: per head the norm's backward of d_x_h·W_x^hᵀ (x = q, k, v; d_q_h and d_k_h first through the
/// q/k norm's backward when the model has one), then the MLP's
/// ∂/∂resid_mid − ∂/∂resid_post.
Matrix receiverGradients(const Model& model, int l, const LayerCache& c, const LayerGradients& g) {
    const ModelConfig& cfg = model.config();
    const LayerWeights& w = model.layer(l);
    const int H = cfg.n_heads, L = cfg.d_head;
    const Index S = g.resid_pre.rows(), D = cfg.d_model;
    Matrix out(3 * H + 1, S * D);
    Matrix decoded[3], dy, dLn, dx;
    for (int x = 0; x < 3; ++x) {
        const Weight& W = x == 0 ? w.W_Q : x == 1 ? w.W_K : w.W_V;
        const Matrix& d = x == 0 ? g.q : x == 1 ? g.k : g.v;
        for (int h = 0; h < H; ++h) {
            const int col = (x == 0 ? h : cfg.kvHeadOf(h)) * L;
            dy = d.middleCols(Index(h) * L, L);
            if (cfg.qkNorm && x < 2) { // through q_norm / k_norm to the projection (forward.h applyHeadNorm)
                const Matrix pre = (x == 0 ? c.q_pre_norm : c.k_pre_norm).middleCols(col, L);
                Matrix dPre;
                headNormBackward(cfg, pre, x == 0 ? w.q_norm_w : w.k_norm_w, dy, false, dPre);
                dy = std::move(dPre);
            }
            timesTransposed(dy, headColumns(W, col, L, decoded[x]), dLn);
            dx = Matrix::Zero(S, D);
            normBackward(cfg, c.resid_pre, w.ln1_w, dLn, false, dx);
            nodeRows(out, 3 * h + x, S, D) = dx;
        }
    }
    nodeRows(out, 3 * H, S, D) = g.resid_mid - g.resid_post;
    return out;
}

/// scores [receiver, sender] += Σ_pos,d G_r · Δ_s for one layer's receivers (rows of G) and the senders each reads.
void addLayerScores(const EdgeGraph& graph, const std::vector<size_t>& starts, const NodeIndex& ix, int firstReceiver,
                    const Matrix& G, const Matrix& delta, double weight, std::vector<double>& scores) {
    const int nSenders = ix.sendersBefore(graph.receivers[size_t(firstReceiver + G.rows() - 1)]);
    const Matrix dots = G * delta.topRows(nSenders).transpose(); // [receiver, sender]
    for (Index r = 0; r < G.rows(); ++r) {
        const size_t receiver = size_t(firstReceiver + r);
        const int n = ix.sendersBefore(graph.receivers[receiver]);
        for (int s = 0; s < n; ++s) scores[starts[receiver] + size_t(s)] += weight * double(dots(r, s));
    }
}

qint64 matrixBytes(qint64 rows, qint64 cols) { return rows * cols * qint64(sizeof(float)); }

void requireEdgeRuns(const PatchingRuns& runs, const char* what) {
    if (!runs.clean || !runs.corrupt)
        throw InputError(tr("%1 needs a clean and a corrupted prompt.").arg(QString::fromUtf8(what)));
    if (runs.clean->nPositions() != runs.corrupt->nPositions())
        throw InputError(tr("The clean prompt has %1 tokens and the corrupted %2: edges pair positions one to one.")
                             .arg(runs.clean->nPositions()).arg(runs.corrupt->nPositions()));
}

} // namespace

QString edgeAttributionMethodName(EdgeAttributionMethod m) {
    return m == EdgeAttributionMethod::Eap ? QStringLiteral("eap") : QStringLiteral("eap-ig");
}

QString edgeSenderName(const EdgeSender& s) {
    switch (s.kind) {
    case EdgeSender::Kind::Input: return QStringLiteral("input");
    case EdgeSender::Kind::Head: return QStringLiteral("a%1.h%2").arg(s.layer).arg(s.head);
    case EdgeSender::Kind::Mlp: return QStringLiteral("m%1").arg(s.layer);
    }
    return {};
}

QString edgeReceiverName(const EdgeReceiver& r) {
    switch (r.kind) {
    case EdgeReceiver::Kind::Q: return QStringLiteral("a%1.h%2<q>").arg(r.layer).arg(r.head);
    case EdgeReceiver::Kind::K: return QStringLiteral("a%1.h%2<k>").arg(r.layer).arg(r.head);
    case EdgeReceiver::Kind::V: return QStringLiteral("a%1.h%2<v>").arg(r.layer).arg(r.head);
    case EdgeReceiver::Kind::Mlp: return QStringLiteral("m%1").arg(r.layer);
    case EdgeReceiver::Kind::Logits: return QStringLiteral("logits");
    }
    return {};
}

QString EdgeGraph::edgeName(const ScoredEdge& e) const {
    return edgeSenderName(senders[size_t(e.sender)]) + QStringLiteral("->") + edgeReceiverName(receivers[size_t(e.receiver)]);
}

EdgeGraph edgeGraph(const ModelConfig& cfg) {
    const NodeIndex ix = nodeIndex(cfg);
    EdgeGraph g;
    g.senders.push_back({EdgeSender::Kind::Input, -1, -1});
    for (int l = 0; l < cfg.n_layers; ++l) {
        for (int h = 0; h < cfg.n_heads; ++h) g.senders.push_back({EdgeSender::Kind::Head, l, h});
        g.senders.push_back({EdgeSender::Kind::Mlp, l, -1});
        for (int h = 0; h < cfg.n_heads; ++h)
            for (EdgeReceiver::Kind k : {EdgeReceiver::Kind::Q, EdgeReceiver::Kind::K, EdgeReceiver::Kind::V})
                g.receivers.push_back({k, l, h});
        g.receivers.push_back({EdgeReceiver::Kind::Mlp, l, -1});
    }
    g.receivers.push_back({EdgeReceiver::Kind::Logits, -1, -1});
    for (size_t r = 0; r < g.receivers.size(); ++r)
        for (int s = 0; s < ix.sendersBefore(g.receivers[r]); ++s) g.edges.push_back({s, int(r), 0.0});
    return g;
}

EdgeAttribution runEdgeAttribution(const Model& model, const PatchingRuns& runs, const EdgeAttributionOptions& options,
                                   const Progress& progress) {
    const ModelConfig& cfg = model.config();
    requireEdgeRuns(runs, "Edge attribution");
    if (options.method == EdgeAttributionMethod::EapIg && options.steps < 1)
        throw InputError(tr("EAP-IG needs at least 1 step, got %1.").arg(options.steps));
    checkPatchingMetric(cfg, options.metric);
    const ActivationCache& clean = *runs.clean;
    const ActivationCache& corrupt = *runs.corrupt;
    const int S = clean.nPositions();
    const Index D = cfg.d_model;
    const NodeIndex ix = nodeIndex(cfg);

    EdgeAttribution out;
    out.options = options;
    out.position = resolvePosition(options.metric.position, S);
    PatchingMetric metric = options.metric;
    metric.position = out.position;
    const RowVector cleanLogits = positionLogits(model, clean, out.position);
    out.clean = patchingMetricValue(metric, cleanLogits, cleanLogits);
    out.corrupt = patchingMetricValue(metric, positionLogits(model, corrupt, out.position), cleanLogits);

    BackwardOptions backward;
    backward.patternGradients = false;
    backward.frozenPostAttentionNorm = cfg.postNorms; // the heads' shares are linear in them (senderOutputs)
    const qint64 need = 2 * matrixBytes(ix.senders(), qint64(S) * D) + matrixBytes(3 * cfg.n_heads + 1, qint64(S) * D) +
                        estimateGradientBytes(cfg, S, backward);
    requireWithinBudget(need, [&](const CacheBudget& budget) {
        return tr("Edge attribution over %1 positions needs %2 (the %3 senders' differences, a layer's receiver gradients and "
                  "the backward pass) but the memory budget is %4 (%5). Shorten the prompt.")
            .arg(S).arg(formatBytes(need)).arg(ix.senders()).arg(formatBytes(budget.bytes), budget.origin);
    });

    out.graph = edgeGraph(cfg);
    const std::vector<size_t> starts = receiverStarts(out.graph, ix);
    // Δ_s = a_s(corrupt) − a_s(clean) [sender, pos·d_model] (attribute.py's activation_difference)
    const Matrix delta = senderOutputs(model, corrupt, ix) - senderOutputs(model, clean, ix);

    const bool ig = options.method == EdgeAttributionMethod::EapIg;
    const int passes = ig ? options.steps : 1;
    std::vector<double> scores(out.graph.edges.size(), 0.0);
    Progress cancelOnly; // the backward checks for cancellation between its layers; progress is reported per pass
    cancelOnly.isCancelled = progress.isCancelled;
    for (int k = 0; k < passes; ++k) {
        progress.step(k, passes, ig ? QStringLiteral("step %1 of %2").arg(k + 1).arg(passes) : QStringLiteral("backward"));
        std::optional<ActivationCache> point; // EAP-IG: the clean prompt on corrupt + (k/steps)·(clean − corrupt)
        if (ig) {
            const float alpha = float(double(k) / double(passes));
            point = runWithTokenEmbedding(model, clean.tokens, Matrix(corrupt.embed + alpha * (clean.embed - corrupt.embed)),
                                          clean.pos_embed, /*allLogits=*/out.position != S - 1);
        }
        const ActivationCache& run = ig ? *point : clean;
        const MetricGradients mg = metricGradients(model, run, metric, cleanLogits, backward, cancelOnly);
        requireFiniteGradients(mg, ig ? tr(" at EAP-IG step %1").arg(k + 1) : QString());
        const double weight = 1.0 / double(passes);
        for (int l = 0; l < cfg.n_layers; ++l) {
            progress.checkCancelled();
            const std::shared_ptr<const LayerCache> c = run.layer(l, progress);
            addLayerScores(out.graph, starts, ix, ix.headInput(l, 0, 0),
                           receiverGradients(model, l, *c, mg.gradients.layers[size_t(l)]), delta, weight, scores);
        }
        Matrix logitsInput(1, Index(S) * D);
        Eigen::Map<Matrix>(logitsInput.data(), S, D) = mg.gradients.ln_final_in;
        addLayerScores(out.graph, starts, ix, ix.logits(), logitsInput, delta, weight, scores);
    }
    for (size_t e = 0; e < scores.size(); ++e) out.graph.edges[e].score = scores[e];
    progress.step(passes, passes, QStringLiteral("done"));
    return out;
}

std::vector<int> selectCircuitEdges(const EdgeGraph& graph, int top, double threshold) {
    std::vector<int> order;
    for (int e = 0; e < int(graph.edges.size()); ++e)
        if (std::abs(graph.edges[size_t(e)].score) >= threshold) order.push_back(e);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return std::abs(graph.edges[size_t(a)].score) > std::abs(graph.edges[size_t(b)].score);
    });
    if (top > 0 && int(order.size()) > top) order.resize(size_t(top));
    return order;
}

CircuitFaithfulness evaluateCircuit(const Model& model, const PatchingRuns& runs, const PatchingMetric& metricIn,
                                    const EdgeGraph& graph, std::span<const int> circuit, const Progress& progress) {
    const ModelConfig& cfg = model.config();
    requireEdgeRuns(runs, "A circuit's faithfulness");
    checkPatchingMetric(cfg, metricIn);
    const NodeIndex ix = nodeIndex(cfg);
    if (graph.senders.size() != size_t(ix.senders()) || graph.receivers.size() != size_t(ix.logits() + 1))
        throw InputError(tr("The edge graph does not belong to this model."));
    const ActivationCache& clean = *runs.clean;
    const ActivationCache& corrupt = *runs.corrupt;
    const int S = clean.nPositions(), H = cfg.n_heads, L = cfg.d_head;
    const Index D = cfg.d_model;
    PatchingMetric metric = metricIn;
    metric.position = resolvePosition(metricIn.position, S);

    // corrupted[r][s]: the edge s → r is outside the circuit, so r reads s's corrupted output
    const std::vector<size_t> starts = receiverStarts(graph, ix);
    std::vector<char> inCircuit(graph.edges.size(), 0);
    for (int e : circuit) {
        if (e < 0 || size_t(e) >= graph.edges.size())
            throw InputError(tr("Edge %1 is not in the graph's %2 edges.").arg(e).arg(graph.edges.size()));
        inCircuit[size_t(e)] = 1;
    }
    auto outsideMask = [&](int firstReceiver, int count, int nSenders) { // [receiver, sender] 1 = patched
        Matrix m = Matrix::Zero(count, nSenders);
        for (int r = 0; r < count; ++r) {
            const size_t receiver = size_t(firstReceiver + r);
            const int n = std::min(nSenders, ix.sendersBefore(graph.receivers[receiver]));
            for (int s = 0; s < n; ++s) m(r, s) = inCircuit[starts[receiver] + size_t(s)] ? 0.0f : 1.0f;
        }
        return m;
    };

    // this run's sender outputs, filled as they are computed; corrupted − this run's, per sender
    const Matrix corrupted = senderOutputs(model, corrupt, ix);
    Matrix current = Matrix::Zero(ix.senders(), Index(S) * D);
    nodeRows(current, 0, S, D) = clean.embed;
    auto difference = [&](int n) { return Matrix(corrupted.topRows(n) - current.topRows(n)); };

    LayerCache c;
    c.resid_pre = clean.embed + clean.pos_embed; // this run's residual stream: Σ of its own sender outputs and the biases
    for (int l = 0; l < cfg.n_layers; ++l) {
        progress.step(l, cfg.n_layers + 1, QStringLiteral("layer %1").arg(l));
        const LayerWeights& w = model.layer(l);
        // each head's q, k and v input: the residual plus the corrupted − current outputs of its patched senders
        const int nHeadSenders = ix.head(l, 0);
        const Matrix inputs = outsideMask(ix.headInput(l, 0, 0), 3 * H, nHeadSenders) * difference(nHeadSenders);
        Matrix qkv[3];
        for (int x = 0; x < 3; ++x) {
            qkv[x].resize(S, Index(H) * L);
            const Weight& W = x == 0 ? w.W_Q : x == 1 ? w.W_K : w.W_V;
            const Weight& b = x == 0 ? w.b_Q : x == 1 ? w.b_K : w.b_V;
            for (int h = 0; h < H; ++h) {
                const int col = (x == 0 ? h : cfg.kvHeadOf(h)) * L;
                const Matrix in = c.resid_pre + Eigen::Map<const Matrix>(inputs.row(3 * h + x).data(), S, D);
                Matrix ln, y;
                applyNorm(cfg, in, w.ln1_w, w.ln1_b, ln);
                weightGemm(ln, W.colBlock(col, L), b.empty() ? Weight{} : b.colBlock(col, L), y);
                if (cfg.qkNorm && x < 2) applyHeadNorm(cfg, y, x == 0 ? w.q_norm_w : w.k_norm_w);
                qkv[x].middleCols(Index(h) * L, L) = y;
            }
        }
        auto hooks = std::make_shared<ForwardHooks>();
        hooks->q = [&](int, Matrix& m) { m = qkv[0]; };
        hooks->k = [&](int, Matrix& m) { m = qkv[1]; };
        hooks->v = [&](int, Matrix& m) { m = qkv[2]; };
        // post-norm models: this run's post-attention divisor held at the clean run's, as the scores' gradients hold it
        const Matrix share = attentionShareFactors(model, clean, l);
        hooks->z = [&](int, Matrix& z) { // the heads' outputs in this run
            for (int h = 0; h < H; ++h) {
                weightGemm(z.data() + h * L, S, L, z.cols(), w.W_O_head(h, L), current.row(ix.head(l, h)).data(), D, false);
                if (share.size()) nodeRows(current, ix.head(l, h), S, D).array() *= share.array();
            }
        };
        Matrix attnOut;
        hooks->attn_out = [&](int, Matrix& a) { // the MLP reads resid_mid + its patched senders' differences
            if (share.size()) a = c.attn_out_pre_norm.cwiseProduct(share);
            attnOut = a;
            const int n = ix.mlp(l);
            const Matrix patched = outsideMask(ix.mlpInput(l), 1, n) * difference(n);
            a += Eigen::Map<const Matrix>(patched.data(), S, D);
        };
        ForwardOptions fo;
        fo.cacheHeadResults = false;
        fo.hooks = hooks;
        runBlock(model, l, c, fo);
        nodeRows(current, ix.mlp(l), S, D) = c.mlp_out;
        c.resid_pre = c.resid_pre + attnOut + c.mlp_out;
    }
    // the logits read the last residual plus their patched senders' differences
    const Matrix patched = outsideMask(ix.logits(), 1, ix.senders()) * difference(ix.senders());
    ActivationCache last;
    last.tokens = clean.tokens;
    last.layers.resize(size_t(cfg.n_layers));
    last.layers.back().resid_post = c.resid_pre + Eigen::Map<const Matrix>(patched.data(), S, D);
    const RowVector cleanLogits = positionLogits(model, clean, metric.position);

    CircuitFaithfulness f;
    f.edges = int(circuit.size());
    f.metric = patchingMetricValue(metric, positionLogits(model, last, metric.position), cleanLogits);
    f.clean = patchingMetricValue(metric, cleanLogits, cleanLogits);
    f.corrupt = patchingMetricValue(metric, positionLogits(model, corrupt, metric.position), cleanLogits);
    f.recovered = f.clean != f.corrupt ? (f.metric - f.corrupt) / (f.clean - f.corrupt) : std::numeric_limits<double>::quiet_NaN();
    progress.step(cfg.n_layers + 1, cfg.n_layers + 1, QStringLiteral("done"));
    return f;
}

} // namespace attnscope
