#include "model/analysis/patching_metric.h"

#include "model/analysis/input_checks.h"
#include "model/analysis/target_token.h"
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
    case PatchingMetricKind::KL: break;
    }
    return QStringLiteral("kl");
}

namespace {
/// The kind named before the colon; nullopt when it names none.
std::optional<PatchingMetricKind> metricKind(const QString& kind) {
    for (PatchingMetricKind k : {PatchingMetricKind::LogitDiff, PatchingMetricKind::Logit, PatchingMetricKind::Prob, PatchingMetricKind::KL})
        if (kind == patchingMetricKindName(k)) return k;
    return std::nullopt;
}
} // namespace

QString patchingMetricForms() {
    return QStringLiteral("\"logit_diff: TOKEN, TOKEN2\", \"logit: TOKEN\", \"prob: TOKEN\" or \"kl\"");
}

QString patchingMetricFormError(const QString& text) {
    const int colon = text.indexOf(QLatin1Char(':'));
    const QString kind = (colon < 0 ? text : text.left(colon)).trimmed().toLower();
    const QString rest = colon < 0 ? QString() : text.mid(colon + 1);
    const std::optional<PatchingMetricKind> k = metricKind(kind);
    if (!k) return tr("Unknown metric '%1': use %2.").arg(kind, patchingMetricForms());
    if (*k == PatchingMetricKind::KL)
        return rest.trimmed().isEmpty() ? QString() : tr("The kl metric takes no tokens (it compares with the clean run's distribution).");
    if (rest.isEmpty())
        return tr("The %1 metric needs its token%2 after a colon, e.g. \"%1: Mary%3\".")
            .arg(kind, *k == PatchingMetricKind::LogitDiff ? QStringLiteral("s") : QString(),
                 *k == PatchingMetricKind::LogitDiff ? QStringLiteral(", John") : QString());
    return {};
}

PatchingMetric parsePatchingMetric(const Tokenizer& tokenizer, const QString& text) {
    if (const QString e = patchingMetricFormError(text); !e.isEmpty()) throw InputError(e);
    const int colon = text.indexOf(QLatin1Char(':'));
    const QString kind = (colon < 0 ? text : text.left(colon)).trimmed().toLower();
    PatchingMetric m;
    m.kind = *metricKind(kind);
    if (m.kind == PatchingMetricKind::KL) return m;
    const QString rest = text.mid(colon + 1);
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
    case PatchingMetricKind::KL: break;
    }
    return QStringLiteral("KL(clean ‖ run)");
}

double patchingMetricValue(const PatchingMetric& m, const RowVector& logits, const RowVector& clean) {
    switch (m.kind) {
    case PatchingMetricKind::LogitDiff: return double(logits(m.token)) - double(logits(m.counterToken));
    case PatchingMetricKind::Logit: return double(logits(m.token));
    case PatchingMetricKind::Prob: return std::exp(logSoftmax(logits)(m.token));
    case PatchingMetricKind::KL: break;
    }
    const Eigen::VectorXd lp = logSoftmax(clean), lq = logSoftmax(logits);
    return std::max(0.0, (lp.array().exp() * (lp - lq).array()).sum());
}

double normalisedMetric(double m, double clean, double corrupt) {
    const double span = clean - corrupt;
    if (!std::isfinite(span) || span == 0.0) return std::numeric_limits<double>::quiet_NaN();
    return (m - corrupt) / span;
}

} // namespace attnscope
