#include "model/analysis/circuits/activation_patching.h"

#include "model/analysis/common/input_checks.h"
#include "model/core/errors.h"
#include "model/transformer/forward.h"

#include <QCoreApplication>
#include <QStringList>
#include <map>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("patching", text); }

QString tokenList(const Tokenizer& tok, std::span<const int> ids) {
    QStringList parts;
    for (int id : ids) parts << tok.displayToken(id);
    return QLatin1Char('[') + parts.join(QLatin1Char('|')) + QLatin1Char(']');
}

/// Budget of per-run state one batch of the engine may hold.
constexpr qint64 kBatchBytes = qint64(256) << 20;

/// The replacement activations of a sweep, made once per (layer, head) and kept alive for the runs.
class ReplacementSource {
public:
    ReplacementSource(const PatchingRuns& runs, const ActivationCache& source, const PatchingOptions& o)
        : runs_(runs), source_(source), o_(o) {}

    /// The values of (hook, layer, head) with their owner.
    std::pair<const Matrix*, std::shared_ptr<const void>> values(int layer, int head, const Progress& progress) {
        const int key = o_.hook == PatchHook::Pattern ? layer * 4096 + head : layer * 4096;
        if (auto it = made_.find(key); it != made_.end()) return {it->second.first, it->second.second};
        std::pair<const Matrix*, std::shared_ptr<const void>> v;
        if (o_.ablation == AblationKind::None || o_.ablation == AblationKind::Resample) {
            auto l = source_.layer(layer, progress);
            v = {&hookActivation(*l, o_.hook, head), l};
        } else {
            auto m = std::make_shared<Matrix>(made(layer, head, progress));
            v = {m.get(), m};
        }
        made_[key] = v;
        return v;
    }

private:
    Matrix made(int layer, int head, const Progress& progress) const {
        const Matrix& own = hookActivation(*runs_.clean->layer(layer, progress), o_.hook, head);
        const Eigen::Index S = own.rows();
        switch (o_.ablation) {
        case AblationKind::Zero: return Matrix::Zero(S, own.cols());
        case AblationKind::Mean: return RowVector(own.colwise().mean()).replicate(S, 1);
        case AblationKind::ReferenceMean: break;
        case AblationKind::None:
        case AblationKind::Resample: return own; // not reached
        }
        bool sameLength = true;
        for (const auto& r : runs_.reference) sameLength = sameLength && r->nPositions() == S;
        if (sameLength) { // position-wise mean over the reference prompts
            Matrix sum = Matrix::Zero(S, own.cols());
            for (const auto& r : runs_.reference) sum += hookActivation(*r->layer(layer, progress), o_.hook, head);
            return sum / float(runs_.reference.size());
        }
        RowVector sum = RowVector::Zero(own.cols());
        Eigen::Index n = 0;
        for (const auto& r : runs_.reference) {
            const Matrix& a = hookActivation(*r->layer(layer, progress), o_.hook, head);
            sum += a.colwise().sum();
            n += a.rows();
        }
        return RowVector(sum / float(n)).replicate(S, 1);
    }

    const PatchingRuns& runs_;
    const ActivationCache& source_;
    const PatchingOptions& o_;
    std::map<int, std::pair<const Matrix*, std::shared_ptr<const void>>> made_;
};

} // namespace

QString patchDirectionName(PatchDirection d) { return d == PatchDirection::Denoise ? QStringLiteral("denoise") : QStringLiteral("noise"); }

QString ablationKindName(AblationKind k) {
    switch (k) {
    case AblationKind::None: return QStringLiteral("none");
    case AblationKind::Zero: return QStringLiteral("zero");
    case AblationKind::Mean: return QStringLiteral("mean");
    case AblationKind::ReferenceMean: return QStringLiteral("reference-mean");
    case AblationKind::Resample: break;
    }
    return QStringLiteral("resample");
}

