#pragma once
// attnscope's command line: one parser for the GUI launch and the headless CLI.
//   attnscope [PATH]                                   GUI (demo model when no PATH)
//   attnscope --model PATH --prompt TEXT [--no-bos] [--layer L --head H]
//             --export DIR [--format png|svg|pdf] [--width W --height H --scale S] [--force]
//   attnscope --model PATH --prompt TEXT [--no-bos] --dump-json FILE [--layer L --head H] [--force]
//             [--dla TOKEN[,TOKEN2] [--position P]]
//   attnscope --model PATH --prompt TEXT [--no-bos] --layer L --head H --dump-steps FILE [--force]
//             [--logit-lens [--top K]]
//   attnscope --model PATH --project ov|qk|ffkey|ffvalue --layer L (--head H | --neuron N) [--top K]
//             --dump-json FILE [--force]                  (embedding-space projection, no prompt)
//   attnscope --screenshot VIEW --out FILE.png [--model M --prompt T --layer L --head H --session-file S
//             --width W --height H --force]               (a view of the window, rendered offscreen)
// PATH may be a model name (model/discovery/model_name.h): demo, gpt2, ORG/NAME, ollama:NAME[:TAG].
//   attnscope --model PATH --prompt TEXT --tokenize [--dump-json FILE]   (ids only; no weights needed)
//   attnscope --model A --stitch MODEL_B --layer K|all (--prompt TEXT | --text FILE) --dump-json FILE
//             [--inverse pinv|transpose] [--stitch-final-norm] [--stitch-embedding W_E|W_U] [--rcond R] [--force]
//                                                        (zero-shot stitching of A's first K blocks onto B)
//   attnscope --model A --finetune-diff MODEL_B --dump-json FILE [--top K] [--force]
//                                                        (heads and neurons ranked by ‖Δθ‖/‖θ‖)
// Circuits (each adds its object to the --dump-json file; README "Circuits on the command line"):
//   attnscope --model M --prompt CLEAN --dump-json F --patch resid|attn_out|mlp_out|z|q|k|v|pattern
//             --corrupt-prompt TEXT --metric "logit_diff: Mary, John" [--direction denoise|noise] [--by-position]
//             [--ablate zero|mean|reference-mean|resample [--reference-prompt TEXT]…] [--position P]
//   attnscope … --attribution-patch HOOK [--atp-star] …     (the --patch cells estimated from one backward pass)
//   attnscope … --gradients --metric M [--stop-gradient norm,pattern,mlp] [--corrupt-prompt TEXT]
//   attnscope … --saliency ig|grad-x-input --metric M [--ig-steps N] [--baseline zero|TOKEN]
//   attnscope … --eap --corrupt-prompt TEXT --metric M [--ig-steps N] [--top N]     (edge attribution, a circuit, its faithfulness)
//   attnscope … --path-patch --senders L.H,… --receivers L.H.q,…|logits --corrupt-prompt TEXT --metric …
//   attnscope … --flow [--threshold T] [--position P] [--norm l1|l2] [--no-renormalise]
//   attnscope … --attend --layer L --head H --query I --key J
//   attnscope --model M --dump-json F --composition q|k|v        (weights only; a prompt is optional)
// Features (README "Features on the command line"):
//   attnscope --model M --prompt T --dump-json F --sae PATH [--hook NAME] [--features [--top N]] [--feature F [--project]
//             [--dla TOKEN] [--position P]] [--steer F=α[@P,…]|F=ablate|F=clamp:V … [--generate N]]
// Feature contexts over a corpus (README "Max-activating contexts over a corpus"):
//   attnscope --model M --sae PATH --feature-contexts CORPUS [--shard I/N] [--contexts-db FILE] [--top N] [--window N]
//             [--dump-json F [--feature F]]
//   attnscope --merge DB1 DB2 … --contexts-db OUT [--dump-json F]
//   attnscope --model M --contexts-db FILE --feature F --dump-json F      (a feature's top contexts)
// HeadVis (docs/cli.md "HeadVis"): the six head metrics and attention samples of every head over a corpus
//   attnscope --model M --headvis DIR --feature-contexts CORPUS [--window N] [--sequences N] [--force]
// Attribution graphs (README "Attribution graphs on the command line"):
//   attnscope --model M --prompt T --transcoders PATH (--graph --dump-json F | --graph-json G) [--max-logits N]
//             [--node-threshold 0.8] [--edge-threshold 0.98] [--edge-routes N] [--head-loadings LAYER]
//             [--graph-intervene L:P:F=V|L:P:F*K,…] [--qk-trace L.H:Q:K …] [--qk-trace-edges N] [--qk-top N]
// Graph files (no model; docs/cli.md "Graph files"):
//   attnscope --open-graph FILE [--dump-json F] [--graph-json G] [--export FIG.png|svg|pdf [--width W --height H --scale S]] [--force]
// Every mode takes --tokenizer FILE (llama2.c tokenizer.bin …), --token-ids 1,2,… or --text FILE instead of
// --prompt, --bos/--no-bos (default: the model's own), and --generate N with --dump-json.

#include <QSize>
#include <QString>
#include <QStringList>
#include <optional>
#include <vector>

