#include "model/analysis/circuits/path_patching.h"

#include "model/analysis/common/input_checks.h"
#include "model/core/errors.h"

#include <QCoreApplication>
#include <QRegularExpression>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("patching", text); }

HeadId parseHead(const ModelConfig& cfg, const QString& entry, QString* rest = nullptr) {
    static const QRegularExpression re(QStringLiteral("^\\s*(?:L(\\d+)H(\\d+)|(\\d+)\\.(\\d+))(?:\\.(\\w+))?\\s*$"),
                                       QRegularExpression::CaseInsensitiveOption);
    const QRegularExpressionMatch m = re.match(entry);
    if (!m.hasMatch())
        throw InputError(tr("'%1' is not a head: write LAYER.HEAD (e.g. 1.2) or L1H2.").arg(entry.trimmed()));
    const bool dotted = m.captured(1).isEmpty();
    const HeadId h{(dotted ? m.captured(3) : m.captured(1)).toInt(), (dotted ? m.captured(4) : m.captured(2)).toInt()};
    if (h.layer >= cfg.n_layers || h.head >= cfg.n_heads)
        throw InputError(tr("'%1' is not a head of this model: it has layers 0..%2 and heads 0..%3.")
                             .arg(entry.trimmed()).arg(cfg.n_layers - 1).arg(cfg.n_heads - 1));
    if (rest) *rest = m.captured(5).toLower();
    else if (!m.captured(5).isEmpty()) throw InputError(tr("'%1' is not a head (no .%2 here).").arg(entry.trimmed(), m.captured(5)));
    return h;
}

/// [S, n_heads·d_head] holding `head` columns = x (the rest is never read: a patch of one head).
Matrix headColumns(const ModelConfig& cfg, int S, int head, const Matrix& x) {
    Matrix m = Matrix::Zero(S, Eigen::Index(cfg.n_heads) * cfg.d_head);
    m.middleCols(Eigen::Index(head) * cfg.d_head, cfg.d_head) = x;
    return m;
}

PatchHook hookOf(PathReceiver::Input input) {
    return input == PathReceiver::Input::Q ? PatchHook::Q : input == PathReceiver::Input::K ? PatchHook::K : PatchHook::V;
}

constexpr qint64 kBatchBytes = qint64(256) << 20;

} // namespace

QString headIdName(const HeadId& h) { return QStringLiteral("L%1H%2").arg(h.layer).arg(h.head); }

QString pathReceiverName(const PathReceiver& r) {
    if (r.input == PathReceiver::Input::Logits) return QStringLiteral("logits");
    const char* s = r.input == PathReceiver::Input::Q ? "q" : r.input == PathReceiver::Input::K ? "k" : "v";
    return QStringLiteral("L%1H%2.%3").arg(r.layer).arg(r.head).arg(QLatin1String(s));
}

std::vector<HeadId> parseHeadList(const ModelConfig& cfg, const QString& text) {
    std::vector<HeadId> out;
    for (const QString& e : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) out.push_back(parseHead(cfg, e));
    if (out.empty()) throw InputError(tr("No heads given: write LAYER.HEAD,… (e.g. 0.0,1.2)."));
    return out;
}

std::vector<PathReceiver> parseReceiverList(const ModelConfig& cfg, const QString& text) {
    std::vector<PathReceiver> out;
    for (const QString& e : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        if (e.trimmed().compare(QLatin1String("logits"), Qt::CaseInsensitive) == 0) {
            out.push_back({});
            continue;
        }
        QString input;
        const HeadId h = parseHead(cfg, e, &input);
        PathReceiver r{PathReceiver::Input::Q, h.layer, h.head};
        if (input == QLatin1String("k")) r.input = PathReceiver::Input::K;
        else if (input == QLatin1String("v")) r.input = PathReceiver::Input::V;
        else if (input != QLatin1String("q"))
            throw InputError(tr("'%1': a receiver is LAYER.HEAD.q, .k or .v (the head's input), or logits.").arg(e.trimmed()));
        out.push_back(r);
    }
    if (out.empty()) throw InputError(tr("No receivers given: write LAYER.HEAD.q,… or logits."));
    return out;
}