std::optional<AblationKind> ablationKindFromName(const QString& name) {
    for (AblationKind k : {AblationKind::None, AblationKind::Zero, AblationKind::Mean, AblationKind::ReferenceMean, AblationKind::Resample})
        if (ablationKindName(k) == name) return k;
    return std::nullopt;
}

void requireSameTokenLength(const Tokenizer& tok, std::span<const int> clean, std::span<const int> corrupt) {
    if (clean.size() == corrupt.size()) return;
    throw InputError(tr("The clean and corrupted prompts must have the same number of tokens: the clean prompt has %1 %2, "
                        "the corrupted prompt %3 %4.")
                         .arg(clean.size()).arg(tokenList(tok, clean)).arg(corrupt.size()).arg(tokenList(tok, corrupt)));
}

PatchingRuns preparePatchingRuns(const Model& model, std::span<const int> clean, std::span<const int> corrupt,
                                 const std::vector<std::vector<int>>& reference, const Progress& progress) {
    if (!corrupt.empty()) requireSameTokenLength(model.tokenizer(), clean, corrupt);
    ForwardOptions o;
    o.cacheHeadResults = false;
    o.allLogits = false;
    PatchingRuns runs;
    runs.clean = std::make_shared<const ActivationCache>(runForward(model, clean, o, progress));
    if (!corrupt.empty()) runs.corrupt = std::make_shared<const ActivationCache>(runForward(model, corrupt, o, progress));
    for (const std::vector<int>& r : reference)
        runs.reference.push_back(std::make_shared<const ActivationCache>(runForward(model, r, o, progress)));
    return runs;
}

QString patchingMethodName(PatchingMethod m) {
    switch (m) {
    case PatchingMethod::Activation: return QStringLiteral("activation");
    case PatchingMethod::Attribution: return QStringLiteral("attribution");
    case PatchingMethod::AtpStar: break;
    }
    return QStringLiteral("atp_star");
}

std::vector<PatchingCell> patchingCells(const ModelConfig& cfg, int S, const PatchingOptions& o) {
    std::vector<PatchingCell> cells;
    for (int l = 0; l < cfg.n_layers; ++l) {
        if (!isHeadHook(o.hook)) {
            for (int p = 0; p < S; ++p) cells.push_back({l, -1, p});
            continue;
        }
        for (int h = 0; h < cfg.n_heads; ++h) {
            if (!o.byPosition) cells.push_back({l, h, -1});
            else
                for (int p = 0; p < S; ++p) cells.push_back({l, h, p});
        }
    }
    return cells;
}

