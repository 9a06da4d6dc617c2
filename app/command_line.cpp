#include "app/command_line.h"

#include "app/about_text.h"
#include "app/screenshot.h"
#include "model/analysis/circuits/patching_metric.h"
#include "model/analysis/gradients/gradients_json.h"
#include "model/core/errors.h"

#include <QCommandLineParser>
#include <QRegularExpression>
#include <QFileInfo>
#include <cstring>

namespace attnscope {

bool argvIsHeadless(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        for (const char* flag : {"--export", "--dump-json", "--dump-steps", "--dla", "--position", "--project", "--screenshot",
                                 "-export", "-dump-json", "-dump-steps", "-screenshot", "--help", "-h", "--version", "--tokenize",
                                 "--stitch", "--finetune-diff", "--sae", "--feature-contexts", "--merge", "--contexts-db", "--graph",
                                 "--graph-json", "--transcoders", "--headvis"}) // --open-graph FILE alone opens the window
            if (std::strcmp(a, flag) == 0 || (std::strncmp(a, flag, std::strlen(flag)) == 0 && a[std::strlen(flag)] == '='))
                return true;
    }
    return false;
}

bool offerOffscreenFallback(int argc, char** argv) {
#if defined(Q_OS_LINUX)
    if (!qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) return false;
    for (int i = 1; i < argc; ++i)
        if (!std::strcmp(argv[i], "-platform") || !std::strcmp(argv[i], "--platform")) return false;
    const bool x11 = !qEnvironmentVariableIsEmpty("DISPLAY"), wayland = !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
    const bool waylandFirst = wayland && (!x11 || qgetenv("XDG_SESSION_TYPE") == "wayland");
    QByteArrayList names;
    if (waylandFirst) names << "wayland";
    if (x11) names << "xcb";
    if (wayland && !waylandFirst) names << "wayland";
    names << "offscreen";
    qputenv("QT_QPA_PLATFORM", names.join(';'));
    return true;
#else
    Q_UNUSED(argc);
    Q_UNUSED(argv);
    return false;
#endif
}

QString noDisplayReason() {
    QStringList named;
    for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY"})
        if (!qEnvironmentVariableIsEmpty(name)) named << QStringLiteral("%1=%2").arg(QLatin1String(name), qEnvironmentVariable(name));
    if (named.isEmpty()) return QStringLiteral("DISPLAY and WAYLAND_DISPLAY are unset");
    return QStringLiteral("none answered at %1").arg(named.join(QStringLiteral(" or ")));
}

