#include "model/analysis/graphs/feature_intervention.h"

#include "model/analysis/graphs/attribution_graph.h"
#include "model/core/errors.h"
#include "model/features/sparse_coder.h"
#include "model/transformer/forward.h"
#include "model/transformer/generate.h"

#include <QDir>
#include <QRegularExpression>
#include <cmath>
#include <memory>

namespace attnscope {

namespace {

void requireInterventions(const ReplacementModel& rm, std::span<const FeatureIntervention> interventions) {
    const QString label = QDir::toNativeSeparators(rm.transcoders->path);
    for (const FeatureIntervention& iv : interventions) {
        if (iv.layer < 0 || iv.layer >= rm.nLayers())
            throw InputError(QStringLiteral("%1: an intervention names layer %2, but the model has %3 layers").arg(label).arg(iv.layer).arg(rm.nLayers()));
        if (iv.position < 0 || iv.position >= rm.nPositions())
            throw InputError(QStringLiteral("%1: an intervention names position %2, but the prompt has %3 tokens")
                                 .arg(label).arg(iv.position).arg(rm.nPositions()));
        const int dSae = rm.transcoders->coders[size_t(iv.layer)].d_sae;
        if (iv.feature < 0 || iv.feature >= dSae)
            throw InputError(QStringLiteral("%1: an intervention names feature %2 of layer %3, but its transcoder has d_sae %4")
                                 .arg(label).arg(iv.feature).arg(iv.layer).arg(dSae));
        if (!std::isfinite(iv.value))
            throw InputError(QStringLiteral("%1: an intervention sets feature %2 of layer %3 to %4").arg(label).arg(iv.feature).arg(iv.layer).arg(iv.value));
    }
}

int countActive(const std::vector<Matrix>& activations, bool bos) {
    int n = 0;
    for (const Matrix& f : activations)
        for (Eigen::Index p = bos ? 1 : 0; p < f.rows(); ++p) n += int((f.row(p).array() != 0.0f).count());
    return n;
}

/// What the hooks of one intervened pass share: the resid_mid of the layer being computed, and (on the prompt's
/// own pass) each layer's feature activations as read.
struct LiveState {
    Matrix residMid;
    std::vector<Matrix> activations;
    std::vector<Matrix> deltas; ///< [layer] value − current activation where edited [pos, d_transcoder]; empty elsewhere
    bool record = true;
};

/// circuit-tracer's hooks: patterns of the prompt frozen at the clean run; at each layer, the transcoder read on
/// this pass's MLP input and Σ (value − current activation)·W_dec[f] added to the MLP output.
std::shared_ptr<ForwardHooks> liveHooks(const ReplacementModel& rm, std::span<const FeatureIntervention> interventions,
                                        std::shared_ptr<LiveState> state) {
    const Model& model = *rm.model;
    const ModelConfig& cfg = model.config();
    const bool bos = !rm.tokens.empty() && rm.tokens.front() == cfg.bos_token_id;
    const int S0 = rm.nPositions();
    auto patterns = std::make_shared<std::vector<std::shared_ptr<const LayerCache>>>();
    for (int l = 0; l < rm.nLayers(); ++l) patterns->push_back(rm.clean.layer(l));
    auto byLayer = std::make_shared<std::vector<std::vector<FeatureIntervention>>>(size_t(rm.nLayers()));
    for (const FeatureIntervention& iv : interventions) (*byLayer)[size_t(iv.layer)].push_back(iv);
    auto hooks = std::make_shared<ForwardHooks>();
    hooks->pattern = [patterns, S0](int layer, int head, Matrix& pattern) {
        // new positions (a continuation) attend freely; the prompt's rows keep the clean pattern (causal: its
        // columns past S0 are 0 either way)
        pattern.topLeftCorner(S0, S0) = (*patterns)[size_t(layer)]->pattern[size_t(head)];
        return true;
    };
    hooks->resid_mid = [state](int, Matrix& x) { state->residMid = x; };
    const ReplacementModel* r = &rm;
    hooks->mlp_out = [r, byLayer, state, bos](int layer, Matrix& mlpOut) {
        const std::vector<FeatureIntervention>& edits = (*byLayer)[size_t(layer)];
        const int lowest = r->crossLayer() ? 0 : layer; // the layers whose features write here
        bool steered = false;
        for (int i = lowest; i < layer; ++i) steered = steered || state->deltas[size_t(i)].size() > 0;
        if (edits.empty() && !state->record && !steered) return;
        const Model& m = *r->model;
        const LayerWeights& w = m.layer(layer);
        const Matrix x = r->inputHook[size_t(layer)].site == HookSite::ResidMid ? state->residMid
                                                                                : applyNorm(m.config(), state->residMid, w.ln2_w, w.ln2_b);
        if (!edits.empty() || state->record) {
            Matrix f = encodeStreamed(r->transcoders->coders[size_t(layer)], x);
            if (bos) f.row(0).setZero();
            if (!edits.empty()) {
                Matrix& delta = state->deltas[size_t(layer)];
                delta = Matrix::Zero(f.rows(), f.cols());
                for (const FeatureIntervention& iv : edits) {
                    delta(iv.position, iv.feature) += iv.value - f(iv.position, iv.feature);
                    f(iv.position, iv.feature) = iv.value;
                }
            }
            if (state->record) state->activations[size_t(layer)] = std::move(f);
        }
        // the steering vector decode(f′) − decode(f) = Δ·W_dec, for a cross-layer set from every edited layer below too
        for (int i = lowest; i <= layer; ++i) {
            if (state->deltas[size_t(i)].size() == 0) continue;
            SparseCoder linear = decoderInto(*r, i, layer);
            linear.b_dec = Weight{};
            linear.W_skip = Weight{};
            mlpOut += decodeFeatures(linear, state->deltas[size_t(i)], x);
        }
    };
    return hooks;
}

} // namespace

InterventionResult interveneOnFeatures(const ReplacementModel& rm, std::span<const FeatureIntervention> interventions,
                                       const InterventionOptions& options, const Progress& progress) {
    requireInterventions(rm, interventions);
    const ModelConfig& cfg = rm.model->config();
    const bool bos = !rm.tokens.empty() && rm.tokens.front() == cfg.bos_token_id;
    InterventionResult out;
    if (options.mode == InterventionMode::Frozen) {
        progress.checkCancelled();
        out.activations = rm.activations;
        for (const FeatureIntervention& iv : interventions) out.activations[size_t(iv.layer)](iv.position, iv.feature) = iv.value;
        out.logits = replacementLogits(rm, out.activations, rm.errors);
        out.activeFeatures = countActive(out.activations, bos);
        return out;
    }
    const int passes = 1 + std::max(0, options.continuationTokens);
    auto state = std::make_shared<LiveState>();
    state->activations.resize(size_t(rm.nLayers()));
    state->deltas.resize(size_t(rm.nLayers()));
    ForwardOptions fo;
    fo.cacheHeadResults = false;
    fo.cacheLayers = false;
    fo.hooks = liveHooks(rm, interventions, state);
    progress.step(0, passes, QStringLiteral("Intervening"));
    ActivationCache run = runForward(*rm.model, rm.tokens, fo);
    out.logits = std::move(run.logits);
    out.activations = std::move(state->activations);
    out.activeFeatures = countActive(out.activations, bos);
    if (options.continuationTokens > 0) {
        state->record = false;
        state->activations.assign(size_t(rm.nLayers()), Matrix());
        Progress p;
        p.isCancelled = progress.isCancelled;
        if (progress.report) p.report = [&](qint64 done, qint64, const QString&) { progress.report(1 + done, passes, QStringLiteral("Writing the continuation")); };
        out.continuation = greedyContinuation(*rm.model, rm.tokens, options.continuationTokens, fo.hooks, p);
    }
    progress.step(passes, passes, QStringLiteral("Intervening"));
    return out;
}

FeatureIntervention parseFeatureIntervention(const ReplacementModel& rm, const QString& text) {
    static const QRegularExpression form(QStringLiteral(R"(^\s*(\d+):(\d+):(\d+)\s*([=*])\s*(\S+)\s*$)"));
    const QRegularExpressionMatch m = form.match(text);
    bool ok = false;
    const float number = m.hasMatch() ? m.captured(5).toFloat(&ok) : 0.0f;
    if (!ok)
        throw InputError(QStringLiteral("'%1' is not an intervention: write LAYER:POS:FEATURE=VALUE (set) or LAYER:POS:FEATURE*FACTOR (scale)").arg(text));
    FeatureIntervention iv{m.captured(1).toInt(), m.captured(2).toInt(), m.captured(3).toInt(), number};
    if (m.captured(4) == QLatin1String("*")) {
        requireInterventions(rm, std::span<const FeatureIntervention>(&iv, 1));
        iv.value = number * rm.activations[size_t(iv.layer)](iv.position, iv.feature);
    }
    return iv;
}

std::vector<FeatureIntervention> scaleFeatureNodes(const AttributionGraph& graph, std::span<const int> nodes, float factor) {
    std::vector<FeatureIntervention> out;
    for (int i : nodes) {
        if (i < 0 || i >= graph.nNodes()) continue;
        const GraphNode& n = graph.nodes[size_t(i)];
        if (n.kind != GraphNodeKind::Feature) continue;
        out.push_back({n.layer, n.position, n.id, factor * n.activation});
    }
    return out;
}

} // namespace attnscope
