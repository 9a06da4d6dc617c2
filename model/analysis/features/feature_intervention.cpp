#include "model/analysis/features/feature_intervention.h"

#include "model/core/errors.h"
#include "model/transformer/forward.h"

#include <QDir>
#include <QRegularExpression>

namespace attnscope {

FeatureEdit parseFeatureEdit(const QString& text) {
    static const QRegularExpression re(QStringLiteral("^\\s*(\\d+)\\s*=\\s*(ablate|clamp:([-+0-9.eE]+)|[-+0-9.eE]+)\\s*(?:@\\s*([0-9,\\s]+))?$"));
    const auto m = re.match(text);
    if (!m.hasMatch())
        throw InputError(QStringLiteral("\"%1\" is not a feature edit: write F=α (steer by α·W_dec[F]), F=ablate or F=clamp:V, "
                                        "optionally @P1,P2 for positions").arg(text));
    FeatureEdit e;
    e.feature = m.captured(1).toInt();
    const QString what = m.captured(2);
    bool ok = true;
    if (what == QLatin1String("ablate")) e.kind = FeatureEditKind::Ablate;
    else if (what.startsWith(QLatin1String("clamp:"))) {
        e.kind = FeatureEditKind::Clamp;
        e.value = m.captured(3).toDouble(&ok);
    } else {
        e.kind = FeatureEditKind::Steer;
        e.value = what.toDouble(&ok);
    }
    if (!ok || !std::isfinite(e.value)) throw InputError(QStringLiteral("\"%1\": the value is not a finite number").arg(text));
    for (const QString& p : m.captured(4).split(QLatin1Char(','), Qt::SkipEmptyParts)) e.positions.push_back(p.trimmed().toInt());
    return e;
}

namespace {

bool covers(const FeatureEdit& e, Eigen::Index p) {
    return e.positions.empty() || std::find(e.positions.begin(), e.positions.end(), int(p)) != e.positions.end();
}

} // namespace

std::shared_ptr<ForwardHooks> featureEditHooks(const Model& model, const SparseCoder& sae, const std::vector<FeatureEdit>& edits) {
    const ModelConfig& cfg = model.config();
    const QString label = QDir::toNativeSeparators(sae.path);
    const HookPoint in = requireHook(cfg, sae.hookIn, sae.d_in, label);
    const HookPoint out = requireHook(cfg, sae.hookOut, sae.d_out, label);
    requireEditable(out);
    for (const FeatureEdit& e : edits) requireFeature(sae, e.feature);
    auto hooks = std::make_shared<ForwardHooks>();
    bool needsInput = false;
    for (const FeatureEdit& e : edits) needsInput |= e.kind != FeatureEditKind::Steer;
    // the input activation of the pass being run, captured before the output hook fires (same layer, upstream)
    auto input = std::make_shared<Matrix>();
    if (needsInput && !(in == out)) {
        if (in.site == HookSite::MlpIn) {
            const LayerWeights& w = model.layer(in.layer);
            addHookEdit(*hooks, HookPoint{in.layer, HookSite::ResidMid}, [input, &cfg, &w](Matrix& x) { *input = applyNorm(cfg, x, w.ln2_w, w.ln2_b); });
        } else if (hookIsEditable(in)) {
            addHookEdit(*hooks, in, [input](Matrix& x) { *input = x; });
        } else {
            throw InputError(QStringLiteral("%1: its input %2 cannot be read during a pass, so ablate/clamp are not available (steer is)")
                                 .arg(label, in.name()));
        }
    }
    const SparseCoder* coder = &sae; // the dictionary outlives the hooks (the caller keeps both)
    addHookEdit(*hooks, out, [edits, coder, input, same = in == out, needsInput](Matrix& x) {
        Matrix change; // decode(f') − decode(f) for the ablations and clamps, from the activation as it came
        if (needsInput) {
            const Matrix xin = same ? x : *input;
            const Matrix f = encodeFeatures(*coder, xin);
            Matrix g = f;
            for (const FeatureEdit& e : edits) {
                if (e.kind == FeatureEditKind::Steer) continue;
                for (Eigen::Index p = 0; p < g.rows(); ++p)
                    if (covers(e, p)) g(p, e.feature) = e.kind == FeatureEditKind::Ablate ? 0.0f : float(e.value);
            }
            change = decodeFeatures(*coder, g, xin) - decodeFeatures(*coder, f, xin);
        }
        for (const FeatureEdit& e : edits) {
            if (e.kind != FeatureEditKind::Steer) continue;
            const RowVector d = decoderDirection(*coder, e.feature) * float(e.value);
            for (Eigen::Index p = 0; p < x.rows(); ++p)
                if (covers(e, p)) x.row(p) += d;
        }
        if (needsInput) x += change;
    });
    return hooks;
}

} // namespace attnscope
