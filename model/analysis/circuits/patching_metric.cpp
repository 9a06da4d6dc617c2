#include "model/analysis/circuits/patching_metric.h"

#include "model/analysis/common/input_checks.h"
#include "model/analysis/common/target_token.h"
#include "model/core/errors.h"

#include <QCoreApplication>
#include <cmath>
#include <limits>
#include <optional>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("patching", text); }

/// log softmax(logits)[i] for all i, in double: [d_vocab].
Eigen::VectorXd logSoftmax(const RowVector& logits) {
    const Eigen::VectorXd x = logits.transpose().cast<double>();
    const double m = x.maxCoeff();
    return x.array() - (m + std::log((x.array() - m).exp().sum()));
}

} // namespace

QString patchingMetricKindName(PatchingMetricKind kind) {
    switch (kind) {
    case PatchingMetricKind::LogitDiff: return QStringLiteral("logit_diff");
    case PatchingMetricKind::Logit: return QStringLiteral("logit");
    case PatchingMetricKind::Prob: return QStringLiteral("prob");
    case PatchingMetricKind::LogProb: return QStringLiteral("logprob");
    case PatchingMetricKind::KL: break;
    }
    return QStringLiteral("kl");
}

namespace {
/// A --metric text split at its first colon: the kind before it (trimmed, lower case), the text after it
/// ("" without a colon), and the kind it names (nullopt when none).
struct MetricText {
    QString kind, rest;
    std::optional<PatchingMetricKind> named;
};
MetricText splitMetric(const QString& text) {
    const int colon = text.indexOf(QLatin1Char(':'));
    MetricText m{(colon < 0 ? text : text.left(colon)).trimmed().toLower(), colon < 0 ? QString() : text.mid(colon + 1), {}};
    for (PatchingMetricKind k : {PatchingMetricKind::LogitDiff, PatchingMetricKind::Logit, PatchingMetricKind::Prob, PatchingMetricKind::LogProb,
                                 PatchingMetricKind::KL})
        if (m.kind == patchingMetricKindName(k)) m.named = k;
    return m;
}

/// What is wrong with the form of a split metric; "" when it is right.
QString formError(const MetricText& m) {
    const QString& kind = m.kind;
    if (!m.named) return tr("Unknown metric '%1': use %2.").arg(kind, patchingMetricForms());
    if (*m.named == PatchingMetricKind::KL)
        return m.rest.trimmed().isEmpty() ? QString() : tr("The kl metric takes no tokens (it compares with the clean run's distribution).");
    if (m.rest.isEmpty())
        return tr("The %1 metric needs its token%2 after a colon, e.g. \"%1: Mary%3\".")
            .arg(kind, *m.named == PatchingMetricKind::LogitDiff ? QStringLiteral("s") : QString(),
                 *m.named == PatchingMetricKind::LogitDiff ? QStringLiteral(", John") : QString());
    // two tokens need a comma between them, whatever the vocabulary (with one, whether it splits is the vocabulary's say)
    if (*m.named == PatchingMetricKind::LogitDiff && !m.rest.contains(QLatin1Char(',')))
        return tr("The logit_diff metric needs two tokens separated by a comma, e.g. \"logit_diff: Mary, John\"; got '%1'.")
            .arg(m.rest.trimmed());
    return {};
}
} // namespace

QString patchingMetricForms() {
    return QStringLiteral("\"logit_diff: TOKEN, TOKEN2\", \"logit: TOKEN\", \"prob: TOKEN\", \"logprob: TOKEN\" or \"kl\"");
}

QString patchingMetricFormError(const QString& text) { return formError(splitMetric(text)); }

PatchingMetric parsePatchingMetric(const Tokenizer& tokenizer, const QString& text) {
    const MetricText split = splitMetric(text);
    if (const QString e = formError(split); !e.isEmpty()) throw InputError(e);
    const QString &kind = split.kind, &rest = split.rest;
    PatchingMetric m;
    m.kind = *split.named;
    if (m.kind == PatchingMetricKind::KL) return m;
    const auto [t, t2] = parseTokenPair(tokenizer, rest);
    if (m.kind == PatchingMetricKind::LogitDiff && t2 < 0)
        throw InputError(tr("logit_diff needs two tokens separated by a comma, e.g. \"logit_diff: Mary, John\"; got '%1'.").arg(rest));
    if (m.kind != PatchingMetricKind::LogitDiff && t2 >= 0)
        throw InputError(tr("%1 takes one token; got two in '%2'.").arg(kind, rest));
    m.token = t;
    m.counterToken = t2;
    return m;
}

