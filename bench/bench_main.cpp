// attnscope_bench: times what a user waits for (open, forward + cache, another head, W_OV top pairs,
// logit lens) on random-weight GPT-2 checkpoints of real shapes, next to the machine's measured Eigen
// GEMM peak. Prints a table and JSON. See README "Benchmarks" and bench/run_comparison.sh.

#include "bench/checkpoint_writer.h"
#include "bench/process_memory.h"

#include "model/analysis/embedding_projection.h"
#include "model/analysis/logit_lens.h"
#include "model/analysis/top_tokens.h"
#include "model/core/errors.h"
#include "model/core/heap_reuse.h"
#include "model/formats/model_loader.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/forward.h"
#include "model/transformer/layer_recompute.h"
#include "model/transformer/prompt.h"
#include "views/attention_heatmap.h"

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

/// 1 warm-up then `runs` timed calls of fn; median/min/max in ms and the peak RSS while they ran.
Timing timeIt(int runs, const std::function<void()>& fn) {
    bench::resetPeakRss();
    fn();
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
        QElapsedTimer t;
        t.start();
        fn();
        ms.push_back(t.nsecsElapsed() / 1e6);
    }
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ms.front(), ms.back(), bench::peakRssMiB()};
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

/// Forward FLOPs as counted in BASELINE.md: 2·S·(matrix params) + 4·S²·d_model·n_layers (full square),
/// plus what our cache adds (per-head result z_h·W_O^h) and the unembedding rows actually computed.
double forwardGflop(const ModelConfig& c, int S, int logitRows, bool headResults) {
    const double D = c.d_model, L = c.n_layers, V = c.d_vocab;
    double f = 2.0 * S * (12.0 * D * D) * L + 4.0 * S * double(S) * D * L + 2.0 * logitRows * D * V;
    if (headResults) f += 2.0 * S * D * D * L;
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
    bench::resetPeakRss();
    QElapsedTimer t;
    t.start();
    const ActivationCache cache = runForward(*model, tokens, opt);
    const double fwdMs = t.nsecsElapsed() / 1e6;
    const double peak = bench::peakRssMiB();
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
    bench::resetPeakRss();
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
                bench::peakRssMiB());
    std::fflush(stdout);
    std::sort(totals.begin(), totals.end());
    out["show_recomputed_head"] = recomputed;
    out["show_recomputed_head_median_ms"] = totals[totals.size() / 2];
    out["show_head_same_layer_ms"] = again;
    out["show_peak_rss_mib"] = bench::peakRssMiB();
    return out;
}

