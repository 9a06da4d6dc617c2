// Attribution-graph rows (issue 35 "Speed"): on a random-weight checkpoint of a real shape, random per-layer TopK
// transcoders built in memory (blocks.L.ln2.hook_normalized → blocks.L.hook_mlp_out, d_in = d_out = d_model,
// k active per position, circuit-tracer's TopK without ReLU so exactly k fire), a random prompt of S tokens (BOS
// first), timed as the app runs it: buildReplacementModel, attributeGraph (with a Progress that counts its
// callbacks), pruneGraph + graphScores; then a run cancelled after its first batch (the time from the cancel to
// Cancelled), and the backward of one full-depth batch split by hop (attention, contraction with the sources).
// bench/torch_graph.py times the same in PyTorch, the way circuit-tracer's attribute.py does it.

#include "model/core/process_memory.h"

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/graph_backward.h"
#include "model/analysis/graphs/graph_document_from_graph.h"
#include "model/analysis/graphs/graph_pruning.h"
#include "model/analysis/graphs/qk_trace.h"
#include "model/analysis/graphs/qk_trace_json.h"
#include "model/analysis/graphs/replacement_model.h"
#include "model/core/errors.h"
#include "model/features/dictionary_set.h"
#include "model/formats/model_loader.h"
#include "bench/checkpoint_writer.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

