#include "model/features/gemma_scope2_multilayer.h"

#include "model/core/errors.h"
#include "model/features/dictionary_tensors.h"

#include <QDir>

namespace attnscope {

DictionarySet readGemmaScope2MultiLayer(const std::vector<QString>& files, const std::vector<std::pair<QString, QString>>& hooks,
                                        bool crosscoder) {
    DictionarySet set;
    set.format = QStringLiteral("Gemma Scope 2");
    set.kind = crosscoder ? QStringLiteral("crosscoder") : QStringLiteral("cross_layer_transcoder");
    const std::int64_t n = std::int64_t(files.size());
    if (n == 0 || hooks.size() != files.size())
        throw ModelError(QString(), QStringLiteral("a multi-layer dictionary needs one params_layer_{i}.safetensors per layer"));
    set.crossLayerDecoders.resize(size_t(n));
    for (std::int64_t i = 0; i < n; ++i) {
        const QString& path = files[size_t(i)];
        DictionaryTensors t(SafetensorsFile::open(path, QDir::toNativeSeparators(path)));
        const auto enc = t.shape(QStringLiteral("w_enc"));
        if (!enc || enc->size() != 2 || (*enc)[0] < 1 || (*enc)[1] < 1)
            throw ModelError(t.label(), enc ? QStringLiteral("w_enc has shape %1, not [d_in, d_sae]").arg(shapeString(*enc))
                                            : QStringLiteral("missing tensor w_enc (has: %1)").arg(t.names().join(QStringLiteral(", "))));
        const std::int64_t din = (*enc)[0], dsae = (*enc)[1];
        if (i > 0 && (din != set.coders[0].d_in || dsae != set.coders[0].d_sae))
            throw ModelError(t.label(), QStringLiteral("w_enc is [%1, %2] but layer 0's is [%3, %4]")
                                            .arg(din).arg(dsae).arg(set.coders[0].d_in).arg(set.coders[0].d_sae));
        const QString ctx = QStringLiteral("w_enc [%1, %2] and %3 layer files").arg(din).arg(dsae).arg(n);
        SparseCoder sae;
        sae.path = path;
        sae.format = set.format;
        sae.architecture = crosscoder ? QStringLiteral("crosscoder") : QStringLiteral("cross_layer_transcoder");
        sae.owners.push_back(t.owner());
        sae.d_in = sae.d_out = int(din);
        sae.d_sae = int(dsae);
        sae.hookIn = hooks[size_t(i)].first;
        sae.hookOut = hooks[size_t(i)].second;
        sae.W_enc = t.weight(QStringLiteral("w_enc"), {din, dsae}, din, dsae, false, ctx);
        sae.b_enc = t.weight(QStringLiteral("b_enc"), {dsae}, 1, dsae, false, ctx);
        sae.b_dec = t.weight(QStringLiteral("b_dec"), {din}, 1, din, false, ctx);
        sae.threshold = t.weight(QStringLiteral("threshold"), {dsae}, 1, dsae, false, ctx);
        sae.W_skip = t.optionalWeight(QStringLiteral("affine_skip_connection"), {din, din}, din, din, false, ctx);
        sae.activation = FeatureActivation::JumpReLU; // ReLU(pre)·(pre > θ), the tutorial's encode
        sae.applyBDecToInput = false;
        const Weight whole = t.weight(QStringLiteral("w_dec"), {dsae, n, din}, dsae, n * din, false, ctx);
        for (std::int64_t j = crosscoder ? 0 : i; j < n; ++j) set.crossLayerDecoders[size_t(i)].push_back(whole.colBlock(j * din, din));
        sae.W_dec = whole.colBlock(i * din, din);
        set.coders.push_back(std::move(sae));
    }
    return set;
}

} // namespace attnscope
