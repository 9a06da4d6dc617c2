#include "model/analysis/attention/attention_steps.h"

#include "model/core/errors.h"
#include "model/transformer/forward.h"

#include <QCoreApplication>
#include <cmath>

namespace attnscope {

namespace {

using Kind = AttentionStep::ValueKind;
using Axis = AttentionStep::AxisKind;

QString tr(const char* text) { return QCoreApplication::translate("attention_steps", text); }

AttentionStep makeStep(const QString& name, const QString& formula, const QString& shape, const QString& meaning,
                       Matrix values, Kind kind = Kind::Signed, Axis colAxis = Axis::Dimensions) {
    AttentionStep s;
    s.name = name;
    s.formula = formula;
    s.shape = shape;
    s.meaning = meaning;
    s.rows = int(values.rows());
    s.cols = int(values.cols());
    s.values = std::move(values);
    s.kind = kind;
    s.rowAxis = Axis::Tokens;
    s.colAxis = colAxis;
    return s;
}

double maxAbs(const Matrix& a, const Matrix& b) { return double((a - b).cwiseAbs().maxCoeff()); }

/// "+ b" when the bias exists, "" otherwise (Llama has no attention biases).
QString bias(const Weight& b, const QString& name) { return b.empty() ? QString() : QStringLiteral(" + ") + name; }

/// The scale factor written out: "1/√16", "1/(√16·2)", or "1" when the model does not scale.
QString scaleText(const ModelConfig& cfg, int layer) {
    const QString root = QStringLiteral("√%1").arg(cfg.query_pre_attn_scalar > 0 ? cfg.query_pre_attn_scalar : double(cfg.d_head));
    if (cfg.scale_attn_weights && cfg.scale_attn_by_inverse_layer_idx)
        return QStringLiteral("1/(%1·%2)").arg(root).arg(layer + 1);
    if (cfg.scale_attn_weights) return QStringLiteral("1/") + root;
    if (cfg.scale_attn_by_inverse_layer_idx) return QStringLiteral("1/%1").arg(layer + 1);
    return QStringLiteral("1");
}

void checkArguments(const Model& model, const ActivationCache& cache, int layer, int head) {
    const ModelConfig& cfg = model.config();
    if (layer < 0 || layer >= cfg.n_layers)
        throw InputError(tr("Layer %1 does not exist: the model has layers 0 to %2.").arg(layer).arg(cfg.n_layers - 1));
    if (head < 0 || head >= cfg.n_heads)
        throw InputError(tr("Head %1 does not exist: the model has heads 0 to %2.").arg(head).arg(cfg.n_heads - 1));
    const int S = cache.nPositions();
    const bool fits = cache.nLayers() == cfg.n_layers && S > 0 && cache.embed.rows() == S &&
                      cache.embed.cols() == cfg.d_model && cache.pos_embed.rows() == S;
    const std::shared_ptr<const LayerCache> lc = fits ? cache.layer(layer) : nullptr;
    if (!lc || lc->q.cols() != Eigen::Index(cfg.n_heads) * cfg.d_head || int(lc->attn_scores.size()) != cfg.n_heads ||
        int(lc->pattern.size()) != cfg.n_heads || lc->z.rows() != S)
        throw InputError(tr("The activations do not belong to this model (layer count or widths differ); "
                            "run the prompt again."));
}

} // namespace

QStringList attentionStepNames(int n_heads, bool rotary, bool qkNorm, bool softcap) {
    QStringList names{"embed", "pos_embed", "resid_pre", "ln1", "q", "k", "v"};
    if (qkNorm) names << "q_norm" << "k_norm";
    if (rotary) names << "q_rot" << "k_rot";
    names << QStringList{"scores", "scaled"};
    if (softcap) names << "softcapped";
    names << QStringList{"masked", "pattern", "z", "concat", "attn_out"};
    for (int h = 0; h < n_heads; ++h) names << QStringLiteral("head_result_%1").arg(h);
    names << "attn_out_additive" << "resid_mid";
    return names;
}

std::vector<AttentionStep> attentionSteps(const Model& model, const ActivationCache& cache, int layer, int head) {
    checkArguments(model, cache, layer, head);
    const ModelConfig& cfg = model.config();
    const LayerWeights& w = model.layer(layer);
    const std::shared_ptr<const LayerCache> held = cache.layer(layer); // recomputed in a residuals-only cache
    const LayerCache& c = *held;
    const int H = cfg.n_heads, L = cfg.d_head;
    const Eigen::Index S = cache.nPositions();
    const QString hs = QString::number(head);
    std::vector<AttentionStep> steps;

    // --- input: one_hot(tokens)·W_E (a row lookup; the one-hot matrix is never built) -----------------
    AttentionStep embed = makeStep("embed", "one_hot(tokens)·W_E", "B×S×V · V×D → S×D",
                                   tr("Each token id picks its row of the embedding matrix W_E (one-hot row × W_E)."),
                                   cache.embed);
    embed.tokenIds = cache.tokens;
    steps.push_back(std::move(embed));
    if (cfg.positions == PositionKind::Learned)
        steps.push_back(makeStep("pos_embed", "W_pos[0..S)", "S×D",
                                 tr("Row p is the learned position embedding of position p, added to the token "
                                    "embedding."),
                                 cache.pos_embed));
    else
        steps.push_back(makeStep("pos_embed", "0", "S×D",
                                 tr("This model has no position embedding: positions enter by rotating q and k "
                                    "(rotary)."),
                                 cache.pos_embed));
    if (layer == 0)
        steps.push_back(makeStep("resid_pre", "embed + pos_embed", "S×D + S×D → S×D",
                                 tr("The residual stream entering layer 0: token plus position embedding."),
                                 c.resid_pre));
    else
        steps.push_back(makeStep("resid_pre", QStringLiteral("resid_post[%1]").arg(layer - 1), "S×D",
                                 tr("The residual stream entering layer %1: the embeddings plus everything layers "
                                    "0 to %2 wrote (not embed + pos_embed).").arg(layer).arg(layer - 1),
                                 c.resid_pre));
    const bool layerNorm = cfg.norm == NormKind::LayerNorm;
    steps.push_back(makeStep("ln1",
                             layerNorm ? QStringLiteral("(resid_pre − μ)/√(σ² + ε) · w + b")
                                       : QStringLiteral("resid_pre/√(mean(resid_pre²) + ε) · w"),
                             "S×D → S×D",
                             layerNorm ? tr("Each row of the residual stream normalised to mean 0 and variance 1, "
                                            "then scaled and shifted (LayerNorm ln_1): the attention input.")
                                       : tr("Each row of the residual stream divided by its root mean square, then "
                                            "scaled (RMSNorm): the attention input."),
                             c.ln1));

    // --- head h's queries, keys, values: columns h·L .. (h+1)·L−1 -----------------------------------
    const int groups = cfg.groupSize(), kv = cfg.kvHeadOf(head);
    const QString kvHead = groups > 1 ? QStringLiteral("^%1").arg(kv) : QStringLiteral("^h");
    // grouped-query attention: say which query heads share this head's K/V head
    const QString shared = groups > 1 ? tr(" K/V head %1 serves query heads %2 to %3 (grouped-query attention, %4 per "
                                           "K/V head): the same matrix for each of them.")
                                            .arg(kv).arg(kv * groups).arg((kv + 1) * groups - 1).arg(groups)
                                      : QString();
    const bool rotary = cfg.positions == PositionKind::Rotary;
    const QString before = rotary ? tr(", before the rotary embedding") : QString();
    // q/k norm models (Qwen 3): the projections are the cache's q_pre_norm / k_pre_norm, and q, k their norms
    const bool qkNorm = cfg.qkNorm && c.q_pre_norm.cols() == c.q.cols();
    const QString normNext = qkNorm ? tr(", before its RMSNorm (q_norm/k_norm)") : QString();
    steps.push_back(makeStep("q", QStringLiteral("ln1·W_Q^h") + bias(w.b_Q, "b_Q^h"), "S×D · D×L → S×L",
                             tr("Head %1's query vectors: what each position is looking for%2.").arg(hs, qkNorm ? normNext : before),
                             (qkNorm ? c.q_pre_norm : c.q).middleCols(head * L, L)));
    steps.push_back(makeStep("k", QStringLiteral("ln1·W_K") + kvHead + bias(w.b_K, "b_K" + kvHead),
                             "S×D · D×L → S×L",
                             tr("Head %1's key vectors: what each position offers to be found by%2.").arg(hs, qkNorm ? normNext : before) +
                                 shared,
                             (qkNorm ? c.k_pre_norm.middleCols(kv * L, L) : c.k.middleCols(head * L, L))));
    steps.push_back(makeStep("v", QStringLiteral("ln1·W_V") + kvHead + bias(w.b_V, "b_V" + kvHead),
                             "S×D · D×L → S×L",
                             tr("Head %1's value vectors: what each position passes on when attended to.").arg(hs) + shared,
                             c.v.middleCols(head * L, L)));
    if (qkNorm) {
        const QString what = tr("Each query and key vector of the head divided by its root mean square over d_head (%1), then "
                                "scaled by a learned weight of %1 entries shared by all heads (%3)%2. "
                                "It bounds |q·k| and so the attention logits.")
                                 .arg(L).arg(before, cfg.postNorms ? tr("Gemma3RMSNorm: w_q stands for 1 + the stored weight")
                                                                   : tr("transformers Qwen3RMSNorm"));
        steps.push_back(makeStep("q_norm", QStringLiteral("q/√(mean(q²) + ε) · w_q"), "S×L → S×L", tr("The queries, normalised. ") + what,
                                 c.q.middleCols(head * L, L)));
        steps.push_back(makeStep("k_norm", QStringLiteral("k/√(mean(k²) + ε) · w_k"), "S×L → S×L",
                                 tr("The keys, normalised. ") + what + shared, c.k.middleCols(head * L, L)));
    }
    if (rotary) {
        const QString pairs = cfg.rope_layout == RopeLayout::HalfSplit
                                  ? tr("dims (i, i + %1) rotate together (HF layout, rotate_half)").arg(L / 2)
                                  : tr("dims (2i, 2i + 1) rotate together (Meta/GGUF/llama2.c layout)");
        // the layer's own base and scaling (Gemma 3: 10 000 unscaled on sliding layers, 1 000 000 scaled on global ones)
        const RopeScaling& scaling = cfg.ropeScalingOf(layer);
        const QString scaled = scaling.kind == RopeScaling::Kind::Linear ? tr(", divided by %1 (linear scaling)").arg(scaling.factor)
                               : scaling.kind != RopeScaling::Kind::None ? tr(", rescaled (rope_scaling)")
                                                                         : QString();
        const QString which = cfg.local_rotary_base > 0 ? (cfg.usesLocalRope(layer) ? tr(" (this sliding-window layer's base)")
                                                                                    : tr(" (this global layer's base)"))
                                                        : QString();
        const QString rope = tr("Rotated by position: pair i of position p turns by the angle p·θ_i, θ_i = %1^(−2i/%2)%4%5; "
                                "%3. Then q_p·k_s depends on p − s only (Su et al. 2021, RoFormer).")
                                 .arg(cfg.rotaryBaseOf(layer)).arg(L).arg(pairs, which, scaled);
        steps.push_back(makeStep("q_rot", "RoPE(q, p)", "S×L → S×L", tr("The queries after rotation. ") + rope,
                                 c.q_rot.middleCols(head * L, L)));
        steps.push_back(makeStep("k_rot", "RoPE(k, p)", "S×L → S×L", tr("The keys after rotation. ") + rope + shared,
                                 c.k_rot.middleCols(head * L, L)));
    }

    // --- scores: the one product the cache stores only scaled ---------------------------------------
    // the cache holds the scaled scores after the mask (−∞ where masked, never computed there); the
    // unmasked steps are recomputed from the cached (rotated) q and k
    const Matrix& maskedScores = c.attn_scores[size_t(head)];
    const Matrix& queries = rotary ? c.q_rot : c.q;
    const Matrix& keys = rotary ? c.k_rot : c.k;
    Matrix raw = attentionScores(queries, keys, head, L); // as runForward computes them: bitwise the cached cells
    const double scale = cfg.attnScale(layer);
    Matrix scaledScores = raw * float(scale);
    // Gemma 2's soft-cap: the scaled scores bent by cap·tanh(s/cap), what the cache holds
    const double cap = cfg.attn_logit_softcap;
    Matrix cappedScores;
    if (cap > 0) cappedScores = ((scaledScores.array() / float(cap)).tanh() * float(cap)).matrix();
    const Matrix& beforeMask = cap > 0 ? cappedScores : scaledScores;
    // the keys query i sees: (i − window, i] with a sliding window (Mistral; Gemma 2's even layers), else 0..i
    const int windowSize = cfg.windowOf(layer);
    auto firstKey = [&](Eigen::Index i) { return windowSize > 0 ? std::max<Eigen::Index>(0, i - windowSize + 1) : 0; };
    double scoreDiff = 0;
    for (Eigen::Index i = 0; i < S; ++i) {
        const Eigen::Index lo = firstKey(i);
        scoreDiff = std::max(scoreDiff, double((beforeMask.row(i).segment(lo, i + 1 - lo) - maskedScores.row(i).segment(lo, i + 1 - lo))
                                                   .cwiseAbs().maxCoeff()));
    }
    AttentionStep scores = makeStep("scores", rotary ? QStringLiteral("Q_rot·K_rotᵀ") : QStringLiteral("Q·Kᵀ"), "S×L · L×S → S×S",
                                    tr("Row i, column j: dot product of query i with key j, before scaling."),
                                    std::move(raw), Kind::Signed, Axis::Tokens);
    scores.maxAbsDiff = scoreDiff;
    scores.note = (cap > 0 ? tr("max |%1·tanh(scores · %2 / %1) − cached attn_scores| = %3").arg(cap).arg(scaleText(cfg, layer))
                           : tr("max |scores · %1 − cached attn_scores| = %2").arg(scaleText(cfg, layer)))
                      .arg(scoreDiff, 0, 'g', 3);
    steps.push_back(std::move(scores));

    QString scaledMeaning = tr("The scores times %1").arg(scaleText(cfg, layer));
    if (cfg.scale_attn_weights) scaledMeaning += tr(" (1/√d_head keeps their variance near 1");
    if (cfg.scale_attn_by_inverse_layer_idx)
        scaledMeaning += (cfg.scale_attn_weights ? tr("; ") : tr(" (")) +
                         tr("1/(layer+1) because scale_attn_by_inverse_layer_idx is set");
    if (cfg.scale_attn_weights || cfg.scale_attn_by_inverse_layer_idx) scaledMeaning += QStringLiteral(")");
    if (cfg.query_pre_attn_scalar > 0)
        scaledMeaning += tr(" (Gemma 2 scales by query_pre_attn_scalar = %1, not d_head)").arg(cfg.query_pre_attn_scalar);
    steps.push_back(makeStep("scaled", QStringLiteral("scores · ") + scaleText(cfg, layer), "S×S → S×S",
                             scaledMeaning + QStringLiteral("."), std::move(scaledScores), Kind::Signed, Axis::Tokens));
    if (cap > 0)
        steps.push_back(makeStep("softcapped", QStringLiteral("%1·tanh(scaled / %1)").arg(cap), "S×S → S×S",
                                 tr("The scaled scores soft-capped (attn_logit_softcapping = %1): nearly unchanged while small, "
                                    "bent towards ±%1 when large, so no single score can dominate the softmax without bound.")
                                     .arg(cap),
                                 std::move(cappedScores), Kind::Signed, Axis::Tokens));

    Matrix masked = maskedScores; // −∞ cells shown as masked (NaN)
    for (Eigen::Index i = 0; i < S; ++i) {
        masked.row(i).tail(S - 1 - i).setConstant(std::numeric_limits<float>::quiet_NaN());
        masked.row(i).head(firstKey(i)).setConstant(std::numeric_limits<float>::quiet_NaN());
    }
    const bool window = windowSize > 0 && S > windowSize;
    const QString maskInput = cap > 0 ? QStringLiteral("softcapped") : QStringLiteral("scaled");
    AttentionStep maskedStep = makeStep(
        "masked",
        window ? QStringLiteral("%1 + M,  M(i,j) = −∞ for j > i or j ≤ i − %2").arg(maskInput).arg(windowSize)
               : QStringLiteral("%1 + M,  M(i,j) = −∞ for j > i").arg(maskInput),
        "S×S → S×S",
        window ? tr("Causal mask with a sliding window of %1: a query sees itself and the %2 positions before it, so "
                    "later and older positions become −∞ and get zero attention.").arg(windowSize).arg(windowSize - 1)
               : tr("Causal mask: a query may not look at later positions, so those cells become −∞ and get zero "
                    "attention."),
        std::move(masked), Kind::Signed, Axis::Tokens);
    maskedStep.hasMask = S > 1;
    steps.push_back(std::move(maskedStep));

    steps.push_back(makeStep("pattern", "softmax_row(masked)", "S×S → S×S",
                             tr("Row i: how query i distributes its attention over positions 0 to i (sums to 1)."),
                             c.pattern[size_t(head)], Kind::Probability, Axis::Tokens));
    steps.push_back(makeStep("z", "pattern·V", "S×S · S×L → S×L",
                             tr("Each position's attention-weighted average of the value vectors (head %1).").arg(hs),
                             c.z.middleCols(head * L, L)));

    // --- combining the heads: concat·W_O, and the same sum taken head by head -----------------------
    const QString concatShape = QStringLiteral("H × (S×L) → S×(H·L)");
    steps.push_back(makeStep("concat", "[z^0 | z^1 | … | z^{H−1}]", concatShape,
                             tr("All %1 heads' z side by side; head %2 is columns %3 to %4.")
                                 .arg(H).arg(hs).arg(head * L).arg((head + 1) * L - 1),
                             c.z));
    if (cfg.postNorms)
        steps.push_back(makeStep("attn_out", QStringLiteral("ln1_post(concat·W_O") + bias(w.b_O, "b_O") + QStringLiteral(")"),
                                 "S×(H·L) · (H·L)×D → S×D",
                                 tr("What the attention layer adds to the residual stream: the heads' sum, then RMSNorm "
                                    "(post_attention_layernorm) before the addition."),
                                 c.attn_out));
    else
        steps.push_back(makeStep("attn_out", QStringLiteral("concat·W_O") + bias(w.b_O, "b_O"),
                                 "S×(H·L) · (H·L)×D → S×D",
                                 tr("What the attention layer adds to the residual stream."), c.attn_out));
    Matrix additive = Matrix::Zero(S, cfg.d_model);
    // post-norm models (Gemma 2): each part through the post-norm with its position's divisor σ of the whole output
    const Matrix postFactor = cfg.postNorms ? postNormFactors(cfg, c.attn_out_pre_norm, w.ln1_post_w) : Matrix();
    for (int h = 0; h < H; ++h) {
        // hook_result when the pass cached it, else the same product now (the app's pass leaves it out)
        Matrix r;
        if (int(c.result.size()) == H) {
            r = c.result[size_t(h)];
        } else {
            r = c.z.middleCols(h * L, L) * w.W_O_head(h, L).toMatrix();
            if (cfg.postNorms) r.array() *= postFactor.array();
        }
        additive += r;
        steps.push_back(makeStep(QStringLiteral("head_result_%1").arg(h),
                                 cfg.postNorms ? QStringLiteral("z^%1·W_O^%1 / σ ⊙ w_post").arg(h) : QStringLiteral("z^%1·W_O^%1").arg(h),
                                 "S×L · L×D → S×D",
                                 tr("Head %1's own contribution; W_O^%1 is rows %2 to %3 of W_O.")
                                         .arg(h).arg(h * L).arg((h + 1) * L - 1) +
                                     (cfg.postNorms ? tr(" Through the post-attention norm with the divisor σ of the whole "
                                                         "output at each position, so that the heads still add up to attn_out.")
                                                    : QString()),
                                 r));
    }
    if (!w.b_O.empty()) {
        if (cfg.postNorms) additive.array() += postFactor.array().rowwise() * w.b_O.rowVector(0).array();
        else additive.rowwise() += w.b_O.rowVector(0);
    }
    const double addDiff = maxAbs(additive, c.attn_out);
    AttentionStep add = makeStep("attn_out_additive", QStringLiteral("Σ_h head_result_h") + bias(w.b_O, "b_O"),
                                 "H × (S×D) → S×D",
                                 tr("The same attention output as a sum of independent per-head terms: splitting "
                                    "W_O into row blocks W_O^h makes concat·W_O = Σ_h z^h·W_O^h "
                                    "(block matrix product)."),
                                 std::move(additive));
    add.maxAbsDiff = addDiff;
    add.note = tr("max |Σ_h head_result_h%1 − attn_out| = %2 (float rounding only; the two are equal in exact "
                  "arithmetic)").arg(bias(w.b_O, "b_O")).arg(addDiff, 0, 'g', 3);
    steps.push_back(std::move(add));
    steps.push_back(makeStep("resid_mid", "resid_pre + attn_out", "S×D + S×D → S×D",
                             tr("The residual stream after the attention layer, the input of the MLP's ln_2."),
                             c.resid_mid));
    return steps;
}

} // namespace attnscope