namespace attnscope {

struct CommandLine {
    QString modelPath;      ///< --model or the positional PATH (a path, a model name, or a .attnscope session for
                            ///< the window); empty or "demo" = the bundled demo model
    QString prompt;
    std::optional<bool> prependBos; ///< --bos / --no-bos; unset: the model's own default (Tokenizer::addsBos)
    QString tokenizerPath;  ///< --tokenizer FILE: for models without one inside (llama2.c .bin)
    std::vector<int> tokenIds; ///< --token-ids 1,403,…: run these ids instead of a prompt
    bool useTokenIds = false;
    int generate = 0;       ///< --generate N: greedy continuation in the dump as "generated_ids"
    bool tokenize = false;  ///< --tokenize: write {"token_ids", "tokens"} of the prompt without running the model
    int layer = -1, head = -1;
    QString exportDir;
    QString format = QStringLiteral("png");
    QSize size{1000, 900};  ///< PNG pixel size before --scale
    double scale = 1.0;
    QString dumpJson;
    QString dumpSteps;      ///< --dump-steps: attention steps of --layer/--head as JSON
    bool force = false;     ///< overwrite existing output files
    QString dla;            ///< --dla TOKEN[,TOKEN2]: add direct logit attribution to the JSON dump
    int position = -1;      ///< --position P for --dla; -1 = the last position
    QString project;        ///< "ov", "qk", "ffkey" or "ffvalue": write a parameter projection (no prompt)
    int neuron = -1;        ///< --neuron for ffkey/ffvalue
    int top = 10;           ///< --top K: pairs/tokens per projection, tokens per logit-lens cell
    bool logitLens = false; ///< --logit-lens: add "logit_lens" to the prompt dump
    QString screenshot;     ///< --screenshot VIEW: render that view (app/screenshot.h) into --out
    QString out;            ///< --out FILE.png for --screenshot
    QString session;        ///< --session-file FILE.attnscope: restored before --screenshot (overridden by the other options)
    bool sizeGiven = false; ///< --width or --height was given
    QString textFile;       ///< --text FILE: the prompt is FILE's text (UTF-8)
    QString stitch;         ///< --stitch MODEL_B: add "stitch" (model/analysis/comparison/stitch_json.h) to the dump
    bool stitchAllLayers = false; ///< --layer all with --stitch: every k = 0 … n_layers_A (else k = layer)
    bool stitchTranspose = false; ///< --inverse transpose (default pinv)
    bool stitchFinalNorm = false; ///< --stitch-final-norm: A's ln_final before projecting
    bool stitchUnembedding = false; ///< --stitch-embedding W_U (default W_E)
    double rcond = 1e-5;    ///< --rcond R for the pseudo-inverse
    QString finetuneDiff;   ///< --finetune-diff MODEL_B: write {"finetune_diff": …} (model/analysis/comparison/finetune_json.h)
    bool topGiven = false;  ///< --top was given (--finetune-diff: limit the heads and neurons written)
    // circuits
    QString patch;          ///< --patch HOOK (as given: resid, resid_pre, attn_out, …), or --attribution-patch's
    bool attribution = false; ///< --attribution-patch: the cells of --patch `patch` estimated from gradients
    bool atpStar = false;   ///< --atp-star: q and k cells through the exact softmax (AtP*)
    bool gradients = false; ///< --gradients: ∂metric/∂ every hook point into the dump
    QString saliency;       ///< --saliency ig|grad-x-input: input attribution of --metric
    int igSteps = 32;       ///< --ig-steps N (--saliency ig; --eap: 5 unless given, 0 = EAP)
    bool eap = false;       ///< --eap: edge attribution of --metric between --prompt and --corrupt-prompt
    QString baseline;       ///< --baseline zero|TOKEN (default zero)
    QString stopGradient;   ///< --stop-gradient norm,pattern,mlp (with --gradients)
    QString corruptPrompt;  ///< --corrupt-prompt TEXT
    std::vector<int> corruptTokenIds; ///< --corrupt-token-ids 1,2,…
    bool useCorruptTokenIds = false;
    QString metric;         ///< --metric "logit_diff: Mary, John" | "logit: X" | "prob: X" | "kl"
    QString direction = QStringLiteral("denoise");
    bool byPosition = false;
    QString ablate;         ///< --ablate zero|mean|reference-mean|resample (empty = patching)
    QStringList referencePrompts; ///< --reference-prompt TEXT (repeatable) for --ablate reference-mean
    bool pathPatch = false;
    QString senders, receivers; ///< --senders L.H,… (default every head), --receivers L.H.q,…|logits
    bool flow = false;
    double threshold = 0.04; ///< --threshold τ for --flow
    QString norm = QStringLiteral("l1");
    bool renormalise = true; ///< --no-renormalise turns it off
    bool attend = false;
    int query = -1, key = -1; ///< --query I --key J for --attend
    QString composition;     ///< --composition q|k|v
    // features (model/features, model/analysis/features)
    QString sae;             ///< --sae PATH: an SAE, transcoder or transcoder set (dictionary_set.h)
    QString saeHook;         ///< --hook NAME: the SAE's hook when the file does not say; picks a set's layer
    bool features = false;   ///< --features: add "features" (activations per position, reconstruction, losses)
    int feature = -1;        ///< --feature F: add "feature" (embedding-space readings, activations, DLA)
    bool featurePatching = false; ///< --feature-patching: features as patching nodes between --prompt and --corrupt-prompt for --metric
    QStringList steer;       ///< --steer F=α[@P,…] | F=ablate | F=clamp:V (repeatable): add "intervention"
    QString featureContexts; ///< --feature-contexts CORPUS: top contexts per feature into contextsDb (feature_contexts.h)
    QString contextsDb;      ///< --contexts-db FILE (empty: beside the SAE)
    QStringList mergeInputs; ///< --merge DB1 DB2 …: merge into contextsDb
    int shard = 0, shards = 1; ///< --shard I/N
    int windowTokens = 128;  ///< --window N
    QString headvis;         ///< --headvis DIR: HeadVis's tree of every head over --feature-contexts CORPUS (headvis_export.h)
    int sequences = 2000;    ///< --sequences N: windows of the corpus --headvis runs at most (0: all)
    // attribution graphs (model/analysis/graphs)
    bool graph = false;      ///< --graph: add "graph" (graph_json.h attributionGraphToJson)
    QString transcoders;     ///< --transcoders PATH | bundled name: a per-layer transcoder set
    QString graphJson;       ///< --graph-json FILE: the graph in Neuronpedia's layout (graph_json.h neuronpediaGraphJson)
    int maxLogits = 10;      ///< --max-logits N
    int maxFeatureNodes = 7500; ///< --max-feature-nodes N (0: every active feature)
    QStringList graphTargets;   ///< --graph-targets SPEC, repeatable (attribution_targets.h)
    double nodeThreshold = 0.8, edgeThreshold = 0.98; ///< --node-threshold, --edge-threshold
    QStringList graphIntervene; ///< --graph-intervene L:P:F=V | L:P:F*K (comma-separated, repeatable): add "graph_intervention"
    int edgeRoutes = 0;      ///< --edge-routes N: add "edge_routes", the heads that carry the N strongest kept cross-position edges
    int headLoadings = -1;   ///< --head-loadings LAYER: add "head_loadings", the strongest kept edges that cross LAYER's attention
                             ///< split across its heads (head_loadings.h); how many: --edge-routes' N, else 20
    struct QkCell {
        int layer = 0, head = 0, query = 0, key = 0;
    };
    std::vector<QkCell> qkTraces; ///< --qk-trace L.H:Q:K (repeatable): add "qk_traces" (qk_trace.h)
    int qkTraceEdges = 0;    ///< --qk-trace-edges N: trace the N strongest kept cross-position edges through their strongest head
    QStringList featureLabels; ///< --feature-labels PATH (repeatable): Neuronpedia explanations or a CSV (feature_labels.h)
    int qkTop = 50;          ///< --qk-top N: pairs and marginals listed per trace
    QString openGraph;       ///< --open-graph FILE: a graph file (graph_document.h), no model: alone, the window with it in the
                             ///< Graph tab; --dump-json writes "graph_file", --graph-json the file written back, --export
                             ///< (exportDir) a figure FILE.png|svg|pdf; --screenshot graphs --out the window's picture

