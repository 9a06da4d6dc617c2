#include "model/analysis/graphs/attribution_targets.h"

#include "model/analysis/common/token_json.h"
#include "model/core/errors.h"
#include "model/features/npz_archive.h"
#include "model/features/sparse_coder.h"
#include "model/tokenizers/tokenizer.h"

#include <QFile>
#include <QFileInfo>
#include <cmath>
#include <cstring>

namespace attnscope {

namespace {

InputError targetError(const QString& spec, const QString& why) {
    return InputError(QStringLiteral("--graph-targets \"%1\": %2").arg(spec, why));
}

int singleToken(const QString& spec, const Model& model, const QString& text) {
    const std::vector<int> ids = model.tokenizer().encode(text);
    if (ids.size() != 1)
        throw targetError(spec, QStringLiteral("\"%1\" is %2 tokens; a target must be exactly one (give its id with \"ids:\")")
                                    .arg(text).arg(ids.size()));
    return ids.front();
}

RowVector unembedding(const Model& model, int token) {
    RowVector u(model.config().d_model);
    model.globals().W_U_T.copyRow(token, u.data());
    return u;
}

RowVector readVector(const QString& spec, const QString& path, int dModel) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) throw targetError(spec, QStringLiteral("cannot read %1: %2").arg(path, f.errorString()));
    if (f.size() > (qint64(1) << 26)) throw targetError(spec, QStringLiteral("%1 is %2 bytes: not a d_model vector").arg(path).arg(f.size()));
    const QByteArray bytes = f.readAll();
    NpyHeader h;
    try {
        h = parseNpyHeader(bytes, path, QStringLiteral("vector"));
    } catch (const std::exception& e) {
        throw targetError(spec, QString::fromUtf8(e.what()));
    }
    const bool rowShaped = h.shape.size() == 1 || (h.shape.size() == 2 && h.shape[0] == 1);
    if (!rowShaped || h.numel != dModel)
        throw targetError(spec, QStringLiteral("%1 has shape [%2]; a direction needs [%3] (d_model)")
                                    .arg(path, [&] {
                                        QStringList s;
                                        for (std::int64_t d : h.shape) s << QString::number(d);
                                        return s.join(QStringLiteral(", "));
                                    }()).arg(dModel));
    RowVector v(dModel);
    const char* data = bytes.constData() + h.dataOffset;
    for (int i = 0; i < dModel; ++i) {
        if (h.dtype == DType::F32) {
            float x;
            std::memcpy(&x, data + 4 * i, 4);
            v(i) = x;
        } else if (h.dtype == DType::F64) {
            double x;
            std::memcpy(&x, data + 8 * i, 8);
            v(i) = float(x);
        } else {
            throw targetError(spec, QStringLiteral("%1 is not float32 or float64").arg(path));
        }
    }
    if (!v.allFinite()) throw targetError(spec, QStringLiteral("%1 holds a value that is not finite").arg(path));
    return v;
}

} // namespace

std::vector<AttributionTarget> parseAttributionTargets(const QString& spec, const ReplacementModel& rm) {
    const Model& model = *rm.model;
    const ModelConfig& cfg = model.config();
    QString body = spec;
    QString kind;
    if (const int colon = spec.indexOf(QLatin1Char(':')); colon > 0) {
        const QString head = spec.left(colon).trimmed();
        if (head == QLatin1String("ids") || head == QLatin1String("diff") || head == QLatin1String("vector") || head == QLatin1String("feature")) {
            kind = head;
            body = spec.mid(colon + 1);
        }
    }
    double weight = 1;
    if (!kind.isEmpty() && kind != QLatin1String("ids")) { // a custom target's "@W"
        if (const int at = body.lastIndexOf(QLatin1Char('@')); at >= 0) {
            bool ok = false;
            weight = body.mid(at + 1).trimmed().toDouble(&ok);
            if (!ok || !(weight > 0) || !std::isfinite(weight))
                throw targetError(spec, QStringLiteral("the weight after @ must be a positive number, got \"%1\"").arg(body.mid(at + 1).trimmed()));
            body = body.left(at);
        }
    }
    std::vector<AttributionTarget> out;
    if (kind.isEmpty() || kind == QLatin1String("ids")) {
        for (const QString& part : body.split(QLatin1Char(','))) {
            if (part.trimmed().isEmpty()) throw targetError(spec, QStringLiteral("an empty target"));
            AttributionTarget t;
            if (kind.isEmpty()) {
                t.tokenId = singleToken(spec, model, part);
            } else {
                bool ok = false;
                t.tokenId = part.trimmed().toInt(&ok);
                if (!ok || t.tokenId < 0 || t.tokenId >= cfg.d_vocab)
                    throw targetError(spec, QStringLiteral("\"%1\" is not a token id (0 … %2)").arg(part.trimmed()).arg(cfg.d_vocab - 1));
            }
            t.label = tokenText(model.tokenizer(), t.tokenId);
            out.push_back(std::move(t));
        }
        return out;
    }
    AttributionTarget t;
    t.weight = weight;
    if (kind == QLatin1String("diff")) {
        const QStringList parts = body.split(QLatin1Char(','));
        if (parts.size() != 2) throw targetError(spec, QStringLiteral("a difference needs two tokens: \"diff: X, Y\""));
        const int x = singleToken(spec, model, parts[0]);
        const int y = singleToken(spec, model, parts[1]);
        t.direction = unembedding(model, x) - unembedding(model, y);
        t.label = QStringLiteral("logit(%1) − logit(%2)").arg(tokenText(model.tokenizer(), x), tokenText(model.tokenizer(), y));
    } else if (kind == QLatin1String("feature")) {
        const QStringList lf = body.trimmed().split(QLatin1Char(':'));
        bool okL = false, okF = false;
        const int layer = lf.size() == 2 ? lf[0].toInt(&okL) : -1, feature = lf.size() == 2 ? lf[1].toInt(&okF) : -1;
        if (!okL || !okF) throw targetError(spec, QStringLiteral("name a feature as \"feature: LAYER:FEATURE\""));
        if (layer < 0 || layer >= int(rm.transcoders->coders.size()))
            throw targetError(spec, QStringLiteral("layer %1 is outside the set's %2 layers").arg(layer).arg(rm.transcoders->coders.size()));
        const SparseCoder& c = rm.transcoders->coders[size_t(layer)];
        if (feature < 0 || feature >= c.d_sae)
            throw targetError(spec, QStringLiteral("feature %1 is outside layer %2's %3 features").arg(feature).arg(layer).arg(c.d_sae));
        t.direction = decoderDirection(c, feature);
        t.label = QStringLiteral("L%1 F%2 decoder").arg(layer).arg(feature);
    } else { // vector
        const QString path = body.trimmed();
        t.direction = readVector(spec, path, cfg.d_model);
        t.label = QFileInfo(path).fileName();
    }
    out.push_back(std::move(t));
    return out;
}

} // namespace attnscope
