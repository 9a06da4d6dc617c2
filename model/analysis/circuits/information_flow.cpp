#include "model/analysis/circuits/information_flow.h"

#include "model/analysis/common/input_checks.h"
#include "model/core/errors.h"
#include "model/core/weight_gemm.h"
#include "model/transformer/forward.h"

#include <QCoreApplication>
#include <algorithm>
#include <cmath>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("flow", text); }

template <class A>
float distance(const A& x, FlowNorm norm) {
    return norm == FlowNorm::L1 ? x.matrix().template lpNorm<1>() : x.matrix().norm();
}

/// The proximities of the parts (given by their distances to the whole) normalised in place, with the
/// residual's last: max(0, ‖y‖ − d_k) / Σ.
void normaliseProximities(float wholeNorm, float* distances, size_t n) {
    double sum = 0;
    for (size_t k = 0; k < n; ++k) {
        distances[k] = std::max(0.0f, wholeNorm - distances[k]);
        sum += distances[k];
    }
    for (size_t k = 0; k < n; ++k) distances[k] = sum > 0 ? float(distances[k] / sum) : 0.0f;
}

} // namespace

QString flowNormName(FlowNorm norm) { return norm == FlowNorm::L1 ? QStringLiteral("l1") : QStringLiteral("l2"); }

QString flowEdgeKindName(FlowEdge::Kind kind) {
    switch (kind) {
    case FlowEdge::Kind::Attention: return QStringLiteral("attn");
    case FlowEdge::Kind::Mlp: return QStringLiteral("mlp");
    case FlowEdge::Kind::Residual: break;
    }
    return QStringLiteral("resid");
}

std::vector<double> proximityContributions(const std::vector<Vector>& parts, const Vector& residual, const Vector& whole,
                                           FlowNorm norm) {
    const Eigen::VectorXd y = whole.cast<double>();
    const auto dist = [norm](const Eigen::VectorXd& x) { return norm == FlowNorm::L1 ? x.lpNorm<1>() : x.norm(); };
    const double wholeNorm = dist(y);
    std::vector<double> c;
    for (const Vector& p : parts) c.push_back(std::max(0.0, wholeNorm - dist(y - p.cast<double>())));
    c.push_back(std::max(0.0, wholeNorm - dist(y - residual.cast<double>())));
    double sum = 0;
    for (double v : c) sum += v;
    for (double& v : c) v = sum > 0 ? v / sum : 0.0;
    return c;
}

void thresholdAndRenormalise(double tau, std::vector<double>& blocks, double& residual) {
    double sum = 0;
    for (double& b : blocks) {
        if (!(b > tau)) b = 0;
        sum += b;
    }
    if (!(residual > tau)) residual = 0;
    sum += residual;
    if (sum <= 0) return;
    for (double& b : blocks) b /= sum;
    residual /= sum;
}