namespace {

/// The feature-contexts options (--feature-contexts, --merge, --contexts-db with --feature), their shard parsed
/// into c; "" when they make sense. `corpusOnly`: --shard or --window given; `other`: an option of another mode.
QString checkContextsOptions(CommandLine& c, const QString& shard, bool corpusOnly, bool other) {
    const bool merging = !c.mergeInputs.isEmpty();
    if (other) return QStringLiteral("--feature-contexts, --merge and --contexts-db take no prompt and no other mode's options");
    if (merging && !c.featureContexts.isEmpty()) return QStringLiteral("give --feature-contexts or --merge, not both");
    if (corpusOnly && c.featureContexts.isEmpty()) return QStringLiteral("--shard and --window go with --feature-contexts CORPUS");
    if (merging) {
        if (c.contextsDb.isEmpty()) return QStringLiteral("--merge DB1 DB2 … needs --contexts-db OUT (a new file)");
        if (c.feature >= 0) return QStringLiteral("--merge takes no --feature: read the merged database with --contexts-db OUT --feature F");
        return {};
    }
    if (c.featureContexts.isEmpty()) { // reading: --contexts-db FILE --feature F
        if (c.feature < 0 || c.dumpJson.isEmpty())
            return QStringLiteral("--contexts-db FILE alone reads a feature's contexts: give --feature F and --dump-json FILE "
                                  "(or --feature-contexts CORPUS / --merge DB …)");
        return {};
    }
    if (c.sae.isEmpty()) return QStringLiteral("--feature-contexts CORPUS needs --sae PATH (the dictionary)");
    if (!shard.isEmpty()) {
        const QStringList parts = shard.split(QLatin1Char('/'));
        bool okI = false, okN = false;
        c.shard = parts.size() == 2 ? parts[0].toInt(&okI) : -1;
        c.shards = parts.size() == 2 ? parts[1].toInt(&okN) : -1;
        if (!okI || !okN || c.shards < 1 || c.shard < 0 || c.shard >= c.shards)
            return QStringLiteral("--shard must be I/N with 0 <= I < N, got '%1'").arg(shard);
    }
    if (c.feature >= 0 && c.dumpJson.isEmpty()) return QStringLiteral("--feature F with --feature-contexts writes to --dump-json FILE: give it too");
    return {};
}

/// --headvis's companions; "" when they make sense. `given`: the options set, `positional`: the other arguments.
QString checkHeadVisOptions(const CommandLine& c, const QStringList& given, const QStringList& positional) {
    static const QStringList allowed{"headvis", "feature-contexts", "model", "m", "window", "sequences", "force", "tokenizer"};
    for (const QString& name : given)
        if (!allowed.contains(name))
            return QStringLiteral("--headvis DIR runs over a corpus: it takes --model, --feature-contexts CORPUS, --window, "
                                  "--sequences, --tokenizer and --force, not %1%2").arg(name.size() > 1 ? "--" : "-", name);
    if (!positional.isEmpty()) return QStringLiteral("--headvis takes the model as --model, not %1").arg(positional.join(' '));
    if (c.featureContexts.isEmpty()) return QStringLiteral("--headvis DIR needs --feature-contexts CORPUS (a .txt / .jsonl file or a folder)");
    return {};
}

/// --open-graph's companions; "" when they make sense. `given`: the options set, `positional`: the other arguments.
QString checkOpenGraphOptions(const CommandLine& c, const QStringList& given, const QStringList& positional) {
    static const QStringList allowed{"open-graph", "dump-json", "graph-json", "export", "width", "height", "scale", "force",
                                     "screenshot", "out", "feature-labels"};
    for (const QString& name : given)
        if (!allowed.contains(name))
            return QStringLiteral("--open-graph FILE needs no model: it takes --dump-json, --graph-json, --export FIG.png|svg|pdf "
                                  "(with --width, --height, --scale), --screenshot graphs --out FILE.png, --feature-labels and --force, not %1%2")
                .arg(name.size() > 1 ? "--" : "-", name);
    if (!positional.isEmpty()) return QStringLiteral("--open-graph FILE takes no other file: %1").arg(positional.join(' '));
    if (!c.exportDir.isEmpty() && !QStringList{"png", "svg", "pdf"}.contains(QFileInfo(c.exportDir).suffix().toLower()))
        return QStringLiteral("--export with --open-graph is a figure file, FIG.png, FIG.svg or FIG.pdf, got '%1'").arg(c.exportDir);
    if (given.contains(QLatin1String("screenshot")) || given.contains(QLatin1String("out"))) {
        if (c.screenshot != QLatin1String("graphs") || !c.out.endsWith(QLatin1String(".png"), Qt::CaseInsensitive))
            return QStringLiteral("--open-graph FILE shows the window's Graph tab: --screenshot graphs --out FILE.png");
        if (!c.dumpJson.isEmpty() || !c.graphJson.isEmpty() || !c.exportDir.isEmpty())
            return QStringLiteral("--screenshot goes alone: not with --export, --dump-json or --graph-json");
    }
    return {};
}

/// The circuit options' combinations; "" when they make sense. The flags say which companion options were given.
QString checkCircuitOptions(const CommandLine& c, bool flowOptions, bool pathOptions, bool patchOptions, bool attendOptions) {
    const int modes = int(!c.patch.isEmpty()) + int(c.pathPatch) + int(c.flow) + int(c.attend) + int(c.gradients) + int(!c.saliency.isEmpty()) +
                      int(c.eap);
    if (modes > 1)
        return QStringLiteral("give one of --patch, --attribution-patch, --gradients, --saliency, --eap, --path-patch, --flow and --attend at a time");
    if (!c.saliency.isEmpty() && c.saliency != QLatin1String("ig") && c.saliency != QLatin1String("grad-x-input"))
        return QStringLiteral("--saliency must be ig or grad-x-input, got '%1'").arg(c.saliency);
    if (!c.saliency.isEmpty() && c.metric.trimmed().toLower() == QLatin1String("kl"))
        return QStringLiteral("--saliency takes logit_diff, logit, prob or logprob: kl needs a second run to compare with");
    const QString patchFlag = c.attribution ? QStringLiteral("--attribution-patch") : QStringLiteral("--patch");
    if (c.atpStar && !c.attribution) return QStringLiteral("--atp-star goes with --attribution-patch");
    if (!c.stopGradient.isEmpty() && !c.gradients) return QStringLiteral("--stop-gradient goes with --gradients");
    if (c.attribution && !c.ablate.isEmpty())
        return QStringLiteral("--attribution-patch estimates patching between --prompt and --corrupt-prompt; it takes no --ablate");
    if ((modes > 0 || !c.composition.isEmpty()) && c.dumpJson.isEmpty())
        return QStringLiteral("the circuit modes add to the --dump-json output: give --dump-json FILE too");
    if (!c.patch.isEmpty() && !QStringList{"resid", "resid_pre", "attn_out", "mlp_out", "z", "q", "k", "v", "pattern"}.contains(c.patch))
        return QStringLiteral("%1 must be resid, attn_out, mlp_out, z, q, k, v or pattern, got '%2'").arg(patchFlag, c.patch);
    if (!c.composition.isEmpty() && !QStringList{"q", "k", "v"}.contains(c.composition))
        return QStringLiteral("--composition must be q, k or v, got '%1'").arg(c.composition);
    if (flowOptions && !c.flow) return QStringLiteral("--threshold, --norm and --no-renormalise go with --flow");
    if (c.flow && c.norm != QLatin1String("l1") && c.norm != QLatin1String("l2"))
        return QStringLiteral("--norm must be l1 or l2, got '%1'").arg(c.norm);
    if (pathOptions && !c.pathPatch) return QStringLiteral("--senders and --receivers go with --path-patch");
    if (c.pathPatch && c.receivers.isEmpty()) return QStringLiteral("--path-patch needs --receivers (L.H.q,… or logits)");
    const bool patching = !c.patch.isEmpty() || c.pathPatch;
    // modes that take --metric but no patching options
    const bool metricOnly = c.gradients || !c.saliency.isEmpty() || c.eap || c.featurePatching;
    const QString mode = c.pathPatch ? QStringLiteral("--path-patch") : c.gradients ? QStringLiteral("--gradients")
                         : !c.saliency.isEmpty() ? QStringLiteral("--saliency") : c.eap ? QStringLiteral("--eap")
                         : c.featurePatching ? QStringLiteral("--feature-patching") : patchFlag;
    if (patchOptions && !patching && !(metricOnly && c.direction == QLatin1String("denoise") && !c.byPosition && c.ablate.isEmpty() &&
                                       c.referencePrompts.isEmpty()))
        return QStringLiteral("--metric, --direction, --by-position, --ablate and --reference-prompt go with --patch or --path-patch "
                              "(--metric also with --gradients, --saliency, --eap and --feature-patching)");
    if ((patching || metricOnly) && c.metric.isEmpty()) return QStringLiteral("%1 needs --metric, e.g. --metric \"logit_diff: Mary, John\"").arg(mode);
    if (const QString e = patching || metricOnly ? patchingMetricFormError(c.metric) : QString(); !e.isEmpty())
        return QStringLiteral("--metric \"%1\": %2").arg(c.metric, e);
    if (c.direction != QLatin1String("denoise") && c.direction != QLatin1String("noise"))
        return QStringLiteral("--direction must be denoise or noise, got '%1'").arg(c.direction);
    if (!c.ablate.isEmpty() && !QStringList{"zero", "mean", "reference-mean", "resample"}.contains(c.ablate))
        return QStringLiteral("--ablate must be zero, mean, reference-mean or resample, got '%1'").arg(c.ablate);
    if (!c.ablate.isEmpty() && c.pathPatch) return QStringLiteral("--ablate goes with --patch, not --path-patch");
    if (c.ablate == QLatin1String("reference-mean") && c.referencePrompts.isEmpty())
        return QStringLiteral("--ablate reference-mean needs at least one --reference-prompt");
    if (!c.referencePrompts.isEmpty() && c.ablate != QLatin1String("reference-mean"))
        return QStringLiteral("--reference-prompt goes with --ablate reference-mean");
    const bool hasCorrupt = !c.corruptPrompt.isEmpty() || c.useCorruptTokenIds;
    const bool needsCorrupt = c.pathPatch || c.eap || c.featurePatching || (!c.patch.isEmpty() && (c.ablate.isEmpty() || c.ablate == QLatin1String("resample")));
    if (needsCorrupt && !hasCorrupt) return QStringLiteral("%1 needs --corrupt-prompt TEXT (or --corrupt-token-ids)").arg(mode);
    if (hasCorrupt && !patching && !c.gradients && !c.eap && !c.featurePatching)
        return QStringLiteral("--corrupt-prompt goes with --patch, --attribution-patch, --path-patch, --gradients, --eap or --feature-patching");
    if (c.gradients && !hasCorrupt && c.metric.trimmed().toLower() == QLatin1String("kl"))
        return QStringLiteral("--gradients with the kl metric needs --corrupt-prompt: the gradient is taken on the corrupted run, "
                              "compared with the prompt's distribution");
    if (c.byPosition && !QStringList{"z", "q", "k", "v", "pattern"}.contains(c.patch))
        return QStringLiteral("--by-position goes with %1 z, q, k, v or pattern (resid, attn_out and mlp_out are always by position)").arg(patchFlag);
    if (attendOptions && !c.attend) return QStringLiteral("--query and --key go with --attend");
    if (c.attend && (c.layer < 0 || c.head < 0 || c.query < 0 || c.key < 0))
        return QStringLiteral("--attend needs --layer L --head H --query I --key J");
    return {};
}

} // namespace