    /// Whether any circuit mode that runs the prompt is asked for.
    bool wantsCircuits() const { return !patch.isEmpty() || pathPatch || flow || attend || gradients || !saliency.isEmpty(); }

    /// True when the invocation asks for headless work (no window is opened).
    bool isHeadless() const {
        return !exportDir.isEmpty() || !dumpJson.isEmpty() || !dumpSteps.isEmpty() || !screenshot.isEmpty() || tokenize ||
               !featureContexts.isEmpty() || !mergeInputs.isEmpty() || !contextsDb.isEmpty() || !graphJson.isEmpty() ||
               !headvis.isEmpty();
    }
};

/// Parses argv (args[0] = program). Returns false with a usage error in *error; sets *helpText
/// and returns false with an empty error for --help / --version.
bool parseCommandLine(const QStringList& args, CommandLine* out, QString* error, QString* helpText);

/// Cheap pre-check on raw argv, before any QApplication exists: does it ask for headless work?
bool argvIsHeadless(int argc, char** argv);

/// Before QApplication, for a window: on Linux, when neither QT_QPA_PLATFORM nor -platform chooses Qt's platform, sets
/// QT_QPA_PLATFORM to the display platforms the environment names (wayland for WAYLAND_DISPLAY, first in a Wayland
/// session; xcb for DISPLAY) and then offscreen, a list Qt tries in order. A display that is not named, or named and not
/// reachable, then falls back to offscreen instead of Qt's plugin aborting the process. Returns whether it set the list:
/// then the window has a display only if QGuiApplication::platformName() is not "offscreen".
bool offerOffscreenFallback(int argc, char** argv);

/// Why no display was found, for the message: "DISPLAY and WAYLAND_DISPLAY are unset", or the display variables that
/// are set and did not answer.
QString noDisplayReason();

} // namespace attnscope
