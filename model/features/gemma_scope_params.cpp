#include "model/features/gemma_scope_params.h"

#include "model/core/errors.h"
#include "model/features/config_fields.h"
#include "model/features/dictionary_tensors.h"
#include "model/features/gemma_scope2_layout.h"
#include "model/formats/json_file.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>

namespace attnscope {

bool isGemmaScopeFile(const QString& path) {
    const QString name = QFileInfo(path).fileName();
    return name == QLatin1String("params.npz") || name == QLatin1String("params.safetensors");
}

std::pair<QString, QString> gemmaScopeHooksFromPath(const QString& path) {
    const QString p = QDir::fromNativeSeparators(QFileInfo(path).absoluteFilePath());
    static const QRegularExpression layerRe(QStringLiteral("(?:^|/)layer_(\\d+)(?:/|_)"));
    const auto m = layerRe.match(p);
    if (!m.hasMatch()) return {};
    const QString L = m.captured(1);
    const QStringList parts = p.split(QLatin1Char('/'));
    auto any = [&](const QStringList& keys) {
        for (const QString& part : parts)
            for (const QString& k : keys)
                if (part.contains(k)) return true;
        return false;
    };
    const QString blocks = QStringLiteral("blocks.%1.").arg(L);
    if (any({QStringLiteral("transcoder")}))
        return {blocks + QStringLiteral("ln2.hook_normalized"), blocks + QStringLiteral("hook_mlp_out")};
    if (any({QStringLiteral("-res"), QStringLiteral("resid_post")})) return {blocks + QStringLiteral("hook_resid_post"), blocks + QStringLiteral("hook_resid_post")};
    if (any({QStringLiteral("-mlp"), QStringLiteral("mlp_out")})) return {blocks + QStringLiteral("hook_mlp_out"), blocks + QStringLiteral("hook_mlp_out")};
    if (any({QStringLiteral("-att"), QStringLiteral("attn_out")})) return {blocks + QStringLiteral("attn.hook_z"), blocks + QStringLiteral("attn.hook_z")};
    return {};
}

QString gemmaScope2Hook(const QString& hfName) {
    static const QRegularExpression re(QStringLiteral("^model\\.layers\\.(\\d{1,4})\\.(output|pre_feedforward_layernorm\\.output|"
                                                      "post_feedforward_layernorm\\.output|self_attn\\.o_proj\\.input)$"));
    const auto m = re.match(hfName);
    if (!m.hasMatch()) return {};
    const QString blocks = QStringLiteral("blocks.%1.").arg(m.captured(1).toInt());
    const QString site = m.captured(2);
    if (site == QLatin1String("output")) return blocks + QStringLiteral("hook_resid_post");
    if (site.startsWith(QLatin1String("pre_"))) return blocks + QStringLiteral("ln2.hook_normalized");
    if (site.startsWith(QLatin1String("post_"))) return blocks + QStringLiteral("hook_mlp_out");
    return blocks + QStringLiteral("attn.hook_z");
}

GemmaScope2Config readGemmaScope2Config(const QString& path) {
    const QString label = QDir::toNativeSeparators(path);
    const ConfigFields cfg(parseJsonObject(readSmallFile(path, label, 1 << 20), label), label);
    GemmaScope2Config c;
    c.hfHookIn = cfg.stringOr(QStringLiteral("hf_hook_point_in"), QString());
    c.hfHookOut = cfg.stringOr(QStringLiteral("hf_hook_point_out"), c.hfHookIn);
    c.hookIn = gemmaScope2Hook(c.hfHookIn);
    c.hookOut = gemmaScope2Hook(c.hfHookOut);
    c.width = cfg.integer(QStringLiteral("width"), 1, 1'000'000'000).value_or(0);
    cfg.number(QStringLiteral("l0"));
    cfg.string(QStringLiteral("model_name"));
    c.architecture = cfg.stringOr(QStringLiteral("architecture"), QString());
    c.affineConnection = cfg.booleanOr(QStringLiteral("affine_connection"), false);
    c.type = cfg.stringOr(QStringLiteral("type"), QString());
    if (!c.architecture.isEmpty() && c.architecture != QLatin1String("jump_relu"))
        throw ModelError(label, QStringLiteral("architecture \"%1\" is not supported (jump_relu)").arg(c.architecture));
    if (!c.type.isEmpty() && c.type != QLatin1String("sae") && c.type != QLatin1String("transcoder"))
        throw ModelError(label, QStringLiteral("type \"%1\" is not sae or transcoder").arg(c.type));
    return c;
}

SparseCoder readGemmaScopeFile(const QString& path, const QString& hookOverride) {
    const QString label = QDir::toNativeSeparators(path);
    const bool npz = path.endsWith(QLatin1String(".npz"));
    DictionaryTensors t = npz ? DictionaryTensors(NpzArchive::open(path, label)) : DictionaryTensors(SafetensorsFile::open(path, label));
    SparseCoder sae;
    sae.path = path;
    sae.format = npz ? QStringLiteral("Gemma Scope") : QStringLiteral("Gemma Scope 2");
    sae.owners.push_back(t.owner());
    const QString wEnc = npz ? QStringLiteral("W_enc") : QStringLiteral("w_enc");
    const QString wDec = npz ? QStringLiteral("W_dec") : QStringLiteral("w_dec");
    const auto encShape = t.shape(wEnc);
    if (!encShape || encShape->size() != 2)
        throw ModelError(label, encShape ? QStringLiteral("%1 has shape %2, not [d_in, d_sae]").arg(wEnc, shapeString(*encShape))
                                         : QStringLiteral("missing array %1 (has: %2)").arg(wEnc, t.names().join(QStringLiteral(", "))));
    const std::int64_t din = (*encShape)[0], dsae = (*encShape)[1];
    if (din < 1 || dsae < 1) throw ModelError(label, QStringLiteral("%1 has shape %2").arg(wEnc, shapeString(*encShape)));
    sae.d_in = int(din);
    sae.d_sae = int(dsae);
    auto [hookIn, hookOut] = gemmaScopeHooksFromPath(path);
    const std::optional<GemmaScope2Folder> folder = npz ? std::nullopt : gemmaScope2FolderOf(path);
    if (folder && folder->name.layers.size() == 1) { // <site>[_all]/layer_L_width_W_l0_S[_affine]: the site names the hooks
        std::tie(hookIn, hookOut) = gemmaScope2SiteHooks(folder->site, folder->name.layers[0]);
        const QString dirName = QFileInfo(path).dir().dirName();
        if (!folder->name.widthAllows(dsae))
            throw ModelError(label, QStringLiteral("the folder name %1 says width %2 (%3 to %4 features) but %5 has %6")
                                        .arg(dirName, folder->name.width).arg(folder->name.widthLow).arg(folder->name.widthHigh - 1)
                                        .arg(wEnc).arg(dsae));
        if (folder->name.affine != t.has(QStringLiteral("affine_skip_connection")))
            throw ModelError(label, folder->name.affine ? QStringLiteral("the folder name %1 says _affine but there is no affine_skip_connection").arg(dirName)
                                                        : QStringLiteral("there is an affine_skip_connection but the folder name %1 does not end in _affine").arg(dirName));
    }
    std::optional<GemmaScope2Config> config;
    if (const QString cfgPath = QFileInfo(path).dir().filePath(QStringLiteral("config.json")); !npz && QFileInfo::exists(cfgPath)) {
        config = readGemmaScope2Config(cfgPath);
        if (config->width != 0 && config->width != dsae)
            throw ModelError(label, QStringLiteral("%1 has %2 features but config.json says width %3").arg(wEnc).arg(dsae).arg(config->width));
        if (config->affineConnection && !t.has(QStringLiteral("affine_skip_connection")))
            throw ModelError(label, QStringLiteral("config.json says affine_connection but there is no affine_skip_connection"));
        if (!config->hookIn.isEmpty()) hookIn = config->hookIn;
        if (!config->hookOut.isEmpty()) hookOut = config->hookOut;
    }
    const bool transcoder = !hookOverride.isEmpty() ? false : hookIn != hookOut;
    sae.hookIn = hookOverride.isEmpty() ? hookIn : hookOverride;
    sae.hookOut = hookOverride.isEmpty() ? hookOut : hookOverride;
    if (sae.hookIn.isEmpty())
        throw ModelError(label, QStringLiteral("the hook is not in the file and the path does not name it (…-res/layer_L/…, …-mlp/…, "
                                               "…-att/…, …transcoders/…): give it with --hook, e.g. blocks.12.hook_resid_post"));
    const auto decShape = t.shape(wDec);
    const std::int64_t dout = decShape && decShape->size() == 2 ? (*decShape)[1] : din;
    sae.d_out = int(dout);
    sae.architecture = transcoder || dout != din ? QStringLiteral("jumprelu_transcoder") : QStringLiteral("jumprelu");
    const QString ctx = QStringLiteral("%1 [%2, %3]").arg(wEnc).arg(din).arg(dsae);
    sae.W_enc = t.weight(wEnc, {din, dsae}, din, dsae, false, ctx);
    sae.W_dec = t.weight(wDec, {dsae, dout}, dsae, dout, false, ctx);
    sae.b_enc = t.weight(QStringLiteral("b_enc"), {dsae}, 1, dsae, false, ctx);
    sae.b_dec = t.weight(QStringLiteral("b_dec"), {dout}, 1, dout, false, ctx);
    sae.threshold = t.weight(QStringLiteral("threshold"), {dsae}, 1, dsae, false, ctx);
    sae.activation = FeatureActivation::JumpReLU;
    sae.applyBDecToInput = false;
    if (t.has(QStringLiteral("affine_skip_connection"))) {
        sae.W_skip = t.weight(QStringLiteral("affine_skip_connection"), {din, dout}, din, dout, false, ctx);
        sae.architecture = QStringLiteral("skip_transcoder");
    }
    return sae;
}

} // namespace attnscope