/// All benchmarks for one model folder.
QJsonObject benchModel(const QString& dir, const QList<int>& seqs, const QList<int>& lensSeqs, int runs, bool wov,
                       double gemmGflops) {
    QJsonObject out;
    std::printf("\n%s\n", qPrintable(dir));

    // (a) open: loadModel (headers validated, weights mapped); RSS right after the first open
    const double rssBefore = bench::currentRssMiB();
    QElapsedTimer first;
    first.start();
    std::shared_ptr<const Model> model = loadModel(dir);
    const double firstOpenMs = first.nsecsElapsed() / 1e6;
    const double rssAfterOpen = bench::currentRssMiB() - rssBefore;
    const ModelConfig& cfg = model->config();
    const double fileMiB = model->info().fileBytes / 1048576.0;
    // The opened models are kept until after the timing: a Model's destructor waits for its
    // background tokenizer thread, which is not part of opening.
    std::vector<std::shared_ptr<const Model>> opened;
    const Timing open = timeIt(runs, [&] { opened.push_back(loadModel(dir)); });
    for (const auto& m : opened) (void)m->tokenizer().vocabSize();
    opened.clear();
    const Timing openTok = timeIt(runs, [&] {
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
    out["config"] = QJsonObject{{"n_layers", cfg.n_layers}, {"n_heads", cfg.n_heads}, {"d_model", cfg.d_model},
                                {"d_vocab", cfg.d_vocab}, {"n_ctx", cfg.n_ctx}};
    (void)model->tokenizer().vocabSize();

    // a model whose full cache does not fit at its longest prompt (gpt2-xl): the residuals-only layout only
    {
        const int S = std::min(1024, cfg.n_ctx);
        ForwardOptions appOpt;
        appOpt.allLogits = false;
        if (planCache(cfg, S, appOpt, cacheBudgetBytes()).residualsOnly) {
            std::printf("  (the full cache at S=%d does not fit the memory budget: residuals-only benchmarks)\n", S);
            out["big_model"] = benchBigModel(model, S);
            out["peak_rss_mib_process"] = bench::maxRssMiB();
            return out;
        }
    }

    QJsonObject fwdFull, fwdApp, fwdLogits, lens;
    std::shared_ptr<ActivationCache> cache512;
    for (int S : seqs) {
        if (S > cfg.n_ctx) continue;
        const std::vector<int> tokens = randomTokens(S, cfg.d_vocab, unsigned(S));
        // (b) forward with the full activation cache (every hook point, per-head results, all logits)
        ActivationCache cache;
        const Timing full = timeIt(runs, [&] {
            // the previous pass's cache is recycled: its buffers are written in place (no fresh pages)
            cache = runForward(*model, tokens, {}, {}, std::move(cache));
        });
        const double gf = forwardGflop(cfg, S, S, true);
        printRow(QStringLiteral("forward + full cache, S=%1").arg(S), full,
                 QStringLiteral("%1 GFLOP, %2 GFLOP/s (Eigen GEMM %3)").arg(gf, 0, 'f', 1)
                     .arg(gf / full.median_ms * 1e3, 0, 'f', 0).arg(gemmGflops, 0, 'f', 0));
        QJsonObject f = toJson(full);
        f["gflop"] = gf;
        f["gflops"] = gf / full.median_ms * 1e3;
        fwdFull[QString::number(S)] = f;

        // (b') the same cache as the app keeps it: logits of the last position only (ModelSession)
        ForwardOptions appOpt;
        appOpt.allLogits = false;
        const Timing app = timeIt(runs, [&] {
            cache = runForward(*model, tokens, appOpt, {}, std::move(cache));
        });
        const double gfa = forwardGflop(cfg, S, 1, true);
        printRow(QStringLiteral("forward + full cache, last logits, S=%1").arg(S), app,
                 QStringLiteral("%1 GFLOP/s").arg(gfa / app.median_ms * 1e3, 0, 'f', 0));
        QJsonObject fa = toJson(app);
        fa["gflop"] = gfa;
        fa["gflops"] = gfa / app.median_ms * 1e3;
        fwdApp[QString::number(S)] = fa;

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
            const Timing t = timeIt(runs, [&] {
                for (int b = 0; b < lensBoundaryCount(cfg); b += 2) {
                    const Matrix lg = lensLogits(*model, cache, b);
                    for (int p = 0; p < S; ++p) {
                        const auto top = topTokens(lg.row(p), 10);
                        (void)top;
                    }
                }
            });
            printRow(QStringLiteral("logit lens %1×%2 rows, top-10").arg(cfg.n_layers + 1).arg(S), t);
            lens[QString::number(S)] = toJson(t);
        }
        if (S == 512) cache512 = std::make_shared<ActivationCache>(std::move(cache));
    }
    out["forward_full_cache"] = fwdFull;
    out["forward_app_cache"] = fwdApp;
    out["forward_logits_only"] = fwdLogits;
    out["logit_lens"] = lens;

    // (e) another head at S = 512: pattern from the cache + token labels + heatmap replot to a pixmap
    if (cache512) {
        AttentionHeatmap view;
        view.resize(800, 800);
        const QStringList labels = tokenLabels(model->tokenizer(), cache512->tokens);
        int i = 0;
        const Timing t = timeIt(runs, [&] {
            const int l = (i / cfg.n_heads) % cfg.n_layers, h = i % cfg.n_heads;
            ++i;
            AttentionHeatmapData d;
            d.pattern = cache512->layer(l)->pattern[size_t(h)];
            d.tokens = labels;
            d.title = QStringLiteral("bench — layer %1, head %2").arg(l).arg(h);
            view.setData(d);
            const QPixmap pm = view.plot()->toPixmap(800, 800);
            if (pm.isNull()) throw InputError(QStringLiteral("heatmap render failed"));
        });
        printRow(QStringLiteral("show another head, S=512 (800×800 replot)"), t);
        out["another_head_512"] = toJson(t);
    }
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
    out["peak_rss_mib_process"] = bench::maxRssMiB();
    return out;
}

} // namespace

