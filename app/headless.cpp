#include "app/headless.h"

#include "app/json_dump.h"
#include "model/analysis/circuits/circuits_json.h"
#include "model/analysis/features/feature_contexts.h"
#include "model/analysis/features/feature_intervention.h"
#include "model/analysis/features/features_json.h"
#include "model/analysis/common/top_tokens.h"
#include "model/analysis/graphs/graph_labels.h"
#include "model/features/dictionary_set.h"
#include "model/features/feature_labels.h"
#include "model/analysis/common/input_checks.h"
#include "model/analysis/gradients/attribution_patching.h"
#include "model/analysis/graphs/edge_routes.h"
#include "model/analysis/graphs/head_loadings.h"
#include "model/analysis/graphs/feature_intervention.h"
#include "model/analysis/graphs/graph_document.h"
#include "model/analysis/graphs/graph_document_from_graph.h"
#include "model/analysis/graphs/graph_json.h"
#include "model/analysis/graphs/qk_trace_json.h"
#include "model/analysis/gradients/gradients_json.h"
#include "model/analysis/residual/direct_logit_attribution.h"
#include "model/analysis/common/target_token.h"
#include "model/analysis/common/token_json.h"
#include "model/analysis/attention/headvis_export.h"
#include "model/analysis/attention/steps_json.h"
#include "model/analysis/embedding_space/embedding_space_json.h"
#include "model/analysis/comparison/finetune_json.h"
#include "model/analysis/comparison/stitch_json.h"
#include "model/core/errors.h"
#include "model/discovery/model_name.h"
#include "model/formats/model_loader.h"
#include "model/formats/open_support.h"
#include "model/transformer/forward.h"
#include "model/transformer/generate.h"
#include "model/transformer/prompt.h"
#include "views/figures/figure_export.h"
#include "views/graphs/graph_plot.h"

#include <QDir>
#include <memory>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

