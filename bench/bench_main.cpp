// attnscope_bench: times what a user waits for (open, forward + cache, another head, W_OV top pairs,
// logit lens) on random-weight GPT-2 checkpoints of real shapes, next to the machine's measured Eigen
// GEMM peak. Prints a table and JSON. See docs/performance.md and bench/run_comparison.sh.

#include "bench/checkpoint_writer.h"
#include "bench/machine_bounds.h"
#include "model/core/process_memory.h"

#include "model/analysis/circuits/activation_patching.h"
#include "model/analysis/gradients/attribution_patching.h"
#include "model/analysis/gradients/edge_attribution.h"
#include "model/analysis/gradients/metric_gradients.h"
#include "model/analysis/circuits/composition_scores.h"
#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/analysis/circuits/information_flow.h"
#include "model/analysis/embedding_space/logit_lens.h"
#include "model/analysis/common/top_tokens.h"
#include "model/core/errors.h"
#include "model/core/heap_reuse.h"
#include "model/core/kernels/kernel_choice.h"
#include "model/core/weight_gemm.h"
#include "model/formats/model_loader.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/forward.h"
#include "model/transformer/layer_recompute.h"
#include "model/transformer/prompt.h"
#include "views/attention/attention_heatmap.h"
#include "views/attention/head_grid.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPixmap>
#include <QTemporaryDir>
#include <qcustomplot.h>

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <functional>
#include <random>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace attnscope;

namespace {

struct Timing {
    double median_ms = 0, min_ms = 0, max_ms = 0;
    double peak_rss_mib = 0; ///< high-water mark of the process during these runs
};

/// The forward as ModelSession runs it: last logits only, per-head results computed by the views.
ForwardOptions appCacheOptions() {
    ForwardOptions o;
    o.allLogits = false;
    o.cacheHeadResults = false;
    return o;
}

/// 1 warm-up then `runs` timed calls of fn; median/min/max in ms and the peak RSS while they ran.
Timing timeIt(int runs, const std::function<void()>& fn) {
    resetPeakRss();
    fn();
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
        QElapsedTimer t;
        t.start();
        fn();
        ms.push_back(t.nsecsElapsed() / 1e6);
    }
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ms.front(), ms.back(), peakRssMiB()};
}

QJsonObject toJson(const Timing& t) {
    return {{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"max_ms", t.max_ms}, {"peak_rss_mib", t.peak_rss_mib}};
}

/// GFLOP/s of a square Eigen GEMM n×n×n (2 threads when OpenMP is on), median of `runs`.
double eigenGemmGflops(int n, int runs) {
    Matrix a = Matrix::Random(n, n), b = Matrix::Random(n, n), c(n, n);
    const Timing t = timeIt(runs, [&] { c.noalias() = a * b; });
    return 2.0 * n * n * double(n) / (t.median_ms * 1e6);
}

/// GFLOP/s of weightGemm (the compute kernel in use) on n×n×n, all threads, median of `runs`: beside
/// eigenGemmGflops, the portable kernel's target (at least Eigen's rate built for the same baseline).
double kernelGemmGflops(int n, int runs) {
    Matrix a = Matrix::Random(n, n), b = Matrix::Random(n, n), c(n, n);
    const Weight W{b.data(), n, n, n};
    const Timing t = timeIt(runs, [&] { weightGemm(a.data(), n, n, n, W, c.data(), n, true); });
    return 2.0 * n * n * double(n) / (t.median_ms * 1e6);
}

/// Forward FLOPs as counted in BASELINE.md: 2·S·(matrix params) + 4·S²·(n_heads·d_head)·n_layers (full
/// square), plus what our cache adds (per-head result z_h·W_O^h) and the unembedding rows actually computed.
/// Matrix params per layer: W_Q and W_O (d_model × n_heads·d_head), W_K and W_V (d_model × n_kv_heads·d_head),
/// and the MLP's 2 (GPT-2) or 3 (SwiGLU) d_model × d_mlp matrices: 12·d_model² for GPT-2.
double forwardGflop(const ModelConfig& c, int S, int logitRows, bool headResults) {
    const double D = c.d_model, L = c.n_layers, V = c.d_vocab;
    const double Q = double(c.n_heads) * c.d_head, KV = double(c.n_kv_heads > 0 ? c.n_kv_heads : c.n_heads) * c.d_head;
    const double perLayer = 2 * D * Q + 2 * D * KV + (c.gatedMlp ? 3.0 : 2.0) * D * c.d_mlp;
    double f = 2.0 * S * perLayer * L + 4.0 * S * double(S) * Q * L + 2.0 * logitRows * D * V;
    if (headResults) f += 2.0 * S * Q * D * L;
    return f / 1e9;
}

std::vector<int> randomTokens(int S, int vocab, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> d(0, vocab - 1);
    std::vector<int> t(static_cast<size_t>(S));
    for (int& x : t) x = d(gen);
    return t;
}

QList<int> parseInts(const QString& s) {
    QList<int> out;
    for (const QString& p : s.split(',', Qt::SkipEmptyParts)) out << p.toInt();
    return out;
}

void printRow(const QString& what, const Timing& t, const QString& extra = {}) {
    std::printf("  %-44s %10.1f ms  (min %.1f, max %.1f)  peak RSS %6.0f MiB  %s\n", qPrintable(what), t.median_ms,
                t.min_ms, t.max_ms, t.peak_rss_mib, qPrintable(extra));
    std::fflush(stdout);
}