PathPatchingResult runPathPatching(const Model& model, const PatchingRuns& runs, const PathPatchingOptions& options,
                                   const Progress& progress) {
    const ModelConfig& cfg = model.config();
    if (!runs.clean || !runs.corrupt) throw InputError(tr("Path patching needs a clean and a corrupted prompt."));
    if (options.receivers.empty()) throw InputError(tr("Path patching needs at least one receiver."));
    checkPatchingMetric(cfg, options.metric);
    const int S = runs.clean->nPositions();
    requireSameTokenLength(model.tokenizer(), runs.clean->tokens, runs.corrupt->tokens);
    PathPatchingResult out;
    out.options = options;
    if (out.options.senders.empty())
        for (int l = 0; l < cfg.n_layers; ++l)
            for (int h = 0; h < cfg.n_heads; ++h) out.options.senders.push_back({l, h});
    const auto& senders = out.options.senders;
    for (const HeadId& s : senders)
        if (s.layer < 0 || s.layer >= cfg.n_layers || s.head < 0 || s.head >= cfg.n_heads)
            throw InputError(tr("%1 is not a head of this model.").arg(headIdName(s)));
    out.position = resolvePosition(options.metric.position, S);

    const RowVector cleanLogits = positionLogits(model, *runs.clean, out.position);
    out.clean = patchingMetricValue(options.metric, cleanLogits, cleanLogits);
    out.corrupt = patchingMetricValue(options.metric, positionLogits(model, *runs.corrupt, out.position), cleanLogits);
    const bool denoise = options.direction == PatchDirection::Denoise;
    const ActivationCache& base = denoise ? *runs.corrupt : *runs.clean;
    const ActivationCache& source = denoise ? *runs.clean : *runs.corrupt;

    const auto& receivers = options.receivers;
    int headReceivers = 0;
    for (const PathReceiver& r : receivers) {
        if (r.input == PathReceiver::Input::Logits) continue;
        if (r.layer < 0 || r.layer >= cfg.n_layers || r.head < 0 || r.head >= cfg.n_heads)
            throw InputError(tr("%1 is not a head of this model.").arg(pathReceiverName(r)));
        ++headReceivers;
    }
    for (const PathReceiver& r : receivers) out.columns << pathReceiverName(r);
    const bool allColumn = headReceivers >= 2;
    if (allColumn) out.columns << QStringLiteral("all heads");
    const Eigen::Index nCols = out.columns.size();
    out.metric = Eigen::MatrixXd::Constant(Eigen::Index(senders.size()), nCols, std::numeric_limits<double>::quiet_NaN());

    const size_t maxRuns = size_t(std::clamp<qint64>(kBatchBytes / std::max<qint64>(1, patchedRunBytes(cfg, S)), 1, 2048));
    const Progress engineProgress{{}, progress.isCancelled};
    const PatchedForwardOptions at{out.position};
    const qint64 totalSteps = qint64(senders.size()) * (1 + nCols);
    qint64 done = 0;
    progress.step(0, totalSteps, tr("path patching"));
    // the base run's attention outputs, as every frozen layer's
    std::vector<std::shared_ptr<const LayerCache>> baseLayers(size_t(cfg.n_layers));
    for (int l = 0; l < cfg.n_layers; ++l) baseLayers[size_t(l)] = base.layer(l, engineProgress);

    for (size_t first = 0; first < senders.size(); first += maxRuns) {
        const size_t count = std::min(maxRuns, senders.size() - first);
        // step 2: the sender patched, every later layer's attention frozen, the receivers' inputs recorded
        std::vector<PatchedRun> step2(count);
        std::vector<std::vector<int>> captureOf(count, std::vector<int>(receivers.size(), -1));
        for (size_t i = 0; i < count; ++i) {
            const HeadId& s = senders[first + i];
            ActivationPatch p;
            p.hook = PatchHook::Z;
            p.layer = s.layer;
            p.head = s.head;
            auto src = source.layer(s.layer, engineProgress);
            p.values = &src->z;
            p.owner = src;
            step2[i].patches.push_back(p);
            for (int l = s.layer + 1; l < cfg.n_layers; ++l) {
                ActivationPatch f;
                f.hook = PatchHook::AttnOut;
                f.layer = l;
                f.values = &baseLayers[size_t(l)]->attn_out;
                step2[i].patches.push_back(f);
            }
            for (size_t r = 0; r < receivers.size(); ++r)
                if (receivers[r].input != PathReceiver::Input::Logits && receivers[r].layer > s.layer) {
                    captureOf[i][r] = int(step2[i].captures.size());
                    step2[i].captures.push_back({hookOf(receivers[r].input), receivers[r].layer, receivers[r].head});
                }
        }
        const std::vector<PatchedResult> r2 = runPatched(model, base, step2, at, engineProgress);
        done += qint64(count);
        progress.step(done, totalSteps, tr("path patching: senders' paths"));

        // step 3: the recorded inputs of each receiver alone, and of all head receivers together
        std::vector<PatchedRun> step3;
        std::vector<std::pair<size_t, Eigen::Index>> cellOf; // (sender row, column) of each step-3 run
        for (size_t i = 0; i < count; ++i) {
            const size_t row = first + i;
            PatchedRun all;
            for (size_t r = 0; r < receivers.size(); ++r) {
                if (receivers[r].input == PathReceiver::Input::Logits) {
                    out.metric(Eigen::Index(row), Eigen::Index(r)) = patchingMetricValue(options.metric, r2[i].logits, cleanLogits);
                    continue;
                }
                if (captureOf[i][r] < 0) continue; // no path from the sender
                auto values = std::make_shared<Matrix>(headColumns(cfg, S, receivers[r].head, r2[i].captured[size_t(captureOf[i][r])]));
                ActivationPatch p;
                p.hook = hookOf(receivers[r].input);
                p.layer = receivers[r].layer;
                p.head = receivers[r].head;
                p.values = values.get();
                p.owner = values;
                step3.push_back({{p}, {}});
                cellOf.push_back({row, Eigen::Index(r)});
                all.patches.push_back(p);
            }
            if (allColumn && !all.patches.empty()) {
                step3.push_back(std::move(all));
                cellOf.push_back({row, nCols - 1});
            }
        }
        const std::vector<PatchedResult> r3 = runPatched(model, base, step3, at, engineProgress);
        for (size_t k = 0; k < r3.size(); ++k)
            out.metric(Eigen::Index(cellOf[k].first), cellOf[k].second) = patchingMetricValue(options.metric, r3[k].logits, cleanLogits);
        done += qint64(count) * nCols;
        progress.step(done, totalSteps, tr("path patching: receivers"));
    }
    out.normalised = out.metric.unaryExpr([&](double m) { return normalisedMetric(m, out.clean, out.corrupt); });
    return out;
}

} // namespace attnscope
