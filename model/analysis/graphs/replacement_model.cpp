#include "model/analysis/graphs/replacement_model.h"

#include "model/core/file_mappings.h"

#include "model/core/errors.h"
#include "model/core/weight_gemm.h"
#include "model/features/sparse_coder.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/forward.h"

#include <QDir>

namespace attnscope {

namespace {

QString setLabel(const DictionarySet& set) { return QDir::toNativeSeparators(set.path); }

/// Checks that `set` is a per-layer transcoder set the replacement model can use; returns each layer's input hook.
std::vector<HookPoint> requireTranscoderSet(const DictionarySet& set, const ModelConfig& cfg) {
    const QString label = setLabel(set);
    if (set.kind == QLatin1String("crosscoder"))
        throw InputError(QStringLiteral("%1: a crosscoder reconstructs the residual stream, not the MLPs' outputs: an attribution graph "
                                        "needs transcoders").arg(label));
    if (!set.crossLayerDecoders.empty()) {
        bool whole = int(set.crossLayerDecoders.size()) == cfg.n_layers;
        for (size_t i = 0; whole && i < set.crossLayerDecoders.size(); ++i) whole = int(set.crossLayerDecoders[i].size()) == cfg.n_layers - int(i);
        if (!whole)
            throw InputError(QStringLiteral("%1: a cross-layer transcoder for this model needs %2 source layers, each decoding into "
                                            "every layer from its own up").arg(label).arg(cfg.n_layers));
    }
    if (int(set.coders.size()) != cfg.n_layers)
        throw InputError(QStringLiteral("%1: an attribution graph needs one transcoder per layer: the set has %2 but the "
                                        "model has %3 layers").arg(label).arg(set.coders.size()).arg(cfg.n_layers));
    requireFitsModel(set, cfg);
    std::vector<HookPoint> in;
    for (int l = 0; l < cfg.n_layers; ++l) {
        const SparseCoder& c = set.coders[size_t(l)];
        const HookPoint hin = requireHook(cfg, c.hookIn, c.d_in, label);
        const HookPoint hout = requireHook(cfg, c.hookOut, c.d_out, label);
        if (hin.layer != l || (hin.site != HookSite::MlpIn && hin.site != HookSite::ResidMid))
            throw InputError(QStringLiteral("%1: transcoder %2 reads %3, but an attribution graph needs layer %2's MLP "
                                            "input (blocks.%2.ln2.hook_normalized or blocks.%2.hook_resid_mid)")
                                 .arg(label).arg(l).arg(c.hookIn));
        if (hout.layer != l || hout.site != HookSite::MlpOut)
            throw InputError(QStringLiteral("%1: transcoder %2 writes %3, but an attribution graph needs blocks.%2.hook_mlp_out")
                                 .arg(label).arg(l).arg(c.hookOut));
        if (c.normalization != InputNormalization::None || c.activation == FeatureActivation::Gated ||
            c.activation == FeatureActivation::MatchingPursuit)
            throw InputError(QStringLiteral("%1: transcoder %2's encoder is not linear in its input (an input normalisation, "
                                            "a gated encoder or matching pursuit): attribution graphs need x·W_enc + b_enc").arg(label).arg(l));
        in.push_back(hin);
    }
    return in;
}

/// A norm with its divisor frozen: (x − mean(x))/σ ⊙ w + b per row (RMSNorm: x/σ ⊙ w), σ [rows] given.
Matrix frozenNorm(const ModelConfig& cfg, const Matrix& x, const Vector& sigma, const Weight& w, const Weight& b) {
    Matrix y = x;
    if (cfg.norm == NormKind::LayerNorm) y.colwise() -= x.rowwise().mean();
    y.array().colwise() /= sigma.array();
    y.array().rowwise() *= w.toMatrix().row(0).array();
    if (!b.empty()) y.rowwise() += b.toMatrix().row(0);
    return y;
}

Vector normScale(const ModelConfig& cfg, const Matrix& x, const Weight& w, const Weight& b) {
    Vector s;
    applyNorm(cfg, x, w, b, &s);
    return s;
}

} // namespace

qint64 largestEncoderBytes(const DictionarySet& set) {
    qint64 most = 0;
    for (const SparseCoder& c : set.coders) most = std::max(most, qint64(c.W_enc.storedSpanBytes()));
    return most;
}

qint64 replacementModelBytes(const ModelConfig& cfg, int nPositions, qint64 dTranscoder, qint64 encoderLayerBytes) {
    ForwardOptions fo;
    fo.cacheHeadResults = false;
    const qint64 T = nPositions;
    // activations [pos, d_transcoder] per layer, and the encode's pre-activations of one layer (2 copies)
    const qint64 features = T * dTranscoder * 4 + 2 * T * (dTranscoder / std::max(cfg.n_layers, 1) + 1) * 4;
    const qint64 perLayer = 4 * T * cfg.d_model * 4 + 4 * T * 4; // errors, the input and its reconstruction; divisors
    return estimateCacheBytes(cfg, nPositions, fo).totalWithoutHeadResults() + features + cfg.n_layers * perLayer + encoderLayerBytes;
}

SparseCoder decoderInto(const ReplacementModel& rm, int source, int target) {
    SparseCoder c = rm.transcoders->coders[size_t(source)];
    if (source == target) return c;
    if (!rm.crossLayer() || source > target)
        throw InputError(QStringLiteral("%1: layer %2's transcoder writes only into layer %2, not %3")
                             .arg(setLabel(*rm.transcoders)).arg(source).arg(target));
    c.W_dec = rm.transcoders->crossLayerDecoders[size_t(source)][size_t(target - source)];
    c.b_dec = Weight{};
    c.W_skip = Weight{};
    return c;
}

Matrix reconstructMlpOut(const ReplacementModel& rm, const std::vector<Matrix>& activations, int layer, const Matrix& x) {
    Matrix out = decodeFeatures(rm.transcoders->coders[size_t(layer)], activations[size_t(layer)], x);
    if (rm.crossLayer())
        for (int i = 0; i < layer; ++i) out += decodeFeatures(decoderInto(rm, i, layer), activations[size_t(i)], x);
    return out;
}

Matrix encodeStreamed(const SparseCoder& tc, const Matrix& x) {
    Matrix f = encodeFeatures(tc, x);
    dropMappedPages(tc.W_enc.ptr, tc.W_enc.storedSpanBytes());
    return f;
}

void releaseDecoderPages(const DictionarySet& set, int layer) {
    if (set.crossLayerDecoders.empty()) {
        const Weight& w = set.coders[size_t(layer)].W_dec;
        dropMappedPages(w.ptr, w.storedSpanBytes());
    } else if (layer == int(set.coders.size()) - 1) {
        for (const std::vector<Weight>& slices : set.crossLayerDecoders)
            for (const Weight& w : slices) dropMappedPages(w.ptr, w.storedSpanBytes());
    }
}

void releaseEncoderPages(const DictionarySet& set, int layer) {
    const Weight& w = set.coders[size_t(layer)].W_enc;
    dropMappedPages(w.ptr, w.storedSpanBytes());
}

ReplacementModel buildReplacementModel(const Model& model, const DictionarySet& transcoders, std::span<const int> tokens,
                                       const Progress& progress) {
    const ModelConfig& cfg = model.config();
    ReplacementModel rm;
    rm.model = &model;
    rm.transcoders = &transcoders;
    rm.inputHook = requireTranscoderSet(transcoders, cfg);
    rm.tokens.assign(tokens.begin(), tokens.end());
    qint64 dTranscoder = 0;
    for (const SparseCoder& c : transcoders.coders) dTranscoder += c.d_sae;
    const qint64 need = replacementModelBytes(cfg, int(tokens.size()), dTranscoder, largestEncoderBytes(transcoders));
    requireWithinBudget(need, [&](const CacheBudget& budget) {
        return QStringLiteral("The replacement model of %1 positions (the clean run, and %2 transcoder activations per position) "
                              "needs %3, but the memory budget is %4 (%5). Shorten the prompt.")
            .arg(tokens.size()).arg(dTranscoder).arg(formatBytes(need), formatBytes(budget.bytes), budget.origin);
    });
    ForwardOptions fo;
    fo.cacheHeadResults = false;
    rm.clean = runForward(model, tokens, fo, progress);
    const bool bos = !rm.tokens.empty() && rm.tokens.front() == cfg.bos_token_id;
    const GlobalWeights& g = model.globals();
    for (int l = 0; l < cfg.n_layers; ++l) {
        progress.checkCancelled();
        const SparseCoder& tc = transcoders.coders[size_t(l)];
        const LayerCache& c = rm.clean.stored(l);
        const LayerWeights& w = model.layer(l);
        const Matrix x = hookActivation(rm.clean, rm.inputHook[size_t(l)]);
        rm.activations.push_back(encodeStreamed(tc, x));
        if (bos) rm.activations.back().row(0).setZero(); // circuit-tracer zeroes the BOS position: its MLP output is a constant
        Matrix err = c.mlp_out - reconstructMlpOut(rm, rm.activations, l, x);
        releaseDecoderPages(transcoders, l);
        if (bos) err.row(0).setZero();
        rm.errors.push_back(std::move(err));
        rm.ln1Scale.push_back(normScale(cfg, c.resid_pre, w.ln1_w, w.ln1_b));
        rm.ln2Scale.push_back(normScale(cfg, c.resid_mid, w.ln2_w, w.ln2_b));
        rm.ln1PostScale.push_back(cfg.postNorms ? normScale(cfg, rm.clean.layer(l)->attn_out_pre_norm, w.ln1_post_w, Weight{}) : Vector());
    }
    rm.lnFinalScale = normScale(cfg, rm.clean.stored(cfg.n_layers - 1).resid_post, g.ln_final_w, g.ln_final_b);
    return rm;
}

namespace {

/// The frozen replacement model's layers [0, upTo) run on `resid` (the embeddings' sum on entry, resid_pre of layer upTo
/// on return), with the given activations and errors; `inputs` as replacementLogits.
void runFrozenLayers(const ReplacementModel& rm, const std::vector<Matrix>& activations, const std::vector<Matrix>& errors,
                     int upTo, Matrix& resid, std::vector<Matrix>* inputs) {
    const Model& model = *rm.model;
    const ModelConfig& cfg = model.config();
    const bool bos = !rm.tokens.empty() && rm.tokens.front() == cfg.bos_token_id;
    const int H = cfg.n_heads, dh = cfg.d_head, group = cfg.groupSize();
    if (inputs) inputs->clear();
    for (int l = 0; l < upTo; ++l) {
        const LayerWeights& w = model.layer(l);
        const std::shared_ptr<const LayerCache> held = rm.clean.layer(l);
        const Matrix ln1 = frozenNorm(cfg, resid, rm.ln1Scale[size_t(l)], w.ln1_w, w.ln1_b);
        Matrix v, z(resid.rows(), Eigen::Index(H) * dh), attn;
        weightGemm(ln1, w.W_V, w.b_V, v);
        for (int h = 0; h < H; ++h) // frozen pattern · V (a grouped-query head reads its shared V head)
            z.middleCols(Eigen::Index(h) * dh, dh).noalias() = held->pattern[size_t(h)] * v.middleCols(Eigen::Index(h / group) * dh, dh);
        weightGemm(z, w.W_O, w.b_O, attn);
        if (cfg.postNorms) attn = frozenNorm(cfg, attn, rm.ln1PostScale[size_t(l)], w.ln1_post_w, Weight{});
        resid += attn;
        const Matrix x = rm.inputHook[size_t(l)].site == HookSite::ResidMid
                             ? resid
                             : frozenNorm(cfg, resid, rm.ln2Scale[size_t(l)], w.ln2_w, w.ln2_b);
        const SparseCoder& own = rm.transcoders->coders[size_t(l)];
        Matrix mlp = activations.empty() ? decodeFeatures(own, Matrix::Zero(x.rows(), own.d_sae), x) // b_dec and the skip only
                                         : reconstructMlpOut(rm, activations, l, x);
        if (!errors.empty()) mlp += errors[size_t(l)];
        if (inputs) inputs->push_back(x);
        if (bos) mlp.row(0) = rm.clean.stored(l).mlp_out.row(0);
        resid += mlp;
    }
}

} // namespace

Matrix replacementLogits(const ReplacementModel& rm, const std::vector<Matrix>& activations, const std::vector<Matrix>& errors,
                         std::vector<Matrix>* inputs) {
    const GlobalWeights& g = rm.model->globals();
    Matrix resid = rm.clean.embed + rm.clean.pos_embed;
    runFrozenLayers(rm, activations, errors, rm.model->config().n_layers, resid, inputs);
    const Matrix lnf = frozenNorm(rm.model->config(), resid, rm.lnFinalScale, g.ln_final_w, g.ln_final_b);
    Matrix logits;
    weightGemmTransposed(lnf, g.W_U_T, logits);
    if (!g.b_U.empty()) logits.rowwise() += g.b_U.toMatrix().row(0);
    return logits;
}

Matrix replacementResidPre(const ReplacementModel& rm, const std::vector<Matrix>& activations, const std::vector<Matrix>& errors,
                           const Matrix& embed, int layer) {
    if (layer < 0 || layer >= rm.model->config().n_layers)
        throw InputError(QStringLiteral("layer %1: the model has layers 0 … %2").arg(layer).arg(rm.model->config().n_layers - 1));
    Matrix resid = embed + rm.clean.pos_embed;
    runFrozenLayers(rm, activations, errors, layer, resid, nullptr);
    return resid;
}

} // namespace attnscope