/// A model whose full cache does not fit the memory budget at S = min(1024, n_ctx) (gpt2-xl's shape):
/// the forward in the residuals-only layout as the app runs it (last logits), its peak RSS, and the time
/// to show a head of a layer that must be recomputed (layer(l) + heatmap replot), against a head of a
/// layer already recomputed. One run each: a single forward of gpt2-xl takes tens of seconds.
QJsonObject benchBigModel(const std::shared_ptr<const Model>& model, int S) {
    QJsonObject out;
    const ModelConfig& cfg = model->config();
    const std::vector<int> tokens = randomTokens(S, cfg.d_vocab, unsigned(S));
    ForwardOptions opt;
    opt.allLogits = false;
    const CachePlan plan = planCache(cfg, S, opt, cacheBudgetBytes());
    resetPeakRss();
    QElapsedTimer t;
    t.start();
    const ActivationCache cache = runForward(*model, tokens, opt);
    const double fwdMs = t.nsecsElapsed() / 1e6;
    const double peak = peakRssMiB();
    const double gf = forwardGflop(cfg, S, 1, false);
    std::printf("  %-44s %10.1f ms  peak RSS %6.0f MiB  %.1f GFLOP, %.0f GFLOP/s; layout %s, LRU %d layers; "
                "full cache would need %s, budget %s\n",
                qPrintable(QStringLiteral("forward residuals-only, last logits, S=%1").arg(S)), fwdMs, peak, gf,
                gf / fwdMs * 1e3, cache.residualsOnly() ? "residuals-only" : "full",
                cache.recomputer ? cache.recomputer->capacity() : 0, qPrintable(formatBytes(plan.estimate.total())),
                qPrintable(formatBytes(plan.budget)));
    out["forward_residuals_only_ms"] = fwdMs;
    out["forward_peak_rss_mib"] = peak;
    out["forward_gflops"] = gf / fwdMs * 1e3;
    out["residuals_only"] = cache.residualsOnly();
    out["full_cache_bytes"] = double(plan.estimate.total());
    out["budget_bytes"] = double(plan.budget);
    out["lru_layers"] = cache.recomputer ? cache.recomputer->capacity() : 0;

    AttentionHeatmap view;
    view.resize(800, 800);
    const QStringList labels = tokenLabels(model->tokenizer(), cache.tokens);
    auto show = [&](int l, int h) {
        QElapsedTimer st;
        st.start();
        const std::shared_ptr<const LayerCache> lc = cache.layer(l);
        const double computeMs = st.nsecsElapsed() / 1e6;
        view.setData({lc->pattern[size_t(h)], labels, QStringLiteral("bench — layer %1, head %2").arg(l).arg(h)});
        if (view.plot()->toPixmap(800, 800).isNull()) throw InputError(QStringLiteral("heatmap render failed"));
        return std::make_pair(st.nsecsElapsed() / 1e6, computeMs);
    };
    QJsonArray recomputed;
    std::vector<double> totals;
    resetPeakRss();
    for (int l : {cfg.n_layers / 2, cfg.n_layers - 1, 1}) {
        const auto [total, compute] = show(l, 0);
        totals.push_back(total);
        recomputed.append(QJsonObject{{"layer", l}, {"total_ms", total}, {"recompute_ms", compute}});
        std::printf("  %-44s %10.1f ms  (recompute %.1f ms)\n",
                    qPrintable(QStringLiteral("show L%1H0, layer recomputed, S=%2").arg(l).arg(S)), total, compute);
    }
    const auto [again, againCompute] = show(cfg.n_layers - 1, 1);
    std::printf("  %-44s %10.1f ms  (layer lookup %.2f ms)  peak RSS %6.0f MiB\n",
                qPrintable(QStringLiteral("show L%1H1, same layer again").arg(cfg.n_layers - 1)), again, againCompute,
                peakRssMiB());
    std::fflush(stdout);
    std::sort(totals.begin(), totals.end());
    out["show_recomputed_head"] = recomputed;
    out["show_recomputed_head_median_ms"] = totals[totals.size() / 2];
    out["show_head_same_layer_ms"] = again;
    out["show_peak_rss_mib"] = peakRssMiB();
    return out;
}

/// Wall-clock Timing of `runs` calls of fn (after one warm-up) plus the median CPU time of this thread
/// per call, which other processes' load does not inflate.
std::pair<Timing, double> timeWithCpu(int runs, const std::function<void()>& fn) {
    std::vector<double> cpu;
    const auto threadCpuMs = [] {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
    };
    bool warm = false;
    const Timing t = timeIt(runs, [&] {
        const double c0 = threadCpuMs();
        fn();
        if (warm) cpu.push_back(threadCpuMs() - c0);
        warm = true;
    });
    std::sort(cpu.begin(), cpu.end());
    return {t, cpu[cpu.size() / 2]};
}

/// (e) another head at S: setData (pattern + token labels + title) and an 800×800 render to a pixmap,
/// cycling through heads.
std::pair<Timing, double> benchAnotherHead(int nLayers, int nHeads, const std::function<Matrix(int, int)>& patternFor,
                                           const QStringList& labels, int runs) {
    AttentionHeatmap view;
    view.resize(800, 800);
    int i = 0;
    return timeWithCpu(runs, [&] {
        const int l = (i / nHeads) % nLayers, h = i % nHeads;
        ++i;
        AttentionHeatmapData d;
        d.pattern = patternFor(l, h);
        d.tokens = labels;
        d.title = QStringLiteral("bench — layer %1, head %2").arg(l).arg(h);
        view.setData(d);
        const QPixmap pm = view.plot()->toPixmap(800, 800);
        if (pm.isNull()) throw InputError(QStringLiteral("heatmap render failed"));
    });
}

