#include "model/analysis/gradients/gradients_json.h"

#include "model/analysis/attention/steps_json.h"
#include "model/analysis/circuits/circuits_json.h"
#include "model/analysis/common/json_number.h"
#include "model/analysis/common/token_json.h"
#include "model/core/errors.h"

#include <QCoreApplication>
#include <QJsonArray>

namespace attnscope {

QStringList stopGradientNames(const StopGradients& s) {
    QStringList names;
    if (s.normScale) names << QStringLiteral("norm");
    if (s.attentionPattern) names << QStringLiteral("pattern");
    if (s.mlpNonlinearity) names << QStringLiteral("mlp");
    return names;
}

StopGradients parseStopGradients(const QString& list) {
    StopGradients s;
    for (const QString& raw : list.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const QString name = raw.trimmed().toLower();
        if (name == QLatin1String("norm")) s.normScale = true;
        else if (name == QLatin1String("pattern")) s.attentionPattern = true;
        else if (name == QLatin1String("mlp")) s.mlpNonlinearity = true;
        else
            throw InputError(QCoreApplication::translate("gradients", "--stop-gradient takes norm, pattern and mlp, got '%1'").arg(name));
    }
    return s;
}

QJsonObject gradientsToJson(const MetricGradients& g, const Tokenizer& tok, bool corrupted) {
    const GradientCache& c = g.gradients;
    QJsonObject hooks{{QStringLiteral("hook_embed"), matrixToJson(c.embed)}};
    for (int l = 0; l < c.nLayers(); ++l) {
        const LayerGradients& x = c.layers[size_t(l)];
        const QString p = QStringLiteral("blocks.%1.").arg(l);
        const std::pair<const char*, const Matrix*> fields[] = {
            {"hook_resid_pre", &x.resid_pre}, {"attn.hook_q", &x.q},          {"attn.hook_k", &x.k},
            {"attn.hook_v", &x.v},            {"attn.hook_z", &x.z},          {"hook_attn_out", &x.attn_out},
            {"hook_resid_mid", &x.resid_mid}, {"mlp.hook_pre", &x.mlp_pre},   {"mlp.hook_post", &x.mlp_post},
            {"hook_mlp_out", &x.mlp_out},     {"hook_resid_post", &x.resid_post}};
        for (const auto& [name, m] : fields) hooks.insert(p + QLatin1String(name), matrixToJson(*m));
        QJsonArray pattern;
        for (const Matrix& h : x.pattern) pattern.append(matrixToJson(h));
        hooks.insert(p + QStringLiteral("attn.hook_pattern"), pattern);
    }
    return {{QStringLiteral("metric"), metricJson(g.metric, tok)},
            {QStringLiteral("position"), g.position},
            {QStringLiteral("value"), jsonNumber(g.value)},
            {QStringLiteral("run"), corrupted ? QStringLiteral("corrupted") : QStringLiteral("prompt")},
            {QStringLiteral("token_ids"), tokenIdsJson(c.tokens)},
            {QStringLiteral("tokens"), tokenTextsJson(tok, c.tokens)},
            {QStringLiteral("stop_gradients"), QJsonArray::fromStringList(stopGradientNames(c.stops))},
            {QStringLiteral("first_non_finite"), c.firstNonFinite.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(c.firstNonFinite)},
            {QStringLiteral("hooks"), hooks},
            {QStringLiteral("conventions"),
             QJsonObject{{QStringLiteral("value"), metricConvention(g.metric, g.position)},
                         {QStringLiteral("hooks"), QStringLiteral("∂value/∂activation at each TransformerLens hook point, float32, in the "
                                                                  "activation's layout: [pos][d_model]; attn.hook_q/k/v/z [pos][n_heads·d_head] "
                                                                  "(q, k before rotary embeddings; k, v per query head); mlp.hook_pre "
                                                                  "[pos][d_mlp] (x·W_in + b_in, a gated MLP's up projection); mlp.hook_post "
                                                                  "[pos][d_mlp]; attn.hook_pattern [head][query][key], 0 on masked cells")},
                         {QStringLiteral("stop_gradients"), QStringLiteral("held fixed in the backward pass: norm = the LayerNorm/RMSNorm "
                                                                           "divisor; pattern = the attention softmax (no gradient to q, k); "
                                                                           "mlp = the MLP nonlinearity's slope act(x)/x (gated: act(gate))")},
                         {QStringLiteral("first_non_finite"), QStringLiteral("the first hook, from the logits down, whose gradient holds NaN or ±Inf")},
                         {QStringLiteral("position"), QStringLiteral("0-based token positions, BOS included")},
                         {QStringLiteral("layer"), QStringLiteral("0-based block index; heads 0-based within their layer")}}}};
}

QJsonObject inputAttributionToJson(const InputAttribution& a, const Tokenizer& tok, std::span<const int> tokens) {
    QJsonArray attributions;
    for (double v : a.attributions) attributions.append(jsonNumber(v));
    const int b = a.options.baselineToken;
    const bool ig = a.options.method == SaliencyMethod::IntegratedGradients;
    return {{QStringLiteral("method"), saliencyMethodName(a.options.method)},
            {QStringLiteral("steps"), ig ? QJsonValue(a.options.steps) : QJsonValue(QJsonValue::Null)},
            {QStringLiteral("baseline"), b < 0 ? QJsonValue(QStringLiteral("zero"))
                                               : QJsonValue(QJsonObject{{QStringLiteral("token"), tokenText(tok, b)}, {QStringLiteral("token_id"), b}})},
            {QStringLiteral("metric"), metricJson(a.options.metric, tok)},
            {QStringLiteral("position"), a.position},
            {QStringLiteral("token_ids"), tokenIdsJson(tokens)},
            {QStringLiteral("tokens"), tokenTextsJson(tok, tokens)},
            {QStringLiteral("attributions"), attributions},
            {QStringLiteral("metric_input"), jsonNumber(a.metricInput)},
            {QStringLiteral("metric_baseline"), jsonNumber(a.metricBaseline)},
            {QStringLiteral("sum"), jsonNumber(a.sum)},
            {QStringLiteral("completeness_error"), jsonNumber(a.completenessError)},
            {QStringLiteral("conventions"),
             QJsonObject{{QStringLiteral("attributions"),
                          ig ? QStringLiteral("integrated gradients (Sundararajan et al. 2017): Σ_d (e − b)_d · mean of ∂metric/∂e_d at b + α(e − b), "
                                              "α at the midpoints of `steps` equal intervals; e = the token's embedding (hook_embed), b = the baseline")
                             : QStringLiteral("gradient × input: Σ_d (e − b)_d · ∂metric/∂e_d at the input")},
                         {QStringLiteral("metric_input"), metricConvention(a.options.metric, a.position)},
                         {QStringLiteral("metric_baseline"), QStringLiteral("the metric with every token embedding replaced by the baseline (positions kept)")},
                         {QStringLiteral("completeness_error"), QStringLiteral("|sum − (metric_input − metric_baseline)| / |metric_input − metric_baseline|")},
                         {QStringLiteral("position"), QStringLiteral("0-based token positions, BOS included")}}}};
}

QJsonObject edgeAttributionToJson(const EdgeAttribution& a, const Tokenizer& tok, std::span<const int> circuit, int top,
                                  const CircuitFaithfulness& f) {
    std::vector<char> inCircuit(a.graph.edges.size(), 0);
    for (int e : circuit) inCircuit[size_t(e)] = 1;
    QJsonArray edges;
    for (size_t e = 0; e < a.graph.edges.size(); ++e) {
        const ScoredEdge& x = a.graph.edges[e];
        edges.append(QJsonObject{{QStringLiteral("source"), edgeSenderName(a.graph.senders[size_t(x.sender)])},
                                 {QStringLiteral("target"), edgeReceiverName(a.graph.receivers[size_t(x.receiver)])},
                                 {QStringLiteral("name"), a.graph.edgeName(x)},
                                 {QStringLiteral("score"), jsonNumber(x.score)},
                                 {QStringLiteral("in_circuit"), bool(inCircuit[e])}});
    }
    const bool ig = a.options.method == EdgeAttributionMethod::EapIg;
    return {{QStringLiteral("method"), edgeAttributionMethodName(a.options.method)},
            {QStringLiteral("steps"), ig ? QJsonValue(a.options.steps) : QJsonValue(QJsonValue::Null)},
            {QStringLiteral("metric"), metricJson(a.options.metric, tok)},
            {QStringLiteral("position"), a.position},
            {QStringLiteral("clean"), jsonNumber(a.clean)},
            {QStringLiteral("corrupt"), jsonNumber(a.corrupt)},
            {QStringLiteral("n_edges"), int(a.graph.edges.size())},
            {QStringLiteral("edges"), edges},
            {QStringLiteral("circuit"), QJsonObject{{QStringLiteral("top"), top},
                                                    {QStringLiteral("edges"), f.edges},
                                                    {QStringLiteral("metric"), jsonNumber(f.metric)},
                                                    {QStringLiteral("recovered"), jsonNumber(f.recovered)}}},
            {QStringLiteral("conventions"),
             QJsonObject{{QStringLiteral("graph"), QStringLiteral("EAP-IG's (hannamw/EAP-IG graph.py): sources input (hook_embed), aL.hH "
                                                                  "(attn.hook_result) and mL (hook_mlp_out); targets aL.hH<q|k|v> (the copy of "
                                                                  "resid_pre head H's query, key or value projection reads), mL (hook_mlp_in) and "
                                                                  "logits (the last resid_post)")},
                         {QStringLiteral("score"), ig ? QStringLiteral("Σ_pos,d (source_corrupt − source_clean) · ∂metric/∂target_input averaged over "
                                                                       "`steps` runs of the clean prompt with embeddings corrupt + (k/steps)(clean − "
                                                                       "corrupt), k = 0 … steps − 1 (EAP-IG)")
                                                      : QStringLiteral("Σ_pos,d (source_corrupt − source_clean) · ∂metric/∂target_input at the clean "
                                                                       "run (EAP)")},
                         {QStringLiteral("clean"), metricConvention(a.options.metric, a.position)},
                         {QStringLiteral("circuit"), QStringLiteral("the `top` edges by |score|; metric = the clean prompt with every other "
                                                                    "edge's source patched to its corrupted output (evaluate.py's patching); "
                                                                    "recovered = (metric − corrupt) / (clean − corrupt)")},
                         {QStringLiteral("layer"), QStringLiteral("0-based block index; heads 0-based within their layer")}}}};
}

} // namespace attnscope