void checkPatchingMetric(const ModelConfig& cfg, const PatchingMetric& m) {
    if (m.kind == PatchingMetricKind::KL) return;
    requireToken(cfg, m.token);
    if (m.kind == PatchingMetricKind::LogitDiff) requireToken(cfg, m.counterToken);
}

QString describePatchingMetric(const PatchingMetric& m, const Tokenizer& tok) {
    switch (m.kind) {
    case PatchingMetricKind::LogitDiff:
        return QStringLiteral("logit[%1] − logit[%2]").arg(tok.displayToken(m.token), tok.displayToken(m.counterToken));
    case PatchingMetricKind::Logit: return QStringLiteral("logit[%1]").arg(tok.displayToken(m.token));
    case PatchingMetricKind::Prob: return QStringLiteral("P(%1)").arg(tok.displayToken(m.token));
    case PatchingMetricKind::LogProb: return QStringLiteral("log P(%1)").arg(tok.displayToken(m.token));
    case PatchingMetricKind::KL: break;
    }
    return QStringLiteral("KL(clean ‖ run)");
}

double patchingMetricValue(const PatchingMetric& m, const RowVector& logits, const RowVector& clean) {
    switch (m.kind) {
    case PatchingMetricKind::LogitDiff: return double(logits(m.token)) - double(logits(m.counterToken));
    case PatchingMetricKind::Logit: return double(logits(m.token));
    case PatchingMetricKind::Prob: return std::exp(logSoftmax(logits)(m.token));
    case PatchingMetricKind::LogProb: return logSoftmax(logits)(m.token);
    case PatchingMetricKind::KL: break;
    }
    const Eigen::VectorXd lp = logSoftmax(clean), lq = logSoftmax(logits);
    return std::max(0.0, (lp.array().exp() * (lp - lq).array()).sum());
}

RowVector patchingMetricLogitGradient(const PatchingMetric& m, const RowVector& logits, const RowVector& clean) {
    RowVector d = RowVector::Zero(logits.size());
    switch (m.kind) {
    case PatchingMetricKind::LogitDiff:
        d(m.token) += 1.0f;
        d(m.counterToken) -= 1.0f;
        return d;
    case PatchingMetricKind::Logit: d(m.token) = 1.0f; return d;
    case PatchingMetricKind::Prob: { // ∂p_t/∂x = p_t·(e_t − p)
        const Eigen::VectorXd p = logSoftmax(logits).array().exp();
        for (Eigen::Index v = 0; v < d.size(); ++v) d(v) = float(-p(m.token) * p(v));
        d(m.token) += float(p(m.token));
        return d;
    }
    case PatchingMetricKind::LogProb: { // e_t − p
        const Eigen::VectorXd p = logSoftmax(logits).array().exp();
        for (Eigen::Index v = 0; v < d.size(); ++v) d(v) = float(-p(v));
        d(m.token) += 1.0f;
        return d;
    }
    case PatchingMetricKind::KL: break;
    }
    // KL(P_clean ‖ softmax(x)) = Σ p_clean·log p_clean − Σ p_clean·log softmax(x): ∂/∂x = softmax(x) − p_clean
    const Eigen::VectorXd q = logSoftmax(logits).array().exp(), p = logSoftmax(clean).array().exp();
    for (Eigen::Index v = 0; v < d.size(); ++v) d(v) = float(q(v) - p(v));
    return d;
}

double normalisedMetric(double m, double clean, double corrupt) {
    const double span = clean - corrupt;
    if (!std::isfinite(span) || span == 0.0) return std::numeric_limits<double>::quiet_NaN();
    return (m - corrupt) / span;
}

} // namespace attnscope