/// (g) zoom/pan of a shown 800×800 heatmap: each frame sets the axis ranges of one wheel/drag step
/// (zoom in ×0.8 towards a point, pan, zoom back out) and replots immediately, as QCustomPlot does
/// for a wheel event. Per-frame median over `frames` frames after one warm-up.
std::pair<Timing, double> benchZoomPan(const Matrix& pattern, const QStringList& labels, int frames) {
    AttentionHeatmap view;
    view.resize(800, 800);
    view.show();
    view.setData({pattern, labels, QStringLiteral("bench — zoom/pan")});
    QCoreApplication::processEvents();
    QCPAxisRect* rect = view.plot()->axisRect();
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    const double n = double(pattern.rows());
    // 16 wheel steps in towards (0.7 n, 0.6 n), 8 drags, 16 steps back out: 1 → ~1/36 of the axis.
    std::vector<std::pair<QCPRange, QCPRange>> steps;
    QCPRange rx(-0.5, n - 0.5), ry(-0.5, n - 0.5);
    for (int k = 0; k < 16; ++k) {
        rx = QCPRange(0.7 * n + (rx.lower - 0.7 * n) * 0.8, 0.7 * n + (rx.upper - 0.7 * n) * 0.8);
        ry = QCPRange(0.6 * n + (ry.lower - 0.6 * n) * 0.8, 0.6 * n + (ry.upper - 0.6 * n) * 0.8);
        steps.emplace_back(rx, ry);
    }
    for (int k = 0; k < 8; ++k) {
        const double d = rx.size() * 0.05 * (k < 4 ? -1 : 1);
        rx = QCPRange(rx.lower + d, rx.upper + d);
        ry = QCPRange(ry.lower - d, ry.upper - d);
        steps.emplace_back(rx, ry);
    }
    for (int k = 15; k >= 0; --k) steps.push_back(steps[size_t(k)]);
    std::vector<double> ms, cpu;
    resetPeakRss();
    for (int f = -1; f < frames; ++f) {
        const auto& [sx, sy] = steps[size_t((f + 1) % int(steps.size()))];
        timespec c0{}, c1{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        QElapsedTimer t;
        t.start();
        x->setRange(sx);
        y->setRange(sy);
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        if (f < 0) continue;
        ms.push_back(t.nsecsElapsed() / 1e6);
        cpu.push_back((c1.tv_sec - c0.tv_sec) * 1e3 + (c1.tv_nsec - c0.tv_nsec) / 1e6);
    }
    std::sort(ms.begin(), ms.end());
    std::sort(cpu.begin(), cpu.end());
    return {{ms[ms.size() / 2], ms.front(), ms.back(), peakRssMiB()}, cpu[cpu.size() / 2]};
}

/// (h) head grid: HeadGrid::setPatterns for every head (thumbnails box-averaged to 128²), then one paint.
std::pair<Timing, double> benchHeadGrid(int nLayers, int nHeads, const std::function<Matrix(int, int)>& patternFor,
                                        int runs) {
    HeadGrid grid;
    grid.resize(900, 900);
    return timeWithCpu(runs, [&] {
        grid.setPatterns(nLayers, nHeads, patternFor);
        const QPixmap pm = grid.grab();
        if (pm.isNull()) throw InputError(QStringLiteral("head grid render failed"));
    });
}

/// Rows (e), (g), (h) for patterns at S = pattern size; adds them to `out` under `suffix`.
void benchViews(QJsonObject& out, int nLayers, int nHeads, const std::function<Matrix(int, int)>& patternFor,
                const QStringList& labels, int runs) {
    const int S = int(labels.size());
    const auto [zoom, zoomCpu] = benchZoomPan(patternFor(0, 0), labels, std::max(40, 8 * runs));
    printRow(QStringLiteral("heatmap zoom/pan replot, S=%1 (800×800)").arg(S), zoom,
             QStringLiteral("per frame; CPU %1 ms").arg(zoomCpu, 0, 'f', 2));
    QJsonObject z = toJson(zoom);
    z["cpu_median_ms"] = zoomCpu;
    out[QStringLiteral("heatmap_zoom_pan_%1").arg(S)] = z;
    const auto [grid, gridCpu] = benchHeadGrid(nLayers, nHeads, patternFor, runs);
    printRow(QStringLiteral("head grid %1×%2 thumbnails, S=%3").arg(nLayers).arg(nHeads).arg(S), grid,
             QStringLiteral("setPatterns + paint; CPU %1 ms").arg(gridCpu, 0, 'f', 1));
    QJsonObject g = toJson(grid);
    g["cpu_median_ms"] = gridCpu;
    out[QStringLiteral("head_grid_%1").arg(S)] = g;
}

/// --views-only: rows (e), (g), (h) on synthetic causal patterns (softmax of random scores with a
/// previous-token stripe) and made-up token labels, gpt2-small's 12×12 heads; no model needed.
QJsonObject benchSyntheticViews(const QList<int>& seqs, int runs) {
    QJsonObject out;
    std::printf("\nsynthetic patterns, 12 layers × 12 heads\n");
    for (int S : seqs) {
        std::mt19937 gen{unsigned(S)};
        std::normal_distribution<float> nd(0.f, 2.f);
        std::vector<Matrix> heads;
        for (int h = 0; h < 4; ++h) { // 4 distinct patterns, reused across the 144 heads
            Matrix p = Matrix::Zero(S, S);
            for (int q = 0; q < S; ++q) {
                for (int k = 0; k <= q; ++k) p(q, k) = std::exp(nd(gen) + (k == std::max(0, q - 1 - h) ? 4.f : 0.f));
                p.row(q) /= p.row(q).sum();
            }
            heads.push_back(std::move(p));
        }
        // Random token-like labels (mostly distinct, as random token ids give): "␣" + 1–9 letters.
        QStringList labels;
        for (int i = 0; i < S; ++i) {
            QString t = gen() % 2 ? QStringLiteral("␣") : QString();
            for (int c = 0, len = 1 + int(gen() % 9); c < len; ++c) t += QChar('a' + int(gen() % 26));
            labels << t;
        }
        const auto patternFor = [&](int l, int h) { return heads[size_t(l + h) % heads.size()]; };
        const auto [t, cpu] = benchAnotherHead(12, 12, patternFor, labels, runs);
        printRow(QStringLiteral("show another head, S=%1 (800×800 replot)").arg(S), t,
                 QStringLiteral("CPU %1 ms").arg(cpu, 0, 'f', 1));
        QJsonObject a = toJson(t);
        a["cpu_median_ms"] = cpu;
        out[QStringLiteral("another_head_%1").arg(S)] = a;
        benchViews(out, 12, 12, patternFor, labels, runs);
    }
    return out;
}

/// Forward + backward to every hook point at S = 128 (issue 32), the gradient of a logit difference at the last
/// position: "forward_backward_128" with the full cache (the PyTorch row's work: every hook point, per-head
/// results, all logits), against that forward alone (≤ 3×, and ≤ 0.5× PyTorch autograd); and
/// "forward_backward_app_128" with the app's cache (appCacheOptions), its peak RSS against the app-cache
/// forward's (≤ 2×). The app-cache rows run first: freed memory stays resident (heap_reuse.h), so a row's peak
/// includes what the rows before it held.
void benchForwardBackward(const Model& model, int runs, QJsonObject& out) {
    const ModelConfig& cfg = model.config();
    const std::vector<int> tokens = randomTokens(128, cfg.d_vocab, 128);
    PatchingMetric m;
    m.kind = PatchingMetricKind::LogitDiff;
    m.token = tokens.back();
    m.counterToken = tokens.front();
    double norm = 0;
    const auto row = [&](const QString& what, const ForwardOptions& opt) {
        const Timing tf = timeIt(runs, [&] { const ActivationCache c = runForward(model, tokens, opt); });
        const Timing tb = timeIt(runs, [&] {
            const ActivationCache c = runForward(model, tokens, opt);
            norm = double(metricGradients(model, c, m, RowVector()).gradients.embed.norm());
        });
        printRow(QStringLiteral("forward + backward to every hook, S=128, %1").arg(what), tb,
                 QStringLiteral("%1× the forward (%2 ms, peak RSS %3 MiB); |∂/∂embed| %4").arg(tb.median_ms / tf.median_ms, 0, 'f', 2)
                     .arg(tf.median_ms, 0, 'f', 1).arg(tf.peak_rss_mib, 0, 'f', 0).arg(norm, 0, 'g', 6));
        QJsonObject j = toJson(tb);
        j["forward_median_ms"] = tf.median_ms;
        j["forward_min_ms"] = tf.min_ms;
        j["forward_peak_rss_mib"] = tf.peak_rss_mib;
        j["grad_embed_norm"] = norm;
        return j;
    };
    out["forward_backward_app_128"] = row(QStringLiteral("app cache"), appCacheOptions());
    out["forward_backward_128"] = row(QStringLiteral("full cache"), ForwardOptions{});
}

/// The circuit rows (docs/performance.md, issue 14): the z patching sweep of every head at S = 16 (clean and
/// corrupted runs included, as a TransformerLens loop caches the clean run first), the information-flow graph at
/// S = 128 (contributions + pruning from the last position), and every composition score of the model (Q, K
/// and V, a freshly opened model each run so nothing is cached).
QJsonObject benchCircuits(const QString& dir, const std::shared_ptr<const Model>& model, int runs) {
    QJsonObject out;
    const ModelConfig& cfg = model->config();
    {
        const int S = 16;
        // the corrupted prompt differs in its first half (after position 0), so every head's z differs from position 1 on
        const std::vector<int> clean = randomTokens(S, cfg.d_vocab, 16);
        std::vector<int> corrupt = clean;
        const std::vector<int> other = randomTokens(S, cfg.d_vocab, 17);
        for (int i = 1; i < S / 2; ++i) corrupt[size_t(i)] = other[size_t(i)];
        PatchingOptions o;
        o.hook = PatchHook::Z;
        o.metric.kind = PatchingMetricKind::LogitDiff;
        o.metric.token = clean[S - 1];
        o.metric.counterToken = other[S - 1];
        PatchingSweep sweep;
        const Timing t = timeIt(runs, [&] { sweep = runPatchingSweep(*model, preparePatchingRuns(*model, clean, corrupt), o); });
        printRow(QStringLiteral("patching: z of %1 heads, S=%2").arg(cfg.n_layers * cfg.n_heads).arg(S), t,
                 QStringLiteral("first cell %1").arg(sweep.cells.front().metric, 0, 'g', 6));
        QJsonObject j = toJson(t);
        j["first_cell_metric"] = sweep.cells.front().metric;
        j["cells"] = int(sweep.cells.size());
        out["z_patching_16"] = j;
        // the same cells estimated from one backward pass (issue 32: ≤ 0.1× the sweep)
        PatchingSweep estimate;
        const Timing ta = timeIt(runs, [&] { estimate = runAttributionPatching(*model, preparePatchingRuns(*model, clean, corrupt), o); });
        printRow(QStringLiteral("attribution patching: z of %1 heads, S=%2").arg(cfg.n_layers * cfg.n_heads).arg(S), ta,
                 QStringLiteral("first cell %1").arg(estimate.cells.front().metric, 0, 'g', 6));
        out["z_attribution_16"] = toJson(ta);
        // EAP-IG (5 steps) of every edge, from the two prompts (issue 32: ≤ 0.25× PyTorch's same computation);
        // not for post-norm models (Gemma 2), which edge attribution refuses
        if (!cfg.postNorms) {
            EdgeAttributionOptions eo;
            eo.metric = o.metric;
            EdgeAttribution edges;
            const Timing te = timeIt(runs, [&] { edges = runEdgeAttribution(*model, preparePatchingRuns(*model, clean, corrupt), eo); });
            double scoreNorm = 0;
            for (const ScoredEdge& e : edges.graph.edges) scoreNorm += e.score * e.score;
            printRow(QStringLiteral("EAP-IG (5 steps): %1 edges, S=%2").arg(edges.graph.edges.size()).arg(S), te,
                     QStringLiteral("|scores| %1").arg(std::sqrt(scoreNorm), 0, 'g', 6));
            QJsonObject je = toJson(te);
            je["edges"] = int(edges.graph.edges.size());
            je["score_norm"] = std::sqrt(scoreNorm);
            out["eap_ig_16"] = je;
        }
    }
    if (cfg.n_ctx >= 128) benchForwardBackward(*model, runs, out);
    if (cfg.n_ctx >= 128) {
        const ActivationCache cache = runForward(*model, randomTokens(128, cfg.d_vocab, 128));
        size_t edges = 0;
        const Timing t = timeIt(runs, [&] { edges = flowGraph(flowContributions(*model, cache), {}).edges.size(); });
        printRow(QStringLiteral("flow graph, S=128 (contributions + pruning)"), t, QStringLiteral("%1 edges kept").arg(edges));
        QJsonObject j = toJson(t);
        j["edges"] = double(edges);
        out["flow_graph_128"] = j;
    }
    {
        const Timing t = timeIt(runs, [&] {
            const std::shared_ptr<const Model> fresh = loadModel(dir); // nothing cached
            for (CompositionKind k : {CompositionKind::Q, CompositionKind::K, CompositionKind::V}) compositionScores(*fresh, k);
        });
        const int pairs = cfg.n_heads * cfg.n_heads * cfg.n_layers * (cfg.n_layers - 1) / 2;
        printRow(QStringLiteral("composition scores Q+K+V, %1 pairs each").arg(pairs), t);
        out["composition_all"] = toJson(t);
    }
    return out;
}

/// What a user waits for after choosing a model, but for the tokenizer: loadModel of `dir` and its first
/// forward (app cache) on S random tokens (randomTokens with seed S), in milliseconds. The app tokenizes the prompt before the pass, so the
/// tokenizer thread has finished by then; its loading is not counted (PyTorch's rows load none; "open +
/// tokenizer ready" times it). The model is handed back in `model` (its packer may still be running).
double openAndFirstForwardMs(const QString& dir, int S, std::shared_ptr<const Model>& model) {
    QElapsedTimer t;
    t.start();
    model = loadModel(dir);
    const double openMs = t.nsecsElapsed() / 1e6;
    (void)model->tokenizer().vocabSize();
    const std::vector<int> tokens = randomTokens(S, model->config().d_vocab, unsigned(S));
    t.restart();
    { const ActivationCache c = runForward(*model, tokens, appCacheOptions()); }
    return openMs + t.nsecsElapsed() / 1e6;
}

/// Memory, before anything else of the model runs in this process: the peak RSS over the file's size for the
/// first forward (app cache, the shortest S asked for) of a freshly opened model, for the packing behind it
/// (weight_packer.h), and for a later forward (app cache) at every S asked for, each a running peak since the
/// open (/proc/self/status VmHWM after resetting it; this process's own baseline, Qt and the probes' leftovers,
/// included). The target (issue 31): at most 1.5× the file throughout.
QJsonObject benchMemory(const QString& dir, const QList<int>& seqs) {
    QJsonObject out;
    resetPeakRss();
    const double baseline = currentRssMiB();
    std::shared_ptr<const Model> model = loadModel(dir);
    const ModelConfig& cfg = model->config();
    const double fileMiB = model->info().fileBytes / 1048576.0;
    const ForwardOptions appOpt = appCacheOptions();
    auto fits = [&](int S) { return S <= cfg.n_ctx && !planCache(cfg, S, appOpt, cacheBudgetBytes()).residualsOnly; };
    out["file_mib"] = fileMiB;
    out["baseline_rss_mib"] = baseline;
    if (seqs.isEmpty() || !fits(seqs.front())) return out;
    const int S0 = seqs.front();
    { const ActivationCache c = runForward(*model, randomTokens(S0, cfg.d_vocab, unsigned(S0)), appOpt); }
    const double first = peakRssMiB();
    model->waitForPackedWeights();
    const double packed = peakRssMiB();
    QJsonObject later;
    double worst = std::max(first, packed);
    for (int S : seqs) {
        if (!fits(S)) continue;
        { const ActivationCache c = runForward(*model, randomTokens(S, cfg.d_vocab, unsigned(S)), appOpt); }
        const double peak = peakRssMiB();
        later[QString::number(S)] = peak / fileMiB;
        worst = std::max(worst, peak);
    }
    std::printf("  peak RSS / file (%.0f MiB; process baseline %.0f MiB): first forward S=%d %.2f, packed behind it %.2f, "
                "later forwards %.2f (%.0f MiB of copies)\n",
                fileMiB, baseline, S0, first / fileMiB, packed / fileMiB, worst / fileMiB, model->packedWeightBytes() / 1048576.0);
    out["S"] = S0;
    out["first_forward_over_file"] = first / fileMiB;
    out["packed_over_file"] = packed / fileMiB;
    out["later_forwards_over_file"] = later;
    out["worst_over_file"] = worst / fileMiB;
    out["packed_weight_mib"] = model->packedWeightBytes() / 1048576.0;
    return out;
}

/// All benchmarks for one model folder.
QJsonObject benchModel(const QString& dir, const QList<int>& seqs, const QList<int>& lensSeqs, int runs, bool wov,
                       double peakGflops, bool circuitsOnly, bool forwardOnly, bool gradientsOnly) {
    QJsonObject out;
    std::printf("\n%s\n", qPrintable(dir));
    if (!circuitsOnly && !gradientsOnly) out["memory"] = benchMemory(dir, seqs);

    // (a) open: loadModel (headers validated, weights mapped); RSS right after the first open
    const double rssBefore = currentRssMiB();
    QElapsedTimer first;
    first.start();
    std::shared_ptr<const Model> model = loadModel(dir);
    const double firstOpenMs = first.nsecsElapsed() / 1e6;
    const double rssAfterOpen = currentRssMiB() - rssBefore;
    const ModelConfig& cfg = model->config();
    const double fileMiB = model->info().fileBytes / 1048576.0;
    // The opened models are kept until after the timing: a Model's destructor waits for its
    // background tokenizer thread, which is not part of opening.
    std::vector<std::shared_ptr<const Model>> opened;
    const int openRuns = forwardOnly ? 1 : runs;
    const Timing open = timeIt(openRuns, [&] { opened.push_back(loadModel(dir)); });
    for (const auto& m : opened) (void)m->tokenizer().vocabSize();
    opened.clear();
    const Timing openTok = timeIt(openRuns, [&] {
        opened.push_back(loadModel(dir));
        (void)opened.back()->tokenizer().vocabSize();
    });
    opened.clear();
    printRow(QStringLiteral("open (loadModel)"), open,
             QStringLiteral("first %1 ms; RSS after open +%2 MiB of a %3 MiB file").arg(firstOpenMs, 0, 'f', 1)
                 .arg(rssAfterOpen, 0, 'f', 1).arg(fileMiB, 0, 'f', 0));
    printRow(QStringLiteral("open + tokenizer ready"), openTok);
    out["open"] = toJson(open);
    out["open_tokenizer_ready"] = toJson(openTok);
    out["first_open_ms"] = firstOpenMs;
    out["rss_after_open_mib"] = rssAfterOpen;
    out["file_mib"] = fileMiB;
    out["config"] = QJsonObject{{"architecture", cfg.architecture}, {"n_layers", cfg.n_layers}, {"n_heads", cfg.n_heads},
                                {"n_kv_heads", cfg.n_kv_heads}, {"d_model", cfg.d_model}, {"d_head", cfg.d_head},
                                {"d_mlp", cfg.d_mlp}, {"d_vocab", cfg.d_vocab}, {"n_ctx", cfg.n_ctx}};
    (void)model->tokenizer().vocabSize();
    // The model as the app has it once its first pass is done: every layer resolved and the packer's copies
    // made (weight_packer.h), so that no timed row below races the packer. How long the packer took after that
    // first pass is reported: a pass started before then reads the weights not yet packed in place.
    {
        const std::vector<int> one = randomTokens(std::min(cfg.n_ctx, 8), cfg.d_vocab, 8u);
        ForwardOptions lo;
        lo.allLogits = false;
        lo.cacheLayers = false;
        lo.cacheHeadResults = false;
        (void)runForward(*model, one, lo);
        QElapsedTimer t;
        t.start();
        model->waitForPackedWeights();
        const double packMs = t.nsecsElapsed() / 1e6;
        std::printf("  packing behind the first pass: %.1f ms more, %.0f MiB of copies\n", packMs,
                    model->packedWeightBytes() / 1048576.0);
        out["packing_after_first_pass_ms"] = packMs;
        out["packed_weight_mib"] = model->packedWeightBytes() / 1048576.0;
    }
    if (gradientsOnly) {
        QJsonObject rows;
        benchForwardBackward(*model, runs, rows);
        out["circuits"] = rows;
        return out;
    }
    if (!forwardOnly) out["circuits"] = benchCircuits(dir, model, runs);
    if (circuitsOnly) return out;

    // a model whose full cache does not fit at the longest prompt asked for (gpt2-xl at 1024): the
    // residuals-only layout only
    {
        int S = 0;
        for (int s : seqs) S = std::max(S, std::min(s, cfg.n_ctx));
        const ForwardOptions appOpt = appCacheOptions();
        if (S > 0 && planCache(cfg, S, appOpt, cacheBudgetBytes()).residualsOnly) {
            std::printf("  (the full cache at S=%d does not fit the memory budget: residuals-only benchmarks)\n", S);
            out["big_model"] = benchBigModel(model, S);
            out["peak_rss_mib_process"] = maxRssMiB();
            return out;
        }
    }

    // (a') open + the first forward (openAndFirstForwardMs, the shortest prompt asked for); it includes mapping
    // the file's pages, which the pass reads in place while the packer makes the copies behind it
    // (weight_packer.h). Outside the timing, each model's packer finishes, so the peak RSS covers the first
    // pass and the packing after it.
    if (!forwardOnly && !seqs.empty() && seqs.front() <= cfg.n_ctx) {
        const int S = seqs.front();
        resetPeakRss();
        std::vector<double> ms;
        size_t packedBytes = 0;
        for (int i = 0; i <= runs; ++i) {
            std::shared_ptr<const Model> fresh;
            const double firstMs = openAndFirstForwardMs(dir, S, fresh);
            if (i > 0) ms.push_back(firstMs); // the first run warms the page cache, like timeIt's
            fresh->waitForPackedWeights();
            packedBytes = fresh->packedWeightBytes();
        }
        std::sort(ms.begin(), ms.end());
        const Timing first{ms[ms.size() / 2], ms.front(), ms.back(), peakRssMiB()};
        printRow(QStringLiteral("open + first forward (app cache), S=%1").arg(S), first,
                 QStringLiteral("then packs %1 MiB of weights behind it").arg(packedBytes / 1048576.0, 0, 'f', 0));
        QJsonObject fj = toJson(first);
        fj["S"] = S;
        fj["packed_weight_mib"] = packedBytes / 1048576.0;
        out["open_first_forward"] = fj;
    }

    QJsonObject fwdFull, fwdApp, fwdLogits, lens;
    std::shared_ptr<ActivationCache> cache512, cache1024;
    for (int S : seqs) {
        if (S > cfg.n_ctx) continue;
        const std::vector<int> tokens = randomTokens(S, cfg.d_vocab, unsigned(S));
        ActivationCache cache;
        // (b') the cache as the app keeps it (ModelSession): every hook point but the per-head results, which
        // the views compute for what they show, and the logits of the last position only. First, into a fresh
        // cache, so its peak RSS is the app's at this S (weights touched + one cache), not the full cache's.
        const ForwardOptions appOpt = appCacheOptions();
        const Timing app = timeIt(runs, [&] {
            cache = runForward(*model, tokens, appOpt, {}, std::move(cache));
        });
        const double gfa = forwardGflop(cfg, S, 1, false);
        printRow(QStringLiteral("forward + app cache (last logits), S=%1").arg(S), app,
                 QStringLiteral("%1 GFLOP/s").arg(gfa / app.median_ms * 1e3, 0, 'f', 0));
        QJsonObject fa = toJson(app);
        fa["gflop"] = gfa;
        fa["gflops"] = gfa / app.median_ms * 1e3;
        fwdApp[QString::number(S)] = fa;

        // (b) forward with the full activation cache (every hook point, per-head results, all logits)
        const Timing full = timeIt(runs, [&] {
            // the previous pass's cache is recycled: its buffers are written in place (no fresh pages)
            cache = runForward(*model, tokens, {}, {}, std::move(cache));
        });
        const double gf = forwardGflop(cfg, S, S, true);
        printRow(QStringLiteral("forward + full cache, S=%1").arg(S), full,
                 QStringLiteral("%1 GFLOP, %2 GFLOP/s (FMA peak %3)").arg(gf, 0, 'f', 1)
                     .arg(gf / full.median_ms * 1e3, 0, 'f', 0).arg(peakGflops, 0, 'f', 0));
        QJsonObject f = toJson(full);
        f["gflop"] = gf;
        f["gflops"] = gf / full.median_ms * 1e3;
        fwdFull[QString::number(S)] = f;

        // (c) logits only: last position, no per-head results, no layer cache kept
        ForwardOptions lo;
        lo.allLogits = false;
        lo.cacheHeadResults = false;
        lo.cacheLayers = false;
        const Timing logits = timeIt(runs, [&] { ActivationCache c = runForward(*model, tokens, lo); });
        const double gfl = forwardGflop(cfg, S, 1, false);
        printRow(QStringLiteral("forward, logits only (last pos), S=%1").arg(S), logits,
                 QStringLiteral("%1 GFLOP/s").arg(gfl / logits.median_ms * 1e3, 0, 'f', 0));
        QJsonObject fl = toJson(logits);
        fl["gflop"] = gfl;
        fl["gflops"] = gfl / logits.median_ms * 1e3;
        fwdLogits[QString::number(S)] = fl;

        // (d) logit lens: (n_layers+1)·S rows (embed and after every block), top-10 with probabilities
        if (lensSeqs.contains(S)) {
            std::vector<int> boundaries; // resid_pre of every layer and the final residual, as torch_reference.py
            for (int b = 0; b < lensBoundaryCount(cfg); b += 2) boundaries.push_back(b);
            const Timing t = timeIt(runs, [&] { const auto cells = logitLensAt(*model, cache, boundaries, 10); });
            printRow(QStringLiteral("logit lens %1×%2 rows, top-10").arg(cfg.n_layers + 1).arg(S), t);
            lens[QString::number(S)] = toJson(t);
        }
        if (S == 512) cache512 = std::make_shared<ActivationCache>(std::move(cache));
        if (S == 1024) cache1024 = std::make_shared<ActivationCache>(std::move(cache));
    }
    out["forward_full_cache"] = fwdFull;
    out["forward_app_cache"] = fwdApp;
    out["forward_logits_only"] = fwdLogits;
    out["logit_lens"] = lens;

    // (e) another head at S = 512: pattern from the cache + token labels + heatmap replot to a pixmap
    if (cache512 && !forwardOnly) {
        const auto [t, cpu] = benchAnotherHead(cfg.n_layers, cfg.n_heads, [&](int l, int h) {
            return cache512->layer(l)->pattern[size_t(h)];
        }, tokenLabels(model->tokenizer(), cache512->tokens), runs);
        printRow(QStringLiteral("show another head, S=512 (800×800 replot)"), t, QStringLiteral("CPU %1 ms").arg(cpu, 0, 'f', 1));
        QJsonObject a = toJson(t);
        a["cpu_median_ms"] = cpu;
        out["another_head_512"] = a;
    }
    // (g) zoom/pan replot of the heatmap and (h) the head grid at S = 1024
    if (cache1024 && !forwardOnly)
        benchViews(out, cfg.n_layers, cfg.n_heads, [&](int l, int h) {
            return cache1024->layer(l)->pattern[size_t(h)];
        }, tokenLabels(model->tokenizer(), cache1024->tokens), runs);
    cache1024.reset();
    cache512.reset();

    // (f) W_OV top-100 over all d_vocab² pairs for one head (small: layer 6 head 0; medium: layer 12 head 0)
    if (wov) {
        const int layer = cfg.n_layers / 2;
        PairProjection top;
        const Timing t = timeIt(std::max(1, runs / 2), [&] { top = projectPairs(*model, PairProjectionKind::OV, layer, 0, 100); });
        printRow(QStringLiteral("W_OV top-100 of d_vocab² = %1 pairs, L%2H0").arg(qint64(cfg.d_vocab) * cfg.d_vocab).arg(layer), t,
                 QStringLiteral("best %1 → %2 (%3)").arg(top.top.front().row).arg(top.top.front().col)
                     .arg(top.top.front().score, 0, 'g', 6));
        QJsonObject w = toJson(t);
        w["layer"] = layer;
        w["best_score"] = top.top.front().score;
        w["score_100"] = top.top.back().score;
        w["runs"] = std::max(1, runs / 2);
        out["wov_top100"] = w;
    }
    out["peak_rss_mib_process"] = maxRssMiB();
    return out;
}

/// Writes `json` to `file`, or prints it when `file` is empty; false (and a message) when the file cannot be written.
bool writeJson(const QByteArray& json, const QString& file) {
    if (file.isEmpty()) {
        std::printf("%s\n", json.constData());
        return true;
    }
    QFile f(file);
    if (f.open(QIODevice::WriteOnly) && f.write(json) == json.size()) return true;
    std::fprintf(stderr, "cannot write %s\n", qPrintable(f.fileName()));
    return false;
}

/// Writes the random checkpoint of size name `size` (GPT-2 "small"… or "llama-1b"…) into parent/<its name>;
/// returns that folder. Throws InputError for an unknown size.
QString writeRandomModel(const QString& size, const QString& parent, const QString& tokenizerDir) {
    if (bench::isLlamaShapeName(size)) {
        const bench::LlamaShape shape = bench::llamaShape(size);
        const QString dir = QDir(parent).filePath(shape.name);
        bench::writeRandomLlama(shape, dir, tokenizerDir);
        return dir;
    }
    const bench::Gpt2Shape shape = bench::gpt2Shape(size);
    const QString dir = QDir(parent).filePath(shape.name);
    bench::writeRandomGpt2(shape, dir, tokenizerDir);
    return dir;
}

} // namespace