namespace attnscope {
QJsonObject benchGraphView(const GraphDocument& doc, int nHover, const QString& what, const QString& png); // graph_view_bench.cpp

namespace {

/// Uniform values in [−a, a) from xorshift64* (the normal generator would take longer than the graph for 1e9 values).
void fillUniform(std::vector<float>& v, float a, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (float& x : v) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        const uint64_t r = s * 0x2545F4914F6CDD1Dull;
        x = a * (float(r >> 40) * (2.0f / 16777216.0f) - 1.0f);
    }
}

std::shared_ptr<std::vector<float>> owned(size_t n, float a, uint64_t seed) {
    auto v = std::make_shared<std::vector<float>>(n);
    fillUniform(*v, a, seed);
    return v;
}

/// A per-layer TopK transcoder set of random weights (uniform with the variance of N(0, 1/fan_in)), as circuit-tracer
/// stores one: pre = x·W_enc + b_enc on ln2.hook_normalized, the k largest kept (no ReLU), x̂ = f·W_dec + b_dec.
DictionarySet randomTranscoders(const ModelConfig& cfg, int dSae, int k) {
    DictionarySet set;
    set.path = QStringLiteral("random-transcoders");
    set.format = QStringLiteral("circuit-tracer");
    set.kind = QStringLiteral("transcoder_set");
    const int d = cfg.d_model;
    for (int l = 0; l < cfg.n_layers; ++l) {
        SparseCoder c;
        c.path = set.path;
        c.format = set.format;
        c.architecture = QStringLiteral("transcoder");
        c.hookIn = QStringLiteral("blocks.%1.ln2.hook_normalized").arg(l);
        c.hookOut = QStringLiteral("blocks.%1.hook_mlp_out").arg(l);
        c.d_in = c.d_out = d;
        c.d_sae = dSae;
        c.activation = FeatureActivation::TopK;
        c.k = k;
        c.relu = false;
        const uint64_t seed = 1000 + 10 * uint64_t(l);
        auto wEnc = owned(size_t(d) * dSae, std::sqrt(3.0f / d), seed);
        auto wDec = owned(size_t(dSae) * d, std::sqrt(3.0f / dSae), seed + 1);
        auto bEnc = owned(size_t(dSae), 0.01f, seed + 2);
        auto bDec = owned(size_t(d), 0.01f, seed + 3);
        c.W_enc = Weight{wEnc->data(), d, dSae, dSae, WeightType::F32, false};
        c.W_dec = Weight{wDec->data(), dSae, d, d, WeightType::F32, false};
        c.b_enc = Weight{bEnc->data(), 1, dSae, dSae, WeightType::F32, false};
        c.b_dec = Weight{bDec->data(), 1, d, d, WeightType::F32, false};
        c.owners = {wEnc, wDec, bEnc, bDec};
        set.coders.push_back(std::move(c));
    }
    return set;
}

double msSince(const QElapsedTimer& t) { return t.nsecsElapsed() / 1e6; }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

/// The graph rows on the model in `dir`, `runs` full runs (no warm-up: one run is tens of seconds), with random per-layer TopK transcoders (d_sae, k;
/// JumpReLU with threshold `jumpThreshold` when it is > 0, files only) and a random prompt of S
/// tokens. `transcoderDir` empty: the transcoders are float32 arrays the bench owns (randomTranscoders); else they are
/// written there as a circuit-tracer BF16 set (bench/checkpoint_writer.h; kept and reused when its config.yaml exists)
/// and opened with openDictionaries, memory-mapped in their own dtype as a user's file is. Peak RSS is printed beside
/// the set's size. Then the Graph tab on the graph (graph_view_bench.cpp), its pictures saved as `pngPrefix`-pruned.png and
/// -all.png when `pngPrefix` is not empty.
QJsonObject benchGraph(const QString& dir, int dSae, int k, float jumpThreshold, int S, int maxFeatureNodes, int runs,
                       const QString& transcoderDir, const QString& pngPrefix) {
    const bool jump = jumpThreshold > 0;
    if (jump && transcoderDir.isEmpty()) throw InputError(QStringLiteral("--graph-jumprelu goes with --graph-transcoders DIR"));
    const QString coder = jump ? QStringLiteral("JumpReLU θ %1").arg(jumpThreshold) : QStringLiteral("k %1").arg(k);
    QJsonObject out;
    const std::shared_ptr<const Model> model = loadModel(dir);
    const ModelConfig& cfg = model->config();
    QElapsedTimer t;
    t.start();
    DictionarySet set;
    double tcBytes = 0;
    if (transcoderDir.isEmpty()) {
        set = randomTranscoders(cfg, dSae, k);
        tcBytes = 2.0 * cfg.n_layers * double(dSae) * cfg.d_model * 4;
        std::printf("  %-44s %10.1f ms  (%d layers × d_sae %d, %.0f MiB float32, owned)\n", "random transcoders (setup)", msSince(t),
                    cfg.n_layers, dSae, tcBytes / 1048576.0);
    } else {
        const bool write = !QFileInfo::exists(QDir(transcoderDir).filePath(QStringLiteral("config.yaml")));
        if (write) bench::writeRandomTranscoderSet(transcoderDir, cfg.n_layers, cfg.d_model, dSae, k, jumpThreshold);
        const QString written = write ? QStringLiteral("written in %1 ms").arg(msSince(t), 0, 'f', 0) : QStringLiteral("written before");
        t.restart();
        set = openDictionaries(transcoderDir);
        const SparseCoder& c0 = set.coders[0];
        if (int(set.coders.size()) != cfg.n_layers || c0.d_sae != dSae || c0.d_in != cfg.d_model ||
            (jump ? c0.activation != FeatureActivation::JumpReLU : c0.k != k))
            throw InputError(QStringLiteral("%1: not a set of %2 layers × d_sae %3, %4 (remove it to write a new one)")
                                 .arg(transcoderDir).arg(cfg.n_layers).arg(dSae).arg(coder));
        for (const QFileInfo& f : QDir(transcoderDir).entryInfoList({QStringLiteral("*.safetensors")}, QDir::Files)) tcBytes += double(f.size());
        std::printf("  %-44s %10.1f ms  (%d layers × d_sae %d, %.0f MiB BF16 files, memory-mapped; %s)\n",
                    "open the transcoder set", msSince(t), cfg.n_layers, dSae, tcBytes / 1048576.0, qPrintable(written));
    }
    out["transcoders_mib"] = tcBytes / 1048576.0;
    out["transcoders"] = transcoderDir.isEmpty() ? QStringLiteral("float32, owned") : QStringLiteral("BF16 files, memory-mapped");
    std::mt19937 gen{static_cast<unsigned>(S)};
    std::uniform_int_distribution<int> tok(0, std::min(cfg.d_vocab, 50257) - 1);
    std::vector<int> tokens(static_cast<size_t>(S));
    for (int& x : tokens) x = tok(gen);
    tokens[0] = cfg.bos_token_id >= 0 ? cfg.bos_token_id : 0;

    AttributionOptions options;
    options.maxFeatureNodes = maxFeatureNodes;
    { // the weights resident and packed before the first measurement: the estimate is of the build beyond them
        const ReplacementModel warm = buildReplacementModel(*model, set, std::vector<int>(tokens.begin(), tokens.begin() + 2));
        model->waitForPackedWeights();
    }
    std::vector<double> buildMs, attrMs, pruneMs, totalMs, rss, grown;
    AttributionGraph last; // kept for the batch split below
    int nodes = 0, features = 0, active = 0, kept = 0;
    double estimateMiB = 0;
    qint64 calls = 0;
    double replacement = 0, completeness = 0;
    for (int r = 0; r < runs; ++r) {
        resetPeakRss();
        const double before = currentRssMiB(); // the weights and transcoders
        t.restart();
        const ReplacementModel rm = buildReplacementModel(*model, set, tokens);
        const double b = msSince(t);
        Progress progress;
        calls = 0;
        qint64 lastDone = -1;
        progress.report = [&](qint64 done, qint64 total, const QString&) {
            ++calls;
            if (done < lastDone || done > total) throw InputError(QStringLiteral("progress went backwards"));
            lastDone = done;
        };
        t.restart();
        AttributionGraph g = attributeGraph(rm, options, progress);
        const double a = msSince(t);
        t.restart();
        const PrunedGraph pg = pruneGraph(g);
        const GraphScores sc = graphScores(g);
        const double p = msSince(t);
        nodes = g.nNodes();
        features = g.nFeatures();
        active = g.nActiveFeatures;
        estimateMiB = double(replacementModelBytes(cfg, S, qint64(dSae) * cfg.n_layers, largestEncoderBytes(set)) +
                             estimateGraphMemory(cfg, S, active, active, g.nNodes() - g.logitOffset, options).peak()) / 1048576.0;
        kept = pg.keptNodes();
        replacement = sc.replacement;
        completeness = sc.completeness;
        buildMs.push_back(b);
        attrMs.push_back(a);
        pruneMs.push_back(p);
        totalMs.push_back(b + a + p);
        rss.push_back(peakRssMiB());
        grown.push_back(rss.back() - before);
        std::printf("  %-44s %10.1f ms  (build %.0f, attribute %.0f, prune + scores %.0f)  peak RSS %6.0f MiB\n",
                    qPrintable(QStringLiteral("graph S=%1 d_sae %2 %3, run %4").arg(S).arg(dSae).arg(coder).arg(r + 1)), b + a + p,
                    b, a, p, rss.back());
        std::fflush(stdout);
        last = std::move(g);
    }
    const double adjMiB = double(nodes) * nodes * 4 / 1048576.0;
    std::printf("  %-44s %10.1f ms  peak RSS %6.0f MiB (the transcoder set: %.0f MiB), of which the build %.0f MiB (estimate %.0f MiB)  %d nodes (%d of %d active features), adjacency %.0f MiB, "
                "%lld progress calls, %d nodes kept, replacement %.3f, completeness %.3f\n",
                qPrintable(QStringLiteral("graph total, median of %1").arg(runs)), median(totalMs), median(rss), tcBytes / 1048576.0, median(grown), estimateMiB, nodes,
                features, active, adjMiB, static_cast<long long>(calls), kept, replacement, completeness);
    out["build_ms"] = median(buildMs);
    out["attribute_ms"] = median(attrMs);
    out["prune_scores_ms"] = median(pruneMs);
    out["total_ms"] = median(totalMs);
    QJsonArray all;
    for (double v : totalMs) all.append(v);
    out["total_ms_runs"] = all;
    out["peak_rss_mib"] = median(rss);
    out["nodes"] = nodes;
    out["features"] = features;
    out["active_features"] = active;
    out["max_feature_nodes"] = maxFeatureNodes;
    out["estimate_mib"] = estimateMiB;
    out["build_rss_mib"] = median(grown);
    out["adjacency_mib"] = adjMiB;
    out["progress_calls"] = double(calls);
    out["kept_nodes"] = kept;
    out["replacement_score"] = replacement;
    out["completeness_score"] = completeness;
    out["d_sae"] = dSae;
    out["k"] = k;
    out["S"] = S;

    // the Graph tab on this graph: as pruned by default, and with every visited feature kept (node threshold 1)
    {
        NeuronpediaGraphInfo info;
        info.slug = QStringLiteral("bench-s%1").arg(S);
        for (const PruneOptions pruning : {PruneOptions{}, PruneOptions{1.0, 0.9}}) {
            const GraphDocument doc = graphDocumentFromGraph(last, pruneGraph(last, pruning), model->tokenizer(), pruning, info);
            const bool all = pruning.nodeThreshold >= 1;
            out[all ? "view_all_features" : "view_pruned"] =
                benchGraphView(doc, 300, QStringLiteral("node threshold %1, edge %2").arg(pruning.nodeThreshold).arg(pruning.edgeThreshold),
                               pngPrefix.isEmpty() ? QString() : pngPrefix + (all ? QStringLiteral("-all.png") : QStringLiteral("-pruned.png")));
        }
    }

    const ReplacementModel rm = buildReplacementModel(*model, set, tokens);
    // cancel: the flag is raised when the first batch reports; the next step throws
    {
        bool cancel = false;
        QElapsedTimer since;
        Progress progress;
        progress.report = [&](qint64 done, qint64, const QString&) {
            if (done > 0 && !cancel) {
                cancel = true;
                since.start();
            }
        };
        progress.isCancelled = [&] { return cancel; };
        bool threw = false;
        t.restart();
        try {
            (void)attributeGraph(rm, options, progress);
        } catch (const Cancelled&) {
            threw = true;
        }
        const double afterCancel = since.isValid() ? msSince(since) : -1, whole = msSince(t);
        if (!threw) throw InputError(QStringLiteral("attributeGraph did not throw Cancelled"));
        std::printf("  %-44s %10.1f ms  (Cancelled thrown %.1f ms after the cancel; one batch)\n", "cancel after the first batch",
                    whole, afterCancel);
        std::fflush(stdout);
        out["cancel_after_first_batch_ms"] = whole;
        out["cancel_latency_ms"] = afterCancel;
    }

    // one full-depth batch (targets at the top layer's residual, as a logit's), split by hop
    {
        AttributionGraph& g = last; // the same prompt and transcoders: the same nodes
        std::vector<LayerSources> sources; // rebuilt as attributeGraph does, for the contraction timing
        {
            const int T = rm.nPositions();
            for (int l = 0; l < cfg.n_layers; ++l) {
                LayerSources s;
                s.begin.assign(size_t(T) + 1, 0);
                std::vector<int> nodesAt;
                for (int i = 0; i < g.nFeatures(); ++i)
                    if (g.nodes[size_t(i)].layer == l) nodesAt.push_back(i);
                s.vectors.resize(Eigen::Index(nodesAt.size()), cfg.d_model);
                int row = 0;
                for (int p = 0; p < T; ++p) {
                    s.begin[size_t(p)] = row;
                    for (int i : nodesAt)
                        if (g.nodes[size_t(i)].position == p) {
                            s.vectors.row(row++) = sourceVector(rm, g, i);
                            s.node.push_back(i);
                        }
                }
                s.begin[size_t(T)] = row;
                sources.push_back(std::move(s));
            }
        }
        const int T = rm.nPositions(), B = std::max(1, AttributionOptions{}.batchRows / T);
        std::vector<int> targets;
        for (int i = 0; i < B; ++i) targets.push_back(i % g.nFeatures());
        Matrix G0 = Matrix::Random(Eigen::Index(B) * T, cfg.d_model);
        const GraphBackward backward(rm);
        std::vector<double> withC, without, attn;
        for (int r = 0; r < 3; ++r) {
            t.restart();
            EdgeRows out{{}, &sources, g.errorOffset, g.tokenOffset};
            for (int t : targets) out.rows.push_back(&g.adjacency(t, 0));
            backward.attribute(G0, {cfg.n_layers - 1, BackwardHop::Mlp}, out);
            withC.push_back(msSince(t));
            t.restart();
            (void)backward.carry(G0, {cfg.n_layers - 1, BackwardHop::Mlp});
            without.push_back(msSince(t));
            double a = 0;
            for (int l = 0; l < cfg.n_layers; ++l) {
                t.restart();
                (void)backward.attentionBack(l, G0);
                a += msSince(t);
            }
            attn.push_back(a);
        }
        const double rows = double(B) * T;
        const int hd = cfg.n_heads * cfg.d_head, kvd = (cfg.n_heads / cfg.groupSize()) * cfg.d_head;
        const double gflop = 2.0 * rows * cfg.d_model * (hd + kvd) * cfg.n_layers / 1e9;
        std::printf("  %-44s %10.1f ms  (attention hops %.1f ms: W_O and W_V GEMMs %.1f GFLOP = %.0f GFLOP/s over the hops; "
                    "contractions + adjacency writes %.1f ms)\n",
                    qPrintable(QStringLiteral("one batch of %1 targets, %2 layers deep").arg(B).arg(cfg.n_layers)), median(withC),
                    median(attn), gflop, gflop / median(attn) * 1e3, median(withC) - median(without));
        out["batch_ms"] = median(withC);
        out["batch_attention_ms"] = median(attn);
        out["batch_contraction_ms"] = median(withC) - median(without);
        out["batch_gemm_gflop"] = gflop;
    }
    // QK tracing (issue 46 "Speed"): the tracer (every active feature's writes), one cell at the middle layer from the
    // last position to the middle one, and the 20 strongest kept cross-position edges' cells
    {
        t.restart();
        const QkTracer tracer(rm);
        const double setup = msSince(t);
        const int L = cfg.n_layers / 2, q = S - 1, key = std::max(0, cfg.windowOf(L) > 0 ? std::max(S / 2, q - cfg.windowOf(L) + 1) : S / 2);
        std::vector<double> cellMs;
        QkTrace cell;
        for (int r = 0; r < 3; ++r) {
            t.restart();
            cell = tracer.trace(L, 0, q, key, 50);
            cellMs.push_back(msSince(t));
        }
        // the backward's GEMM work: 2·d_head targets × (q + 1 … S) rows through L layers' W_O and W_V
        const int hd = cfg.n_heads * cfg.d_head, kvd = (cfg.n_heads / cfg.groupSize()) * cfg.d_head;
        const double gflop = 2.0 * (2.0 * cfg.d_head * S) * cfg.d_model * (hd + kvd) * L / 1e9;
        std::printf("  %-44s %10.1f ms  (tracer setup %.1f ms; backward GEMMs %.2f GFLOP = %.0f GFLOP/s; |Σ − score| %.2g of %.3g)\n",
                    qPrintable(QStringLiteral("QK trace of one cell, L%1.H0 %2→%3").arg(L).arg(q).arg(key)), median(cellMs), setup, gflop,
                    gflop / median(cellMs) * 1e3, cell.checkError, cell.score);
        const PrunedGraph pg = pruneGraph(last);
        t.restart();
        const std::vector<TracedCell> edges = traceStrongestEdges(tracer, rm, last, pg, 20, 50);
        const double edgesMs = msSince(t);
        double worst = 0;
        for (const TracedCell& c : edges) worst = std::max(worst, c.trace.checkError / std::max(1.0, std::abs(c.trace.score)));
        std::printf("  %-44s %10.1f ms  (%zu edges traced; worst |Σ − score| / max(1, |score|) %.2g)  peak RSS %6.0f MiB\n",
                    "QK traces of the 20 strongest edges", edgesMs, edges.size(), worst, peakRssMiB());
        out["qk_tracer_setup_ms"] = setup;
        out["qk_cell_ms"] = median(cellMs);
        out["qk_cell_gflop"] = gflop;
        out["qk_20_edges_ms"] = edgesMs;
        out["qk_edges_traced"] = int(edges.size());
    }
    std::fflush(stdout);
    return out;
}

} // namespace attnscope