int main(int argc, char** argv) {
    if (!qEnvironmentVariableIsSet("ATTNSCOPE_DEFAULT_MALLOC")) keepFreedMemoryForReuse();
    qputenv("QT_QPA_PLATFORM", qgetenv("QT_QPA_PLATFORM").isEmpty() ? QByteArray("offscreen") : qgetenv("QT_QPA_PLATFORM"));
    QApplication app(argc, argv);
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("AttnScope benchmarks (README \"Benchmarks\")."));
    p.addHelpOption();
    p.addOption({QStringLiteral("model"), QStringLiteral("Benchmark this model folder instead of writing random ones."), QStringLiteral("path")});
    p.addOption({QStringLiteral("sizes"), QStringLiteral("Random GPT-2 sizes to write and run (small,medium,xl)."), QStringLiteral("list"), QStringLiteral("small")});
    p.addOption({QStringLiteral("write-models"), QStringLiteral("Only write the random checkpoints into DIR/<gpt2-size> and exit."), QStringLiteral("dir")});
    p.addOption({QStringLiteral("tokenizer"), QStringLiteral("Folder with GPT-2 encoder.json and vocab.bpe."), QStringLiteral("dir"),
                 QStringLiteral("/work/shared/testdata/gpt2-tokenizer")});
    p.addOption({QStringLiteral("seq"), QStringLiteral("Sequence lengths."), QStringLiteral("list"), QStringLiteral("20,128,512,1024")});
    p.addOption({QStringLiteral("lens-seq"), QStringLiteral("Sequence lengths for the logit lens."), QStringLiteral("list"), QStringLiteral("20,128,512,1024")});
    p.addOption({QStringLiteral("runs"), QStringLiteral("Timed runs after one warm-up."), QStringLiteral("n"), QStringLiteral("5")});
    p.addOption({QStringLiteral("no-wov"), QStringLiteral("Skip the W_OV top-100.")});
    p.addOption({QStringLiteral("json"), QStringLiteral("Also write the results to this JSON file."), QStringLiteral("file")});
    p.process(app);

    try {
        const QStringList sizes = p.value(QStringLiteral("sizes")).split(',', Qt::SkipEmptyParts);
        if (p.isSet(QStringLiteral("write-models"))) {
            for (const QString& s : sizes) {
                const auto shape = bench::gpt2Shape(s);
                const QString dir = QDir(p.value(QStringLiteral("write-models"))).filePath(shape.name);
                QElapsedTimer t;
                t.start();
                bench::writeRandomGpt2(shape, dir, p.value(QStringLiteral("tokenizer")));
                std::printf("wrote %s in %.1f s\n", qPrintable(dir), t.elapsed() / 1e3);
            }
            return 0;
        }
        const int runs = std::max(1, p.value(QStringLiteral("runs")).toInt());
        const QList<int> seqs = parseInts(p.value(QStringLiteral("seq")));
        const QList<int> lensSeqs = parseInts(p.value(QStringLiteral("lens-seq")));
        int threads = 1;
#ifdef _OPENMP
        threads = omp_get_max_threads();
#endif
        const double gemm = eigenGemmGflops(2048, runs);
        std::printf("Eigen GEMM 2048³: %.0f GFLOP/s (%d OpenMP threads, %u hardware threads)\n", gemm, threads,
                    std::thread::hardware_concurrency());
        QJsonObject root{{"tool", "attnscope_bench"}, {"date", QDateTime::currentDateTimeUtc().toString(Qt::ISODate)},
                         {"eigen_gemm_2048_gflops", gemm}, {"omp_threads", threads}, {"runs", runs}};
        QJsonObject models;
        QTemporaryDir tmp;
        QStringList dirs;
        if (p.isSet(QStringLiteral("model"))) {
            dirs << p.value(QStringLiteral("model"));
        } else {
            for (const QString& s : sizes) {
                const auto shape = bench::gpt2Shape(s);
                const QString dir = tmp.filePath(shape.name);
                bench::writeRandomGpt2(shape, dir, p.value(QStringLiteral("tokenizer")));
                dirs << dir;
            }
        }
        for (const QString& dir : dirs)
            models[QDir(dir).dirName()] = benchModel(dir, seqs, lensSeqs, runs, !p.isSet(QStringLiteral("no-wov")), gemm);
        root["models"] = models;
        const QByteArray json = QJsonDocument(root).toJson();
        if (p.isSet(QStringLiteral("json"))) {
            QFile f(p.value(QStringLiteral("json")));
            if (!f.open(QIODevice::WriteOnly) || f.write(json) != json.size()) {
                std::fprintf(stderr, "cannot write %s\n", qPrintable(f.fileName()));
                return 1;
            }
        } else {
            std::printf("%s\n", json.constData());
        }
    } catch (const ModelError& e) {
        std::fprintf(stderr, "%s\n", qPrintable(e.message()));
        return 1;
    } catch (const InputError& e) {
        std::fprintf(stderr, "%s\n", qPrintable(e.message()));
        return 1;
    }
    return 0;
}