FlowContributions flowContributions(const Model& model, const ActivationCache& cache, FlowNorm norm, const Progress& progress) {
    const ModelConfig& cfg = model.config();
    const int S = cache.nPositions(), H = cfg.n_heads, L = cfg.d_head, nLayers = cfg.n_layers;
    const Eigen::Index D = cfg.d_model;
    if (cache.nLayers() != nLayers) throw InputError(tr("The activation cache does not belong to this model."));
    FlowContributions out;
    out.norm = norm;
    out.nLayers = nLayers;
    out.nHeads = H;
    out.nPositions = S;
    out.attention.resize(size_t(nLayers));
    out.attentionResidual.resize(nLayers, S);
    out.mlp.resize(nLayers, S);
    out.mlpResidual.resize(nLayers, S);
    std::vector<Matrix> U(static_cast<size_t>(H)); // [head][key pos, d_model]: v_{j,h}·W_O^h
    for (int l = 0; l < nLayers; ++l) {
        progress.step(l, nLayers, tr("information flow: layer %1").arg(l));
        const std::shared_ptr<const LayerCache> lc = cache.layer(l, progress);
        const LayerWeights& w = model.layer(l);
        for (Matrix& u : U) u.resize(S, D);
#pragma omp parallel for schedule(static)
        for (int h = 0; h < H; ++h)
            weightGemm(lc->v.data() + Eigen::Index(h) * L, S, L, lc->v.cols(), w.W_O_head(h, L), U[size_t(h)].data(), D, false);
        // post-norm models (Gemma 2): a head's part reaches the residual through the post-norm with the query
        // position's divisor σ_i: ⊙ w_post/σ_i
        const Matrix postFactor = cfg.postNorms ? postNormFactors(cfg, lc->attn_out_pre_norm, w.ln1_post_w) : Matrix();
        std::vector<float>& c = out.attention[size_t(l)];
        c.assign(size_t(S) * size_t(S + 1) / 2 * size_t(H), 0.0f);
        const Matrix& y = lc->resid_mid;
#pragma omp parallel for schedule(dynamic)
        for (int i = S - 1; i >= 0; --i) { // longest rows first
            const auto yi = y.row(i).array();
            const float yNorm = distance(yi, norm);
            float* row = c.data() + size_t(i) * size_t(i + 1) / 2 * size_t(H);
            for (int j = 0; j <= i; ++j)
                for (int h = 0; h < H; ++h) {
                    const float a = lc->pattern[size_t(h)](i, j);
                    row[size_t(j) * size_t(H) + size_t(h)] =
                        a == 0.0f ? yNorm
                        : postFactor.size() ? distance(yi - a * U[size_t(h)].row(j).array() * postFactor.row(i).array(), norm)
                                            : distance(yi - a * U[size_t(h)].row(j).array(), norm);
                }
            std::vector<float> all(row, row + size_t(i + 1) * size_t(H));
            all.push_back(distance(yi - lc->resid_pre.row(i).array(), norm));
            normaliseProximities(yNorm, all.data(), all.size());
            std::copy(all.begin(), all.end() - 1, row);
            out.attentionResidual(l, i) = all.back();
            float m[2] = {distance(lc->resid_post.row(i).array() - lc->mlp_out.row(i).array(), norm),
                          distance(lc->resid_post.row(i).array() - lc->resid_mid.row(i).array(), norm)};
            normaliseProximities(distance(lc->resid_post.row(i).array(), norm), m, 2);
            out.mlp(l, i) = m[0];
            out.mlpResidual(l, i) = m[1];
        }
    }
    progress.step(nLayers, nLayers, tr("information flow"));
    return out;
}

FlowGraph flowGraph(const FlowContributions& fc, const FlowOptions& options) {
    const int S = fc.nPositions, H = fc.nHeads, nL = fc.nLayers;
    FlowGraph g;
    g.norm = fc.norm;
    g.options = options;
    g.options.position = resolvePosition(options.position, S);
    g.nLayers = nL;
    g.nPositions = S;
    if (!(options.threshold >= 0)) throw InputError(tr("The threshold must be ≥ 0, got %1.").arg(options.threshold));
    const double tau = options.threshold;
    const bool everything = tau == 0;
    const bool renormalise = options.renormalise && !everything;

    // every edge with its weight; per representation renormalised first when asked
    std::vector<FlowEdge> all;
    for (int l = 0; l < nL; ++l) {
        for (int i = 0; i < S; ++i) {
            std::vector<double> blocks(size_t(i + 1) * size_t(H));
            for (int j = 0; j <= i; ++j)
                for (int h = 0; h < H; ++h) blocks[size_t(j) * size_t(H) + size_t(h)] = fc.attentionPart(l, i, j, h);
            double resid = fc.attentionResidual(l, i);
            if (renormalise) thresholdAndRenormalise(tau, blocks, resid);
            for (int j = 0; j <= i; ++j) {
                FlowEdge e{FlowEdge::Kind::Attention, 2 * l, j, 2 * l + 1, i, 0.0, {}};
                e.heads.assign(blocks.begin() + j * H, blocks.begin() + (j + 1) * H);
                for (double v : e.heads) e.weight += v;
                all.push_back(std::move(e));
            }
            all.push_back({FlowEdge::Kind::Residual, 2 * l, i, 2 * l + 1, i, resid, {}});
        }
        for (int i = 0; i < S; ++i) {
            std::vector<double> blocks{double(fc.mlp(l, i))};
            double resid = fc.mlpResidual(l, i);
            if (renormalise) thresholdAndRenormalise(tau, blocks, resid);
            all.push_back({FlowEdge::Kind::Mlp, 2 * l + 1, i, 2 * l + 2, i, blocks[0], {}});
            all.push_back({FlowEdge::Kind::Residual, 2 * l + 1, i, 2 * l + 2, i, resid, {}});
        }
    }
    if (everything) {
        g.edges = std::move(all);
        return g;
    }
    // backwards from the output node along edges above τ
    const int nB = 2 * nL + 1;
    std::vector<std::vector<int>> into(size_t(nB) * size_t(S)); // node → indices of its incoming edges
    for (size_t k = 0; k < all.size(); ++k) into[size_t(all[k].toBoundary) * size_t(S) + size_t(all[k].toPosition)].push_back(int(k));
    std::vector<char> seen(into.size(), 0), keep(all.size(), 0);
    std::vector<int> stack{(nB - 1) * S + g.options.position};
    seen[size_t(stack[0])] = 1;
    while (!stack.empty()) {
        const int node = stack.back();
        stack.pop_back();
        for (int k : into[size_t(node)]) {
            if (!(all[size_t(k)].weight > tau)) continue;
            keep[size_t(k)] = 1;
            const int from = all[size_t(k)].fromBoundary * S + all[size_t(k)].fromPosition;
            if (!seen[size_t(from)]) {
                seen[size_t(from)] = 1;
                stack.push_back(from);
            }
        }
    }
    for (size_t k = 0; k < all.size(); ++k)
        if (keep[k]) g.edges.push_back(std::move(all[k]));
    return g;
}