bool parseCommandLine(const QStringList& args, CommandLine* out, QString* error, QString* helpText) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "AttnScope: see what a transformer computes, head by head.\n\n"
        "Modes, each with an example (only the window needs a display):\n"
        "  window           attnscope [MODEL | SESSION.attnscope]\n"
        "                   attnscope gpt2\n"
        "  heatmaps         attnscope --model demo --prompt \"In the beginning\" --export heatmaps/ [--layer 1 --head 1]\n"
        "  JSON dump        attnscope --model demo --prompt \"In the beginning\" --dump-json out.json [--layer 1 --head 1]\n"
        "    + attribution  attnscope --model demo --prompt \"In the beginning God\" --dump-json out.json --dla \" created\"\n"
        "    + logit lens   attnscope --model demo --prompt \"In the beginning\" --dump-json out.json --logit-lens --top 5\n"
        "  attention steps  attnscope --model demo --prompt \"In the beginning\" --layer 0 --head 0 --dump-steps steps.json\n"
        "  projection       attnscope --model demo --project ov --layer 1 --head 1 --dump-json ov.json\n"
        "  patching         attnscope --model gpt2 --prompt \"When Mary and John went to the store, John gave a drink to\" \\\n"
        "                     --corrupt-prompt \"When Mary and John went to the store, Mary gave a drink to\" \\\n"
        "                     --metric \"logit_diff: Mary, John\" --patch z --dump-json ioi.json\n"
        "  attribution      attnscope … --attribution-patch z [--atp-star] (the same cells from one backward pass)\n"
        "  saliency         attnscope … --metric \"logit: created\" --saliency ig [--ig-steps 32] [--baseline zero|TOKEN]\n"
        "  edges            attnscope … --corrupt-prompt TEXT --metric M --eap [--ig-steps 5] [--top 200] (EAP-IG; --ig-steps 0: EAP)\n"
        "  gradients        attnscope … --metric \"logit_diff: Mary, John\" --gradients [--stop-gradient norm,pattern,mlp]\n"
        "  path patching    attnscope … --path-patch --senders 0.0,0.1 --receivers 1.1.k,logits --dump-json paths.json\n"
        "  flow routes      attnscope --model demo --prompt \"In the beginning God\" --flow --threshold 0.04 --dump-json flow.json\n"
        "  attention split  attnscope --model demo --prompt \"In the beginning God\" --attend --layer 1 --head 1 --query 4 --key 2 --dump-json why.json\n"
        "  composition      attnscope --model demo --composition k --dump-json comp.json\n"
        "  features         attnscope --model demo --prompt \"In the beginning God\" --sae resid-topk --features --top 5 --dump-json f.json\n"
        "    + one feature  attnscope … --sae resid-topk --feature 17 --project --dump-json f.json\n"
        "    + steering     attnscope … --sae resid-topk --steer 17=8@3 --generate 10 --dump-json steer.json\n"
        "  corpus contexts  attnscope --model demo --sae PATH --feature-contexts corpus/ [--shard 0/4] [--contexts-db c.sqlite] --dump-json c.json\n"
        "    + merge        attnscope --merge c0.sqlite c1.sqlite --contexts-db c.sqlite\n"
        "    + one feature  attnscope --model demo --contexts-db c.sqlite --feature 17 --dump-json card.json\n"
        "  HeadVis          attnscope --model demo --headvis headvis/ --feature-contexts corpus.txt [--window 128] [--sequences 2000]\n"
        "  llama2.c         attnscope --model stories260K.bin --tokenizer tok512.bin --prompt \"Once upon\" --dump-json out.json --generate 20\n"
        "  token ids        attnscope --model model.gguf --token-ids 1,403,407 --dump-json out.json\n"
        "  tokenize only    attnscope --model ggml-vocab-llama-spm.gguf --prompt \"Hello world\" --tokenize\n"
        "  stitching        attnscope --model demo --stitch demo-variant --layer all --text genesis.txt --dump-json stitch.json\n"
        "  fine-tuning      attnscope --model demo --finetune-diff demo-variant --dump-json ranking.json\n"
        "  screenshot       attnscope --screenshot logit-lens --out lens.png [--model demo --prompt … --layer 1 --head 1]\n"
        "                   attnscope --screenshot compare-models --out compare.png --session-file compare.attnscope\n"
        "  graph file       attnscope --open-graph graph.json --dump-json g.json [--graph-json back.json] [--export graph.png]\n"
        "  version          attnscope --version\n\n"
        "MODEL is a model folder (Hugging Face layout), a file (.safetensors, .gguf, llama2.c .bin), or a name: demo "
        "(the bundled model), NAME or ORG/NAME "
        "(the newest snapshot in the Hugging Face cache, offline), ollama:NAME[:TAG] (Ollama's store).\n"
        "Screenshot views: %1.").arg(screenshotViews().join(QStringLiteral(", "))));
    const QCommandLineOption help = p.addHelpOption();
    const QCommandLineOption version = p.addVersionOption();
    const QCommandLineOption model({"m", "model"}, "Model folder or file, or a model name (see above).", "MODEL");
    const QCommandLineOption prompt({"p", "prompt"}, "Prompt text.", "TEXT");
    const QCommandLineOption noBos("no-bos", "Do not prepend the BOS token (<|endoftext|> for GPT-2, <s> for Llama 2).");
    const QCommandLineOption bos("bos", "Prepend the BOS token even if the model does not by default.");
    const QCommandLineOption tokenizerFile("tokenizer", "Tokenizer file for a model without one inside (llama2.c tokenizer.bin; "
                                                        "also tokenizer.json or tokenizer.model).", "FILE");
    const QCommandLineOption tokenIds("token-ids", "Run these token ids (comma-separated) instead of a prompt.", "IDS");
    const QCommandLineOption generate("generate", "With --dump-json: add the greedy continuation of N tokens as \"generated_ids\".", "N");
    const QCommandLineOption tokenize("tokenize", "Write the prompt's {\"token_ids\", \"tokens\"} (to --dump-json FILE or stdout) "
                                                  "without running the model (works on vocab-only GGUF files).");
    const QCommandLineOption layer("layer", "Layer (0-based).", "L");
    const QCommandLineOption head("head", "Head (0-based).", "H");
    const QCommandLineOption exportDir("export", "Write attention heatmaps into DIR (all heads unless --layer/--head).", "DIR");
    const QCommandLineOption format("format", "Image format: png, svg or pdf (default png).", "FMT", "png");
    const QCommandLineOption width("width", "Image width in pixels before --scale (default 1000).", "W", "1000");
    const QCommandLineOption height("height", "Image height in pixels before --scale (default 900).", "H", "900");
    const QCommandLineOption scale("scale", "Pixel scale factor for PNG (default 1).", "S", "1");
    const QCommandLineOption dumpJson("dump-json", "Write tokens, top next tokens, last logits (and the pattern of --layer/--head) as JSON.", "FILE");
    const QCommandLineOption dumpSteps("dump-steps", "Write the attention steps of --layer/--head (embed … resid_mid) as JSON.", "FILE");
    const QCommandLineOption force("force", "Overwrite existing output files.");
    const QCommandLineOption dla("dla", "Add the direct logit attribution of every head/MLP to the logit of TOKEN "
                                        "(or the difference TOKEN - TOKEN2) to --dump-json. TOKEN is the exact text "
                                        "of one token, e.g. \" Mary\".", "TOKEN[,TOKEN2]");
    const QCommandLineOption position("position", "Position for --dla (0-based; default the last).", "P");
    const QCommandLineOption project("project",
        "With --dump-json and no prompt: project a parameter into embedding space (Dar et al. 2022): ov or qk of "
        "--layer/--head (top token pairs), ffkey or ffvalue of --layer/--neuron (top and bottom tokens).", "KIND");
    const QCommandLineOption neuron("neuron", "FF neuron (0-based) for --project ffkey/ffvalue.", "N");
    const QCommandLineOption top("top", "Entries per projection / tokens per logit-lens cell (default 10).", "K", "10");
    const QCommandLineOption logitLens("logit-lens", "Add the logit lens (top --top tokens per layer boundary and position) to --dump-json.");
    const QCommandLineOption screenshot("screenshot", "Render VIEW of the window offscreen into --out (PNG); "
                                                      "--width/--height set the window size (default 1600×1000; "
                                                      "below the view's minimum, the minimum, with a warning).", "VIEW");
    const QCommandLineOption outFile("out", "Output file of --screenshot (.png).", "FILE");
    // not "--session": QGuiApplication takes -session/--session for X11 session management
    const QCommandLineOption session("session-file", "With --screenshot: restore this session first (.attnscope).", "FILE");
    const QCommandLineOption text("text", "Read the prompt from FILE (UTF-8) instead of --prompt.", "FILE");
    const QCommandLineOption stitch("stitch", "With --dump-json: zero-shot stitching (Dar et al. 2022) of the model's first "
                                              "--layer K blocks (or all: every K) onto MODEL_B's remaining blocks, through "
                                              "embedding space; adds \"stitch\" to the dump.", "MODEL_B");
    const QCommandLineOption inverse("inverse", "With --stitch: pinv (the pseudo-inverse of E_Bᵀ, default) or transpose (E_B).", "KIND");
    const QCommandLineOption stitchNorm("stitch-final-norm", "With --stitch: apply model A's final norm to its hidden state before projecting.");
    const QCommandLineOption stitchEmbedding("stitch-embedding", "With --stitch: W_E (each model's token embedding, default) "
                                                                 "or W_U (its unembedding) defines embedding space.", "E");
    const QCommandLineOption rcond("rcond", "With --stitch: singular values ≤ R·σ_max of E count as zero (default 1e-5).", "R");
    const QCommandLineOption finetune("finetune-diff", "With --dump-json and no prompt: rank every head and neuron by how much "
                                                       "MODEL_B (a fine-tuned copy) changed it, ‖Δθ‖/‖θ‖ (--top K: the first K "
                                                       "of each).", "MODEL_B");
    const QCommandLineOption patch("patch", "Activation patching sweep of HOOK (resid, attn_out, mlp_out: layer × position; z, q, k, v, "
                                            "pattern: every head) with --corrupt-prompt and --metric; adds \"patching\" to --dump-json.", "HOOK");
    const QCommandLineOption attributionPatch("attribution-patch", "Attribution patching (Nanda 2023) of HOOK: the --patch sweep's cells "
                                                                   "estimated from one backward pass; adds \"patching\" with \"method\": "
                                                                   "\"attribution\".", "HOOK");
    const QCommandLineOption atpStar("atp-star", "With --attribution-patch q|k: the patched head's softmax computed exactly (AtP*).");
    const QCommandLineOption gradients("gradients", "∂--metric/∂ every hook point (TransformerLens names) on the prompt's run, or on "
                                                    "--corrupt-prompt's; adds \"gradients\".");
    const QCommandLineOption stopGradient("stop-gradient", "With --gradients: hold norm (the norm divisor), pattern (the attention "
                                                           "softmax) and/or mlp (the MLP nonlinearity) fixed, comma-separated.", "LIST");
    const QCommandLineOption saliency("saliency", "Input attribution of --metric to each prompt token: ig (integrated gradients) or "
                                                  "grad-x-input; adds \"saliency\".", "METHOD");
    const QCommandLineOption igSteps("ig-steps", "With --saliency ig: interpolation steps (default 32); with --eap: EAP-IG's steps "
                                                 "(default 5; 0 = EAP, the gradient at the clean run).", "N", "32");
    const QCommandLineOption eap("eap", "Edge attribution (EAP-IG, Hanna et al. 2024) of --metric between --prompt and --corrupt-prompt: "
                                        "every edge of the head/MLP graph scored, the --top N (default 200) kept as the circuit and its "
                                        "faithfulness measured; adds \"edge_attribution\".");
    const QCommandLineOption baseline("baseline", "With --saliency: zero (the zero embedding, default) or a TOKEN whose embedding "
                                                  "stands at every position.", "zero|TOKEN");
    const QCommandLineOption corruptPrompt("corrupt-prompt", "The corrupted prompt (same token length as --prompt).", "TEXT");
    const QCommandLineOption corruptIds("corrupt-token-ids", "The corrupted prompt as token ids (comma-separated).", "IDS");
    const QCommandLineOption metric("metric", "What patching measures at --position (default the last): \"logit_diff: TOKEN, TOKEN2\", "
                                              "\"logit: TOKEN\", \"prob: TOKEN\", \"logprob: TOKEN\" or \"kl\" (tokens as --dla takes them).", "METRIC");
    const QCommandLineOption direction("direction", "denoise (clean activations into the corrupted run, default) or noise.", "DIR", "denoise");
    const QCommandLineOption byPosition("by-position", "With --patch z|q|k|v|pattern: one cell per head and position.");
    const QCommandLineOption ablate("ablate", "Ablate instead of patching, in the clean run: zero, mean (over positions), "
                                              "reference-mean (over --reference-prompt) or resample (the corrupted run's).", "KIND");
    const QCommandLineOption referencePrompt("reference-prompt", "A reference prompt for --ablate reference-mean (repeatable).", "TEXT");
    const QCommandLineOption pathPatch("path-patch", "Path patching (Wang et al. 2022) of --senders through --receivers; adds \"path_patching\".");
    const QCommandLineOption senders("senders", "Sender heads L.H,… for --path-patch (default every head).", "HEADS");
    const QCommandLineOption receivers("receivers", "Receivers for --path-patch: L.H.q, L.H.k, L.H.v (a head's input) or logits.", "LIST");
    const QCommandLineOption flow("flow", "Information-flow routes (Ferrando & Voita 2024) pruned from --position; adds \"flow\".");
    const QCommandLineOption threshold("threshold", "Edge threshold for --flow (default 0.04; 0 = every edge, unpruned).", "T", "0.04");
    const QCommandLineOption norm("norm", "Distance of the --flow proximity: l1 (default) or l2.", "NORM", "l1");
    const QCommandLineOption noRenormalise("no-renormalise", "With --flow: prune without renormalising the kept contributions.");
    const QCommandLineOption attend("attend", "Split head --layer/--head's score of --query I on --key J into query × key component "
                                              "terms; adds \"attend\".");
    const QCommandLineOption query("query", "Query position for --attend.", "I");
    const QCommandLineOption key("key", "Key position for --attend.", "J");
    const QCommandLineOption sae("sae", "Features: an SAE or transcoder (SAELens folder, Gemma Scope params.npz, Llama Scope folder) or a "
                                        "circuit-tracer transcoder set (folder with config.yaml, or a circuit-tracer .yaml).", "PATH");
    const QCommandLineOption saeHook("hook", "The --sae dictionary's hook (TransformerLens name, e.g. blocks.3.hook_resid_post) when its "
                                             "file does not name one; for a transcoder set, the layer whose transcoder to use.", "NAME");
    const QCommandLineOption featuresOpt("features", "With --sae: add \"features\" (firing features per position, largest first, "
                                                     "--top N of them; reconstruction error and losses).");
    const QCommandLineOption featureOpt("feature", "With --sae: add \"feature\" for feature F (decoder and encoder directions read in "
                                                   "embedding space, activations, DLA to --dla TOKEN or the top prediction at --position).", "F");
    const QCommandLineOption featurePatchingOpt("feature-patching", "With --sae, --corrupt-prompt and --metric: every firing feature and "
                                                                    "position as a patching node (attribution from one backward pass; the "
                                                                    "--top N largest patched for real); adds \"feature_patching\".");
    const QCommandLineOption steerOpt("steer", "With --sae: run with feature F steered by α·W_dec[F] (F=α), ablated (F=ablate) or clamped "
                                               "(F=clamp:V), at positions @P1,P2 (default all); adds \"intervention\" (top next tokens, and "
                                               "the --generate continuation, with the edit). Repeatable.", "EDIT");
    const QCommandLineOption featureContexts("feature-contexts", "With --sae: run the model over CORPUS (a .txt / .jsonl file or a folder "
                                                                 "of them) and keep each feature's top contexts and activation histogram "
                                                                 "in the --contexts-db database (default: beside the SAE); resumes an "
                                                                 "interrupted run. --top N contexts per feature (default 20). "
                                                                 "With --headvis DIR: the corpus HeadVis runs over.", "CORPUS");
    const QCommandLineOption headvisOpt("headvis", "With --feature-contexts CORPUS: write Neuronpedia's HeadVis tree into DIR "
                                                   "(config.json, scatter_data.json with six metrics per head, heads/L{l}H{h}.json "
                                                   "with attention samples) for every head over the corpus's windows.", "DIR");
    const QCommandLineOption sequencesOpt("sequences", "With --headvis: run at most N windows of the corpus (default 2000; 0: all).", "N");
    const QCommandLineOption shardOpt("shard", "With --feature-contexts: run only windows w with w % N == I (merge the shards with --merge).", "I/N");
    const QCommandLineOption contextsDb("contexts-db", "The feature-contexts database (SQLite) to write, to merge into, or to read "
                                                       "--feature F's top contexts from.", "FILE");
    const QCommandLineOption mergeOpt("merge", "Merge feature-contexts databases (DB, and any further DB arguments) into --contexts-db OUT.", "DB");
    const QCommandLineOption windowOpt("window", "With --feature-contexts: tokens per window besides BOS (default 128, at most n_ctx − 1).", "N");
    const QCommandLineOption graphOpt("graph", "With --transcoders: the attribution graph of the prompt's next-token prediction "
                                               "(circuit-tracer's: frozen attention and norms, transcoder features, error and token "
                                               "nodes, the top logits); adds \"graph\" (nodes, kept edges, scores).");
    const QCommandLineOption transcodersOpt("transcoders", "A per-layer transcoder set for --graph (circuit-tracer config.yaml folder or .yaml, "
                                                           "or a bundled name: transcoders).", "PATH");
    const QCommandLineOption graphJsonOpt("graph-json", "With --transcoders: write the attribution graph in Neuronpedia's graph "
                                                        "layout (open it in Neuronpedia's graph viewer).", "FILE");
    const QCommandLineOption maxLogitsOpt("max-logits", "With --graph: at most N logit nodes (default 10), until their "
                                                        "probabilities sum to 0.95.", "N");
    const QCommandLineOption maxFeatureNodesOpt("max-feature-nodes", "With --graph: at most N feature nodes (default 7500; 0: every "
                                                                  "active feature), visited in order of their influence on the "
                                                                  "logits as circuit-tracer's max_feature_nodes.", "N");
    const QCommandLineOption graphTargetsOpt("graph-targets", "With --graph: what the graph explains instead of the likeliest logits: "
                                                              "tokens (\" Paris, London\"), ids (\"ids: 464, 1234\"), a logit "
                                                              "difference (\"diff: Paris, London\"), a feature's decoder row "
                                                              "(\"feature: L:F\") or a d_model vector (\"vector: FILE.npy\"); a custom "
                                                              "target may end in @WEIGHT. Repeatable.", "SPEC");
    const QCommandLineOption nodeThresholdOpt("node-threshold", "With --graph: keep the nodes up to this share of the cumulative "
                                                                "influence (default 0.8).", "X");
    const QCommandLineOption edgeThresholdOpt("edge-threshold", "With --graph: keep the edges up to this share of the edge "
                                                                "scores (default 0.98).", "X");
    const QCommandLineOption graphInterveneOpt("graph-intervene", "With --graph: run the prompt with transcoder features set "
                                                                  "(L:P:F=V) or scaled (L:P:F*K; *0 ablates), comma-separated, as "
                                                                  "circuit-tracer's feature_intervention (attention patterns frozen); "
                                                                  "adds \"graph_intervention\" (top logits before and after; with "
                                                                  "--generate N the continuation).", "EDITS");
    const QCommandLineOption edgeRoutesOpt("edge-routes", "With --graph: which heads carry the N strongest kept edges between "
                                                          "positions (each edge split exactly by its first hop); adds \"edge_routes\".", "N");
    const QCommandLineOption qkTraceOpt("qk-trace", "With --graph or --graph-json: why head H of layer L attends from query position Q "
                                                    "to key K, in the graph's nodes (repeatable): the score split exactly into pairs of "
                                                    "q-side and k-side sources, marginals and constants; adds \"qk_traces\".", "L.H:Q:K");
    const QCommandLineOption qkTraceEdgesOpt("qk-trace-edges", "With --graph or --graph-json: trace the N strongest kept edges between "
                                                               "positions, each through its strongest head; --graph-json writes them as "
                                                               "Neuronpedia's qk_tracing_results.", "N");
    const QCommandLineOption qkTopOpt("qk-top", "With --qk-trace or --qk-trace-edges: pairs and marginals listed per trace (default 50).", "N");
    const QCommandLineOption headLoadingsOpt("head-loadings", "With --graph: split the strongest kept edges that cross attention "
                                                              "layer LAYER (source written below it, target above it) across "
                                                              "that layer's heads plus a bypass, as circuit-tracer's head loadings "
                                                              "(PR #114); as many edges as --edge-routes N, else 20; adds "
                                                              "\"head_loadings\".", "LAYER");
    const QCommandLineOption featureLabelsOpt("feature-labels", "Feature labels made elsewhere: Neuronpedia's explanation exports "
                                                                "(.jsonl, .jsonl.gz, or a folder of explanations/batch-N files) or a "
                                                                "CSV with a header feature,label or layer,feature,label. --graph-json "
                                                                "(also with --open-graph) writes them as the feature nodes' clerp; --sae's "
                                                                "--features and --feature add \"label\". Repeatable.", "PATH");
    const QCommandLineOption openGraph("open-graph", "Open an attribution graph file (Neuronpedia's layout; no model needed): "
                                                     "alone, in the window's Graph tab; headless, --dump-json writes \"graph_file\" "
                                                     "(counts, layers, positions, pins, supernodes, notes), --graph-json the file "
                                                     "written back, --export FIG.png|svg|pdf the Graph tab's figure, --screenshot "
                                                     "graphs --out FILE.png the window.", "FILE");
    const QCommandLineOption composition("composition", "Q-, K- or V-composition scores of every head pair (weights only); adds \"composition\".", "q|k|v");
    p.addOptions({model, prompt, noBos, bos, tokenizerFile, tokenIds, generate, tokenize, layer, head, exportDir, format,
                  width, height, scale, dumpJson, dumpSteps, force, dla, position, project, neuron, top, logitLens,
                  screenshot, outFile, session, text, stitch, inverse, stitchNorm, stitchEmbedding, rcond, finetune, patch,
                  corruptPrompt, corruptIds, metric, direction, byPosition, ablate, referencePrompt, pathPatch, senders,
                  receivers, flow, threshold, norm, noRenormalise, attend, query, key, composition, sae, saeHook, featuresOpt, featureOpt,
                  steerOpt, featurePatchingOpt, attributionPatch, atpStar, featureContexts, shardOpt, contextsDb, mergeOpt, windowOpt, headvisOpt, sequencesOpt,
                  gradients, stopGradient, saliency, igSteps, baseline, eap, graphOpt, transcodersOpt, graphJsonOpt, maxLogitsOpt, maxFeatureNodesOpt, graphTargetsOpt,
                  graphInterveneOpt, edgeRoutesOpt, headLoadingsOpt, qkTraceOpt, qkTraceEdgesOpt, qkTopOpt,
                  nodeThresholdOpt, edgeThresholdOpt, featureLabelsOpt, openGraph});
    p.addPositionalArgument("MODEL", "Model (or session) to open in the window.", "[MODEL | SESSION.attnscope]");

    QStringList argv = args; // "--feature F --project": --project without a value reads the feature in embedding space
    for (int i = 1; i < argv.size(); ++i)
        if (argv[i] == QLatin1String("--project") && (i + 1 == argv.size() || argv[i + 1].startsWith(QLatin1String("--"))))
            argv.insert(i + 1, QStringLiteral("feature"));
    if (!p.parse(argv)) {
        *error = p.errorText();
        return false;
    }
    if (p.isSet(help) || p.isSet(version)) {
        error->clear();
        *helpText = p.isSet(help) ? p.helpText() : aboutText();
        return false;
    }
    CommandLine c;
    const QStringList pos = p.isSet(mergeOpt) ? QStringList() : p.positionalArguments(); // --merge DB1 DB2 …: more DBs
    if (pos.size() > 1) {
        *error = QStringLiteral("too many arguments: %1").arg(pos.join(' '));
        return false;
    }
    c.modelPath = p.isSet(model) ? p.value(model) : pos.value(0);
    if (p.isSet(model) && !pos.isEmpty()) {
        *error = QStringLiteral("give the model either as --model or as PATH, not both");
        return false;
    }
    c.prompt = p.value(prompt);
    c.textFile = p.value(text);
    if (p.isSet(text) && (p.isSet(prompt) || p.isSet(tokenIds))) {
        *error = QStringLiteral("give --prompt, --text or --token-ids, not two of them");
        return false;
    }
    if (p.isSet(noBos) && p.isSet(bos)) {
        *error = QStringLiteral("give --bos or --no-bos, not both");
        return false;
    }
    if (p.isSet(noBos)) c.prependBos = false;
    if (p.isSet(bos)) c.prependBos = true;
    c.tokenizerPath = p.value(tokenizerFile);
    c.tokenize = p.isSet(tokenize);
    auto parseIds = [&](const QCommandLineOption& ids, const QCommandLineOption& text, std::vector<int>* out, bool* use) {
        if (!p.isSet(ids)) return true;
        const QString name = ids.names().last();
        if (p.isSet(text)) {
            *error = QStringLiteral("give --%1 or --%2, not both").arg(text.names().last(), name);
            return false;
        }
        for (const QString& part : p.value(ids).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            bool ok = false;
            const int id = part.trimmed().toInt(&ok);
            if (!ok || id < 0) {
                *error = QStringLiteral("--%1 must be non-negative integers separated by commas, got '%2'").arg(name, part);
                return false;
            }
            out->push_back(id);
        }
        if (out->empty()) {
            *error = QStringLiteral("--%1 needs at least one id").arg(name);
            return false;
        }
        *use = true;
        return true;
    };
    if (!parseIds(tokenIds, prompt, &c.tokenIds, &c.useTokenIds) ||
        !parseIds(corruptIds, corruptPrompt, &c.corruptTokenIds, &c.useCorruptTokenIds))
        return false;
    auto parseInt = [&](const QCommandLineOption& o, int* v, int min) {
        if (!p.isSet(o)) return true;
        bool ok = false;
        *v = p.value(o).toInt(&ok);
        if (!ok || *v < min) {
            *error = QStringLiteral("--%1 must be an integer ≥ %2, got '%3'").arg(o.names().last()).arg(min).arg(p.value(o));
            return false;
        }
        return true;
    };
    int w = 1000, h = 900;
    if (!parseInt(generate, &c.generate, 1)) return false;
    if (c.generate > 0 && !p.isSet(dumpJson)) {
        *error = QStringLiteral("--generate adds to the --dump-json output: give --dump-json FILE too");
        return false;
    }
    c.stitchAllLayers = p.isSet(stitch) && p.value(layer).compare(QLatin1String("all"), Qt::CaseInsensitive) == 0;
    c.topGiven = p.isSet(top);
    if ((!c.stitchAllLayers && !parseInt(layer, &c.layer, 0)) || !parseInt(head, &c.head, 0) || !parseInt(width, &w, 16) ||
        !parseInt(height, &h, 16) || !parseInt(position, &c.position, 0) || !parseInt(neuron, &c.neuron, 0) ||
        !parseInt(top, &c.top, 1))
        return false;
    c.size = QSize(w, h);
    c.sizeGiven = p.isSet(width) || p.isSet(height);
    bool ok = false;
    c.scale = p.value(scale).toDouble(&ok);
    if (!ok || c.scale <= 0 || c.scale > 8) {
        *error = QStringLiteral("--scale must be a number in (0, 8], got '%1'").arg(p.value(scale));
        return false;
    }
    c.format = p.value(format).toLower();
    if (!QStringList{"png", "svg", "pdf"}.contains(c.format)) {
        *error = QStringLiteral("--format must be png, svg or pdf, got '%1'").arg(p.value(format));
        return false;
    }
    c.exportDir = p.value(exportDir);
    c.dumpJson = p.value(dumpJson);
    c.dumpSteps = p.value(dumpSteps);
    c.force = p.isSet(force);
    if (p.isSet(openGraph)) {
        c.openGraph = p.value(openGraph);
        c.graphJson = p.value(graphJsonOpt);
        c.featureLabels = p.values(featureLabelsOpt);
        c.screenshot = p.value(screenshot);
        c.out = p.value(outFile);
        *error = checkOpenGraphOptions(c, p.optionNames(), pos);
        if (!error->isEmpty()) return false;
        *out = c;
        return true;
    }
    if (p.isSet(headvisOpt) || p.isSet(sequencesOpt)) {
        if (!p.isSet(headvisOpt)) {
            *error = QStringLiteral("--sequences goes with --headvis DIR");
            return false;
        }
        c.headvis = p.value(headvisOpt);
        c.featureContexts = p.value(featureContexts);
        if (!parseInt(windowOpt, &c.windowTokens, 1) || !parseInt(sequencesOpt, &c.sequences, 0)) return false;
        *error = checkHeadVisOptions(c, p.optionNames(), pos);
        if (!error->isEmpty()) return false;
        *out = c;
        return true;
    }
    if (p.isSet(featureContexts) || p.isSet(mergeOpt) || p.isSet(contextsDb) || p.isSet(shardOpt) || p.isSet(windowOpt)) {
        c.featureContexts = p.value(featureContexts);
        c.contextsDb = p.value(contextsDb);
        if (p.isSet(mergeOpt)) c.mergeInputs = p.values(mergeOpt) + p.positionalArguments();
        if (!parseInt(featureOpt, &c.feature, 0) || !parseInt(windowOpt, &c.windowTokens, 1)) return false;
        c.sae = p.value(sae);
        c.saeHook = p.value(saeHook);
        if (!c.topGiven) c.top = 20;
        *error = checkContextsOptions(c, p.value(shardOpt), p.isSet(shardOpt) || p.isSet(windowOpt),
                                      p.isSet(prompt) || p.isSet(text) || p.isSet(tokenIds) || !c.exportDir.isEmpty() ||
                                          !c.dumpSteps.isEmpty() || p.isSet(project) || p.isSet(stitch) || p.isSet(finetune) ||
                                          p.isSet(featuresOpt) || p.isSet(steerOpt) || c.tokenize);
        if (!error->isEmpty()) return false;
        *out = c;
        return true;
    }
    c.dla = p.value(dla);
    if (p.isSet(dla) && c.dla.isEmpty()) {
        *error = QStringLiteral("--dla needs a token, e.g. --dla \" Mary\" or --dla \" Mary, John\"");
        return false;
    }
    // circuits
    c.patch = p.value(patch).toLower();
    if (p.isSet(attributionPatch)) {
        if (p.isSet(patch)) {
            *error = QStringLiteral("give one of --patch and --attribution-patch");
            return false;
        }
        c.patch = p.value(attributionPatch).toLower();
        c.attribution = true;
    }
    c.atpStar = p.isSet(atpStar);
    c.saliency = p.value(saliency).toLower();
    c.baseline = p.value(baseline);
    c.eap = p.isSet(eap);
    if ((p.isSet(igSteps) && c.saliency.isEmpty() && !c.eap) || (p.isSet(baseline) && c.saliency.isEmpty())) {
        *error = QStringLiteral("--ig-steps goes with --saliency or --eap, --baseline with --saliency");
        return false;
    }
    if (c.eap && !p.isSet(igSteps)) c.igSteps = 5;
    if (!parseInt(igSteps, &c.igSteps, c.eap ? 0 : 1)) return false;
    c.gradients = p.isSet(gradients);
    c.stopGradient = p.value(stopGradient);
    try { // the names are the library's (gradients_json.h), checked before the model opens
        parseStopGradients(c.stopGradient);
    } catch (const InputError& e) {
        *error = QString::fromUtf8(e.what());
        return false;
    }
    c.corruptPrompt = p.value(corruptPrompt);
    c.metric = p.value(metric);
    c.direction = p.value(direction).toLower();
    c.byPosition = p.isSet(byPosition);
    c.ablate = p.value(ablate).toLower();
    c.referencePrompts = p.values(referencePrompt);
    c.pathPatch = p.isSet(pathPatch);
    c.senders = p.value(senders);
    c.receivers = p.value(receivers);
    c.flow = p.isSet(flow);
    c.norm = p.value(norm).toLower();
    c.renormalise = !p.isSet(noRenormalise);
    c.attend = p.isSet(attend);
    c.composition = p.value(composition).toLower();
    if (!parseInt(query, &c.query, 0) || !parseInt(key, &c.key, 0)) return false;
    c.threshold = p.value(threshold).toDouble(&ok);
    if (!ok || c.threshold < 0 || c.threshold >= 1) {
        *error = QStringLiteral("--threshold must be a number in [0, 1), got '%1'").arg(p.value(threshold));
        return false;
    }
    c.featurePatching = p.isSet(featurePatchingOpt);
    if (QString e = checkCircuitOptions(c, p.isSet(threshold) || p.isSet(norm) || p.isSet(noRenormalise),
                                        p.isSet(senders) || p.isSet(receivers), p.isSet(direction) || p.isSet(metric) || c.byPosition ||
                                            !c.ablate.isEmpty() || !c.referencePrompts.isEmpty(),
                                        p.isSet(query) || p.isSet(key));
        !e.isEmpty()) {
        *error = e;
        return false;
    }
    if ((p.isSet(dla) || p.isSet(position)) && c.dumpJson.isEmpty()) {
        *error = QStringLiteral("--dla, --position and the circuit modes add to the --dump-json output: give --dump-json FILE too");
        return false;
    }
    if (p.isSet(position) && !p.isSet(dla) && c.patch.isEmpty() && !c.pathPatch && !c.flow && !c.gradients && c.saliency.isEmpty() && !c.eap &&
        !p.isSet(featureOpt) && !c.featurePatching) {
        *error = QStringLiteral("--position goes with --dla, --feature, --patch, --attribution-patch, --gradients, --saliency, --eap, --path-patch or --flow");
        return false;
    }
    c.screenshot = p.value(screenshot);
    c.out = p.value(outFile);
    c.session = p.value(session);
    c.featureLabels = p.values(featureLabelsOpt);
    if (p.isSet(screenshot)) {
        if (!screenshotViews().contains(c.screenshot)) {
            *error = QStringLiteral("--screenshot must be one of %1, got '%2'").arg(screenshotViews().join(QStringLiteral(", ")), c.screenshot);
            return false;
        }
        if (!c.out.endsWith(QLatin1String(".png"), Qt::CaseInsensitive)) {
            *error = QStringLiteral("--screenshot needs --out FILE.png");
            return false;
        }
        if (!c.exportDir.isEmpty() || !c.dumpJson.isEmpty() || !c.dumpSteps.isEmpty() || p.isSet(project)) {
            *error = QStringLiteral("--screenshot goes alone: not with --export, --dump-json, --dump-steps or --project");
            return false;
        }
        if ((c.layer >= 0) != (c.head >= 0)) {
            *error = QStringLiteral("--layer and --head go together");
            return false;
        }
        *out = c;
        return true;
    }
    if (p.isSet(outFile) || p.isSet(session)) {
        *error = QStringLiteral("--out and --session-file go with --screenshot");
        return false;
    }
    c.stitch = p.value(stitch);
    c.finetuneDiff = p.value(finetune);
    if (!p.isSet(stitch) && (p.isSet(inverse) || p.isSet(stitchNorm) || p.isSet(stitchEmbedding) || p.isSet(rcond))) {
        *error = QStringLiteral("--inverse, --stitch-final-norm, --stitch-embedding and --rcond go with --stitch");
        return false;
    }
    if (p.isSet(finetune)) {
        if (c.finetuneDiff.isEmpty() || c.dumpJson.isEmpty() || p.isSet(prompt) || p.isSet(text) || p.isSet(tokenIds) ||
            p.isSet(stitch) || p.isSet(project) || !c.exportDir.isEmpty() || !c.dumpSteps.isEmpty() || p.isSet(layer) ||
            p.isSet(logitLens) || c.tokenize || c.generate > 0) {
            *error = QStringLiteral("--finetune-diff MODEL_B needs --dump-json FILE and takes no prompt, --layer, --stitch, "
                                    "--project, --export, --dump-steps, --logit-lens, --generate or --tokenize");
            return false;
        }
        *out = c;
        return true;
    }
    if (p.isSet(stitch)) {
        if (c.stitch.isEmpty() || c.dumpJson.isEmpty()) {
            *error = QStringLiteral("--stitch MODEL_B needs --dump-json FILE");
            return false;
        }
        if (!p.isSet(layer)) {
            *error = QStringLiteral("--stitch needs --layer K (model A's blocks that run before stitching, 0 … n_layers) or --layer all");
            return false;
        }
        if (!p.isSet(prompt) && !p.isSet(text) && !c.useTokenIds) {
            *error = QStringLiteral("--stitch needs the text to stitch on: --prompt TEXT, --text FILE or --token-ids IDS");
            return false;
        }
        if (p.isSet(head) || p.isSet(project) || !c.exportDir.isEmpty() || !c.dumpSteps.isEmpty() || p.isSet(dla) || c.tokenize ||
            c.generate > 0 || p.isSet(logitLens)) {
            *error = QStringLiteral("--stitch takes no --head, --project, --export, --dump-steps, --dla, --logit-lens, --generate or --tokenize");
            return false;
        }
        const QString inv = p.value(inverse).toLower();
        if (p.isSet(inverse) && inv != QLatin1String("pinv") && inv != QLatin1String("transpose")) {
            *error = QStringLiteral("--inverse must be pinv or transpose, got '%1'").arg(p.value(inverse));
            return false;
        }
        c.stitchTranspose = inv == QLatin1String("transpose");
        c.stitchFinalNorm = p.isSet(stitchNorm);
        const QString e = p.value(stitchEmbedding).toUpper();
        if (p.isSet(stitchEmbedding) && e != QLatin1String("W_E") && e != QLatin1String("W_U")) {
            *error = QStringLiteral("--stitch-embedding must be W_E or W_U, got '%1'").arg(p.value(stitchEmbedding));
            return false;
        }
        c.stitchUnembedding = e == QLatin1String("W_U");
        if (p.isSet(rcond)) {
            bool okR = false;
            c.rcond = p.value(rcond).toDouble(&okR);
            if (!okR || !(c.rcond > 0 && c.rcond < 1)) {
                *error = QStringLiteral("--rcond must be a number in (0, 1), got '%1'").arg(p.value(rcond));
                return false;
            }
        }
        *out = c;
        return true;
    }
    c.project = p.value(project).toLower();
    c.logitLens = p.isSet(logitLens);
    c.sae = p.value(sae);
    c.saeHook = p.value(saeHook);
    c.features = p.isSet(featuresOpt);
    c.steer = p.values(steerOpt);
    if (!parseInt(featureOpt, &c.feature, 0)) return false;
    if ((c.features || c.feature >= 0 || !c.steer.isEmpty() || p.isSet(saeHook) || c.featurePatching) && c.sae.isEmpty()) {
        *error = QStringLiteral("--features, --feature, --steer, --feature-patching and --hook go with --sae PATH");
        return false;
    }
    c.graph = p.isSet(graphOpt);
    c.transcoders = p.value(transcodersOpt);
    c.graphJson = p.value(graphJsonOpt);
    c.featureLabels = p.values(featureLabelsOpt);
    if (!c.featureLabels.isEmpty() && c.graphJson.isEmpty() && !c.features && c.feature < 0 && c.screenshot.isEmpty()) {
        *error = QStringLiteral("--feature-labels labels what --graph-json writes, --sae's --features and --feature, or a --screenshot: give one of them too");
        return false;
    }
    if (!parseInt(maxLogitsOpt, &c.maxLogits, 1) || !parseInt(edgeRoutesOpt, &c.edgeRoutes, 1) ||
        !parseInt(maxFeatureNodesOpt, &c.maxFeatureNodes, 0) || !parseInt(headLoadingsOpt, &c.headLoadings, 0))
        return false;
    for (const QString& v : p.values(graphInterveneOpt))
        for (const QString& e : v.split(QLatin1Char(','), Qt::SkipEmptyParts)) c.graphIntervene << e.trimmed();
    if (!parseInt(qkTraceEdgesOpt, &c.qkTraceEdges, 1) || !parseInt(qkTopOpt, &c.qkTop, 1)) return false;
    for (const QString& v : p.values(qkTraceOpt)) {
        static const QRegularExpression cell(QStringLiteral("^(\\d+)\\.(\\d+):(\\d+):(\\d+)$"));
        const QRegularExpressionMatch m = cell.match(v.trimmed());
        if (!m.hasMatch()) {
            *error = QStringLiteral("--qk-trace wants LAYER.HEAD:QUERY:KEY (e.g. 1.3:6:2), got '%1'").arg(v);
            return false;
        }
        c.qkTraces.push_back({m.captured(1).toInt(), m.captured(2).toInt(), m.captured(3).toInt(), m.captured(4).toInt()});
    }
    if ((!c.qkTraces.empty() || c.qkTraceEdges > 0 || p.isSet(qkTopOpt)) && !c.graph && !p.isSet(graphJsonOpt)) {
        *error = QStringLiteral("--qk-trace, --qk-trace-edges and --qk-top add to --graph or --graph-json: give one of them too");
        return false;
    }
    if (p.isSet(qkTopOpt) && c.qkTraces.empty() && c.qkTraceEdges == 0) {
        *error = QStringLiteral("--qk-top goes with --qk-trace or --qk-trace-edges");
        return false;
    }
    if ((!c.graphIntervene.isEmpty() || c.edgeRoutes > 0 || c.headLoadings >= 0) && !c.graph) {
        *error = QStringLiteral("--graph-intervene, --edge-routes and --head-loadings add to --graph: give --graph too");
        return false;
    }
    for (auto [opt, v] : {std::pair{&nodeThresholdOpt, &c.nodeThreshold}, std::pair{&edgeThresholdOpt, &c.edgeThreshold}}) {
        if (!p.isSet(*opt)) continue;
        bool okThreshold = false;
        *v = p.value(*opt).toDouble(&okThreshold);
        if (!okThreshold || !(*v > 0) || *v > 1) {
            *error = QStringLiteral("--%1 must be a number in (0, 1], got '%2'").arg(opt->names().front(), p.value(*opt));
            return false;
        }
    }
    if ((c.graph || !c.graphJson.isEmpty()) != !c.transcoders.isEmpty()) {
        *error = QStringLiteral("--graph and --graph-json go with --transcoders PATH");
        return false;
    }
    c.graphTargets = p.values(graphTargetsOpt);
    if (!c.graph && (p.isSet(maxLogitsOpt) || p.isSet(maxFeatureNodesOpt) || p.isSet(graphTargetsOpt) || p.isSet(nodeThresholdOpt) ||
                     p.isSet(edgeThresholdOpt)) &&
        c.graphJson.isEmpty()) {
        *error = QStringLiteral("--max-logits, --max-feature-nodes, --graph-targets, --node-threshold and --edge-threshold go with "
                                "--graph or --graph-json");
        return false;
    }
    if (c.graph && c.dumpJson.isEmpty()) {
        *error = QStringLiteral("--graph adds to the --dump-json output: give --dump-json FILE too (or write --graph-json FILE)");
        return false;
    }
    if (!c.sae.isEmpty() && c.dumpJson.isEmpty()) {
        *error = QStringLiteral("--sae adds to the --dump-json output: give --dump-json FILE too");
        return false;
    }
    if (c.project == QLatin1String("feature")) {
        if (c.feature < 0) {
            *error = QStringLiteral("--project (feature) needs --sae PATH and --feature F");
            return false;
        }
        c.project.clear(); // --feature F --project: the feature's readings, which --feature writes anyway
    }
    if (!c.project.isEmpty()) {
        const bool pairs = c.project == QLatin1String("ov") || c.project == QLatin1String("qk");
        if (!pairs && c.project != QLatin1String("ffkey") && c.project != QLatin1String("ffvalue")) {
            *error = QStringLiteral("--project must be ov, qk, ffkey or ffvalue, got '%1'").arg(p.value(project));
            return false;
        }
        if (c.dumpJson.isEmpty() || !c.exportDir.isEmpty() || p.isSet(prompt) || c.logitLens) {
            *error = QStringLiteral("--project needs --dump-json FILE and takes no --prompt, --export or --logit-lens");
            return false;
        }
        if (c.layer < 0 || (pairs ? (c.head < 0 || c.neuron >= 0) : (c.neuron < 0 || c.head >= 0))) {
            *error = pairs ? QStringLiteral("--project %1 needs --layer L and --head H").arg(c.project)
                           : QStringLiteral("--project %1 needs --layer L and --neuron N").arg(c.project);
            return false;
        }
        *out = c;
        return true;
    }
    if (c.neuron >= 0) {
        *error = QStringLiteral("--neuron goes with --project ffkey/ffvalue");
        return false;
    }
    if (!c.composition.isEmpty() && !p.isSet(prompt) && !c.useTokenIds) {
        *out = c; // weights only
        return true;
    }
    if (c.logitLens && c.dumpJson.isEmpty()) {
        *error = QStringLiteral("--logit-lens needs --dump-json FILE");
        return false;
    }
    if ((c.layer >= 0) != (c.head >= 0)) {
        *error = QStringLiteral("--layer and --head go together");
        return false;
    }
    if (!c.dumpSteps.isEmpty() && c.layer < 0) {
        *error = QStringLiteral("--dump-steps needs --layer L and --head H");
        return false;
    }
    if (c.tokenize && (!c.exportDir.isEmpty() || !c.dumpSteps.isEmpty() || c.generate > 0 || !c.dla.isEmpty() || c.logitLens)) {
        *error = QStringLiteral("--tokenize runs no model: it takes no --export, --dump-steps, --generate, --dla or --logit-lens");
        return false;
    }
    if (c.isHeadless()) {
        if (!p.isSet(prompt) && !c.useTokenIds && !p.isSet(text)) {
            *error = QStringLiteral("--prompt TEXT (or --text FILE, --token-ids IDS) is required with --export / --dump-json / --dump-steps / --tokenize");
            return false;
        }
    }
    *out = c;
    return true;
}

} // namespace attnscope
