#include "model/analysis/residual/residual_decomposition.h"

#include "model/analysis/common/input_checks.h"
#include "model/core/errors.h"
#include "model/transformer/forward.h"

#include <QCoreApplication>

namespace attnscope {

namespace {

void checkBoundary(const ActivationCache& cache, ResidualBoundary b) {
    if (b.layer < 0 || b.layer >= cache.nLayers())
        throw InputError(QCoreApplication::translate("analysis", "Layer %1 is outside the model's layers [0, %2).")
                             .arg(b.layer).arg(cache.nLayers()));
}

/// Row `position` of head h's result in layer l: z_h[p]·W_O^h from the cached z. Every cache layout keeps
/// z, so this never recomputes a layer, and the number is the same whether or not the per-head results
/// were cached (their GEMM rows can differ from this product in the last bit).
Vector headResult(const Model& model, const ActivationCache& cache, int l, int h, int position) {
    const LayerCache& lc = cache.stored(l);
    const int L = model.config().d_head;
    const RowVector z = lc.z.row(position).segment(Eigen::Index(h) * L, L);
    RowVector r = z * model.layer(l).W_O_head(h, L).toMatrix();
    if (model.config().postNorms) r.array() *= attnPostNormFactor(model, cache, l, position).array();
    return r.transpose();
}

} // namespace

RowVector attnPostNormFactor(const Model& model, const ActivationCache& cache, int layer, int position) {
    const ModelConfig& cfg = model.config();
    const LayerWeights& w = model.layer(layer);
    RowVector pre = cache.stored(layer).z.row(position) * w.W_O.toMatrix();
    if (!w.b_O.empty()) pre += w.b_O.rowVector(0);
    return postNormFactors(cfg, Matrix(pre), w.ln1_post_w).row(0);
}

const Matrix& residualAt(const ActivationCache& cache, ResidualBoundary b) {
    checkBoundary(cache, b);
    const LayerCache& lc = cache.stored(b.layer);
    switch (b.point) {
    case ResidualBoundary::Point::Pre: return lc.resid_pre;
    case ResidualBoundary::Point::Mid: return lc.resid_mid;
    case ResidualBoundary::Point::Post: break;
    }
    return lc.resid_post;
}

std::vector<ComponentId> residualComponents(const ModelConfig& cfg, ResidualBoundary b) {
    std::vector<ComponentId> ids;
    ids.push_back({QStringLiteral("embed"), ComponentKind::Embed, -1, -1});
    if (cfg.positions == PositionKind::Learned) ids.push_back({QStringLiteral("pos_embed"), ComponentKind::PosEmbed, -1, -1});
    for (int l = 0; l <= b.layer && l < cfg.n_layers; ++l) {
        const bool attention = l < b.layer || b.point != ResidualBoundary::Point::Pre;
        const bool mlp = l < b.layer || b.point == ResidualBoundary::Point::Post;
        if (attention) {
            for (int h = 0; h < cfg.n_heads; ++h)
                ids.push_back({QStringLiteral("L%1H%2").arg(l).arg(h), ComponentKind::Head, l, h});
            ids.push_back({QStringLiteral("L%1b_O").arg(l), ComponentKind::AttnBias, l, -1});
        }
        if (mlp) ids.push_back({QStringLiteral("L%1MLP").arg(l), ComponentKind::Mlp, l, -1});
    }
    return ids;
}

ResidualDecomposition decomposeResidual(const Model& model, const ActivationCache& cache, ResidualBoundary boundary,
                                        int position) {
    checkBoundary(cache, boundary);
    requirePosition(position, cache.nPositions());
    const ModelConfig& cfg = model.config();
    ResidualDecomposition out;
    out.boundary = boundary;
    out.position = position;
    out.residual = residualAt(cache, boundary).row(position).transpose();
    Vector sum = Vector::Zero(cfg.d_model);
    for (const ComponentId& id : residualComponents(cfg, boundary)) {
        Vector v;
        switch (id.kind) {
        case ComponentKind::Embed: v = cache.embed.row(position).transpose(); break;
        case ComponentKind::PosEmbed: v = cache.pos_embed.row(position).transpose(); break;
        case ComponentKind::Head: v = headResult(model, cache, id.layer, id.head, position); break;
        case ComponentKind::AttnBias: {
            const Weight& b_O = model.layer(id.layer).b_O;
            if (b_O.empty()) continue; // e.g. Llama: no attention output bias, no component
            v = b_O.rowVector(0).transpose();
            if (cfg.postNorms) v.array() *= attnPostNormFactor(model, cache, id.layer, position).transpose().array();
            break;
        }
        case ComponentKind::Mlp: v = cache.stored(id.layer).mlp_out.row(position).transpose(); break;
        }
        sum += v;
        out.components.push_back({id, std::move(v)});
    }
    out.maxAbsError = cfg.d_model ? double((sum - out.residual).cwiseAbs().maxCoeff()) : 0.0;
    return out;
}

Matrix componentNormTable(const ModelConfig& cfg, const ResidualDecomposition& decomposition) {
    return layerHeadTable(cfg, decomposition.components, [](const ResidualComponent& c) { return c.vec.norm(); });
}

} // namespace attnscope
