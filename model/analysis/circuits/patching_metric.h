#pragma once
// The number an activation-patching experiment measures at one position, and its normalisation
// (Zhang & Nanda 2023, "Towards Best Practices of Activation Patching", §2: logit difference, probability,
// KL divergence; normalised so that the corrupted run is 0 and the clean run is 1).

#include "model/core/tensor.h"
#include "model/tokenizers/tokenizer.h"
#include "model/transformer/model_config.h"

#include <QString>

namespace attnscope {

enum class PatchingMetricKind {
    LogitDiff, ///< logit[t] − logit[t'] (raw logits, b_U included)
    Logit,     ///< logit[t]
    Prob,      ///< softmax(logits)[t]
    LogProb,   ///< log softmax(logits)[t]
    KL         ///< KL(P_clean ‖ P_run) = Σ_v P_clean(v)·(log P_clean(v) − log P_run(v)), nats
};

struct PatchingMetric {
    PatchingMetricKind kind = PatchingMetricKind::LogitDiff;
    int token = -1;        ///< t (LogitDiff, Logit, Prob)
    int counterToken = -1; ///< t' (LogitDiff)
    int position = -1;     ///< where the logits are read; -1 = the last position
};

/// "logit_diff", "logit", "prob", "logprob", "kl".
QString patchingMetricKindName(PatchingMetricKind kind);

/// The forms --metric accepts, for messages: "logit_diff: TOKEN, TOKEN2", "logit: TOKEN", "prob: TOKEN", "logprob: TOKEN"
/// or "kl".
QString patchingMetricForms();
/// What is wrong with a --metric text's form, read without a tokenizer (unknown kind, no tokens after the
/// colon, tokens after kl); "" when the form is right. The command line checks it before opening the model.
QString patchingMetricFormError(const QString& text);

/// Parses the CLI's --metric: "logit_diff: Mary, John" (the text after the colon is read as the --dla
/// tokens are, parseTokenPair: " Mary" and " John" with their leading spaces), "logit: X", "prob: X" or "kl".
/// Throws InputError naming what is wrong (unknown kind, missing or extra tokens, text that is not one token).
PatchingMetric parsePatchingMetric(const Tokenizer& tokenizer, const QString& text);

/// Checks the metric's tokens against the vocabulary (InputError otherwise).
void checkPatchingMetric(const ModelConfig& cfg, const PatchingMetric& metric);

/// "logit[␣Mary] − logit[␣John]", "P(␣Mary)", "KL(clean ‖ run)" (display tokens).
QString describePatchingMetric(const PatchingMetric& metric, const Tokenizer& tokenizer);

/// The metric of one run's logits [d_vocab]; `clean` [d_vocab] is the clean run's logits (KL only).
/// Computed in double.
double patchingMetricValue(const PatchingMetric& metric, const RowVector& logits, const RowVector& clean);

/// ∂metric/∂logits [d_vocab] at `logits` (the metric's own position), `clean` as for patchingMetricValue:
/// logit_diff e_t − e_t′; logit e_t; prob p_t·(e_t − p); logprob e_t − p; kl softmax(logits) − P_clean.
RowVector patchingMetricLogitGradient(const PatchingMetric& metric, const RowVector& logits, const RowVector& clean);

/// (m − corrupt) / (clean − corrupt): 0 = as the corrupted run, 1 = as the clean run. NaN when the two
/// endpoints are equal (or either is NaN): the prompts do not differ in the metric.
double normalisedMetric(double m, double clean, double corrupt);

} // namespace attnscope
