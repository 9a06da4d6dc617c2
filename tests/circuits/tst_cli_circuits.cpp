// The circuit modes of the command line, run as a real process on the demo model: --patch (heads, by
// position, residual sweeps, ablations), --path-patch, --flow, --attend and --composition write the JSON keys
// README "Circuits on the command line" documents, with the numbers the library computes in this process;
// bad combinations and prompts of different token lengths fail with a message and exit code 1 (2 for usage).

#include "model/analysis/circuits/activation_patching.h"
#include "model/analysis/circuits/composition_scores.h"
#include "model/formats/model_loader.h"
#include "model/transformer/prompt.h"
#include "support/cli_process.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

CliRun runExe(const QStringList& args) { return runCli(attnscope::test::attnscopeExe(), args); }

const QString kClean = QStringLiteral("In the beginning God created the heaven and the earth. In the beginning God");
const QString kCorrupt = QStringLiteral("In the beginning Lord made the heaven and the earth. In the beginning God");
const QString kMetric = QStringLiteral("logit_diff: created, made");

QSet<QString> keysOf(const QJsonObject& o) {
    QSet<QString> k;
    for (auto it = o.begin(); it != o.end(); ++it) k.insert(it.key());
    return k;
}

} // namespace

class TestCliCircuits : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    std::shared_ptr<const Model> demo_ = loadModel(demoDir());

    /// Runs with --model demo --dump-json FILE and returns the object under `key`.
    QJsonObject dumpOf(const QStringList& args, const QString& key) { return demoDumpOf(attnscope::test::attnscopeExe(), dir_.path(), args, key); }

