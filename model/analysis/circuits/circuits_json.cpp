#include "model/analysis/circuits/circuits_json.h"

#include "model/analysis/common/json_number.h"
#include "model/analysis/common/token_json.h"
#include "model/analysis/embedding_space/logit_lens.h"

#include <QJsonArray>
#include <cmath>

namespace attnscope {

namespace {


} // namespace

QJsonObject metricJson(const PatchingMetric& m, const Tokenizer& tok) {
    std::vector<int> tokens;
    for (int t : {m.token, m.counterToken})
        if (t >= 0) tokens.push_back(t);
    return {{QStringLiteral("kind"), patchingMetricKindName(m.kind)}, {QStringLiteral("tokens"), tokenTextsJson(tok, tokens)},
            {QStringLiteral("token_ids"), tokenIdsJson(tokens)}, {QStringLiteral("description"), describePatchingMetric(m, tok)}};
}

QString metricConvention(const PatchingMetric& m, int position) {
    switch (m.kind) {
    case PatchingMetricKind::LogitDiff:
        return QStringLiteral("logit[tokens[0]] − logit[tokens[1]] at position %1 (raw logits, b_U included)").arg(position);
    case PatchingMetricKind::Logit: return QStringLiteral("logit[tokens[0]] at position %1 (raw, b_U included)").arg(position);
    case PatchingMetricKind::Prob: return QStringLiteral("softmax probability of tokens[0] at position %1").arg(position);
    case PatchingMetricKind::LogProb: return QStringLiteral("log softmax probability (nats) of tokens[0] at position %1").arg(position);
    case PatchingMetricKind::KL: break;
    }
    return QStringLiteral("KL(P_clean ‖ P_run) in nats at position %1").arg(position);
}

namespace {

const QString kNormalised = QStringLiteral("(metric − corrupt) / (clean − corrupt): 0 = the corrupted run, 1 = the clean run; "
                                           "null when the two runs give the same metric or there is no corrupted run");
const QString kPositions = QStringLiteral("0-based token positions, BOS included");
const QString kLayers = QStringLiteral("0-based block index; heads 0-based within their layer");

} // namespace

QJsonObject patchingToJson(const PatchingSweep& s, const Tokenizer& tok, std::span<const int> clean, std::span<const int> corrupt) {
    const PatchingOptions& o = s.options;
    const bool heads = isHeadHook(o.hook);
    QJsonArray cells;
    for (const PatchingCell& c : s.cells) {
        QJsonObject cell{{QStringLiteral("layer"), c.layer}, {QStringLiteral("metric"), jsonNumber(c.metric)},
                         {QStringLiteral("normalised"), jsonNumber(c.normalised)}};
        if (heads) cell.insert(QStringLiteral("head"), c.head);
        if (c.position >= 0) cell.insert(QStringLiteral("position"), c.position);
        cells.append(cell);
    }
    const QString what = o.ablation != AblationKind::None
                             ? QStringLiteral("the clean run with the activation ablated (%1)").arg(ablationKindName(o.ablation))
                         : o.direction == PatchDirection::Denoise ? QStringLiteral("denoising: the clean run's activation patched into the corrupted run")
                                                                  : QStringLiteral("noising: the corrupted run's activation patched into the clean run");
    const QString method = s.method == PatchingMethod::Activation
                               ? QStringLiteral("one patched forward pass per cell")
                               : QStringLiteral("attribution patching (Nanda 2023): metric(base) + Σ (a_other − a_base)·∂metric/∂a, the "
                                                "gradient taken on the run patched into (the corrupted run when denoising, the clean "
                                                "when noising), one backward pass for every cell%1")
                                     .arg(s.method == PatchingMethod::AtpStar
                                              ? QStringLiteral("; q and k cells through the patched head's exact softmax, linear in "
                                                               "the pattern (AtP*, Kramár et al. 2024 §3.1)")
                                              : QString());
    return {{QStringLiteral("activation"), patchHookName(o.hook)},
            {QStringLiteral("method"), patchingMethodName(s.method)},
            {QStringLiteral("direction"), patchDirectionName(o.direction)},
            {QStringLiteral("ablation"), ablationKindName(o.ablation)},
            {QStringLiteral("by_position"), !heads || o.byPosition},
            {QStringLiteral("position"), s.position},
            {QStringLiteral("metric"), metricJson(o.metric, tok)},
            {QStringLiteral("clean_token_ids"), tokenIdsJson(clean)},
            {QStringLiteral("clean_tokens"), tokenTextsJson(tok, clean)},
            {QStringLiteral("corrupt_token_ids"), tokenIdsJson(corrupt)},
            {QStringLiteral("corrupt_tokens"), tokenTextsJson(tok, corrupt)},
            {QStringLiteral("clean"), jsonNumber(s.clean)},
            {QStringLiteral("corrupt"), jsonNumber(s.corrupt)},
            {QStringLiteral("cells"), cells},
            {QStringLiteral("conventions"),
             QJsonObject{{QStringLiteral("run"), what},
                         {QStringLiteral("method"), method},
                         {QStringLiteral("metric"), metricConvention(o.metric, s.position)},
                         {QStringLiteral("clean"), QStringLiteral("the metric on the clean run")},
                         {QStringLiteral("corrupt"), QStringLiteral("the metric on the corrupted run")},
                         {QStringLiteral("normalised"), kNormalised},
                         {QStringLiteral("activation"), QStringLiteral("TransformerLens hook: blocks.{layer}.hook_resid_pre / hook_attn_out / "
                                                                       "hook_mlp_out, attn.hook_z / hook_q / hook_k / hook_v (q, k before "
                                                                       "rotary embeddings; k, v per query head) / hook_pattern (query rows)")},
                         {QStringLiteral("cell"), heads && !o.byPosition ? QStringLiteral("one head's activation replaced at every position")
                                                                         : QStringLiteral("the activation replaced at one position (for pattern: one query row)")},
                         {QStringLiteral("layer"), kLayers},
                         {QStringLiteral("position"), kPositions}}}};
}

QJsonObject pathPatchingToJson(const PathPatchingResult& r, const Tokenizer& tok) {
    QJsonArray senders, receivers, cells;
    for (const HeadId& h : r.options.senders) senders.append(headIdName(h));
    for (const QString& c : r.columns) receivers.append(c);
    for (Eigen::Index i = 0; i < r.metric.rows(); ++i)
        for (Eigen::Index c = 0; c < r.metric.cols(); ++c)
            cells.append(QJsonObject{{QStringLiteral("sender"), headIdName(r.options.senders[size_t(i)])},
                                     {QStringLiteral("receiver"), r.columns[c]},
                                     {QStringLiteral("metric"), jsonNumber(r.metric(i, c))},
                                     {QStringLiteral("normalised"), jsonNumber(r.normalised(i, c))}});
    return {{QStringLiteral("direction"), patchDirectionName(r.options.direction)},
            {QStringLiteral("position"), r.position},
            {QStringLiteral("metric"), metricJson(r.options.metric, tok)},
            {QStringLiteral("clean"), jsonNumber(r.clean)},
            {QStringLiteral("corrupt"), jsonNumber(r.corrupt)},
            {QStringLiteral("senders"), senders},
            {QStringLiteral("receivers"), receivers},
            {QStringLiteral("cells"), cells},
            {QStringLiteral("conventions"),
             QJsonObject{{QStringLiteral("path"), QStringLiteral("Wang et al. 2022: the base run (corrupted when denoising, clean when "
                                                                 "noising) with the sender's z from the other run and every other head's z "
                                                                 "frozen at the base run's (MLPs recomputed); the receivers' q/k/v inputs "
                                                                 "recorded there, then patched alone into the base run")},
                         {QStringLiteral("receiver"), QStringLiteral("LlHh.q/.k/.v: that head's query/key/value input; logits: the "
                                                                     "sender's direct path to the output; all heads: every head receiver at once")},
                         {QStringLiteral("metric"), metricConvention(r.options.metric, r.position)},
                         {QStringLiteral("normalised"), kNormalised},
                         {QStringLiteral("null"), QStringLiteral("no path: the receiver is not after the sender")}}}};
}

QJsonObject flowGraphToJson(const FlowGraph& g, const ModelConfig& cfg) {
    QJsonArray boundaries, edges;
    for (int b = 0; b < lensBoundaryCount(cfg); ++b) boundaries.append(lensBoundaryName(cfg, b));
    for (const FlowEdge& e : g.edges) {
        QJsonArray heads;
        for (double h : e.heads) heads.append(h);
        edges.append(QJsonObject{{QStringLiteral("from"), QJsonArray{e.fromBoundary, e.fromPosition}},
                                 {QStringLiteral("to"), QJsonArray{e.toBoundary, e.toPosition}},
                                 {QStringLiteral("kind"), flowEdgeKindName(e.kind)},
                                 {QStringLiteral("weight"), e.weight},
                                 {QStringLiteral("heads"), heads}});
    }
    return {{QStringLiteral("threshold"), g.options.threshold},
            {QStringLiteral("norm"), flowNormName(g.norm)},
            {QStringLiteral("position"), g.options.position},
            {QStringLiteral("renormalised"), g.options.renormalise && g.options.threshold > 0},
            {QStringLiteral("boundaries"), boundaries},
            {QStringLiteral("edges"), edges},
            {QStringLiteral("conventions"),
             QJsonObject{{QStringLiteral("from/to"), QStringLiteral("[boundary, position]: boundary 0 = embed (resid_pre of layer 0), "
                                                                    "2l+1 = resid_mid of layer l, 2l+2 = resid_post of layer l (names in "
                                                                    "\"boundaries\"); positions 0-based, BOS included")},
                         {QStringLiteral("weight"), QStringLiteral("proximity contribution max(0, |y| − |y − part|) normalised over the "
                                                                   "parts of the representation y it goes into (Ferrando & Voita 2024), "
                                                                   "after thresholding and renormalisation when renormalised")},
                         {QStringLiteral("attn"), QStringLiteral("parts A_h[i,j]·v_{j,h}·W_O^h of the layer's attention into resid_mid, "
                                                                 "summed over heads; \"heads\" lists each head's part")},
                         {QStringLiteral("mlp"), QStringLiteral("mlp_out into resid_post")},
                         {QStringLiteral("resid"), QStringLiteral("the residual stream's own part (resid_pre into resid_mid, resid_mid into resid_post)")},
                         {QStringLiteral("threshold"), QStringLiteral("edges kept: weight > threshold on a route to the output node "
                                                                      "[2·n_layers, position]; 0 = every edge, unpruned, not renormalised")}}}};
}

QJsonObject attentionScoreSplitToJson(const AttentionScoreSplit& s) {
    QJsonArray terms;
    for (Eigen::Index r = 0; r < s.terms.rows(); ++r)
        for (Eigen::Index c = 0; c < s.terms.cols(); ++c)
            terms.append(QJsonObject{{QStringLiteral("query_component"), s.queryComponents[size_t(r)].name},
                                     {QStringLiteral("key_component"), s.keyComponents[size_t(c)].name},
                                     {QStringLiteral("value"), s.terms(r, c)}});
    return QJsonObject{
        {QStringLiteral("layer"), s.layer},
        {QStringLiteral("head"), s.head},
        {QStringLiteral("query"), s.query},
        {QStringLiteral("key"), s.key},
        {QStringLiteral("score"), s.score},
        {QStringLiteral("sum"), s.sum},
        {QStringLiteral("check_error"), s.checkError},
        {QStringLiteral("pattern"), s.pattern},
        {QStringLiteral("terms"), terms},
        {QStringLiteral("conventions"),
         QJsonObject{{QStringLiteral("score"), QStringLiteral("the scaled pre-softmax score of hook_attn_scores: q_i·k_j times "
                                                              "the layer's attention scale (1/sqrt(d_head) for most models)")},
                     {QStringLiteral("value"), QStringLiteral("scale · (R_i q_c)·(R_j k_c'): component c of resid_pre at the "
                                                              "query position and c' at the key position, each centred (LayerNorm) "
                                                              "and divided by its position's cached ln_1 scale, times ln_1.w and the "
                                                              "head's W_Q / W_K; R = the rotary rotation at the position (identity "
                                                              "for learned positions). The terms sum to score")},
                     {QStringLiteral("components"), QStringLiteral("embed, pos_embed, L{l}H{h} (head result), L{l}b_O, L{l}MLP "
                                                                   "(mlp_out) of the layers before, and bias = ln_1.b·W + b_Q "
                                                                   "(query side) or b_K (key side)")},
                     {QStringLiteral("positions"), QStringLiteral("0-based token positions, BOS included")},
                     {QStringLiteral("check_error"), QStringLiteral("|Σ terms − score|, float32 rounding")}}}};
}


QJsonObject compositionToJson(const CompositionScores& s) {
    QJsonArray pairs;
    for (int a = 0; a < s.nLayers * s.nHeads; ++a)
        for (int b = 0; b < s.nLayers * s.nHeads; ++b) {
            const float v = s.scores(a, b);
            if (std::isnan(v)) continue;
            pairs.append(QJsonObject{{QStringLiteral("from"), QStringLiteral("L%1H%2").arg(a / s.nHeads).arg(a % s.nHeads)},
                                     {QStringLiteral("to"), QStringLiteral("L%1H%2").arg(b / s.nHeads).arg(b % s.nHeads)},
                                     {QStringLiteral("score"), double(v)},
                                     {QStringLiteral("baseline"), s.baseline.mean}});
        }
    const QString mode = compositionKindName(s.kind);
    const QString right = s.kind == CompositionKind::Q ? QStringLiteral("W_QK^to") : s.kind == CompositionKind::K ? QStringLiteral("(W_QK^to)ᵀ")
                                                                                                              : QStringLiteral("W_OV^to");
    return {{QStringLiteral("mode"), mode},
            {QStringLiteral("baseline"), s.baseline.mean},
            {QStringLiteral("baseline_sd"), s.baseline.sd},
            {QStringLiteral("baseline_samples"), s.baseline.samples},
            {QStringLiteral("pairs"), pairs},
            {QStringLiteral("conventions"),
             QJsonObject{{QStringLiteral("score"), QStringLiteral("‖W_OV^from · %1‖_F / (‖W_OV^from‖_F ‖%1‖_F) (Elhage et al. 2021), "
                                                                  "W_OV = W_V·W_O and W_QK = W_Q·W_Kᵀ in the row-vector convention; layer "
                                                                  "norms and biases ignored").arg(right)},
                         {QStringLiteral("baseline"), QStringLiteral("mean score of random N(0,1) factor matrices of the same shapes "
                                                                     "([d_model, d_head]·[d_head, d_model]); baseline_sd their standard deviation")},
                         {QStringLiteral("from/to"), QStringLiteral("L{layer}H{head}, 0-based; from is in an earlier layer than to")}}}};
}

} // namespace attnscope
