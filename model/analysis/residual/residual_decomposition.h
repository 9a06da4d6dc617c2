#pragma once
// Residual-stream decomposition: the residual at a layer boundary and position written as the sum of
// what each component wrote into it (Elhage et al. 2021, "A Mathematical Framework for Transformer
// Circuits": the residual stream is a sum of the embeddings and every block's output).
// Mirrors TransformerLens ActivationCache.decompose_resid / stack_head_results (embed, pos_embed,
// per-head results, per-layer b_O, per-layer mlp_out).

#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <QString>
#include <vector>

namespace attnscope {

/// What wrote a component into the residual stream.
enum class ComponentKind {
    Embed,    ///< "embed": W_E[token]
    PosEmbed, ///< "pos_embed": W_pos[position] (absent for rotary models)
    Head,     ///< "L{l}H{h}": result of head h of layer l, z_h·W_O^h (no bias); for post-norm models (Gemma 2) through
              ///< the post-attention norm with the position's divisor σ of the whole output: z_h·W_O^h / σ ⊙ w_post
    AttnBias, ///< "L{l}b_O": the attention output bias of layer l (shared by its heads)
    Mlp       ///< "L{l}MLP": mlp_out of layer l, including b_out
};

/// Names one residual component. layer/head are -1 where they do not apply.
struct ComponentId {
    QString name;
    ComponentKind kind = ComponentKind::Embed;
    int layer = -1;
    int head = -1;
};

/// One component's vector at a position: [d_model].
struct ResidualComponent : ComponentId {
    Vector vec;
};

/// A point in the residual stream between blocks.
struct ResidualBoundary {
    enum class Point {
        Pre, ///< resid_pre of `layer` (before its attention)
        Mid, ///< resid_mid of `layer` (after attention, before the MLP)
        Post ///< resid_post of `layer` (after its MLP); Post of the last layer is the final residual
    };
    int layer = 0;
    Point point = Point::Pre;

    /// resid_post of the last layer: the input of ln_final.
    static ResidualBoundary finalResidual(const ModelConfig& cfg) { return {cfg.n_layers - 1, Point::Post}; }
};

struct ResidualDecomposition {
    ResidualBoundary boundary;
    int position = 0;
    std::vector<ResidualComponent> components; ///< forward order: embed, pos_embed, then per layer heads, b_O, MLP
    Vector residual;                           ///< [d_model] the cached residual at boundary/position
    double maxAbsError = 0;                    ///< max_i |Σ components - residual|_i (float32 rounding only)
};

/// The cached residual at `boundary`: [pos, d_model] (resid_pre / resid_mid / resid_post of the layer).
/// Throws InputError if the layer is outside [0, n_layers) or the cache has no such layer.
const Matrix& residualAt(const ActivationCache& cache, ResidualBoundary boundary);

/// The components that make up the residual at `boundary`, in forward order, without values.
/// Layers before boundary.layer contribute heads, b_O (if the model has one) and the MLP; the boundary's
/// own layer contributes its attention for Mid and Post and its MLP for Post.
std::vector<ComponentId> residualComponents(const ModelConfig& cfg, ResidualBoundary boundary);

/// Decomposes the residual at `boundary` and `position` into its components (see ComponentKind).
/// Head results are z_h[p]·W_O^h from the cached z (every cache layout keeps z and mlp_out, so nothing is
/// recomputed and full and residuals-only caches give the same bits). Throws InputError for a boundary or position outside the cache.
/// Post-norm models (Gemma 2): w_post/σ [d_model], the factor that takes a part of layer `layer`'s attention output
/// before its post-norm (a head's z_h·W_O^h, b_O) to its share of attn_out at `position`, σ being the post-norm's
/// divisor of the whole output there (recomputed from the cached z, in every cache layout). With every part so
/// scaled the parts sum to attn_out exactly: the norm is linear once its divisor is fixed (the convention of DLA
/// through ln_final). Only meaningful when ModelConfig::postNorms.
RowVector attnPostNormFactor(const Model& model, const ActivationCache& cache, int layer, int position);

ResidualDecomposition decomposeResidual(const Model& model, const ActivationCache& cache,
                                        ResidualBoundary boundary, int position);

/// Lays per-component numbers out as a [n_layers, n_heads + 1] table: entry (l, h) is head h of layer l
/// and column n_heads is layer l's MLP. Embeddings and b_O have no cell; cells of layers past the
/// components' boundary are 0. `value(component)` gives the number for one component.
template <class Component, class ValueFn>
Matrix layerHeadTable(const ModelConfig& cfg, const std::vector<Component>& components, ValueFn value) {
    Matrix table = Matrix::Zero(cfg.n_layers, cfg.n_heads + 1);
    for (const Component& c : components) {
        if (c.kind == ComponentKind::Head) table(c.layer, c.head) = float(value(c));
        else if (c.kind == ComponentKind::Mlp) table(c.layer, cfg.n_heads) = float(value(c));
    }
    return table;
}

/// L2 norm ‖component‖ of every head result and MLP output in `decomposition`, as a
/// [n_layers, n_heads + 1] table (last column = MLP). How much each block wrote at that position.
Matrix componentNormTable(const ModelConfig& cfg, const ResidualDecomposition& decomposition);

} // namespace attnscope