std::vector<NeuronContribution> mlpNeuronContributions(const Model& model, const ActivationCache& cache, int layer, int position,
                                                       FlowNorm norm, int k, double* residual) {
    const ModelConfig& cfg = model.config();
    if (layer < 0 || layer >= cfg.n_layers)
        throw InputError(tr("Layer %1 is outside the model's layers 0..%2.").arg(layer).arg(cfg.n_layers - 1));
    requirePosition(position, cache.nPositions());
    const std::shared_ptr<const LayerCache> lc = cache.layer(layer);
    const Weight& W_out = model.layer(layer).W_out;
    const Eigen::VectorXd y = lc->resid_post.row(position).transpose().cast<double>();
    // post-norm models (Gemma 2): a neuron's part reaches the residual through the post-MLP norm's divisor at the position
    const Eigen::RowVectorXd postFactor =
        cfg.postNorms ? Eigen::RowVectorXd(postNormFactors(cfg, Matrix(lc->mlp_out_pre_norm.row(position)), model.layer(layer).ln2_post_w)
                                               .row(0).cast<double>())
                      : Eigen::RowVectorXd::Ones(cfg.d_model);
    const auto dist = [norm](const Eigen::VectorXd& x) { return norm == FlowNorm::L1 ? x.lpNorm<1>() : x.norm(); };
    const double yNorm = dist(y);
    const int M = int(lc->mlp_post.cols());
    std::vector<double> prox(size_t(M) + 1);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < M; ++n) {
        const Eigen::VectorXd part =
            (double(lc->mlp_post(position, n)) * W_out.rowVector(n).cast<double>().cwiseProduct(postFactor)).transpose();
        prox[size_t(n)] = std::max(0.0, yNorm - dist(y - part));
    }
    prox[size_t(M)] = std::max(0.0, yNorm - dist(y - lc->resid_mid.row(position).transpose().cast<double>()));
    double sum = 0;
    for (double v : prox) sum += v;
    std::vector<NeuronContribution> out;
    for (int n = 0; n < M; ++n) out.push_back({n, sum > 0 ? prox[size_t(n)] / sum : 0.0});
    if (residual) *residual = sum > 0 ? prox[size_t(M)] / sum : 0.0;
    const size_t keepN = size_t(std::clamp(k, 0, M));
    std::partial_sort(out.begin(), out.begin() + long(keepN), out.end(), [](const NeuronContribution& a, const NeuronContribution& b) {
        return a.weight > b.weight || (a.weight == b.weight && a.neuron < b.neuron);
    });
    out.resize(keepN);
    return out;
}

} // namespace attnscope
