#include "model/features/hook_point.h"

#include "model/core/errors.h"

#include <QRegularExpression>

namespace attnscope {

namespace {

struct SiteName {
    const char* name;
    HookSite site;
};

// Every spelling accepted, canonical first for each site (name() writes the first).
constexpr SiteName kSites[] = {
    {"hook_resid_pre", HookSite::ResidPre},   {"hook_resid_mid", HookSite::ResidMid},
    {"hook_mlp_in", HookSite::ResidMid},      {"hook_resid_post", HookSite::ResidPost},
    {"hook_attn_out", HookSite::AttnOut},     {"hook_mlp_out", HookSite::MlpOut},
    {"mlp.hook_out", HookSite::MlpOut},       {"ln2.hook_normalized", HookSite::MlpIn},
    {"mlp.hook_in", HookSite::MlpIn},         {"attn.hook_z", HookSite::Z},
    {"hook_z", HookSite::Z},                  {"mlp.hook_post", HookSite::MlpPost},
};

QString knownNames() {
    QStringList names{QStringLiteral("hook_embed")};
    for (const SiteName& s : kSites) names << QStringLiteral("blocks.L.%1").arg(QLatin1String(s.name));
    return names.join(QStringLiteral(", "));
}

/// The residual a layer's resid_pre hook sees and where resid_post of the last layer is edited.
using Edit = std::function<void(Matrix&)>;

ForwardHooks::Activation chain(ForwardHooks::Activation before, int layer, Edit edit) {
    return [before = std::move(before), layer, edit = std::move(edit)](int l, Matrix& x) {
        if (before) before(l, x);
        if (l == layer) edit(x);
    };
}

} // namespace

QString HookPoint::name() const {
    if (site == HookSite::Embed) return QStringLiteral("hook_embed");
    for (const SiteName& s : kSites)
        if (s.site == site) return QStringLiteral("blocks.%1.%2").arg(layer).arg(QLatin1String(s.name));
    return {};
}

int HookPoint::width(const ModelConfig& cfg) const {
    switch (site) {
    case HookSite::Z: return cfg.n_heads * cfg.d_head;
    case HookSite::MlpPost: return cfg.d_mlp;
    default: return cfg.d_model;
    }
}

std::optional<HookPoint> parseHookName(const QString& name, int defaultLayer) {
    const QString n = name.trimmed();
    if (n == QLatin1String("hook_embed")) return HookPoint{-1, HookSite::Embed};
    static const QRegularExpression re(QStringLiteral("^blocks\\.(\\d+)\\.(.+)$"));
    int layer = defaultLayer;
    QString rest = n;
    if (const auto m = re.match(n); m.hasMatch()) {
        bool ok = false;
        layer = m.captured(1).toInt(&ok);
        if (!ok) return std::nullopt;
        rest = m.captured(2);
    }
    for (const SiteName& s : kSites)
        if (rest == QLatin1String(s.name)) return HookPoint{layer, s.site};
    return std::nullopt;
}

HookPoint requireHook(const ModelConfig& cfg, const QString& name, int width, const QString& fileLabel, int defaultLayer) {
    const std::optional<HookPoint> h = parseHookName(name, defaultLayer);
    if (!h)
        throw InputError(QStringLiteral("%1: hook %2 is not a hook point AttnScope reads (known: %3)")
                             .arg(fileLabel, name.isEmpty() ? QStringLiteral("(none)") : name, knownNames()));
    if (h->site != HookSite::Embed && (h->layer < 0 || h->layer >= cfg.n_layers))
        throw InputError(QStringLiteral("%1: hook %2 names layer %3 but the model has %4 layers (0..%5)")
                             .arg(fileLabel, name).arg(h->layer).arg(cfg.n_layers).arg(cfg.n_layers - 1));
    if (width >= 0 && width != h->width(cfg)) {
        const char* what = h->site == HookSite::Z ? "n_heads·d_head" : h->site == HookSite::MlpPost ? "d_mlp" : "d_model";
        throw InputError(QStringLiteral("%1: the dictionary reads %2 values per position but %3 has %4 (%5) in this model")
                             .arg(fileLabel).arg(width).arg(h->name()).arg(h->width(cfg)).arg(QLatin1String(what)));
    }
    return *h;
}


bool hookIsEditable(const HookPoint& hook) {
    switch (hook.site) {
    case HookSite::ResidPre: case HookSite::ResidMid: case HookSite::ResidPost:
    case HookSite::AttnOut: case HookSite::MlpOut: case HookSite::Z: return true;
    default: return false;
    }
}

void requireEditable(const HookPoint& hook) {
    if (!hookIsEditable(hook))
        throw InputError(QStringLiteral("%1 cannot be edited during a forward pass (editable: resid_pre, resid_mid, resid_post, "
                                        "attn_out, mlp_out, attn.hook_z)").arg(hook.name()));
}

void addHookEdit(ForwardHooks& hooks, const HookPoint& hook, std::function<void(Matrix& x)> edit) {
    const int l = hook.layer;
    switch (hook.site) {
    case HookSite::ResidPre: hooks.resid_pre = chain(std::move(hooks.resid_pre), l, std::move(edit)); return;
    case HookSite::ResidMid: hooks.resid_mid = chain(std::move(hooks.resid_mid), l, std::move(edit)); return;
    case HookSite::ResidPost: hooks.resid_post = chain(std::move(hooks.resid_post), l, std::move(edit)); return;
    case HookSite::AttnOut: hooks.attn_out = chain(std::move(hooks.attn_out), l, std::move(edit)); return;
    case HookSite::MlpOut: hooks.mlp_out = chain(std::move(hooks.mlp_out), l, std::move(edit)); return;
    case HookSite::Z: hooks.z = chain(std::move(hooks.z), l, std::move(edit)); return;
    default: break;
    }
    requireEditable(hook);
}

} // namespace attnscope
