#include "model/analysis/features/features_json.h"

#include "model/analysis/common/json_number.h"
#include "model/analysis/common/token_json.h"

#include <QJsonArray>

namespace attnscope {

namespace {

QJsonArray doubles(const std::vector<double>& v) {
    QJsonArray a;
    for (double x : v) a.append(jsonNumber(x));
    return a;
}

QJsonArray tokens(const std::vector<ScoredToken>& v, const Tokenizer& tok) {
    QJsonArray a;
    for (const ScoredToken& t : v) a.append(QJsonObject{{"id", t.id}, {"token", tokenText(tok, t.id)}, {"score", double(t.score)}});
    return a;
}

} // namespace

QJsonObject featuresToJson(const SparseCoder& sae, const FeatureRun& run, const ReconstructionQuality& q, int top) {
    QJsonArray positions;
    for (Eigen::Index p = 0; p < run.f.rows(); ++p) {
        QJsonArray list;
        for (const FeatureValue& v : run.firing(int(p), top)) list.append(QJsonObject{{"feature", v.feature}, {"activation", double(v.activation)}});
        positions.append(QJsonObject{{"position", int(p)}, {"top", list}});
    }
    QJsonObject rec{{"fvu", jsonNumber(q.fvu)}, {"mse", doubles(q.mse)}, {"squared_error", doubles(q.squaredError)},
                    {"loss_clean", jsonNumber(q.lossClean)}, {"loss_spliced", jsonNumber(q.lossSpliced)},
                    {"loss_zero_ablated", jsonNumber(q.lossZeroAblated)}};
    const QString conventions = QStringLiteral(
        "activations f = the dictionary's activation function of (x − b_dec·apply_b_dec_to_input)·W_enc + b_enc at hook (after its "
        "input normalisation); top lists the firing features of each position, largest first (ties: lower id); squared_error = "
        "‖target − x̂‖² per position and mse = that / d_out, target = the activation at hook_out; fvu = Σ_pos ‖target − x̂‖² / "
        "Σ_pos ‖target − mean_pos(target)‖² over every position (BOS included); losses are mean next-token cross-entropies in nats "
        "over positions 0 … S − 2: clean, with hook_out replaced by x̂ at every position, and with hook_out set to 0 (null when "
        "hook_out cannot be edited)");
    return QJsonObject{{"conventions", conventions}, {"format", sae.format}, {"architecture", sae.architecture},
                       {"hook", run.hookIn.name()}, {"hook_out", run.hookOut.name()}, {"d_sae", sae.d_sae},
                       {"alive", run.aliveCount()}, {"positions", positions}, {"reconstruction", rec}};
}

QJsonObject featureToJson(const FeatureReadout& r, const FeatureRun& run, const Tokenizer& tok, int dlaPosition, int dlaToken,
                          double dla) {
    QJsonArray acts;
    for (Eigen::Index p = 0; p < run.f.rows(); ++p) acts.append(double(run.f(p, r.feature)));
    QJsonObject o{{"conventions", QStringLiteral(
                       "decoder_*: W_dec[f] centred (LayerNorm) and times ln_final's gain, then W_U (no per-position scale, no b_U); "
                       "encoder_*: W_E·W_enc[:, f]; dla: activation × the decoder direction through ln_final at the position "
                       "(its scale included) · W_U[:, token], before any final soft-cap")},
                  {"feature", r.feature}, {"activations", acts},
                  {"decoder_top", tokens(r.decoderTop, tok)}, {"decoder_bottom", tokens(r.decoderBottom, tok)},
                  {"encoder_top", tokens(r.encoderTop, tok)}, {"encoder_bottom", tokens(r.encoderBottom, tok)}};
    if (dlaPosition >= 0)
        o.insert(QStringLiteral("dla"), QJsonObject{{"position", dlaPosition}, {"token_id", dlaToken}, {"token", tokenText(tok, dlaToken)},
                                                    {"value", jsonNumber(dla)}});
    return o;
}

QJsonObject featurePatchingToJson(const FeaturePatching& fp, int maxCells) {
    QJsonArray cells;
    for (size_t i = 0; i < fp.cells.size() && int(i) < maxCells; ++i) {
        const FeaturePatchingCell& c = fp.cells[i];
        cells.append(QJsonObject{{"feature", c.feature}, {"position", c.position}, {"clean", double(c.clean)}, {"corrupt", double(c.corrupt)},
                                 {"attribution", jsonNumber(c.attribution)}, {"patched", jsonNumber(c.patched)}});
    }
    return QJsonObject{{"conventions", QStringLiteral("denoising: the corrupted run with feature F at position P set to its clean activation "
                                                      "(the dictionary's error term kept); attribution = (clean − corrupt)·(∂x̂/∂f · "
                                                      "∂metric/∂hook_out) from one backward pass of the corrupted run; patched = the "
                                                      "patched run's metric − metric_corrupt, for the --top cells of largest |attribution|")},
                       {"hook", fp.hook}, {"metric_clean", fp.metricClean}, {"metric_corrupt", fp.metricCorrupt}, {"cells", cells}};
}

} // namespace attnscope