namespace attnscope {

namespace {

QString refuseOverwrite(const QString& path, bool force) {
    if (!force && QFileInfo::exists(path))
        return QStringLiteral("%1: already exists (use --force to overwrite)").arg(path);
    return {};
}

/// The prompt: --prompt, or the text of --text FILE (UTF-8).
QString promptText(const CommandLine& cmd) {
    if (cmd.textFile.isEmpty()) return cmd.prompt;
    QFile f(cmd.textFile);
    if (!f.open(QIODevice::ReadOnly)) throw InputError(QStringLiteral("%1: cannot read: %2").arg(cmd.textFile, f.errorString()));
    return QString::fromUtf8(f.readAll());
}

/// The ids to run: --token-ids, or the prompt tokenized (BOS as --bos/--no-bos or the model's default).
std::vector<int> promptIds(const Tokenizer& tok, const CommandLine& cmd) {
    return cmd.useTokenIds ? cmd.tokenIds : tokenizePrompt(tok, promptText(cmd), cmd.prependBos.value_or(tok.addsBos()));
}

/// A second model for --stitch / --finetune-diff, opened like the first (read-only).
std::shared_ptr<const Model> openSecond(const QString& nameOrPath) {
    const ResolvedModel r = resolveModelName(nameOrPath);
    if (!r.ok()) throw InputError(r.error);
    requireOpenable(r.path);
    return loadModel(r.path);
}

/// The "stitch" object of --stitch: A's first --layer blocks (or every k) onto B.
QJsonObject stitchDump(const std::shared_ptr<const Model>& a, const std::vector<int>& ids, const CommandLine& cmd) {
    const auto b = openSecond(cmd.stitch);
    const int nA = a->config().n_layers;
    if (!cmd.stitchAllLayers && cmd.layer > nA)
        throw InputError(QStringLiteral("--layer %1 is out of range: with --stitch, K counts model A's blocks that run (0 … %2), "
                                        "or give --layer all").arg(cmd.layer).arg(nA));
    StitchVariant v;
    v.map.inverse = cmd.stitchTranspose ? StitchInverse::Transpose : StitchInverse::PseudoInverse;
    v.map.side = cmd.stitchUnembedding ? EmbeddingSide::Output : EmbeddingSide::Input;
    v.map.rcond = cmd.rcond;
    v.finalNormA = cmd.stitchFinalNorm;
    const StitchBase base = stitchBase(*a, *b, ids);
    const auto map = std::make_shared<const StitchMap>(computeStitchMap(*a, *b, v.map));
    const std::vector<int> ks = cmd.stitchAllLayers ? allStitchLayers(*a) : std::vector<int>{cmd.layer};
    return stitchToJson(stitchSweep(*a, *b, base, map, v, ks), cmd.stitch);
}

/// {"token_ids", "tokens"} of the command's prompt (or --token-ids) with the tokenizer alone.
QJsonObject tokenizeDump(const Tokenizer& tok, const CommandLine& cmd) {
    const std::vector<int> ids = promptIds(tok, cmd);
    return QJsonObject{{"token_ids", tokenIdsJson(ids)}, {"tokens", tokenTextsJson(tok, ids)}};
}

/// The circuit objects the command asks for, added to `dump` ("patching", "path_patching", "flow", "attend").
void addCircuits(const Model& model, const CommandLine& cmd, const std::vector<int>& ids, const ActivationCache& cache,
                 QJsonObject& dump) {
    const ModelConfig& cfg = model.config();
    const bool bos = cmd.prependBos.value_or(model.tokenizer().addsBos());
    // --corrupt-token-ids, or --corrupt-prompt tokenized as the prompt is; empty when neither is given
    const std::vector<int> corrupt = cmd.useCorruptTokenIds ? cmd.corruptTokenIds
                                     : cmd.corruptPrompt.isEmpty() ? std::vector<int>()
                                                                   : tokenizePrompt(model.tokenizer(), cmd.corruptPrompt, bos);
    if (!cmd.saliency.isEmpty()) {
        InputAttributionOptions o;
        o.method = cmd.saliency == QLatin1String("grad-x-input") ? SaliencyMethod::GradientTimesInput : SaliencyMethod::IntegratedGradients;
        o.steps = cmd.igSteps;
        if (!cmd.baseline.isEmpty() && cmd.baseline.toLower() != QLatin1String("zero"))
            o.baselineToken = parseTokenPair(model.tokenizer(), cmd.baseline).first;
        o.metric = parsePatchingMetric(model.tokenizer(), cmd.metric);
        o.metric.position = cmd.position;
        dump.insert(QStringLiteral("saliency"), inputAttributionToJson(attributeInput(model, ids, o), model.tokenizer(), ids));
    }
    if (cmd.eap) {
        EdgeAttributionOptions o;
        o.method = cmd.igSteps > 0 ? EdgeAttributionMethod::EapIg : EdgeAttributionMethod::Eap;
        o.steps = std::max(cmd.igSteps, 1);
        o.metric = parsePatchingMetric(model.tokenizer(), cmd.metric);
        o.metric.position = cmd.position;
        const PatchingRuns runs = preparePatchingRuns(model, ids, corrupt);
        const EdgeAttribution a = runEdgeAttribution(model, runs, o);
        const int top = cmd.topGiven ? cmd.top : 200;
        const std::vector<int> circuit = selectCircuitEdges(a.graph, top);
        const CircuitFaithfulness f = evaluateCircuit(model, runs, o.metric, a.graph, circuit);
        dump.insert(QStringLiteral("edge_attribution"), edgeAttributionToJson(a, model.tokenizer(), circuit, top, f));
    }
    if (cmd.gradients) {
        PatchingMetric metric = parsePatchingMetric(model.tokenizer(), cmd.metric);
        metric.position = cmd.position;
        BackwardOptions o;
        o.stops = parseStopGradients(cmd.stopGradient);
        const int position = metric.position < 0 ? int(ids.size()) - 1 : metric.position;
        requirePosition(position, int(ids.size()));
        const RowVector clean = cache.logits.row(cache.logitRow(position));
        if (corrupt.empty()) {
            dump.insert(QStringLiteral("gradients"), gradientsToJson(metricGradients(model, cache, metric, clean, o), model.tokenizer(), false));
        } else {
            requireSameTokenLength(model.tokenizer(), ids, corrupt);
            ForwardOptions f;
            f.cacheHeadResults = false;
            const ActivationCache run = runForward(model, corrupt, f);
            dump.insert(QStringLiteral("gradients"), gradientsToJson(metricGradients(model, run, metric, clean, o), model.tokenizer(), true));
        }
    }
    if (!cmd.patch.isEmpty() || cmd.pathPatch) {
        std::vector<std::vector<int>> reference;
        for (const QString& r : cmd.referencePrompts) reference.push_back(tokenizePrompt(model.tokenizer(), r, bos));
        PatchingMetric metric = parsePatchingMetric(model.tokenizer(), cmd.metric);
        metric.position = cmd.position;
        const PatchingRuns runs = preparePatchingRuns(model, ids, corrupt, reference);
        const PatchDirection direction = cmd.direction == QLatin1String("noise") ? PatchDirection::Noise : PatchDirection::Denoise;
        if (cmd.pathPatch) {
            PathPatchingOptions o;
            if (!cmd.senders.isEmpty()) o.senders = parseHeadList(cfg, cmd.senders);
            o.receivers = parseReceiverList(cfg, cmd.receivers);
            o.direction = direction;
            o.metric = metric;
            dump.insert(QStringLiteral("path_patching"), pathPatchingToJson(runPathPatching(model, runs, o), model.tokenizer()));
        } else {
            PatchingOptions o;
            o.hook = patchHookFromName(cmd.patch).value_or(PatchHook::ResidPre);
            o.byPosition = cmd.byPosition;
            o.direction = direction;
            o.ablation = cmd.ablate.isEmpty() ? AblationKind::None : ablationKindFromName(cmd.ablate).value_or(AblationKind::Zero);
            o.metric = metric;
            const PatchingSweep sweep = cmd.attribution ? runAttributionPatching(model, runs, o, cmd.atpStar) : runPatchingSweep(model, runs, o);
            dump.insert(QStringLiteral("patching"), patchingToJson(sweep, model.tokenizer(), ids, corrupt));
        }
    }
    if (cmd.flow) {
        const FlowContributions fc = flowContributions(model, cache, cmd.norm == QLatin1String("l2") ? FlowNorm::L2 : FlowNorm::L1);
        dump.insert(QStringLiteral("flow"), flowGraphToJson(flowGraph(fc, {cmd.threshold, cmd.renormalise, cmd.position}), cfg));
    }
    if (cmd.attend)
        dump.insert(QStringLiteral("attend"),
                    attentionScoreSplitToJson(splitAttentionScore(model, cache, cmd.layer, cmd.head, cmd.query, cmd.key)));
    if (!cmd.composition.isEmpty())
        dump.insert(QStringLiteral("composition"),
                    compositionToJson(*compositionScores(model, compositionKindFromName(cmd.composition).value_or(CompositionKind::K))));
}

/// --sae PATH: a path, or the name of a dictionary bundled with the demo model (resources/demo-features).
QString dictionaryPath(const QString& name) {
    if (QFileInfo::exists(name)) return name;
    const QString bundled = QStringLiteral(":/demo-features/") + name;
    return QFileInfo::exists(bundled) ? bundled : name;
}

/// The --sae dictionary: the single SAE / transcoder (its hook replaced by --hook), or the set's layer --hook names.
/// The set is returned too: it owns the mapped files.
std::pair<DictionarySet, size_t> selectDictionary(const Model& model, const CommandLine& cmd) {
    const ModelConfig& cfg = model.config();
    DictionarySet set = openDictionaries(dictionaryPath(cmd.sae), QString());
    requireOneHookPerDictionary(set);
    size_t index = 0;
    if (set.coders.size() > 1) { // a transcoder set: --hook names the layer
        requireFitsModel(set, cfg);
        if (!cmd.saeHook.isEmpty()) {
            const std::optional<HookPoint> h = parseHookName(cmd.saeHook);
            if (!h || h->layer < 0 || h->layer >= int(set.coders.size()))
                throw InputError(QStringLiteral("--hook %1: name a layer of the set, e.g. blocks.0.hook_mlp_out").arg(cmd.saeHook));
            index = size_t(h->layer);
        }
    } else {
        if (!cmd.saeHook.isEmpty()) set.coders[0].hookIn = set.coders[0].hookOut = cmd.saeHook;
        requireFitsModel(set, cfg);
    }
    return {std::move(set), index};
}

/// --graph / --graph-json: the attribution graph of the prompt with --transcoders, pruned and scored.
struct GraphDump {
    DictionarySet transcoders; ///< owns the mapped files
    ReplacementModel replacement;
    AttributionGraph graph;
    PrunedGraph pruned;
    GraphScores scores;
    AttributionOptions attribution;
    PruneOptions pruning;
    std::unique_ptr<QkTracer> tracer; ///< with --qk-trace or --qk-trace-edges
    std::vector<TracedCell> qkCells;
};

std::unique_ptr<GraphDump> attributionGraphDump(const Model& model, const CommandLine& cmd, const std::vector<int>& ids) {
    auto d = std::make_unique<GraphDump>();
    d->transcoders = openDictionaries(dictionaryPath(cmd.transcoders));
    d->replacement = buildReplacementModel(model, d->transcoders, ids);
    d->attribution.maxLogits = cmd.maxLogits;
    d->attribution.maxFeatureNodes = cmd.maxFeatureNodes;
    for (const QString& spec : cmd.graphTargets)
        for (AttributionTarget& t : parseAttributionTargets(spec, d->replacement)) d->attribution.targets.push_back(std::move(t));
    d->pruning = {cmd.nodeThreshold, cmd.edgeThreshold};
    d->graph = attributeGraph(d->replacement, d->attribution);
    d->pruned = pruneGraph(d->graph, d->pruning);
    d->scores = graphScores(d->graph);
    if (!cmd.qkTraces.empty() || cmd.qkTraceEdges > 0) {
        d->tracer = std::make_unique<QkTracer>(d->replacement);
        for (const CommandLine::QkCell& c : cmd.qkTraces) d->qkCells.push_back({d->tracer->trace(c.layer, c.head, c.query, c.key, cmd.qkTop)});
        for (TracedCell& c : traceStrongestEdges(*d->tracer, d->replacement, d->graph, d->pruned, cmd.qkTraceEdges, cmd.qkTop))
            d->qkCells.push_back(std::move(c));
    }
    return d;
}

/// The top `n` tokens of a logit row as [{id, token, logit}].
QJsonArray topLogitsJson(const Tokenizer& tokenizer, const Eigen::Ref<const RowVector>& logits, int n) {
    QJsonArray top;
    for (const TokenScore& t : topTokens(logits, n))
        top.append(QJsonObject{{"id", t.id}, {"token", tokenText(tokenizer, t.id)}, {"logit", double(t.logit)}});
    return top;
}

/// --graph-intervene: "graph_intervention" (feature_intervention.h, Live mode).
QJsonObject graphInterventionJson(const Model& model, const CommandLine& cmd, const GraphDump& g) {
    std::vector<FeatureIntervention> edits;
    for (const QString& e : cmd.graphIntervene) edits.push_back(parseFeatureIntervention(g.replacement, e));
    InterventionOptions o;
    o.continuationTokens = cmd.generate;
    const InterventionResult r = interveneOnFeatures(g.replacement, edits, o);
    QJsonArray applied;
    for (const FeatureIntervention& e : edits)
        applied.append(QJsonObject{{"layer", e.layer}, {"position", e.position}, {"feature", e.feature}, {"value", double(e.value)},
                                   {"activation_before", double(g.replacement.activations[size_t(e.layer)](e.position, e.feature))}});
    const Eigen::Index last = r.logits.rows() - 1;
    QJsonObject out{{"conventions", QStringLiteral("circuit-tracer's feature_intervention (freeze_attention=True): the prompt's attention "
                                                   "patterns frozen at the clean run, norms and MLPs live; at each edited layer the MLP output "
                                                   "gets (value − current activation)·W_dec[f]")},
                    {"edits", QJsonArray::fromStringList(cmd.graphIntervene)},
                    {"interventions", applied},
                    {"top_logits_before", topLogitsJson(model.tokenizer(), g.replacement.clean.logits.row(g.replacement.clean.logits.rows() - 1), 10)},
                    {"top_logits_after", topLogitsJson(model.tokenizer(), r.logits.row(last), 10)},
                    {"active_features_before", g.graph.nFeatures()},
                    {"active_features_after", r.activeFeatures}};
    if (cmd.generate > 0) {
        out.insert(QStringLiteral("generated_ids"), tokenIdsJson(r.continuation));
        out.insert(QStringLiteral("generated_tokens"), tokenTextsJson(model.tokenizer(), r.continuation));
    }
    return out;
}

/// --edge-routes N: the heads that carry the N strongest kept edges whose ends sit at different positions.
QJsonArray edgeRoutesJson(const GraphDump& g, int n) {
    QJsonArray out;
    for (const auto& [t, s] : strongestCrossPositionEdges(g.graph, g.pruned, n)) {
        const EdgeRoutes r = edgeRoutes(g.replacement, g.graph, t, s);
        QJsonArray heads;
        for (size_t i = 0; i < std::min<size_t>(5, r.heads.size()); ++i) {
            const HeadRoute& h = r.heads[i];
            heads.append(QJsonObject{{"layer", h.layer}, {"head", h.head}, {"value", h.value}, {"share", r.edge != 0 ? h.value / r.edge : 0.0},
                                     {"query", h.query}, {"query_value", h.queryValue}, {"pattern", double(h.pattern)}});
        }
        out.append(QJsonObject{{"target", t}, {"source", s}, {"target_id", neuronpediaNodeId(g.graph, t)},
                               {"source_id", neuronpediaNodeId(g.graph, s)}, {"edge", r.edge}, {"residual", r.residual},
                               {"skip", r.skip}, {"heads", heads}});
    }
    return out;
}

/// --head-loadings LAYER: the n strongest kept edges that cross LAYER's attention (source written below it, target above
/// it), each split across that layer's heads plus a bypass.
QJsonObject headLoadingsJson(const GraphDump& g, int layer, int n) {
    QJsonArray out;
    for (const auto& [t, s] : strongestKeptEdges(g.graph, g.pruned, n, [&](int t, int s) { return crossesAttentionLayer(g.graph, t, s, layer); })) {
        const HeadLoadings h = headLoadings(g.replacement, g.graph, t, s, layer);
        QJsonArray heads;
        for (double v : h.heads) heads.append(v);
        out.append(QJsonObject{{"target", t}, {"source", s}, {"target_id", neuronpediaNodeId(g.graph, t)},
                               {"source_id", neuronpediaNodeId(g.graph, s)}, {"edge", h.edge}, {"bypass", h.bypass},
                               {"heads", heads}, {"sum", h.sum()}});
    }
    return QJsonObject{{"layer", layer}, {"edges", out}};
}

/// --feature-labels PATH …: every file's labels, the first label of a feature kept.
FeatureLabels readLabelOptions(const QStringList& paths) {
    FeatureLabels labels;
    for (const QString& path : paths) labels.merge(readFeatureLabels(path));
    return labels;
}

/// "features", "feature" and "intervention" of --sae (README "Features on the command line").
void addFeatures(const Model& model, const CommandLine& cmd, const std::vector<int>& ids, const ActivationCache& cache, QJsonObject& dump) {
    const ModelConfig& cfg = model.config();
    const auto [set, index] = selectDictionary(model, cmd);
    const SparseCoder& sae = set.coders[index];
    const FeatureRun run = runDictionary(model, cache, sae);
    const FeatureLabels labels = readLabelOptions(cmd.featureLabels);
    const int labelLayer = run.hookIn.layer; // Neuronpedia numbers a dictionary's source by the layer it reads
    if (cmd.features) {
        QJsonObject features = featuresToJson(sae, run, reconstructionQuality(model, ids, cache, run), cmd.topGiven ? cmd.top : 0);
        if (!labels.empty()) { // "label" on each listed feature the files name
            QJsonArray positions = features.value(QStringLiteral("positions")).toArray();
            for (QJsonValueRef pos : positions) {
                QJsonObject o = pos.toObject();
                QJsonArray top = o.value(QStringLiteral("top")).toArray();
                for (QJsonValueRef f : top) {
                    QJsonObject fo = f.toObject();
                    if (const QString l = labels.label(labelLayer, fo.value(QStringLiteral("feature")).toInt()); !l.isEmpty()) fo.insert(QStringLiteral("label"), l);
                    f = fo;
                }
                o.insert(QStringLiteral("top"), top);
                pos = o;
            }
            features.insert(QStringLiteral("positions"), positions);
            features.insert(QStringLiteral("labels"), labels.summary());
        }
        dump.insert(QStringLiteral("features"), features);
    }
    if (cmd.feature >= 0) {
        const FeatureReadout r = readFeature(model, sae, cmd.feature, cmd.top);
        const int p = cmd.position < 0 ? cache.nPositions() - 1 : cmd.position;
        int token = -1;
        if (!cmd.dla.isEmpty()) token = parseTokenPair(model.tokenizer(), cmd.dla).first;
        else if (cache.logitRow(p) >= 0) token = topTokens(cache.logits.row(cache.logitRow(p)), 1).front().id;
        double dla = 0;
        int dlaPosition = -1;
        if (token >= 0 && run.hookOut.site != HookSite::Z && sae.d_out == cfg.d_model) {
            dla = featureLogitAttribution(model, cache, sae, run, cmd.feature, p, token);
            dlaPosition = p;
        }
        QJsonObject feature = featureToJson(r, run, model.tokenizer(), dlaPosition, token, dla);
        if (const QString l = labels.label(labelLayer, cmd.feature); !l.isEmpty()) feature.insert(QStringLiteral("label"), l);
        dump.insert(QStringLiteral("feature"), feature);
    }
    if (cmd.featurePatching) {
        PatchingMetric metric = parsePatchingMetric(model.tokenizer(), cmd.metric);
        metric.position = cmd.position;
        const bool bos = cmd.prependBos.value_or(model.tokenizer().addsBos());
        const std::vector<int> corrupt = cmd.useCorruptTokenIds ? cmd.corruptTokenIds : tokenizePrompt(model.tokenizer(), cmd.corruptPrompt, bos);
        if (corrupt.empty()) throw InputError(QStringLiteral("--feature-patching needs --corrupt-prompt TEXT (or --corrupt-token-ids)"));
        requireSameTokenLength(model.tokenizer(), ids, corrupt);
        const FeaturePatching fp = featurePatching(model, preparePatchingRuns(model, ids, corrupt), sae, metric, cmd.topGiven ? cmd.top : 20);
        dump.insert(QStringLiteral("feature_patching"), featurePatchingToJson(fp, 1000));
    }
    if (!cmd.steer.isEmpty()) {
        std::vector<FeatureEdit> edits;
        for (const QString& e : cmd.steer) edits.push_back(parseFeatureEdit(e));
        const std::shared_ptr<const ForwardHooks> hooks = featureEditHooks(model, sae, edits);
        ForwardOptions o;
        o.cacheLayers = false;
        o.cacheHeadResults = false;
        o.allLogits = false;
        o.hooks = hooks;
        const ActivationCache edited = runForward(model, ids, o);
        const QJsonArray top = topLogitsJson(model.tokenizer(), edited.logits.row(0), 10);
        QJsonObject intervention{{"conventions", QStringLiteral("steer F=α adds α·W_dec[F] at the dictionary's output hook; ablate and clamp "
                                                                "set the feature's activation and add the change of the reconstruction "
                                                                "(the error term kept); positions: all unless @P,… is given")},
                                 {"hook", run.hookOut.name()}, {"edits", QJsonArray::fromStringList(cmd.steer)},
                                 {"top_next_tokens", top}, {"logits_last", [&] {
                                      QJsonArray a;
                                      for (Eigen::Index i = 0; i < edited.logits.cols(); ++i) a.append(double(edited.logits(0, i)));
                                      return a;
                                  }()}};
        if (cmd.generate > 0) {
            const std::vector<int> generated = greedyContinuation(model, ids, cmd.generate, hooks);
            intervention.insert(QStringLiteral("generated_ids"), tokenIdsJson(generated));
            intervention.insert(QStringLiteral("generated_tokens"), tokenTextsJson(model.tokenizer(), generated));
        }
        dump.insert(QStringLiteral("intervention"), intervention);
    }
}

/// A Progress that prints "attnscope: LABEL 40 %" to `err` at each tenth of the work (long corpus passes).
Progress percentProgress(QTextStream& err, const QString& label) {
    Progress progress;
    auto lastPercent = std::make_shared<qint64>(-1);
    progress.report = [&err, label, lastPercent](qint64 done, qint64 total, const QString&) {
        const qint64 percent = total > 0 ? done * 100 / total : 0;
        if (percent / 10 != *lastPercent / 10) err << "attnscope: " << label << " " << percent << " %\n" << Qt::flush;
        *lastPercent = percent;
    };
    return progress;
}

/// --feature-contexts, --merge and --contexts-db --feature (README "Max-activating contexts over a corpus"); `model`
/// is null for --merge.
int runFeatureContextsCommand(const Model* model, const CommandLine& cmd, QTextStream& out, QTextStream& err) {
    if (!cmd.dumpJson.isEmpty())
        if (QString e = refuseOverwrite(cmd.dumpJson, cmd.force); !e.isEmpty()) throw InputError(e);
    FeatureContextsResult r;
    QString db = cmd.contextsDb;
    if (!cmd.mergeInputs.isEmpty()) {
        if (cmd.force && QFileInfo::exists(db) && !QFile::remove(db)) throw InputError(QStringLiteral("%1: cannot replace it").arg(db));
        r = mergeFeatureContexts(cmd.mergeInputs, db);
        out << "merged " << cmd.mergeInputs.size() << " database(s) into " << db << "\n";
    } else if (!cmd.featureContexts.isEmpty()) {
        const auto [set, index] = selectDictionary(*model, cmd);
        FeatureContextsOptions o;
        o.corpus = cmd.featureContexts;
        o.db = db;
        o.modelLabel = cmd.modelPath.isEmpty() ? QStringLiteral("demo") : cmd.modelPath;
        o.windowTokens = cmd.windowTokens;
        o.top = cmd.top;
        o.shard = cmd.shard;
        o.shards = cmd.shards;
        r = runFeatureContexts(*model, set.coders[index], o, percentProgress(err, QStringLiteral("corpus")));
        db = r.db;
        out << "wrote " << db << " (" << r.windowsDone << " windows, " << r.tokens << " tokens)\n";
        if (r.badUtf8Bytes > 0) err << "attnscope: " << r.badUtf8Bytes << " corpus byte(s) are not UTF-8 (read as U+FFFD)\n";
    }
    if (cmd.dumpJson.isEmpty()) return 0;
    const ContextStore store(db, false);
    QJsonObject summary = contextsSummaryToJson(cmd.featureContexts.isEmpty() && cmd.mergeInputs.isEmpty() ? contextsSummary(store) : r,
                                                store.meta());
    if (cmd.feature >= 0) {
        if (!model) throw InputError(QStringLiteral("--feature F needs --model M (its tokenizer shows the contexts)"));
        summary.insert(QStringLiteral("feature"), featureContextsToJson(store, model->tokenizer(), cmd.feature, cmd.top));
    }
    QString error;
    if (!writeJsonFile(QJsonObject{{"feature_contexts", summary}}, cmd.dumpJson, &error)) throw InputError(error);
    out << "wrote " << cmd.dumpJson << "\n";
    return 0;
}

/// --headvis DIR --feature-contexts CORPUS (docs/cli.md "HeadVis"): Neuronpedia's HeadVis tree of every head.
int runHeadVisCommand(const Model& model, const CommandLine& cmd, QTextStream& out, QTextStream& err) {
    const QString config = QDir(cmd.headvis).filePath(QStringLiteral("config.json"));
    if (QString e = refuseOverwrite(config, cmd.force); !e.isEmpty()) throw InputError(e);
    HeadVisOptions o;
    o.pass.corpus = cmd.featureContexts;
    o.pass.windowTokens = cmd.windowTokens;
    o.pass.maxSequences = cmd.sequences;
    o.modelName = cmd.modelPath.isEmpty() ? QStringLiteral("demo") : cmd.modelPath;
    const HeadVisResult r = writeHeadVis(model, o, cmd.headvis, percentProgress(err, QStringLiteral("headvis")));
    out << "wrote " << cmd.headvis << " (" << r.sequences << " sequences of up to " << r.windowTokens << " tokens, "
        << r.metrics.nLayers() * r.metrics.nHeads() << " heads, " << r.files.size() << " files, "
        << QString::number(r.seconds, 'f', 1) << " s)\n";
    return 0;
}

/// --open-graph FILE, no model: the file's summary ("graph_file"), the file written back, the figure as the Graph tab
/// draws it (pins and supernodes); with none of them (no display for the window), the summary on stdout.
int runOpenGraphCommand(const CommandLine& cmd, QTextStream& out) {
    for (const QString& path : {cmd.dumpJson, cmd.graphJson, cmd.exportDir})
        if (QString e = path.isEmpty() ? QString() : refuseOverwrite(path, cmd.force); !e.isEmpty()) throw InputError(e);
    auto read = std::make_shared<GraphDocument>(readGraphFile(cmd.openGraph));
    if (!cmd.featureLabels.isEmpty()) {
        const FeatureLabels labels = readLabelOptions(cmd.featureLabels);
        const int n = applyFeatureLabels(*read, labels);
        out << "labelled " << n << " feature nodes (" << labels.summary() << ")\n";
    }
    const std::shared_ptr<const GraphDocument> doc = read;
    if (cmd.dumpJson.isEmpty() && cmd.graphJson.isEmpty() && cmd.exportDir.isEmpty())
        out << QJsonDocument(QJsonObject{{"graph_file", graphFileSummary(*doc)}}).toJson(QJsonDocument::Compact) << "\n";
    if (!cmd.dumpJson.isEmpty()) {
        QString error;
        if (!writeJsonFile(QJsonObject{{"graph_file", graphFileSummary(*doc)}}, cmd.dumpJson, &error)) throw InputError(error);
        out << "wrote " << cmd.dumpJson << "\n";
    }
    if (!cmd.graphJson.isEmpty()) {
        writeGraphFile(*doc, cmd.graphJson);
        out << "wrote " << cmd.graphJson << "\n";
    }
    if (!cmd.exportDir.isEmpty()) {
        GraphPlot plot;
        plot.setDocument(doc, graphFileFigureTitle(cmd.openGraph));
        QString error;
        if (!exportFigure(plot, cmd.exportDir, cmd.sizeGiven ? cmd.size : QSize(), cmd.scale, &error)) throw InputError(error);
        out << "wrote " << cmd.exportDir << "\n";
    }
    return 0;
}

} // namespace

int runHeadless(const CommandLine& cmd, QTextStream& out, QTextStream& err) {
    try {
        if (!cmd.mergeInputs.isEmpty()) return runFeatureContextsCommand(nullptr, cmd, out, err);
        if (!cmd.openGraph.isEmpty()) return runOpenGraphCommand(cmd, out);
        const ResolvedModel resolved = resolveModelName(cmd.modelPath);
        if (!resolved.ok()) throw InputError(resolved.error);
        LoadOptions options;
        options.tokenizerPath = cmd.tokenizerPath;
        if (cmd.tokenize) {
            const std::unique_ptr<Tokenizer> tok = loadTokenizerOnly(resolved.path, options);
            const QJsonObject json = tokenizeDump(*tok, cmd);
            if (cmd.dumpJson.isEmpty()) {
                out << QJsonDocument(json).toJson(QJsonDocument::Compact) << "\n";
                return 0;
            }
            if (QString e = refuseOverwrite(cmd.dumpJson, cmd.force); !e.isEmpty()) throw InputError(e);
            QString error;
            if (!writeJsonFile(json, cmd.dumpJson, &error)) throw InputError(error);
            out << "wrote " << cmd.dumpJson << "\n";
            return 0;
        }
        requireOpenable(resolved.path);
        const auto model = loadModel(resolved.path, {}, options);
        const ModelConfig& cfg = model->config();
        if (!cmd.headvis.isEmpty()) return runHeadVisCommand(*model, cmd, out, err);
        if (!cmd.featureContexts.isEmpty() || !cmd.contextsDb.isEmpty()) return runFeatureContextsCommand(model.get(), cmd, out, err);
        if (!cmd.finetuneDiff.isEmpty()) {
            if (QString e = refuseOverwrite(cmd.dumpJson, cmd.force); !e.isEmpty()) throw InputError(e);
            const auto after = openSecond(cmd.finetuneDiff);
            const FinetuneRanking r = rankFinetuneChanges(*model, *after);
            const QJsonObject json{{"finetune_diff", finetuneRankingToJson(r, cmd.modelPath.isEmpty() ? QStringLiteral("demo") : cmd.modelPath,
                                                                           cmd.finetuneDiff, cmd.topGiven ? cmd.top : -1)}};
            QString error;
            if (!writeJsonFile(json, cmd.dumpJson, &error)) throw InputError(error);
            out << "wrote " << cmd.dumpJson << "\n";
            return 0;
        }
        if (!cmd.composition.isEmpty() && cmd.prompt.isEmpty() && !cmd.useTokenIds) { // weights only
            if (QString e = refuseOverwrite(cmd.dumpJson, cmd.force); !e.isEmpty()) throw InputError(e);
            QJsonObject json;
            addCircuits(*model, cmd, {}, ActivationCache(), json);
            QString error;
            if (!writeJsonFile(json, cmd.dumpJson, &error)) throw InputError(error);
            out << "wrote " << cmd.dumpJson << "\n";
            return 0;
        }
        if (!cmd.project.isEmpty()) {
            if (QString e = refuseOverwrite(cmd.dumpJson, cmd.force); !e.isEmpty()) throw InputError(e);
            QJsonObject json;
            if (cmd.project == QLatin1String("ov") || cmd.project == QLatin1String("qk"))
                json = toJson(projectPairs(*model, cmd.project == QLatin1String("ov") ? PairProjectionKind::OV : PairProjectionKind::QK,
                                           cmd.layer, cmd.head, cmd.top), model->tokenizer());
            else
                json = toJson(projectNeuron(*model, cmd.project == QLatin1String("ffkey") ? NeuronVectorKind::FFKey : NeuronVectorKind::FFValue,
                                            cmd.layer, cmd.neuron, cmd.top), model->tokenizer());
            // which matrix read each side (embedding_projection.h): "tied" (W_E both) or "untied" (W_E in, W_U out)
            json["unembedding"] = unembeddingTied(*model) ? QStringLiteral("tied") : QStringLiteral("untied");
            QString error;
            if (!writeJsonFile(json, cmd.dumpJson, &error)) throw InputError(error);
            out << "wrote " << cmd.dumpJson << "\n";
            return 0;
        }
        const bool stitching = !cmd.stitch.isEmpty(); // --layer is the stitch layer k, checked by stitchDump
        if (!stitching && cmd.layer >= cfg.n_layers)
            throw InputError(QStringLiteral("--layer %1 is out of range: the model has %2 layers (0..%3)")
                                 .arg(cmd.layer).arg(cfg.n_layers).arg(cfg.n_layers - 1));
        if (cmd.head >= cfg.n_heads)
            throw InputError(QStringLiteral("--head %1 is out of range: the model has %2 heads per layer (0..%3)")
                                 .arg(cmd.head).arg(cfg.n_heads).arg(cfg.n_heads - 1));
        const std::vector<int> ids = promptIds(model->tokenizer(), cmd);
        std::pair<int, int> dlaTokens{-1, -1};
        if (!cmd.dla.isEmpty()) dlaTokens = parseTokenPair(model->tokenizer(), cmd.dla);
        ForwardOptions opt;
        opt.allLogits = !cmd.dla.isEmpty() || cmd.gradients || !cmd.sae.isEmpty(); // --dla, --gradients and --sae read the logits of
                                                                                     // --position (and every position's loss); the dump only the last
        opt.cacheHeadResults = !cmd.dumpSteps.isEmpty(); // only the steps read per-head results (DLA recomputes them)
        const ActivationCache cache = runForward(*model, ids, opt);
        if (cmd.position >= cache.nPositions())
            throw InputError(QStringLiteral("--position %1 is out of range: the prompt has %2 tokens (0..%3)")
                                 .arg(cmd.position).arg(cache.nPositions()).arg(cache.nPositions() - 1));
        const QStringList labels = tokenLabels(model->tokenizer(), cache.tokens);
        if (cmd.headLoadings >= cfg.n_layers)
            throw InputError(QStringLiteral("--head-loadings %1 is out of range: the model has %2 layers (0..%3)")
                                 .arg(cmd.headLoadings).arg(cfg.n_layers).arg(cfg.n_layers - 1));
        std::unique_ptr<GraphDump> graph;
        if (cmd.graph || !cmd.graphJson.isEmpty()) {
            if (QString e = refuseOverwrite(cmd.graphJson, cmd.force); !cmd.graphJson.isEmpty() && !e.isEmpty()) throw InputError(e);
            graph = attributionGraphDump(*model, cmd, ids);
        }

        if (!cmd.dumpJson.isEmpty()) {
            if (QString e = refuseOverwrite(cmd.dumpJson, cmd.force); !e.isEmpty()) throw InputError(e);
            QString error;
            QJsonObject dump = promptDump(*model, cache, stitching ? -1 : cmd.layer, stitching ? -1 : cmd.head);
            if (stitching) dump.insert(QStringLiteral("stitch"), stitchDump(model, ids, cmd));
            if (!cmd.dla.isEmpty())
                dump.insert(QStringLiteral("dla"),
                            dlaToJson(directLogitAttribution(*model, cache, {cmd.position, dlaTokens.first, dlaTokens.second}),
                                      model->tokenizer()));
            if (cmd.logitLens) dump.insert(QStringLiteral("logit_lens"), logitLensToJson(cfg, model->tokenizer(), logitLens(*model, cache, cmd.top)));
            addCircuits(*model, cmd, ids, cache, dump);
            if (!cmd.sae.isEmpty()) addFeatures(*model, cmd, ids, cache, dump);
            if (cmd.graph)
                dump.insert(QStringLiteral("graph"), attributionGraphToJson(graph->graph, graph->pruned, graph->scores, model->tokenizer(),
                                                                            graph->attribution, graph->pruning));
            if (cmd.edgeRoutes > 0) dump.insert(QStringLiteral("edge_routes"), edgeRoutesJson(*graph, cmd.edgeRoutes));
            if (graph && graph->tracer) {
                QJsonArray qkOnly;
                dump.insert(QStringLiteral("qk_traces"), qkTracesToJson(graph->qkCells, *graph->tracer, graph->graph, qkOnly));
                dump.insert(QStringLiteral("qk_only_nodes"), qkOnly);
            }
            if (cmd.headLoadings >= 0)
                dump.insert(QStringLiteral("head_loadings"), headLoadingsJson(*graph, cmd.headLoadings, cmd.edgeRoutes > 0 ? cmd.edgeRoutes : 20));
            if (!cmd.graphIntervene.isEmpty()) dump.insert(QStringLiteral("graph_intervention"), graphInterventionJson(*model, cmd, *graph));
            if (cmd.generate > 0) {
                const std::vector<int> generated = greedyContinuation(*model, ids, cmd.generate);
                dump.insert(QStringLiteral("generated_ids"), tokenIdsJson(generated));
                dump.insert(QStringLiteral("generated_tokens"), tokenTextsJson(model->tokenizer(), generated));
            }
            if (!writeJsonFile(dump, cmd.dumpJson, &error))
                throw InputError(error);
            out << "wrote " << cmd.dumpJson << "\n";
        }
        if (!cmd.graphJson.isEmpty()) {
            NeuronpediaGraphInfo info;
            info.slug = QFileInfo(cmd.graphJson).completeBaseName();
            info.scan = graph->transcoders.scan.isEmpty() ? model->info().name : graph->transcoders.scan;
            info.prompt = cmd.prompt;
            QString error;
            GraphDocument doc = graphDocumentFromGraph(graph->graph, graph->pruned, model->tokenizer(), graph->pruning, info);
            if (graph->tracer) addQkTracingResults(doc, graph->qkCells, *graph->tracer, graph->graph, model->tokenizer());
            if (!cmd.featureLabels.isEmpty()) {
                const FeatureLabels labels = readLabelOptions(cmd.featureLabels);
                out << "labelled " << applyFeatureLabels(doc, labels) << " feature nodes (" << labels.summary() << ")\n";
            }
            if (!writeJsonFile(graphDocumentToJson(doc), cmd.graphJson, &error))
                throw InputError(error);
            out << "wrote " << cmd.graphJson << "\n";
        }
        if (!cmd.dumpSteps.isEmpty()) {
            if (QString e = refuseOverwrite(cmd.dumpSteps, cmd.force); !e.isEmpty()) throw InputError(e);
            QString error;
            const auto steps = attentionSteps(*model, cache, cmd.layer, cmd.head);
            if (!writeJsonFile(attentionStepsToJson(steps, cmd.layer, cmd.head), cmd.dumpSteps, &error))
                throw InputError(error);
            out << "wrote " << cmd.dumpSteps << "\n";
        }
        if (!cmd.exportDir.isEmpty()) {
            if (!QDir().mkpath(cmd.exportDir))
                throw InputError(QStringLiteral("%1: cannot create the folder").arg(cmd.exportDir));
            const ImageFormat fmt = imageFormatFromName(cmd.format).value_or(ImageFormat::Png);
            auto dataFor = [&](int l, int h) {
                return AttentionHeatmapData{cache.layer(l)->pattern[size_t(h)], labels,
                                            heatmapTitle(model->info().name, l, h, cfg.groupSize() > 1 ? cfg.kvHeadOf(h) : -1)};
            };
            std::vector<std::pair<int, int>> heads;
            if (cmd.layer >= 0) heads.push_back({cmd.layer, cmd.head});
            else
                for (int l = 0; l < cfg.n_layers; ++l)
                    for (int h = 0; h < cfg.n_heads; ++h) heads.push_back({l, h});
            for (auto [l, h] : heads) {
                const QString path = QDir(cmd.exportDir).filePath(headFileName(l, h, fmt));
                if (QString e = refuseOverwrite(path, cmd.force); !e.isEmpty()) throw InputError(e);
                QString error;
                if (!exportHeatmap(dataFor(l, h), path, fmt, cmd.size, cmd.scale, &error)) throw InputError(error);
            }
            out << "wrote " << heads.size() << " heatmap(s) to " << cmd.exportDir << "\n";
        }
        return 0;
    } catch (const ModelError& e) {
        err << "attnscope: " << e.message() << "\n";
    } catch (const InputError& e) {
        err << "attnscope: " << e.message() << "\n";
    } catch (const std::exception& e) {
        err << "attnscope: " << e.what() << "\n";
    }
    return 1;
}

} // namespace attnscope