namespace attnscope {
QJsonObject benchSae(int dIn, int dSae, int S, int k, int runs); // sae_bench.cpp
QJsonObject benchGraph(const QString& dir, int dSae, int k, float jumpThreshold, int S, int maxFeatureNodes, int runs,
                       const QString& transcoderDir, const QString& pngPrefix); // graph_bench.cpp
}

int main(int argc, char** argv) {
    if (!qEnvironmentVariableIsSet("ATTNSCOPE_DEFAULT_MALLOC")) keepFreedMemoryForReuse();
    qputenv("QT_QPA_PLATFORM", qgetenv("QT_QPA_PLATFORM").isEmpty() ? QByteArray("offscreen") : qgetenv("QT_QPA_PLATFORM"));
    QApplication app(argc, argv);
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("AttnScope benchmarks (README \"Benchmarks\")."));
    p.addHelpOption();
    p.addOption({QStringLiteral("model"), QStringLiteral("Benchmark this model folder instead of writing random ones."), QStringLiteral("path")});
    // options with a default say it in their help text (QCommandLineParser does not show defaults)
    const auto withDefault = [&p](const QString& name, const QString& help, const QString& value, const QString& def) {
        p.addOption({name, QStringLiteral("%1 Default: %2.").arg(help, def), value, def});
    };
    withDefault(QStringLiteral("sizes"),
                QStringLiteral("Random-weight shapes to write and run: GPT-2 small, medium, xl (F32) and llama-1b, llama-3b, "
                               "qwen3-0.6b, gemma-2-2b, gemma-3-1b (the shapes of Llama-3.2-1B/3B, Qwen3-0.6B, gemma-2-2b, gemma-3-1b; BF16)."),
                QStringLiteral("list"), QStringLiteral("small"));
    p.addOption({QStringLiteral("write-models"), QStringLiteral("Only write the random checkpoints into DIR/<name> (gpt2-small, …, llama-1b) and exit."), QStringLiteral("dir")});
    withDefault(QStringLiteral("tokenizer"), QStringLiteral("Folder with GPT-2 encoder.json and vocab.bpe."), QStringLiteral("dir"),
                QDir::cleanPath(QStringLiteral(ATTNSCOPE_GPT2_TOKENIZER_DIR)));
    withDefault(QStringLiteral("seq"), QStringLiteral("Sequence lengths."), QStringLiteral("list"), QStringLiteral("20,128,512,1024"));
    withDefault(QStringLiteral("lens-seq"), QStringLiteral("Sequence lengths for the logit lens."), QStringLiteral("list"),
                QStringLiteral("20,128,512,1024"));
    withDefault(QStringLiteral("runs"), QStringLiteral("Timed runs after one warm-up."), QStringLiteral("n"), QStringLiteral("5"));
    p.addOption({QStringLiteral("no-wov"), QStringLiteral("Skip the W_OV top-100.")});
    p.addOption({QStringLiteral("circuits-only"), QStringLiteral("Only the open and circuit rows (patching, flow graph, composition).")});
    p.addOption({QStringLiteral("forward-only"), QStringLiteral("Only the forward rows for --seq and the lens rows for --lens-seq: no machine "
                                                                "probes, open, circuit, view or W_OV rows (e.g. to profile the forward).")});
    p.addOption({QStringLiteral("gradients-only"), QStringLiteral("Only the open and the forward + backward rows at S = 128 (full and app "
                                                                  "cache, with peak RSS), e.g. on a llama-1b shape.")});
    p.addOption({QStringLiteral("views-only"), QStringLiteral("Only the view rows (another head, zoom/pan, head grid) on synthetic patterns for --seq.")});
    p.addOption({QStringLiteral("first-open"), QStringLiteral("Only open --model and run its first forward (app cache, the first --seq), "
                                                              "once, in this new process; print the milliseconds (bench/run_comparison.sh "
                                                              "runs it in fresh processes, as a user's first open).")});
    p.addOption({QStringLiteral("json"), QStringLiteral("Also write the results to this JSON file."), QStringLiteral("file")});
    p.addOption({QStringLiteral("sae-only"), QStringLiteral("Only the SAE rows: a TopK (k = 32) SAE on d_in 768 at S = 128, encode, "
                                                            "list the firing features, decode, for each d_sae in the list."),
                 QStringLiteral("d_sae list")});
    p.addOption({QStringLiteral("graph-only"), QStringLiteral("Only the attribution-graph rows on --model (or the --sizes written): random "
                                                              "per-layer TopK transcoders, a random prompt (BOS first); build, attribute, "
                                                              "prune + scores, a cancelled run, one batch split by hop. --runs full runs "
                                                              "(default 1 here).")});
    withDefault(QStringLiteral("graph-d-sae"), QStringLiteral("--graph-only: features per layer."), QStringLiteral("n"), QStringLiteral("24576"));
    withDefault(QStringLiteral("graph-k"), QStringLiteral("--graph-only: active features per position."), QStringLiteral("n"), QStringLiteral("64"));
    withDefault(QStringLiteral("graph-seq"), QStringLiteral("--graph-only: prompt length, BOS included."), QStringLiteral("n"), QStringLiteral("16"));
    withDefault(QStringLiteral("graph-max-feature-nodes"), QStringLiteral("--graph-only: circuit-tracer's max_feature_nodes (0: every "
                                                                          "active feature)."), QStringLiteral("n"), QStringLiteral("7500"));
    p.addOption({QStringLiteral("graph-transcoders"), QStringLiteral("--graph-only: a folder to write the random transcoders into as a "
                                                                     "circuit-tracer set in BF16 (once; reused when its config.yaml is there) "
                                                                     "and open memory-mapped, as a user's file is. Without it they are "
                                                                     "float32 arrays the bench owns."), QStringLiteral("dir")});
    p.addOption({QStringLiteral("graph-jumprelu"), QStringLiteral("--graph-only, with --graph-transcoders: JumpReLU transcoders (Gemma "
                                                                  "Scope's kind) with this threshold for every feature instead of TopK; "
                                                                  "2.63 lets about 70 of 16 384 fire per token."), QStringLiteral("theta")});
    p.addOption({QStringLiteral("graph-view-png"), QStringLiteral("--graph-only: save the Graph tab's pictures (the pruned graph and every "
                                                                  "visited feature) as PREFIX-pruned.png and PREFIX-all.png."), QStringLiteral("prefix")});
    p.addOption({QStringLiteral("list-kernels"), QStringLiteral("Print the compute kernels this CPU can run (for ATTNSCOPE_ISA), one per line, and exit.")});
    p.process(app);
    if (p.isSet(QStringLiteral("list-kernels"))) {
        for (KernelIsa isa : runnableKernelIsas()) std::printf("%s\n", qPrintable(kernelIsaName(isa)));
        return 0;
    }
    if (const KernelChoice& choice = processKernelChoice(); !choice.error.isEmpty()) {
        std::fprintf(stderr, "attnscope_bench: %s\n", qPrintable(choice.error));
        return 1;
    }

    try {
        const QStringList sizes = p.value(QStringLiteral("sizes")).split(',', Qt::SkipEmptyParts);
        if (p.isSet(QStringLiteral("write-models"))) {
            for (const QString& s : sizes) {
                QElapsedTimer t;
                t.start();
                const QString dir = writeRandomModel(s, p.value(QStringLiteral("write-models")), p.value(QStringLiteral("tokenizer")));
                std::printf("wrote %s in %.1f s\n", qPrintable(dir), t.elapsed() / 1e3);
            }
            return 0;
        }
        const int runs = std::max(1, p.value(QStringLiteral("runs")).toInt());
        const QList<int> seqs = parseInts(p.value(QStringLiteral("seq")));
        if (p.isSet(QStringLiteral("first-open"))) {
            // what a user waits for the first time a model is opened in a process: no earlier mapping of the file,
            // no packed copies, no warmed heap (the page cache is warm: run_comparison.sh ran the full bench first)
            const int S = seqs.isEmpty() ? 20 : seqs.front();
            std::shared_ptr<const Model> model;
            std::printf("first_open_forward_ms %.1f S %d\n", openAndFirstForwardMs(p.value(QStringLiteral("model")), S, model), S);
            return 0;
        }
        if (p.isSet(QStringLiteral("sae-only"))) {
            QJsonObject rows;
            for (int dSae : parseInts(p.value(QStringLiteral("sae-only"))))
                rows[QString::number(dSae)] = benchSae(768, dSae, 128, 32, runs);
            std::printf("%s\n", QJsonDocument(QJsonObject{{"tool", "attnscope_bench"}, {"kernel", QString::fromLatin1(computeKernels().name)},
                                                           {"sae", rows}}).toJson().constData());
            return 0;
        }
        if (p.isSet(QStringLiteral("graph-only"))) {
            const double fma = bench::fmaPeakGflops(computeKernels(), 3);
            std::printf("%s\nFMA peak %.0f GFLOP/s\n", qPrintable(kernelSummary()), fma);
            QTemporaryDir tmp;
            QStringList dirs;
            if (p.isSet(QStringLiteral("model")))
                dirs << p.value(QStringLiteral("model"));
            else
                for (const QString& s : sizes) dirs << writeRandomModel(s, tmp.path(), p.value(QStringLiteral("tokenizer")));
            QJsonObject rows;
            for (const QString& dir : dirs) {
                std::printf("\n%s\n", qPrintable(dir));
                rows[QDir(dir).dirName()] = benchGraph(dir, p.value(QStringLiteral("graph-d-sae")).toInt(),
                                                       p.value(QStringLiteral("graph-k")).toInt(),
                                                       p.value(QStringLiteral("graph-jumprelu")).toFloat(),
                                                       p.value(QStringLiteral("graph-seq")).toInt(),
                                                       p.value(QStringLiteral("graph-max-feature-nodes")).toInt(),
                                                       p.isSet(QStringLiteral("runs")) ? runs : 1,
                                                       p.value(QStringLiteral("graph-transcoders")),
                                                       p.value(QStringLiteral("graph-view-png")));
            }
            const QByteArray json = QJsonDocument(QJsonObject{{"tool", "attnscope_bench"}, {"kernel", QString::fromLatin1(computeKernels().name)},
                                                              {"date", QDateTime::currentDateTimeUtc().toString(Qt::ISODate)},
                                                              {"fma_peak_gflops", fma}, {"graph", rows}}).toJson();
            return writeJson(json, p.value(QStringLiteral("json"))) ? 0 : 1;
        }
        const QList<int> lensSeqs = parseInts(p.value(QStringLiteral("lens-seq")));
        if (p.isSet(QStringLiteral("views-only"))) {
            const QJsonObject views = benchSyntheticViews(seqs, runs);
            std::printf("%s\n", QJsonDocument(QJsonObject{{"tool", "attnscope_bench"}, {"views", views}}).toJson().constData());
            return 0;
        }
        int threads = 1;
#ifdef _OPENMP
        threads = omp_get_max_threads();
#endif
        const ComputeKernels& kernel = computeKernels();
        std::printf("%s\n", qPrintable(kernelSummary()));
        const bool forwardOnly = p.isSet(QStringLiteral("forward-only")), gradientsOnly = p.isSet(QStringLiteral("gradients-only"));
        const bool probes = !forwardOnly && !gradientsOnly;
        const double gemm = probes ? eigenGemmGflops(2048, runs) : 0;
        const double kernelGemm = probes ? kernelGemmGflops(2048, runs) : 0;
        const double fma = probes ? bench::fmaPeakGflops(kernel, runs) : 0;
        const double bandwidth = probes ? bench::readBandwidthGBs(kernel, runs) : 0;
        if (probes)
            std::printf("Eigen GEMM 2048³ (built for the baseline ISA): %.0f GFLOP/s, weightGemm 2048³ (%s): %.0f GFLOP/s, FMA "
                        "peak (%d lanes) %.0f GFLOP/s, DRAM read %.1f GB/s (%d OpenMP threads, %u hardware threads)\n",
                        gemm, kernel.name, kernelGemm, kernel.lanes, fma, bandwidth, threads, std::thread::hardware_concurrency());
        QJsonObject root{{"tool", "attnscope_bench"}, {"date", QDateTime::currentDateTimeUtc().toString(Qt::ISODate)},
                         {"kernel", QString::fromLatin1(kernel.name)}, {"kernel_summary", kernelSummary()},
                         {"eigen_gemm_2048_gflops", gemm}, {"kernel_gemm_2048_gflops", kernelGemm},
                         {"fma_peak_gflops", fma}, {"read_bandwidth_gbs", bandwidth},
                         {"omp_threads", threads},
                         {"runs", runs}};
        QJsonObject models;
        QTemporaryDir tmp;
        QStringList dirs;
        if (p.isSet(QStringLiteral("model"))) {
            dirs << p.value(QStringLiteral("model"));
        } else {
            for (const QString& s : sizes) dirs << writeRandomModel(s, tmp.path(), p.value(QStringLiteral("tokenizer")));
        }
        for (const QString& dir : dirs)
            models[QDir(dir).dirName()] = benchModel(dir, seqs, lensSeqs, runs, !forwardOnly && !p.isSet(QStringLiteral("no-wov")),
                                                       fma, p.isSet(QStringLiteral("circuits-only")), forwardOnly, gradientsOnly);
        root["models"] = models;
        const QByteArray json = QJsonDocument(root).toJson();
        if (!writeJson(json, p.value(QStringLiteral("json")))) return 1;
    } catch (const ModelError& e) {
        std::fprintf(stderr, "%s\n", qPrintable(e.message()));
        return 1;
    } catch (const InputError& e) {
        std::fprintf(stderr, "%s\n", qPrintable(e.message()));
        return 1;
    }
    return 0;
}