private slots:
    void patchHeads() {
        const QJsonObject p = dumpOf({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", kMetric, "--patch", "z"}, "patching");
        for (const char* k : {"activation", "direction", "metric", "clean_token_ids", "corrupt_token_ids", "clean", "corrupt", "cells", "conventions"})
            QVERIFY2(p.contains(QLatin1String(k)), k);
        QCOMPARE(p["activation"].toString(), QStringLiteral("z"));
        QCOMPARE(p["direction"].toString(), QStringLiteral("denoise"));
        QCOMPARE(keysOf(p["metric"].toObject()).contains(QStringLiteral("kind")), true);
        QCOMPARE(p["metric"].toObject()["tokens"].toArray(), (QJsonArray{" created", " made"}));
        const QJsonArray cells = p["cells"].toArray();
        const ModelConfig& cfg = demo_->config();
        QCOMPARE(cells.size(), cfg.n_layers * cfg.n_heads);
        QCOMPARE(keysOf(cells[0].toObject()), (QSet<QString>{"layer", "head", "metric", "normalised"}));
        // the library in this process
        const Tokenizer& tok = demo_->tokenizer();
        const std::vector<int> clean = tokenizePrompt(tok, kClean, tok.addsBos()), corrupt = tokenizePrompt(tok, kCorrupt, tok.addsBos());
        QCOMPARE(int(p["clean_token_ids"].toArray().size()), int(clean.size()));
        // the texts beside the ids: the corrupted prompt differs in " made"
        QCOMPARE(p["clean_tokens"].toArray().size(), p["clean_token_ids"].toArray().size());
        QCOMPARE(p["corrupt_tokens"].toArray().size(), p["corrupt_token_ids"].toArray().size());
        for (int i = 0; i < int(clean.size()); ++i) {
            QCOMPARE(p["clean_tokens"].toArray()[i].toString(), QString::fromUtf8(tok.tokenBytes(clean[size_t(i)])));
            QCOMPARE(p["corrupt_tokens"].toArray()[i].toString(), QString::fromUtf8(tok.tokenBytes(corrupt[size_t(i)])));
        }
        QVERIFY(p["clean_tokens"].toArray().contains(QJsonValue(" created")) && !p["clean_tokens"].toArray().contains(QJsonValue(" made")));
        QVERIFY(p["corrupt_tokens"].toArray().contains(QJsonValue(" made")));
        PatchingOptions o;
        o.hook = PatchHook::Z;
        o.metric = parsePatchingMetric(tok, kMetric);
        const PatchingSweep s = runPatchingSweep(*demo_, preparePatchingRuns(*demo_, clean, corrupt), o);
        QCOMPARE(p["clean"].toDouble(), s.clean);
        QCOMPARE(p["corrupt"].toDouble(), s.corrupt);
        for (int i = 0; i < cells.size(); ++i) {
            QCOMPARE(cells[i].toObject()["metric"].toDouble(), s.cells[size_t(i)].metric);
            QCOMPARE(cells[i].toObject()["normalised"].toDouble(), s.cells[size_t(i)].normalised);
        }
    }

    void patchByPositionResidAndAblation() {
        const int S = int(tokenizePrompt(demo_->tokenizer(), kClean, true).size());
        const ModelConfig& cfg = demo_->config();
        QJsonObject p = dumpOf({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", kMetric, "--patch", "z", "--by-position"}, "patching");
        QCOMPARE(p["cells"].toArray().size(), cfg.n_layers * cfg.n_heads * S);
        QCOMPARE(keysOf(p["cells"].toArray()[0].toObject()), (QSet<QString>{"layer", "head", "position", "metric", "normalised"}));
        p = dumpOf({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", "kl", "--patch", "resid", "--direction", "noise"}, "patching");
        QCOMPARE(p["activation"].toString(), QStringLiteral("resid_pre"));
        QCOMPARE(p["direction"].toString(), QStringLiteral("noise"));
        QCOMPARE(p["clean"].toDouble(), 0.0);
        QCOMPARE(p["cells"].toArray().size(), cfg.n_layers * S);
        QCOMPARE(keysOf(p["cells"].toArray()[0].toObject()), (QSet<QString>{"layer", "position", "metric", "normalised"}));
        p = dumpOf({"--prompt", kClean, "--metric", "prob: created", "--patch", "mlp_out", "--ablate", "zero"}, "patching");
        QCOMPARE(p["ablation"].toString(), QStringLiteral("zero"));
        QVERIFY(p["corrupt"].isNull() && p["cells"].toArray()[0].toObject()["normalised"].isNull());
        QVERIFY(p["cells"].toArray()[0].toObject()["metric"].toDouble() > 0);
    }

    void pathPatch() {
        const QJsonObject p = dumpOf({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", kMetric, "--path-patch", "--senders",
                                      "0.0,0.1", "--receivers", "1.1.k,1.2.q,logits"},
                                     "path_patching");
        QCOMPARE(p["senders"].toArray(), (QJsonArray{"L0H0", "L0H1"}));
        QCOMPARE(p["receivers"].toArray(), (QJsonArray{"L1H1.k", "L1H2.q", "logits", "all heads"}));
        QCOMPARE(p["cells"].toArray().size(), 8);
        QCOMPARE(keysOf(p["cells"].toArray()[0].toObject()), (QSet<QString>{"sender", "receiver", "metric", "normalised"}));
        QVERIFY(p.contains("conventions") && p.contains("clean") && p.contains("corrupt"));
    }

    void flow() {
        const int S = int(tokenizePrompt(demo_->tokenizer(), kClean, true).size());
        const int L = demo_->config().n_layers;
        const QJsonObject all = dumpOf({"--prompt", kClean, "--flow", "--threshold", "0"}, "flow");
        QCOMPARE(all["threshold"].toDouble(), 0.0);
        QCOMPARE(all["norm"].toString(), QStringLiteral("l1"));
        QCOMPARE(all["edges"].toArray().size(), L * (S * (S + 1) / 2 + S) + 2 * L * S);
        QCOMPARE(all["boundaries"].toArray().size(), 2 * L + 1);
        const QJsonObject pruned = dumpOf({"--prompt", kClean, "--flow", "--position", "10", "--norm", "l2"}, "flow");
        QCOMPARE(pruned["position"].toInt(), 10);
        QCOMPARE(pruned["norm"].toString(), QStringLiteral("l2"));
        const QJsonArray edges = pruned["edges"].toArray();
        QVERIFY(!edges.isEmpty() && edges.size() < all["edges"].toArray().size());
        bool attn = false;
        for (const auto& v : edges) {
            const QJsonObject e = v.toObject();
            QCOMPARE(keysOf(e), (QSet<QString>{"from", "to", "kind", "weight", "heads"}));
            QVERIFY(e["weight"].toDouble() > 0.04);
            QVERIFY(e["to"].toArray()[1].toInt() <= 10);
            if (e["kind"].toString() == QLatin1String("attn")) {
                attn = true;
                QCOMPARE(e["heads"].toArray().size(), demo_->config().n_heads);
            }
        }
        QVERIFY(attn);
    }

    void attend() {
        const QJsonObject a = dumpOf({"--prompt", kClean, "--attend", "--layer", "1", "--head", "1", "--query", "15", "--key", "5"}, "attend");
        for (const char* k : {"layer", "head", "query", "key", "score", "terms", "check_error"}) QVERIFY2(a.contains(QLatin1String(k)), k);
        double sum = 0;
        for (const auto& t : a["terms"].toArray()) {
            QCOMPARE(keysOf(t.toObject()), (QSet<QString>{"query_component", "key_component", "value"}));
            sum += t.toObject()["value"].toDouble();
        }
        QVERIFY(std::abs(sum - a["score"].toDouble()) < 1e-4);
        QVERIFY(a["check_error"].toDouble() < 1e-4);
    }

    void composition() {
        const QJsonObject c = dumpOf({"--composition", "k"}, "composition"); // weights only: no prompt
        QCOMPARE(c["mode"].toString(), QStringLiteral("k"));
        const QJsonArray pairs = c["pairs"].toArray();
        const ModelConfig& cfg = demo_->config();
        QCOMPARE(pairs.size(), cfg.n_heads * cfg.n_heads * cfg.n_layers * (cfg.n_layers - 1) / 2);
        QCOMPARE(keysOf(pairs[0].toObject()), (QSet<QString>{"from", "to", "score", "baseline"}));
        const auto lib = compositionScores(*demo_, CompositionKind::K);
        for (const auto& v : pairs) {
            const QJsonObject p = v.toObject();
            if (p["from"].toString() == QLatin1String("L0H0") && p["to"].toString() == QLatin1String("L1H2"))
                QCOMPARE(p["score"].toDouble(), double(lib->score(0, 0, 1, 2)));
        }
    }

    /// The section the sources point to for these modes exists under that name, and every pointer names it.
    void readmeSectionOfTheCircuitFlags() {
        const QString root = QDir(demoDir() + QStringLiteral("/../..")).absolutePath();
        const auto text = [&](const QString& rel) {
            QFile f(root + QLatin1Char('/') + rel);
            return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
        };
        const QString readme = text("README.md");
        const int at = readme.indexOf("\n### Circuits on the command line\n");
        QVERIFY2(at > 0, "README has no section \"Circuits on the command line\"");
        const QString section = readme.mid(at, readme.indexOf("\n## ", at + 1) - at);
        for (const char* flag : {"--patch", "--path-patch", "--flow", "--attend", "--composition", "--metric", "--corrupt-prompt"})
            QVERIFY2(section.contains(flag), flag);
        for (const char* rel : {"app/command_line.h", "model/analysis/circuits/circuits_json.h", "resources/help/circuits.md"})
            QVERIFY2(text(rel).contains("README \"Circuits on the command line\""), rel);
    }

    void errors() {
        const QString out = dir_.filePath("err.json");
        const auto fails = [&](const QStringList& args, const QString& words, int code) {
            const CliRun r = runExe(QStringList{"--model", "demo", "--dump-json", out, "--force"} + args);
            QVERIFY2(r.exitCode == code && r.err.contains(words), qPrintable(QStringLiteral("%1: %2").arg(r.exitCode).arg(r.err)));
        };
        fails({"--prompt", kClean, "--corrupt-prompt", "In the end", "--metric", kMetric, "--patch", "z"}, "same number of tokens", 1);
        fails({"--prompt", kClean, "--corrupt-prompt", "In the end", "--metric", kMetric, "--patch", "z"}, "␣end", 1);
        fails({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--patch", "z"}, "--metric", 2);
        // a --metric of the wrong form is a usage error (2), found before the model opens: the value and the forms
        fails({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", "entropy", "--patch", "z"},
              "--metric \"entropy\": Unknown metric 'entropy': use \"logit_diff: TOKEN, TOKEN2\", \"logit: TOKEN\", "
              "\"prob: TOKEN\", \"logprob: TOKEN\" or \"kl\".", 2);
        fails({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", "logit_diff", "--path-patch", "--receivers", "logits"},
              "--metric \"logit_diff\": The logit_diff metric needs its tokens after a colon, e.g. \"logit_diff: Mary, John\".", 2);
        fails({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", "kl: created", "--patch", "z"},
              "--metric \"kl: created\": The kl metric takes no tokens", 2);
        fails({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", "logit_diff: created", "--patch", "z"},
              "--metric \"logit_diff: created\": The logit_diff metric needs two tokens separated by a comma, e.g. "
              "\"logit_diff: Mary, John\"; got 'created'.", 2); // no comma: not two tokens in any vocabulary
        fails({"--model", "no/such/model", "--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", "entropy", "--patch", "z"},
              "Unknown metric 'entropy'", 2); // before the model is looked for
        // a form that is right but a text that is not one token of this vocabulary: the model's answer (1)
        fails({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", "prob: created made", "--patch", "z"},
              "' created made' is not a single token", 1);
        fails({"--prompt", kClean, "--metric", kMetric, "--patch", "z"}, "--corrupt-prompt", 2);
        fails({"--prompt", kClean, "--patch", "w", "--metric", kMetric, "--corrupt-prompt", kCorrupt}, "--patch must be", 2);
        fails({"--prompt", kClean, "--flow", "--patch", "z"}, "one of", 2);
        fails({"--prompt", kClean, "--attend", "--layer", "1", "--head", "1", "--query", "3", "--key", "5"}, "after query", 1);
        fails({"--prompt", kClean, "--threshold", "0.1"}, "go with --flow", 2);
    }
};

QTEST_MAIN(TestCliCircuits)
#include "tst_cli_circuits.moc"