PatchingSweep runPatchingSweep(const Model& model, const PatchingRuns& runs, const PatchingOptions& o, const Progress& progress,
                               const std::function<void(const PatchingSweep&, size_t, size_t)>& onCells) {
    const ModelConfig& cfg = model.config();
    if (!runs.clean) throw InputError(tr("Activation patching needs a clean run."));
    const int S = runs.clean->nPositions();
    checkPatchingMetric(cfg, o.metric);
    PatchingSweep sweep;
    sweep.options = o;
    sweep.position = resolvePosition(o.metric.position, S);
    const bool needsCorrupt = o.ablation == AblationKind::None || o.ablation == AblationKind::Resample;
    if (needsCorrupt && !runs.corrupt)
        throw InputError(o.ablation == AblationKind::None ? tr("Activation patching needs a corrupted prompt.")
                                                          : tr("Resample ablation needs a corrupted prompt."));
    if (runs.corrupt && runs.corrupt->nPositions() != S) requireSameTokenLength(model.tokenizer(), runs.clean->tokens, runs.corrupt->tokens);
    if (o.ablation == AblationKind::ReferenceMean) {
        if (runs.reference.empty()) throw InputError(tr("Mean ablation over reference prompts needs at least one reference prompt."));
        if (o.hook == PatchHook::Pattern)
            for (const auto& r : runs.reference)
                if (r->nPositions() != S)
                    throw InputError(tr("The mean attention pattern needs reference prompts of the clean prompt's length (%1 tokens); "
                                        "one has %2.").arg(S).arg(r->nPositions()));
    }
    if (o.ablation == AblationKind::Mean && o.hook == PatchHook::Pattern)
        throw InputError(tr("The mean over positions of an attention pattern would attend to later positions: "
                            "ablate the pattern with zero, reference-mean or resample."));

    const RowVector cleanLogits = positionLogits(model, *runs.clean, sweep.position);
    sweep.clean = patchingMetricValue(o.metric, cleanLogits, cleanLogits);
    if (runs.corrupt) sweep.corrupt = patchingMetricValue(o.metric, positionLogits(model, *runs.corrupt, sweep.position), cleanLogits);

    const bool intoClean = o.ablation != AblationKind::None || o.direction == PatchDirection::Noise;
    const ActivationCache& base = intoClean ? *runs.clean : *runs.corrupt;
    const ActivationCache& source = intoClean ? (runs.corrupt ? *runs.corrupt : *runs.clean) : *runs.clean;
    ReplacementSource replacements(runs, source, o);

    sweep.cells = patchingCells(cfg, S, o);
    const size_t total = sweep.cells.size();
    const size_t maxRuns = size_t(std::clamp<qint64>(kBatchBytes / std::max<qint64>(1, patchedRunBytes(cfg, S)), 1, 2048));
    const Progress engineProgress{{}, progress.isCancelled};
    progress.step(0, qint64(total), tr("activation patching"));
    for (size_t first = 0; first < total;) {
        size_t count = 0; // one layer at most per batch: its runs share every later weight read
        while (first + count < total && count < maxRuns && sweep.cells[first + count].layer == sweep.cells[first].layer) ++count;
        std::vector<PatchedRun> batch(count);
        for (size_t i = 0; i < count; ++i) {
            const PatchingCell& c = sweep.cells[first + i];
            ActivationPatch p;
            p.hook = o.hook;
            p.layer = c.layer;
            p.head = c.head;
            if (c.position >= 0) p.positions = {c.position};
            std::tie(p.values, p.owner) = replacements.values(c.layer, std::max(0, c.head), engineProgress);
            batch[i].patches.push_back(std::move(p));
        }
        const std::vector<PatchedResult> results = runPatched(model, base, batch, {sweep.position}, engineProgress);
        for (size_t i = 0; i < count; ++i) {
            PatchingCell& c = sweep.cells[first + i];
            c.metric = patchingMetricValue(o.metric, results[i].logits, cleanLogits);
            c.normalised = normalisedMetric(c.metric, sweep.clean, sweep.corrupt);
            c.recomputed = results[i].firstLayer >= 0;
            c.done = true;
        }
        sweep.cellsDone = int(first + count);
        if (onCells) onCells(sweep, first, count);
        first += count;
        progress.step(qint64(first), qint64(total), tr("activation patching: %1 of %2 cells").arg(first).arg(total));
    }
    return sweep;
}

Matrix patchingGrid(const ModelConfig& cfg, int S, const PatchingSweep& sweep, bool normalised) {
    const bool heads = isHeadHook(sweep.options.hook);
    const bool byPos = !heads || sweep.options.byPosition;
    const Eigen::Index rows = heads && byPos ? Eigen::Index(cfg.n_layers) * cfg.n_heads : cfg.n_layers;
    const Eigen::Index cols = byPos ? S : cfg.n_heads;
    Matrix grid = Matrix::Constant(rows, cols, std::numeric_limits<float>::quiet_NaN());
    for (const PatchingCell& c : sweep.cells) {
        if (!c.done) continue;
        const Eigen::Index r = heads && byPos ? Eigen::Index(c.layer) * cfg.n_heads + c.head : c.layer;
        const Eigen::Index col = byPos ? c.position : c.head;
        grid(r, col) = float(normalised ? c.normalised : c.metric);
    }
    return grid;
}

} // namespace attnscope
