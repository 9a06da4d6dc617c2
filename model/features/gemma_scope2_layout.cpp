#include "model/features/gemma_scope2_layout.h"

#include "model/core/errors.h"
#include "model/features/gemma_scope2_multilayer.h"
#include "model/features/gemma_scope_params.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <map>

namespace attnscope {

namespace {

const QString kParams = QStringLiteral("params.safetensors");

QString siteName(GemmaScope2Site s) {
    switch (s) {
    case GemmaScope2Site::ResidPost: return QStringLiteral("resid_post");
    case GemmaScope2Site::AttnOut: return QStringLiteral("attn_out");
    case GemmaScope2Site::MlpOut: return QStringLiteral("mlp_out");
    case GemmaScope2Site::Transcoder: return QStringLiteral("transcoder");
    case GemmaScope2Site::Clt: return QStringLiteral("clt");
    case GemmaScope2Site::Crosscoder: return QStringLiteral("crosscoder");
    }
    return {};
}

bool multiLayer(GemmaScope2Site s) { return s == GemmaScope2Site::Clt || s == GemmaScope2Site::Crosscoder; }

/// params_layer_0.safetensors … in order; empty when there is none. A gap: ModelError naming the missing file.
std::vector<QString> layerFiles(const QDir& dir) {
    const QStringList all = dir.entryList({QStringLiteral("params_layer_*.safetensors")}, QDir::Files);
    std::vector<QString> files;
    for (int i = 0; i < int(all.size()); ++i) {
        const QString name = QStringLiteral("params_layer_%1.safetensors").arg(i);
        if (!dir.exists(name))
            throw ModelError(QDir::toNativeSeparators(dir.path()), QStringLiteral("%1 is missing (the folder has %2 params_layer_*.safetensors files)")
                                                                       .arg(name).arg(all.size()));
        files.push_back(dir.filePath(name));
    }
    return files;
}

/// One openable thing in a site folder: a dictionary folder, or every layer folder of one transcoder variant.
struct Candidate {
    QString path;                ///< what opens it (a variant path need not exist)
    GemmaScope2Site site;
    std::map<int, QString> layers; ///< layer → folder (single-layer sites)
    QString describe() const {
        const QString rel = QDir::toNativeSeparators(path);
        if (multiLayer(site)) return rel;
        return layers.size() == 1 ? rel : QStringLiteral("%1 (%2 layers)").arg(rel).arg(layers.size());
    }
};

/// The candidates of site folder `dir`: a transcoder site's variants (each every layer of it; with `splitPartial`, a
/// variant whose layers are not 0 … max is listed layer by layer instead, as the sites without "_all" hold a few
/// layers), an SAE site's layer folders, a CLT's or crosscoder's folders.
std::vector<Candidate> candidatesOf(const QDir& dir, GemmaScope2Site site, bool splitPartial) {
    std::map<QString, Candidate> byKey;
    for (const QString& sub : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
        const std::optional<GemmaScope2Name> n = parseGemmaScope2Name(sub);
        if (!n) continue;
        const bool grouped = site == GemmaScope2Site::Transcoder && n->layers.size() == 1;
        const QString key = grouped ? n->variant() : sub;
        Candidate& c = byKey[key];
        c.site = site;
        c.path = dir.filePath(key);
        if (n->layers.size() == 1 && !multiLayer(site)) c.layers[n->layers[0]] = dir.filePath(sub);
    }
    std::vector<Candidate> out;
    for (auto& [k, c] : byKey) {
        const bool partial = c.layers.size() > 1 && c.layers.rbegin()->first + 1 != int(c.layers.size());
        if (site == GemmaScope2Site::Transcoder && splitPartial && partial) {
            for (const auto& [l, folder] : c.layers) out.push_back(Candidate{folder, site, {{l, folder}}});
        } else {
            out.push_back(std::move(c));
        }
    }
    return out;
}

[[noreturn]] void refuseChoice(const QString& path, const QString& what, const std::vector<Candidate>& cands) {
    QStringList names;
    for (size_t i = 0; i < cands.size() && i < 12; ++i) names << cands[i].describe();
    if (cands.size() > 12) names << QStringLiteral("… %1 more").arg(cands.size() - 12);
    throw ModelError(QDir::toNativeSeparators(path), QStringLiteral("%1 holds %2 Gemma Scope 2 dictionaries; open one of: %3")
                                                         .arg(what).arg(cands.size()).arg(names.join(QStringLiteral("; "))));
}

/// A single-layer dictionary folder.
DictionarySet openLayerFolder(const QString& folder) {
    const QDir dir(folder);
    if (!dir.exists(kParams))
        throw ModelError(QDir::toNativeSeparators(folder), QStringLiteral("a Gemma Scope 2 folder without params.safetensors (has: %1): "
                                                                          "download the folder's params.safetensors beside its config.json")
                                                               .arg(dir.entryList(QDir::Files).join(QStringLiteral(", "))));
    return singleDictionary(readGemmaScopeFile(dir.filePath(kParams)), folder);
}

/// A CLT's or crosscoder's folder.
DictionarySet openMultiLayer(const QString& folder, GemmaScope2Site site, const GemmaScope2Name& name) {
    const QDir dir(folder);
    const std::vector<QString> files = layerFiles(dir);
    const QString label = QDir::toNativeSeparators(folder);
    if (files.empty())
        throw ModelError(label, QStringLiteral("a Gemma Scope 2 %1 folder without params_layer_0.safetensors, params_layer_1.safetensors, …")
                                    .arg(siteName(site)));
    if (dir.exists(QStringLiteral("config.json"))) readGemmaScope2Config(dir.filePath(QStringLiteral("config.json"))); // types, architecture
    const bool crosscoder = site == GemmaScope2Site::Crosscoder;
    if (crosscoder && name.layers.size() != files.size())
        throw ModelError(label, QStringLiteral("the folder name lists %1 layers but there are %2 params_layer_*.safetensors files")
                                    .arg(name.layers.size()).arg(files.size()));
    std::vector<std::pair<QString, QString>> hooks;
    for (size_t k = 0; k < files.size(); ++k) hooks.push_back(gemmaScope2SiteHooks(site, crosscoder ? name.layers[k] : int(k)));
    DictionarySet set = readGemmaScope2MultiLayer(files, hooks, crosscoder);
    set.path = folder;
    const qint64 total = qint64(set.coders[0].d_sae) * qint64(set.coders.size());
    if (!name.widthAllows(total))
        throw ModelError(label, QStringLiteral("the folder name says width %1 (%2 to %3 features) but the %4 files have %5 × %6 = %7")
                                    .arg(name.width).arg(name.widthLow).arg(name.widthHigh - 1).arg(set.coders.size())
                                    .arg(set.coders.size()).arg(set.coders[0].d_sae).arg(total));
    return set;
}

/// Every layer of one transcoder variant, 0 … max without gaps.
DictionarySet openTranscoderSet(const Candidate& c) {
    const QString label = QDir::toNativeSeparators(c.path);
    const int maxLayer = c.layers.rbegin()->first;
    DictionarySet set;
    set.path = c.path;
    set.format = QStringLiteral("Gemma Scope 2");
    set.kind = QStringLiteral("transcoder_set");
    const QString variant = QFileInfo(c.path).fileName();
    for (int l = 0; l <= maxLayer; ++l)
        if (!c.layers.count(l))
            throw ModelError(label, QStringLiteral("layer %1 is missing: a transcoder set needs every layer 0 … %2 (no folder layer_%1_%3)")
                                        .arg(l).arg(maxLayer).arg(variant));
    for (const auto& it : c.layers) {
        const int l = it.first;
        DictionarySet one = openLayerFolder(it.second);
        SparseCoder& sae = one.coders[0];
        if (l > 0 && (sae.d_sae != set.coders[0].d_sae || sae.d_in != set.coders[0].d_in))
            throw ModelError(QDir::toNativeSeparators(it.second), QStringLiteral("d_sae %1 and d_in %2 differ from layer 0's %3 and %4")
                                                                       .arg(sae.d_sae).arg(sae.d_in).arg(set.coders[0].d_sae).arg(set.coders[0].d_in));
        set.coders.push_back(std::move(sae));
    }
    return set;
}

DictionarySet openCandidate(const Candidate& c) {
    if (multiLayer(c.site)) return openMultiLayer(c.path, c.site, *parseGemmaScope2Name(QFileInfo(c.path).fileName()));
    if (QFileInfo(c.path).isDir()) return openLayerFolder(c.path); // one layer's folder
    return openTranscoderSet(c);                                    // a transcoder variant
}

/// The site folders directly inside `dir`.
std::vector<std::pair<QString, GemmaScope2Site>> siteFolders(const QDir& dir) {
    std::vector<std::pair<QString, GemmaScope2Site>> out;
    for (const QString& sub : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
        if (const auto s = gemmaScope2Site(sub)) out.push_back({dir.filePath(sub), *s});
    return out;
}

} // namespace

std::optional<GemmaScope2Site> gemmaScope2Site(const QString& folderName) {
    QString n = folderName;
    if (n.endsWith(QLatin1String("_all"))) n.chop(4);
    for (GemmaScope2Site s : {GemmaScope2Site::ResidPost, GemmaScope2Site::AttnOut, GemmaScope2Site::MlpOut, GemmaScope2Site::Transcoder,
                              GemmaScope2Site::Clt, GemmaScope2Site::Crosscoder})
        if (n == siteName(s) && (folderName == n || !multiLayer(s))) return s;
    return std::nullopt;
}

QString GemmaScope2Name::variant() const {
    return QStringLiteral("width_%1_l0_%2%3").arg(width, l0, affine ? QStringLiteral("_affine") : QString());
}

std::optional<GemmaScope2Name> parseGemmaScope2Name(const QString& folderName) {
    static const QRegularExpression re(QStringLiteral("^(?:layer_(\\d{1,4}(?:_\\d{1,4})*)_)?width_(\\d{1,6})([km])_l0_([a-z0-9]+?)(_affine)?$"));
    const auto m = re.match(folderName);
    if (!m.hasMatch()) return std::nullopt;
    GemmaScope2Name n;
    if (m.capturedLength(1) > 0)
        for (const QString& l : m.captured(1).split(QLatin1Char('_'))) n.layers.push_back(l.toInt());
    const qint64 w = m.captured(2).toLongLong(), unit = m.captured(3) == QLatin1String("k") ? 1000 : 1000000;
    n.width = m.captured(2) + m.captured(3);
    n.widthLow = w * unit;
    n.widthHigh = (w + 1) * unit;
    n.l0 = m.captured(4);
    n.affine = m.capturedLength(5) > 0;
    return n;
}

std::pair<QString, QString> gemmaScope2SiteHooks(GemmaScope2Site site, int layer) {
    const QString b = QStringLiteral("blocks.%1.").arg(layer);
    switch (site) {
    case GemmaScope2Site::ResidPost: case GemmaScope2Site::Crosscoder: return {b + QStringLiteral("hook_resid_post"), b + QStringLiteral("hook_resid_post")};
    case GemmaScope2Site::AttnOut: return {b + QStringLiteral("attn.hook_z"), b + QStringLiteral("attn.hook_z")};
    case GemmaScope2Site::MlpOut: return {b + QStringLiteral("hook_mlp_out"), b + QStringLiteral("hook_mlp_out")};
    case GemmaScope2Site::Transcoder: case GemmaScope2Site::Clt:
        return {b + QStringLiteral("ln2.hook_normalized"), b + QStringLiteral("hook_mlp_out")};
    }
    return {};
}

std::optional<GemmaScope2Folder> gemmaScope2FolderOf(const QString& file) {
    const QFileInfo fi(file);
    const QDir folder = fi.absoluteDir();
    const std::optional<GemmaScope2Name> n = parseGemmaScope2Name(folder.dirName());
    const std::optional<GemmaScope2Site> s = gemmaScope2Site(QFileInfo(folder.absolutePath()).dir().dirName());
    if (!n || !s) return std::nullopt;
    const bool layersFit = *s == GemmaScope2Site::Clt ? n->layers.empty() : *s == GemmaScope2Site::Crosscoder ? !n->layers.empty() : n->layers.size() == 1;
    if (!layersFit) return std::nullopt;
    return GemmaScope2Folder{*s, *n};
}

bool isGemmaScope2Path(const QString& path) {
    const QFileInfo fi(path);
    const std::optional<GemmaScope2Site> parentSite = gemmaScope2Site(fi.absoluteDir().dirName());
    if (parentSite && parseGemmaScope2Name(fi.fileName())) return true; // a dictionary folder or a variant path
    if (!fi.isDir()) return false;
    return gemmaScope2Site(fi.fileName()) || !siteFolders(QDir(path)).empty();
}

DictionarySet openGemmaScope2(const QString& path) {
    const QFileInfo fi(path);
    const QString label = QDir::toNativeSeparators(path);
    const std::optional<GemmaScope2Site> parentSite = gemmaScope2Site(fi.absoluteDir().dirName());
    if (parentSite) {
        if (const std::optional<GemmaScope2Name> n = parseGemmaScope2Name(fi.fileName())) {
            if (multiLayer(*parentSite)) return openMultiLayer(path, *parentSite, *n);
            if (fi.isDir()) return openLayerFolder(path);
            // a variant path: every layer folder of that variant in the site folder
            for (const Candidate& c : candidatesOf(fi.absoluteDir(), *parentSite, false))
                if (QFileInfo(c.path).fileName() == fi.fileName()) return openCandidate(c);
            throw ModelError(label, QStringLiteral("no folder layer_L_%1 in %2").arg(fi.fileName(), QDir::toNativeSeparators(fi.absolutePath())));
        }
    }
    std::vector<Candidate> cands;
    QString what;
    if (const std::optional<GemmaScope2Site> site = gemmaScope2Site(fi.fileName())) {
        cands = candidatesOf(QDir(path), *site, true);
        what = QStringLiteral("the %1 folder").arg(fi.fileName());
    } else {
        for (const auto& [folder, s] : siteFolders(QDir(path)))
            for (Candidate& c : candidatesOf(QDir(folder), s, true)) cands.push_back(std::move(c));
        what = QStringLiteral("the repository");
    }
    if (cands.empty()) throw ModelError(label, QStringLiteral("%1 holds no Gemma Scope 2 dictionary folder (layer_L_width_W_l0_S…)").arg(what));
    if (cands.size() == 1) return openCandidate(cands[0]);
    refuseChoice(path, what, cands);
}

} // namespace attnscope
