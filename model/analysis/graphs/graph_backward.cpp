#include "model/analysis/graphs/graph_backward.h"

#include "model/core/errors.h"
#include "model/core/weight_gemm.h"
#include "model/features/sparse_coder.h"
#include "model/transformer/backward.h"

namespace attnscope {

namespace {

RowVector rowOf(const Weight& w) { return w.toMatrix().row(0); }

/// One row of G for a target: the frozen norm's backward of `u` at position `p` (no norm when w is empty).
RowVector injected(const ModelConfig& cfg, const RowVector& u, const RowVector& w, const Vector& sigma, int p) {
    if (w.size() == 0) return u;
    Matrix g = Matrix::Zero(1, u.size());
    addFrozenNormBackward(cfg, Matrix(u), w, Vector::Constant(1, sigma(p)), 1, g);
    return g.row(0);
}

} // namespace

RowVector meanUnembedding(const Model& model) {
    const ModelConfig& cfg = model.config();
    Eigen::RowVectorXd sum = Eigen::RowVectorXd::Zero(cfg.d_model);
    RowVector row(cfg.d_model);
    for (int v = 0; v < cfg.d_vocab; ++v) {
        model.globals().W_U_T.copyRow(v, row.data());
        sum += row.cast<double>();
    }
    return (sum / double(cfg.d_vocab)).cast<float>();
}

void addFrozenNormBackward(const ModelConfig& cfg, const Matrix& dy, const RowVector& w, const Vector& sigma, int T, Matrix& G) {
    for (Eigen::Index r = 0; r < dy.rows(); ++r) {
        RowVector g = dy.row(r).cwiseProduct(w);
        if (cfg.norm == NormKind::LayerNorm) g.array() -= g.mean();
        G.row(r) += g / sigma(r % T);
    }
}

TargetGradient targetGradient(const ReplacementModel& rm, const AttributionGraph& graph, int node, const RowVector* meanU) {
    const ModelConfig& cfg = rm.model->config();
    const int T = rm.nPositions();
    const GraphNode& t = graph.nodes[size_t(node)];
    TargetGradient tg;
    tg.G = Matrix::Zero(T, cfg.d_model);
    if (t.kind == GraphNodeKind::Feature) {
        const SparseCoder& tc = rm.transcoders->coders[size_t(t.layer)];
        const RowVector u = encoderDirection(tc, t.id) * float(tc.inputScale);
        const bool throughLn2 = rm.inputHook[size_t(t.layer)].site == HookSite::MlpIn;
        tg.G.row(t.position) = injected(cfg, u, throughLn2 ? rowOf(rm.model->layer(t.layer).ln2_w) : RowVector(),
                                        rm.ln2Scale[size_t(t.layer)], t.position);
        tg.at = {t.layer, BackwardHop::Attention};
    } else if (t.kind == GraphNodeKind::Logit) {
        const RowVector u = targetDirection(rm, graph, node, meanU ? *meanU : meanUnembedding(*rm.model));
        tg.G.row(T - 1) = injected(cfg, u, rowOf(rm.model->globals().ln_final_w), rm.lnFinalScale, T - 1);
        tg.at = {cfg.n_layers - 1, BackwardHop::Mlp};
    } else {
        throw InputError(QStringLiteral("node %1 is not a target: only feature and logit nodes have incoming edges").arg(node));
    }
    return tg;
}

RowVector sourceVector(const ReplacementModel& rm, const AttributionGraph& graph, int node) {
    const GraphNode& n = graph.nodes[size_t(node)];
    switch (n.kind) {
    case GraphNodeKind::Feature: {
        const Matrix x = hookActivation(rm.clean, rm.inputHook[size_t(n.layer)]);
        return n.activation * decoderDirectionAt(rm.transcoders->coders[size_t(n.layer)], n.id, x.row(n.position));
    }
    case GraphNodeKind::Error: return rm.errors[size_t(n.layer)].row(n.position);
    case GraphNodeKind::Token: return rm.clean.embed.row(n.position);
    case GraphNodeKind::Logit: break;
    }
    throw InputError(QStringLiteral("node %1 is a logit: it is no edge's source").arg(node));
}

std::vector<std::pair<int, RowVector>> sourceWrites(const ReplacementModel& rm, const AttributionGraph& graph, int node) {
    const GraphNode& n = graph.nodes[size_t(node)];
    std::vector<std::pair<int, RowVector>> out{{n.kind == GraphNodeKind::Token ? -1 : n.layer, sourceVector(rm, graph, node)}};
    if (n.kind == GraphNodeKind::Feature && rm.crossLayer())
        for (int j = n.layer + 1; j < rm.nLayers(); ++j) {
            const Matrix x = hookActivation(rm.clean, rm.inputHook[size_t(j)]);
            out.push_back({j, n.activation * decoderDirectionAt(decoderInto(rm, n.layer, j), n.id, x.row(n.position))});
        }
    return out;
}

GraphBackward::GraphBackward(const ReplacementModel& rm) : rm_(rm), cfg_(rm.model->config()), T_(rm.nPositions()) {
    for (int l = 0; l < cfg_.n_layers; ++l) {
        w1_.push_back(rowOf(rm.model->layer(l).ln1_w));
        w2_.push_back(rowOf(rm.model->layer(l).ln2_w));
        w1post_.push_back(cfg_.postNorms ? rowOf(rm.model->layer(l).ln1_post_w) : RowVector());
    }
}

Matrix GraphBackward::carry(Matrix G, InjectionPoint at, const Observer& observer) const {
    return walk(std::move(G), at, nullptr, observer);
}

void GraphBackward::attribute(Matrix G, InjectionPoint at, const EdgeRows& out) const {
    (void)walk(std::move(G), at, &out, {});
}

Matrix GraphBackward::walk(Matrix G, InjectionPoint at, const EdgeRows* out, const Observer& observer) const {
    int l = at.layer;
    if (at.first == BackwardHop::Attention) {
        if (observer) observer(l, BackwardHop::Attention, G);
        G += attentionBack(l, G);
        --l;
    }
    for (; l >= 0; --l) {
        if (out) contract(l, G, *out);
        if (observer) observer(l, BackwardHop::Mlp, G);
        if (Matrix s = skipBack(l, G); s.size()) G += s;
        if (observer) observer(l, BackwardHop::Attention, G);
        G += attentionBack(l, G);
    }
    if (out) {
        const Matrix& embed = rm_.clean.embed;
        for (size_t b = 0; b < out->rows.size(); ++b)
            for (int p = 0; p < T_; ++p) out->rows[b][out->tokenOffset + p] = embed.row(p).dot(G.row(Eigen::Index(b) * T_ + p));
    }
    return G;
}

void GraphBackward::contract(int l, const Matrix& G, const EdgeRows& out) const {
    const Eigen::Index B = Eigen::Index(out.rows.size()), D = cfg_.d_model;
    const Matrix& err = rm_.errors[size_t(l)];
    const LayerSources& s = (*out.sources)[size_t(l)];
    Matrix E;
    for (int p = 0; p < T_; ++p) {
        const int r0 = s.begin[size_t(p)], n = s.begin[size_t(p) + 1] - r0;
        if (n > 0) {
            // E [B, n] = position p's rows of G (row b·T + p) · the sources' vectorsᵀ, on the weight GEMM's kernel (Eigen's
            // threads busy-wait for each other on products this small: most of a batch under load)
            E.resize(B, n);
            const Weight V{s.vectors.row(r0).data(), n, D, D, WeightType::F32, false};
            weightGemm(G.data() + Eigen::Index(p) * D, B, D, Eigen::Index(T_) * D, V.t(), E.data(), n, true);
            for (Eigen::Index b = 0; b < B; ++b) {
                float* row = out.rows[size_t(b)];
                for (int i = 0; i < n; ++i) row[s.node[size_t(r0 + i)]] += E(b, i); // += : a cross-layer feature writes at several layers
            }
        }
        for (Eigen::Index b = 0; b < B; ++b)
            out.rows[size_t(b)][out.errorOffset + l * T_ + p] = err.row(p).dot(G.row(b * T_ + p));
    }
}

Matrix GraphBackward::skipBack(int l, const Matrix& G) const {
    const SparseCoder& tc = rm_.transcoders->coders[size_t(l)];
    if (tc.W_skip.empty()) return {};
    Matrix dx, out = Matrix::Zero(G.rows(), G.cols());
    timesTransposed(G, tc.W_skip, dx);
    if (rm_.inputHook[size_t(l)].site == HookSite::MlpIn)
        addFrozenNormBackward(cfg_, dx, w2_[size_t(l)], rm_.ln2Scale[size_t(l)], T_, out);
    else
        out = dx;
    return out;
}

Matrix GraphBackward::beforeAttnPostNorm(int l, const Matrix& G) const {
    if (!cfg_.postNorms) return G;
    Matrix out = Matrix::Zero(G.rows(), G.cols());
    addFrozenNormBackward(cfg_, G, w1post_[size_t(l)], rm_.ln1PostScale[size_t(l)], T_, out);
    return out;
}

Matrix GraphBackward::attentionBack(int l, const Matrix& G) const {
    return valuePathBack(l, G, false);
}

Matrix GraphBackward::attentionBackByHead(int l, const Matrix& G) const {
    return valuePathBack(l, G, true);
}

Matrix GraphBackward::valuePathBack(int l, const Matrix& G, bool byHead) const {
    const LayerWeights& w = rm_.model->layer(l);
    const std::shared_ptr<const LayerCache> c = rm_.clean.layer(l);
    const int H = cfg_.n_heads, dh = cfg_.d_head, group = cfg_.groupSize();
    const Eigen::Index BT = G.rows(), B = BT / T_, blocks = byHead ? H : 1;
    Matrix Y, back;
    timesTransposed(cfg_.postNorms ? beforeAttnPostNorm(l, G) : G, w.W_O, Y); // [B·T, n_heads·d_head]: ∂/∂z
    Matrix dV = Matrix::Zero(blocks * BT, Eigen::Index(H / group) * dh); // byHead: head h's rows h·B·T …
    for (int h = 0; h < H; ++h) {
        const Matrix Pt = c->pattern[size_t(h)].transpose();
        const Eigen::Index r0 = byHead ? Eigen::Index(h) * BT : 0;
        for (Eigen::Index b = 0; b < B; ++b)
            dV.block(r0 + b * T_, Eigen::Index(h / group) * dh, T_, dh).noalias() += Pt * Y.block(b * T_, Eigen::Index(h) * dh, T_, dh);
    }
    timesTransposed(dV, w.W_V, back); // [blocks·B·T, d_model]: ∂/∂ln1
    Matrix out = Matrix::Zero(blocks * BT, cfg_.d_model);
    addFrozenNormBackward(cfg_, back, w1_[size_t(l)], rm_.ln1Scale[size_t(l)], T_, out); // row r's σ: position r mod T
    return out;
}

} // namespace attnscope
