#include "model/analysis/circuits/patched_forward.h"

#include "model/core/errors.h"
#include "model/core/weight_gemm.h"
#include "model/transformer/forward.h"
#include "model/transformer/rotary_embedding.h"

#include <QCoreApplication>
#include <algorithm>
#include <climits>
#include <cstring>

namespace attnscope {

namespace {

using Index = Eigen::Index;

QString tr(const char* text) { return QCoreApplication::translate("patching", text); }

/// Where a run enters a layer it was not recomputing before: the stage of its earliest differing patch.
enum class Stage {
    Block = 0, ///< from resid_pre: the whole block (resid_pre, q, k, v patches)
    Z = 1,     ///< z given (the base's, then patched): pattern and z patches
    AttnOut = 2,
    MlpOut = 3
};

Stage stageOf(PatchHook hook) {
    switch (hook) {
    case PatchHook::ResidPre:
    case PatchHook::Q:
    case PatchHook::K:
    case PatchHook::V: return Stage::Block;
    case PatchHook::Pattern:
    case PatchHook::Z: return Stage::Z;
    case PatchHook::AttnOut: return Stage::AttnOut;
    case PatchHook::MlpOut: break;
    }
    return Stage::MlpOut;
}

/// The columns a patch replaces: [c0, c0 + n).
std::pair<Index, Index> patchColumns(const ModelConfig& cfg, const ActivationPatch& p, Index cols) {
    if (p.hook == PatchHook::Pattern || !isHeadHook(p.hook) || p.head < 0) return {0, cols};
    return {Index(p.head) * cfg.d_head, cfg.d_head};
}

/// The rows of a patch below `end`: its positions, or [0, end).
template <class Fn>
void forEachRow(const ActivationPatch& p, int from, int end, Fn fn) {
    if (p.positions.empty()) {
        for (int i = from; i < end; ++i) fn(i);
        return;
    }
    for (int i : p.positions)
        if (i >= from && i < end) fn(i);
}

void validatePatch(const ModelConfig& cfg, int S, const ActivationPatch& p) {
    if (p.layer < 0 || p.layer >= cfg.n_layers)
        throw InputError(tr("A patch at layer %1: the model has layers 0..%2.").arg(p.layer).arg(cfg.n_layers - 1));
    if (isHeadHook(p.hook) && (p.head >= cfg.n_heads || p.head < -1 || (p.hook == PatchHook::Pattern && p.head < 0)))
        throw InputError(tr("A %1 patch of head %2: the model has heads 0..%3 per layer.")
                             .arg(patchHookName(p.hook)).arg(p.head).arg(cfg.n_heads - 1));
    for (int i : p.positions)
        if (i < 0 || i >= S)
            throw InputError(tr("A patch at position %1: the prompt has positions 0..%2.").arg(i).arg(S - 1));
    if (!p.values) throw InputError(tr("A %1 patch without values.").arg(patchHookName(p.hook)));
    const Index width = p.hook == PatchHook::Pattern ? S
                        : isHeadHook(p.hook)         ? Index(cfg.n_heads) * cfg.d_head
                                                     : cfg.d_model;
    if (p.values->rows() != S || p.values->cols() != width)
        throw InputError(tr("A %1 patch holds a %2×%3 matrix; the prompt's %1 is %4×%5.")
                             .arg(patchHookName(p.hook)).arg(p.values->rows()).arg(p.values->cols()).arg(S).arg(width));
}

/// The first row (below end) where the patch's values differ from the base's, bitwise; INT_MAX if none.
int firstDifference(const ModelConfig& cfg, const ActivationPatch& p, const LayerCache& base, int end) {
    const Matrix& b = hookActivation(base, p.hook, p.head);
    const std::pair<Index, Index> cols = patchColumns(cfg, p, b.cols());
    const Index c0 = cols.first, n = cols.second; // not a structured binding: clang 14 cannot capture one
    int first = INT_MAX;
    forEachRow(p, 0, end, [&](int i) {
        if (i < first && std::memcmp(p.values->data() + i * p.values->cols() + c0, b.data() + i * b.cols() + c0,
                                     size_t(n) * sizeof(float)) != 0)
            first = i;
    });
    return first;
}

/// A [1, n] weight as float32 (bias, norm weight).
RowVector rowOf(const Weight& w) { return w.isF32View() ? RowVector(w.view().row(0)) : RowVector(w.toMatrix()); }

/// ys = x·Ws (+ bs) for the compact rows x [N, in], in the row count class runForward uses for a prompt of S
/// positions: a weight stored [out, in] goes through the kernel's dot products below transposedKernelMinRows(W)
/// rows and through the GEMM from there on, which round differently; every row's result is independent of the
/// other rows within a class, so chunking (S small) or zero padding (S large, few rows) keeps each row's bits.
/// Outputs whose weights switch at different row counts are computed one by one.
struct Projection {
    const Weight* W;
    const Weight* b; ///< may be empty
    Matrix* y;
};
void projectRows(const Matrix& x, int S, std::initializer_list<Projection> outs) {
    const Index N = x.rows(), in = x.cols();
    bool transposed = false, oneClass = true;
    Index minRows = 0; // the row count from which the transposed weights go through the GEMM kernel
    for (const Projection& o : outs) {
        o.y->resize(N, o.W->cols);
        if (!o.W->transposed) continue;
        const Index m = transposedKernelMinRows(*o.W);
        oneClass = oneClass && (!transposed || m == minRows);
        minRows = m;
        transposed = true;
    }
    if (!oneClass) {
        for (const Projection& o : outs) projectRows(x, S, {o});
        return;
    }
    if (N == 0) return;
    auto call = [&](const float* xp, Index rows, Index r0, std::vector<Matrix>* padded) {
        std::vector<GemmTarget> targets;
        size_t i = 0;
        for (const Projection& o : outs) {
            float* y = padded ? (*padded)[i].data() : o.y->data() + r0 * o.y->cols();
            targets.push_back({*o.W, y, o.W->cols, {}});
            ++i;
        }
        weightGemmMulti(xp, rows, in, in, targets);
    };
    if (!transposed || (S >= minRows && N >= minRows)) {
        call(x.data(), N, 0, nullptr);
    } else if (S < minRows) {
        for (Index r0 = 0; r0 < N; r0 += minRows - 1) call(x.data() + r0 * in, std::min(minRows - 1, N - r0), r0, nullptr);
    } else { // the full pass multiplies ≥ minRows rows: pad with zero rows to stay in its class
        Matrix xp = Matrix::Zero(minRows, in);
        xp.topRows(N) = x;
        std::vector<Matrix> padded;
        for (const Projection& o : outs) padded.emplace_back(minRows, o.W->cols);
        call(xp.data(), minRows, 0, &padded);
        size_t i = 0;
        for (const Projection& o : outs) *o.y = padded[i++].topRows(N);
    }
    for (const Projection& o : outs)
        if (!o.b->empty()) o.y->rowwise() += rowOf(*o.b);
}

/// x [N, n_kv_heads·d_head] with each K/V head repeated for its query heads: [N, n_heads·d_head].
Matrix repeatKv(const ModelConfig& cfg, Matrix x) {
    if (cfg.groupSize() <= 1) return x;
    const int H = cfg.n_heads, L = cfg.d_head, g = cfg.groupSize();
    Matrix out(x.rows(), Index(H) * L);
    for (int h = 0; h < H; ++h) out.middleCols(Index(h) * L, L) = x.middleCols(Index(h / g) * L, L);
    return out;
}

struct RunState {
    const PatchedRun* run = nullptr;
    bool active = false;
    int r = 0;      ///< first recomputed row
    int rowB = 0;   ///< first row of the stages after attention this layer (the metric row in the last layer)
    Stage stage = Stage::Block;
    bool attnFrozen = false, mlpFrozen = false; ///< attn_out / mlp_out replaced at every position this layer
    Index offA = 0; ///< row of this run's position r in the compact matrices of the block stage
    Matrix resid;   ///< [S', d_model] rows ≥ r: resid_pre, then resid_mid, then resid_post of the current layer
    Matrix z, attnOut, mlpOut, K, V; ///< [S', ·] rows ≥ r (K, V: every row) of the current layer
    std::vector<Matrix> captured;
    int firstLayer = -1, firstPosition = -1;
};

/// A gathered [rows of every run, width] matrix: rows [from(run), S') of `src(run)`.
template <class From, class Src>
Matrix gather(const std::vector<RunState*>& runs, Index width, int end, From from, Src src) {
    Index n = 0;
    for (RunState* s : runs) n += end - from(*s);
    Matrix out(n, width);
    Index o = 0;
    for (RunState* s : runs) {
        const Index k = end - from(*s);
        out.middleRows(o, k) = src(*s).middleRows(from(*s), k);
        o += k;
    }
    return out;
}

template <class From, class Dst>
void scatter(const std::vector<RunState*>& runs, const Matrix& in, int end, From from, Dst dst) {
    Index o = 0;
    for (RunState* s : runs) {
        const Index k = end - from(*s);
        dst(*s).middleRows(from(*s), k) = in.middleRows(o, k);
        o += k;
    }
}

/// Rows ≥ from of `dst` (row i of dst = position i − shift) take the patch's rows, in its columns.
void applyPatch(const ModelConfig& cfg, const ActivationPatch& p, Matrix& dst, int from, int end, Index rowOfFrom) {
    const std::pair<Index, Index> cols = patchColumns(cfg, p, p.values->cols());
    const Index c0 = cols.first, n = cols.second; // not a structured binding: clang 14 cannot capture one
    forEachRow(p, from, end, [&](int i) {
        dst.row(rowOfFrom + i - from).segment(c0, n) = p.values->row(i).segment(c0, n);
    });
}

template <class Fn>
void forPatches(const RunState& s, int layer, PatchHook hook, Fn fn) {
    for (const ActivationPatch& p : s.run->patches)
        if (p.layer == layer && p.hook == hook) fn(p);
}

/// z_h[i] = P[i]·V_h for the rows i ≥ from of a pattern patch (P the patch's rows): into z (row i = position i).
void patternRows(const ModelConfig& cfg, const ActivationPatch& p, const Matrix& v, int from, int end, Matrix& z) {
    const int L = cfg.d_head;
    const Index col = Index(p.head) * L;
    const Weight V_h = f32Weight(v.data() + col, end, L, v.cols());
    forEachRow(p, from, end, [&](int i) {
        weightGemm(p.values->data() + i * p.values->cols(), 1, end, p.values->cols(), V_h, z.data() + i * z.cols() + col,
                   z.cols(), false);
    });
}

} // namespace

QString patchHookName(PatchHook hook) {
    switch (hook) {
    case PatchHook::ResidPre: return QStringLiteral("resid_pre");
    case PatchHook::AttnOut: return QStringLiteral("attn_out");
    case PatchHook::MlpOut: return QStringLiteral("mlp_out");
    case PatchHook::Z: return QStringLiteral("z");
    case PatchHook::Q: return QStringLiteral("q");
    case PatchHook::K: return QStringLiteral("k");
    case PatchHook::V: return QStringLiteral("v");
    case PatchHook::Pattern: break;
    }
    return QStringLiteral("pattern");
}

std::optional<PatchHook> patchHookFromName(const QString& name) {
    if (name == QLatin1String("resid")) return PatchHook::ResidPre;
    for (PatchHook h : {PatchHook::ResidPre, PatchHook::AttnOut, PatchHook::MlpOut, PatchHook::Z, PatchHook::Q, PatchHook::K,
                        PatchHook::V, PatchHook::Pattern})
        if (patchHookName(h) == name) return h;
    return std::nullopt;
}

bool isHeadHook(PatchHook hook) {
    return hook == PatchHook::Z || hook == PatchHook::Q || hook == PatchHook::K || hook == PatchHook::V ||
           hook == PatchHook::Pattern;
}

const Matrix& hookActivation(const LayerCache& c, PatchHook hook, int head) {
    switch (hook) {
    case PatchHook::ResidPre: return c.resid_pre;
    case PatchHook::AttnOut: return c.attn_out;
    case PatchHook::MlpOut: return c.mlp_out;
    case PatchHook::Z: return c.z;
    case PatchHook::Q: return c.q;
    case PatchHook::K: return c.k;
    case PatchHook::V: return c.v;
    case PatchHook::Pattern: break;
    }
    if (head < 0 || head >= int(c.pattern.size()))
        throw InputError(tr("The layer has no attention pattern of head %1.").arg(head));
    return c.pattern[size_t(head)];
}

qint64 patchedRunBytes(const ModelConfig& cfg, int S) {
    const qint64 width = std::max<qint64>(cfg.d_model, qint64(cfg.n_heads) * cfg.d_head);
    // resid, z, attn_out, mlp_out, K, V per run, and its share of the compact matrices (~4 more, d_mlp wide)
    return qint64(S) * (6 * width + 2 * std::max(cfg.d_mlp, cfg.d_model)) * qint64(sizeof(float));
}

RowVector positionLogits(const Model& model, const ActivationCache& cache, int position) {
    const ModelConfig& cfg = model.config();
    const GlobalWeights& g = model.globals();
    const Matrix& final = cache.stored(cfg.n_layers - 1).resid_post;
    if (position < 0 || position >= final.rows())
        throw InputError(tr("Position %1 is outside the prompt's positions 0..%2.").arg(position).arg(final.rows() - 1));
    Matrix ln, logits;
    applyNorm(cfg, Matrix(final.row(position)), g.ln_final_w, g.ln_final_b, ln);
    weightGemmTransposed(ln, g.W_U_T, logits);
    if (!g.b_U.empty()) logits.rowwise() += rowOf(g.b_U);
    applyFinalSoftcap(cfg, logits);
    return logits.row(0);
}

std::vector<PatchedResult> runPatched(const Model& model, const ActivationCache& base, std::span<const PatchedRun> runs,
                                      const PatchedForwardOptions& options, const Progress& progress) {
    const ModelConfig& cfg = model.config();
    const GlobalWeights& g = model.globals();
    const int S = base.nPositions(), nLayers = cfg.n_layers, H = cfg.n_heads, L = cfg.d_head;
    const Index D = cfg.d_model, HL = Index(H) * L;
    if (base.nLayers() != nLayers) throw InputError(tr("The base run's cache does not belong to this model."));
    const int t = options.position < 0 ? S - 1 : options.position;
    if (t < 0 || t >= S) throw InputError(tr("Position %1 is outside the prompt's positions 0..%2.").arg(t).arg(S - 1));
    const int end = t + 1; // positions after t never reach the metric
    const bool rotary = cfg.positions == PositionKind::Rotary;

    // validate everything first: nothing below throws inside a parallel region
    std::vector<RunState> states(runs.size());
    std::vector<std::vector<int>> firstDiff(runs.size()); // per patch
    int minLayer = nLayers;
    for (size_t i = 0; i < runs.size(); ++i) {
        states[i].run = &runs[i];
        for (const ActivationPatch& p : runs[i].patches) validatePatch(cfg, S, p);
        for (const ActivationCapture& c : runs[i].captures) {
            if (c.hook != PatchHook::Q && c.hook != PatchHook::K && c.hook != PatchHook::V)
                throw InputError(tr("Only the q, k and v inputs of a head can be captured, not %1.").arg(patchHookName(c.hook)));
            if (c.layer < 0 || c.layer >= nLayers || c.head < 0 || c.head >= H)
                throw InputError(tr("Cannot capture L%1H%2: the model has %3 layers of %4 heads.")
                                     .arg(c.layer).arg(c.head).arg(nLayers).arg(H));
            states[i].captured.emplace_back(); // filled at its layer
        }
    }
    for (size_t i = 0; i < runs.size(); ++i)
        for (const ActivationPatch& p : runs[i].patches) {
            const int d = firstDifference(cfg, p, *base.layer(p.layer, progress), end);
            firstDiff[i].push_back(d);
            if (d != INT_MAX) minLayer = std::min(minLayer, p.layer);
        }
    // captures start as the base's activation (every position); recomputed rows are written at their layer
    for (size_t i = 0; i < runs.size(); ++i)
        for (size_t c = 0; c < runs[i].captures.size(); ++c) {
            const ActivationCapture& cap = runs[i].captures[c];
            states[i].captured[c] = hookActivation(*base.layer(cap.layer, progress), cap.hook, cap.head)
                                        .middleCols(Index(cap.head) * L, L);
        }
    const int lastLayer = nLayers - 1;

    for (int m = minLayer; m < nLayers; ++m) {
        progress.step(m, nLayers, tr("patched runs: layer %1").arg(m));
        const std::shared_ptr<const RopeTable> rope = rotary ? ropeTable(cfg, m, S) : nullptr; // per layer: Gemma 3's differ
        const std::shared_ptr<const LayerCache> blp = base.layer(m, progress);
        const LayerCache& bl = *blp;
        const LayerWeights& w = model.layer(m);

        // which runs recompute this layer, from which row and stage
        std::vector<RunState*> active;
        for (size_t i = 0; i < runs.size(); ++i) {
            RunState& s = states[i];
            int newRow = INT_MAX;
            Stage stage = Stage::MlpOut;
            for (size_t k = 0; k < runs[i].patches.size(); ++k) {
                const ActivationPatch& p = runs[i].patches[k];
                if (p.layer != m || firstDiff[i][k] == INT_MAX) continue;
                newRow = std::min(newRow, firstDiff[i][k]);
                stage = std::min(stage, stageOf(p.hook));
            }
            if (!s.active && newRow == INT_MAX) continue;
            if (!s.active) {
                s.active = true;
                s.r = newRow;
                s.stage = stage;
                s.firstLayer = m;
                s.firstPosition = newRow;
                for (Matrix* x : {&s.resid, &s.z, &s.attnOut, &s.mlpOut}) x->resize(end, x == &s.z ? HL : D);
                s.resid.middleRows(s.r, end - s.r) = bl.resid_pre.middleRows(s.r, end - s.r);
            } else {
                s.stage = Stage::Block;
                if (newRow < s.r) { // an earlier position changes here: its rows enter from the base
                    s.resid.middleRows(newRow, s.r - newRow) = bl.resid_pre.middleRows(newRow, s.r - newRow);
                    s.r = newRow;
                }
            }
            s.rowB = m == lastLayer ? std::max(s.r, t) : s.r;
            s.attnFrozen = s.mlpFrozen = false;
            for (const ActivationPatch& p : runs[i].patches)
                if (p.layer == m && p.positions.empty()) {
                    s.attnFrozen = s.attnFrozen || p.hook == PatchHook::AttnOut;
                    s.mlpFrozen = s.mlpFrozen || p.hook == PatchHook::MlpOut;
                }
            active.push_back(&s);
        }

        // resid_pre patches
        for (RunState* s : active)
            forPatches(*s, m, PatchHook::ResidPre, [&](const ActivationPatch& p) { applyPatch(cfg, p, s->resid, s->r, end, s->r); });

        // block stage: ln_1, q/k/v, rotary, attention (runs entering at Block whose attention is not replaced)
        std::vector<RunState*> blockRuns;
        for (RunState* s : active)
            if (s->stage == Stage::Block && !s->attnFrozen) blockRuns.push_back(s);
        Index nA = 0;
        for (RunState* s : blockRuns) {
            s->offA = nA;
            nA += end - s->r;
        }
        const auto fromR = [](const RunState& s) { return s.r; };
        const auto fromB = [](const RunState& s) { return s.rowB; };
        Matrix q, k, v;
        if (nA > 0) {
            const Matrix x = gather(blockRuns, D, end, fromR, [](RunState& s) -> Matrix& { return s.resid; });
            Matrix ln1;
            applyNorm(cfg, x, w.ln1_w, w.ln1_b, ln1);
            projectRows(ln1, S, {{&w.W_Q, &w.b_Q, &q}, {&w.W_K, &w.b_K, &k}, {&w.W_V, &w.b_V, &v}});
            if (cfg.qkNorm) {
                applyHeadNorm(cfg, q, w.q_norm_w);
                applyHeadNorm(cfg, k, w.k_norm_w);
            }
            k = repeatKv(cfg, std::move(k));
            v = repeatKv(cfg, std::move(v));
            for (RunState* s : blockRuns) {
                forPatches(*s, m, PatchHook::Q, [&](const ActivationPatch& p) { applyPatch(cfg, p, q, s->r, end, s->offA); });
                forPatches(*s, m, PatchHook::K, [&](const ActivationPatch& p) { applyPatch(cfg, p, k, s->r, end, s->offA); });
                forPatches(*s, m, PatchHook::V, [&](const ActivationPatch& p) { applyPatch(cfg, p, v, s->r, end, s->offA); });
            }
        }
        // captures of the recomputed rows
        for (RunState* sp : active) {
            RunState& s = *sp;
            for (size_t c = 0; c < s.run->captures.size(); ++c) {
                const ActivationCapture& cap = s.run->captures[c];
                if (cap.layer != m) continue;
                const Index col = Index(cap.head) * L;
                const Matrix* src = cap.hook == PatchHook::Q ? &q : cap.hook == PatchHook::K ? &k : &v;
                if (std::find(blockRuns.begin(), blockRuns.end(), &s) != blockRuns.end()) {
                    s.captured[c].middleRows(s.r, end - s.r) = src->block(s.offA, col, end - s.r, L);
                    continue;
                }
                // the run skips this layer's attention: the head's input from its own resid_pre rows
                Matrix x = s.resid.middleRows(s.r, end - s.r), ln1, y;
                applyNorm(cfg, x, w.ln1_w, w.ln1_b, ln1);
                const int kv = cfg.kvHeadOf(cap.head);
                const Weight W = cap.hook == PatchHook::Q ? w.W_Q_head(cap.head, L)
                                 : cap.hook == PatchHook::K ? w.W_K_head(kv, L) : w.W_V_head(kv, L);
                const Weight& bFull = cap.hook == PatchHook::Q ? w.b_Q : cap.hook == PatchHook::K ? w.b_K : w.b_V;
                const Weight b = bFull.empty() ? Weight{} : bFull.colBlock(Index(cap.hook == PatchHook::Q ? cap.head : kv) * L, L);
                projectRows(ln1, S, {{&W, &b, &y}});
                if (cfg.qkNorm && cap.hook != PatchHook::V) applyHeadNorm(cfg, y, cap.hook == PatchHook::Q ? w.q_norm_w : w.k_norm_w);
                Matrix full(end, HL); // so that the head's patches apply in their own columns
                full.middleCols(col, L).middleRows(s.r, end - s.r) = y;
                forPatches(s, m, cap.hook, [&](const ActivationPatch& p) {
                    if (p.head < 0 || p.head == cap.head) applyPatch(cfg, p, full, s.r, end, 0);
                });
                s.captured[c].middleRows(s.r, end - s.r) = full.block(s.r, col, end - s.r, L);
            }
        }
        if (nA > 0) {
            Matrix qr = q, kr = k;
            if (rotary) {
                std::vector<int> positions;
                for (RunState* s : blockRuns)
                    for (int i = s->r; i < end; ++i) positions.push_back(i);
                applyRotary(cfg, *rope, qr, positions);
                applyRotary(cfg, *rope, kr, positions);
            }
            const Matrix& baseKeys = rotary ? bl.k_rot : bl.k;
            for (RunState* s : blockRuns) {
                s->K.resize(end, HL);
                s->V.resize(end, HL);
                s->K.topRows(s->r) = baseKeys.topRows(s->r);
                s->V.topRows(s->r) = bl.v.topRows(s->r);
                s->K.middleRows(s->r, end - s->r) = kr.middleRows(s->offA, end - s->r);
                s->V.middleRows(s->r, end - s->r) = v.middleRows(s->offA, end - s->r);
            }
            const int tasks = int(blockRuns.size()) * H;
#pragma omp parallel for schedule(dynamic)
            for (int task = 0; task < tasks; ++task) {
                RunState& s = *blockRuns[size_t(task / H)];
                const int h = task % H;
                thread_local Matrix scores, pattern;
                headAttentionRows(cfg, m, qr.data() + (s.offA + s.rowB - s.r) * HL, HL, s.K, s.V, h, s.rowB, scores, pattern,
                                  s.z.data() + Index(s.rowB) * HL, HL);
                for (const ActivationPatch& p : s.run->patches)
                    if (p.layer == m && p.hook == PatchHook::Pattern && p.head == h) patternRows(cfg, p, s.V, s.rowB, end, s.z);
            }
        }
        // z stage: runs entering here take the base's z (and pattern patches recompute their heads from the base's V)
        std::vector<RunState*> zRuns = blockRuns;
        for (RunState* s : active)
            if (s->stage == Stage::Z && !s->attnFrozen) {
                s->z.middleRows(s->rowB, end - s->rowB) = bl.z.middleRows(s->rowB, end - s->rowB);
                forPatches(*s, m, PatchHook::Pattern, [&](const ActivationPatch& p) { patternRows(cfg, p, bl.v, s->rowB, end, s->z); });
                zRuns.push_back(s);
            }
        for (RunState* s : zRuns)
            forPatches(*s, m, PatchHook::Z, [&](const ActivationPatch& p) { applyPatch(cfg, p, s->z, s->rowB, end, s->rowB); });
        if (!zRuns.empty()) {
            const Matrix zc = gather(zRuns, HL, end, fromB, [](RunState& s) -> Matrix& { return s.z; });
            Matrix out;
            projectRows(zc, S, {{&w.W_O, &w.b_O, &out}});
            if (cfg.postNorms) out = applyNorm(cfg, out, w.ln1_post_w, Weight{});
            scatter(zRuns, out, end, fromB, [](RunState& s) -> Matrix& { return s.attnOut; });
        }
        // attn_out stage, resid_mid
        for (RunState* s : active) {
            const bool computed = std::find(zRuns.begin(), zRuns.end(), s) != zRuns.end();
            if (s->stage == Stage::MlpOut) { // enters after the attention: resid_mid is the base's
                s->resid.middleRows(s->rowB, end - s->rowB) = bl.resid_mid.middleRows(s->rowB, end - s->rowB);
                continue;
            }
            if (!computed) s->attnOut.middleRows(s->rowB, end - s->rowB) = bl.attn_out.middleRows(s->rowB, end - s->rowB);
            forPatches(*s, m, PatchHook::AttnOut, [&](const ActivationPatch& p) { applyPatch(cfg, p, s->attnOut, s->rowB, end, s->rowB); });
            s->resid.middleRows(s->rowB, end - s->rowB) += s->attnOut.middleRows(s->rowB, end - s->rowB);
        }
        // MLP
        std::vector<RunState*> mlpRuns;
        for (RunState* s : active)
            if (s->stage != Stage::MlpOut && !s->mlpFrozen) mlpRuns.push_back(s);
        if (!mlpRuns.empty()) {
            const Matrix x = gather(mlpRuns, D, end, fromB, [](RunState& s) -> Matrix& { return s.resid; });
            Matrix ln2, pre, post, out;
            applyNorm(cfg, x, w.ln2_w, w.ln2_b, ln2);
            if (cfg.gatedMlp && !w.W_gate.empty()) { // SwiGLU: act(x·W_gate) ⊙ (x·W_in + b_in)
                Matrix gate;
                const Weight none;
                projectRows(ln2, S, {{&w.W_in, &w.b_in, &pre}, {&w.W_gate, &none, &gate}});
                applyActivation(cfg.activation, gate);
                post = gate.cwiseProduct(pre);
            } else {
                projectRows(ln2, S, {{&w.W_in, &w.b_in, &pre}});
                post = pre;
                applyActivation(cfg.activation, post);
            }
            projectRows(post, S, {{&w.W_out, &w.b_out, &out}});
            if (cfg.postNorms) out = applyNorm(cfg, out, w.ln2_post_w, Weight{});
            scatter(mlpRuns, out, end, fromB, [](RunState& s) -> Matrix& { return s.mlpOut; });
        }
        for (RunState* s : active) {
            if (s->stage == Stage::MlpOut || s->mlpFrozen)
                s->mlpOut.middleRows(s->rowB, end - s->rowB) = bl.mlp_out.middleRows(s->rowB, end - s->rowB);
            forPatches(*s, m, PatchHook::MlpOut, [&](const ActivationPatch& p) { applyPatch(cfg, p, s->mlpOut, s->rowB, end, s->rowB); });
            s->resid.middleRows(s->rowB, end - s->rowB) += s->mlpOut.middleRows(s->rowB, end - s->rowB);
            if (m < lastLayer) s->stage = Stage::Block;
        }
    }
    progress.step(nLayers, nLayers, tr("patched runs: logits"));

    // logits at t: ln_final of each run's final row (the base's for runs that changed nothing), one row per call
    const Matrix& baseFinal = base.stored(lastLayer).resid_post;
    Matrix finals(Index(runs.size()), D);
    for (size_t i = 0; i < runs.size(); ++i) {
        if (states[i].active) finals.row(Index(i)) = states[i].resid.row(t);
        else finals.row(Index(i)) = baseFinal.row(t);
    }
    Matrix ln, logits(Index(runs.size()), cfg.d_vocab);
    applyNorm(cfg, finals, g.ln_final_w, g.ln_final_b, ln);
    const Index chunk = std::max<Index>(1, transposedKernelMinRows(g.W_U_T) - 1); // the class of runForward's one last-position row
    for (Index r0 = 0; r0 < ln.rows(); r0 += chunk) {
        Matrix part;
        weightGemmTransposed(Matrix(ln.middleRows(r0, std::min(chunk, ln.rows() - r0))), g.W_U_T, part);
        logits.middleRows(r0, part.rows()) = part;
    }
    if (!g.b_U.empty()) logits.rowwise() += rowOf(g.b_U);
    applyFinalSoftcap(cfg, logits);

    std::vector<PatchedResult> out(runs.size());
    for (size_t i = 0; i < runs.size(); ++i) {
        out[i].logits = logits.row(Index(i));
        out[i].captured = std::move(states[i].captured);
        out[i].firstLayer = states[i].firstLayer;
        out[i].firstPosition = states[i].firstPosition;
    }
    return out;
}

} // namespace attnscope
