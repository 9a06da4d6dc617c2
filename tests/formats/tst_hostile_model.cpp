// Hostile input at the model level: the memory guard (cache size estimate against a hand count and
// against a real cache, budget decisions and their messages, runForward under a forced budget),
// truncation to n_ctx, awkward prompts with the real GPT-2 tokenizer (empty, whitespace only,
// control characters, right-to-left, emoji, combining marks, a 100 KB paste), and a model with
// NaN/Inf weights (it loads and runs; nonFiniteWeights names the tensor).

#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/formats/safetensors_file.h"
#include "model/tokenizers/gpt2_bpe_tokenizer.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "model/transformer/prompt_truncation.h"
#include "model/transformer/weight_checks.h"
#include "tests/support/safetensors_writer.h"
#include "tests/support/test_paths.h"
#include "tests/support/time_scale.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>
#include <cstring>
#include <limits>

using namespace attnscope;
using namespace attnscope::test;

namespace {

QString tiny() { return testdata(QStringLiteral("tiny-gpt2")); }

/// Bytes actually held by a cache's matrices (what estimateCacheBytes predicts, minus working memory).
qint64 cacheBytes(const ActivationCache& c) {
    qint64 n = c.embed.size() + c.pos_embed.size() + c.ln_final.size() + c.ln_final_scale.size() + c.logits.size();
    for (const LayerCache& l : c.layers) {
        n += l.resid_pre.size() + l.ln1.size() + l.q.size() + l.k.size() + l.v.size() + l.z.size() + l.attn_out.size() +
             l.resid_mid.size() + l.ln2.size() + l.mlp_pre.size() + l.mlp_post.size() + l.mlp_out.size() + l.resid_post.size();
        for (const Matrix& m : l.attn_scores) n += m.size();
        for (const Matrix& m : l.pattern) n += m.size();
        for (const Matrix& m : l.result) n += m.size();
    }
    return n * qint64(sizeof(float));
}

/// Sets an environment variable for the scope of one test.
struct ScopedEnv {
    QByteArray name;
    ScopedEnv(const char* n, const QByteArray& value) : name(n) { qputenv(n, value); }
    ~ScopedEnv() { qunsetenv(name.constData()); }
};

std::unique_ptr<Gpt2BpeTokenizer> gpt2() {
    return Gpt2BpeTokenizer::fromVocabAndMerges(testdata(QStringLiteral("gpt2-tokenizer/encoder.json")),
                                                testdata(QStringLiteral("gpt2-tokenizer/vocab.bpe")));
}

} // namespace

class TestHostileModel : public QObject {
    Q_OBJECT
private:
    std::shared_ptr<const Model> tiny_ = testdataAvailable() ? loadModel(tiny()) : nullptr;
    std::unique_ptr<Gpt2BpeTokenizer> gpt2_ = testdataAvailable() ? gpt2() : nullptr;
    QTemporaryDir tmp_;

private slots:
    void estimateMatchesHandCount() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // tiny-gpt2: n_layers 2, n_heads 4, d_model 64, d_head 16, d_mlp 256, d_vocab 512; S = 10
        const ModelConfig& cfg = tiny_->config();
        ForwardOptions opt;
        const CacheEstimate e = estimateCacheBytes(cfg, 10, opt);
        QCOMPARE(e.patternBytes, qint64(2 * 2 * 4 * 10 * 10 * 4));  // scores + pattern
        QCOMPARE(e.headResultBytes, qint64(2 * 4 * 10 * 64 * 4));
        QCOMPARE(e.otherBytes, qint64((2 * (7 * 10 * 64 + 4 * 10 * 64 + 2 * 10 * 256) + 3 * 10 * 64 + 10 + 10 * 512) * 4));
        QCOMPARE(e.workingBytes, qint64((4 * 10 * 10 + 2 * 10 * 256) * 4));
        QCOMPARE(e.total(), qint64(174440));
        QCOMPARE(e.totalWithoutHeadResults(), qint64(174440 - 20480));
        opt.cacheHeadResults = false;
        opt.allLogits = false;
        const CacheEstimate lean = estimateCacheBytes(cfg, 10, opt);
        QCOMPARE(lean.headResultBytes, qint64(0));
        QCOMPARE(lean.otherBytes, e.otherBytes - qint64(9 * 512 * 4)); // logits for the last position only
    }

    void estimateMatchesRealCache_data() {
        QTest::addColumn<bool>("headResults");
        QTest::addColumn<bool>("allLogits");
        QTest::newRow("everything") << true << true;
        QTest::newRow("no head results") << false << true;
        QTest::newRow("last logits only") << true << false;
    }

    void estimateMatchesRealCache() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(bool, headResults);
        QFETCH(bool, allLogits);
        ForwardOptions opt;
        opt.cacheHeadResults = headResults;
        opt.allLogits = allLogits;
        const std::vector<int> ids = tokenizePrompt(tiny_->tokenizer(), QStringLiteral("The cat sat on the mat and purred."), true);
        const ActivationCache cache = runForward(*tiny_, ids, opt);
        const CacheEstimate e = estimateCacheBytes(tiny_->config(), int(ids.size()), opt);
        QCOMPARE(cacheBytes(cache), e.total() - e.workingBytes);
    }

    void estimateNeverOverflows() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        ModelConfig huge = tiny_->config();
        huge.n_layers = huge.n_heads = huge.d_model = huge.d_mlp = huge.d_vocab = std::numeric_limits<int>::max();
        const CacheEstimate e = estimateCacheBytes(huge, std::numeric_limits<int>::max(), ForwardOptions{});
        QCOMPARE(e.total(), std::numeric_limits<qint64>::max());
        QCOMPARE(estimateCacheBytes(huge, -5, ForwardOptions{}).patternBytes, qint64(0));
        // GPT-2 small at its full context: 2 × 12 × 12 × 1024² floats of patterns = 1.125 GiB
        ModelConfig gpt2Small = tiny_->config();
        gpt2Small.n_layers = gpt2Small.n_heads = 12;
        gpt2Small.d_model = 768;
        gpt2Small.d_head = 64;
        QCOMPARE(estimateCacheBytes(gpt2Small, 1024, ForwardOptions{}).patternBytes, qint64(1207959552));
    }

    void planKeepsDropsOrRefuses() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const ModelConfig& cfg = tiny_->config();
        const ForwardOptions opt;
        QVERIFY(planCache(cfg, 10, opt, -1).cacheHeadResults);      // unknown memory: no limit
        QVERIFY(planCache(cfg, 10, opt, 174440).cacheHeadResults);  // exactly fits
        const CachePlan dropped = planCache(cfg, 10, opt, 174439);
        QVERIFY(!dropped.cacheHeadResults);
        QCOMPARE(dropped.budget, qint64(174439));
        QVERIFY(!planCache(cfg, 10, opt, 174440 - 20480).cacheHeadResults);
        QVERIFY(!planCache(cfg, 10, opt, 174440 - 20480).residualsOnly);
        // below that: only the residual streams (per layer 5·S·D + S·H·L floats) plus one recomputed layer
        const CacheEstimate e = estimateCacheBytes(cfg, 10, opt);
        QCOMPARE(e.residualBytes, qint64((2 * (5 * 10 * 64 + 10 * 64) + 3 * 10 * 64 + 10 + 10 * 512) * 4));
        QCOMPARE(e.layerBytes, qint64((2 * 4 * 10 * 10 + 7 * 10 * 64 + 4 * 10 * 64 + 2 * 10 * 256) * 4));
        QCOMPARE(e.layerHeadResultBytes, qint64(4 * 10 * 64 * 4));
        const qint64 oneLayer = e.residualBytes + e.workingBytes + e.layerBytes + e.layerHeadResultBytes;
        QCOMPARE(e.residualsOnlyTotal(1, true), oneLayer);
        const CachePlan lean = planCache(cfg, 10, opt, 174440 - 20481);
        QVERIFY(lean.residualsOnly && lean.cacheHeadResults);
        QCOMPARE(lean.recomputedLayers, 1); // a second full layer does not fit
        QCOMPARE(planCache(cfg, 10, opt, oneLayer).recomputedLayers, 1);
        QVERIFY(!planCache(cfg, 10, opt, oneLayer - 1).cacheHeadResults); // only without head results
        QVERIFY(planCache(cfg, 10, opt, oneLayer - 1).residualsOnly);
        QCOMPARE(planCache(cfg, 10, opt, -1).recomputedLayers, 0);        // full: nothing recomputed
        ForwardOptions forced;
        forced.residualsOnly = true;
        QCOMPARE(planCache(cfg, 10, forced, -1).recomputedLayers, 4);
        QVERIFY(planCache(cfg, 10, forced, -1).residualsOnly);
        const qint64 tooSmall = e.residualsOnlyTotal(1, false) - 1;
        // the message says where the budget came from
        for (const QString& origin : {QStringLiteral("half of MemAvailable in /proc/meminfo"), QStringLiteral("set by ATTNSCOPE_MEMORY_BUDGET")})
            try {
                planCache(cfg, 10, opt, CacheBudget{tooSmall, origin});
                QFAIL("no InputError");
            } catch (const InputError& err) {
                QCOMPARE(err.message(), QStringLiteral("The activation cache for 10 tokens would need %1 of memory even keeping "
                                                       "only the residual streams (the full cache: %2, attention patterns alone: "
                                                       "%3), but the budget is %4 (%5). Use a shorter prompt.")
                                            .arg(formatBytes(tooSmall + 1), formatBytes(153960), formatBytes(6400),
                                                 formatBytes(tooSmall), origin));
            }
        try { // a plain number: the origin of this process' budget
            planCache(cfg, 10, opt, tooSmall);
            QFAIL("no InputError");
        } catch (const InputError& err) {
            QVERIFY2(err.message().endsWith(QStringLiteral("(%1). Use a shorter prompt.").arg(cacheBudgetOrigin())), qPrintable(err.message()));
        }
        QCOMPARE(formatBytes(1536 * 1024), QStringLiteral("1.5 MB"));
    }

    /// Where the available memory comes from, on made-up /proc/meminfo and cgroup files.
    void availableMemorySources() {
        QTemporaryDir dir;
        const QString meminfo = dir.filePath("meminfo"), cgroup = dir.filePath("cgroup");
        QVERIFY(QDir().mkpath(cgroup));
        const auto write = [](const QString& path, const QByteArray& text) {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text) == text.size());
        };
        AvailableMemory m = availableMemory(meminfo, cgroup); // neither
        QCOMPARE(m.bytes, qint64(-1));
        QCOMPARE(m.source, QString());
        write(meminfo, "MemTotal:        8000 kB\nMemFree:         1000 kB\nMemAvailable:    3000 kB\n");
        m = availableMemory(meminfo, cgroup);
        QCOMPARE(m.bytes, qint64(3000 * 1024));
        QCOMPARE(m.source, QStringLiteral("MemAvailable in %1").arg(meminfo));
        write(cgroup + "/memory.max", "max\n"); // no limit
        write(cgroup + "/memory.current", "1000000\n");
        QCOMPARE(availableMemory(meminfo, cgroup).source, QStringLiteral("MemAvailable in %1").arg(meminfo));
        write(cgroup + "/memory.max", "5000000\n"); // 4 MB free in the cgroup: more than MemAvailable
        QCOMPARE(availableMemory(meminfo, cgroup).bytes, qint64(3000 * 1024));
        write(cgroup + "/memory.max", "2000000\n"); // 1 MB free: the cgroup's limit
        m = availableMemory(meminfo, cgroup);
        QCOMPARE(m.bytes, qint64(1000000));
        QCOMPARE(m.source, QStringLiteral("the cgroup's memory.max − memory.current in %1").arg(cgroup));
        QVERIFY(QFile::remove(meminfo)); // the cgroup alone
        QCOMPARE(availableMemory(meminfo, cgroup).bytes, qint64(1000000));
    }

    void availableMemoryIsPlausible() {
        QFile f(QStringLiteral("/proc/meminfo"));
        if (!f.open(QIODevice::ReadOnly)) QSKIP("no /proc/meminfo");
        const QByteArray text = f.readAll();
        const qsizetype i = text.indexOf("MemTotal:");
        QVERIFY(i >= 0);
        const qint64 totalKb = text.mid(i + 9, text.indexOf('\n', i) - i - 9).replace("kB", "").trimmed().toLongLong();
        const qint64 available = availableMemoryBytes();
        QVERIFY2(available > 0 && available <= totalKb * 1024, qPrintable(QString::number(available)));
        const CacheBudget budget = cacheBudget(0.5);
        QVERIFY(budget.bytes > 0 && budget.bytes <= totalKb * 512);
        // MemAvailable, or the cgroup's free memory when that is less (in a container)
        const AvailableMemory m = availableMemory();
        QVERIFY2(m.source == QStringLiteral("MemAvailable in /proc/meminfo") ||
                     m.source == QStringLiteral("the cgroup's memory.max − memory.current in /sys/fs/cgroup"),
                 qPrintable(m.source));
        QCOMPARE(budget.origin, QStringLiteral("half of ") + m.source);
        QCOMPARE(cacheBudgetOrigin(), budget.origin);
        {
            const ScopedEnv env("ATTNSCOPE_MEMORY_BUDGET", "12345");
            QCOMPARE(cacheBudgetBytes(), qint64(12345));
            QCOMPARE(cacheBudget().origin, QStringLiteral("set by ATTNSCOPE_MEMORY_BUDGET"));
            QCOMPARE(memoryBudgetError(), QString());
            QCOMPARE(cacheBudgetOrigin(), QStringLiteral("set by ATTNSCOPE_MEMORY_BUDGET"));
        }
        {
            const ScopedEnv env("ATTNSCOPE_MEMORY_BUDGET", ""); // empty is unset, as for ATTNSCOPE_ISA
            QCOMPARE(memoryBudgetError(), QString());
            QCOMPARE(cacheBudgetOrigin(), budget.origin);
        }
        // a value that is not a positive integer is an error, never ignored
        for (const char* bad : {"abc", "0", "-5", "4G"}) {
            const ScopedEnv env("ATTNSCOPE_MEMORY_BUDGET", bad);
            const QString expected = QStringLiteral("ATTNSCOPE_MEMORY_BUDGET=%1 is not a number of bytes: give a positive "
                                                    "integer, e.g. ATTNSCOPE_MEMORY_BUDGET=4000000000 for 4 GB, or unset "
                                                    "it for half of the available memory.").arg(bad);
            QCOMPARE(memoryBudgetError(), expected);
            try {
                cacheBudgetBytes();
                QFAIL(qPrintable(QStringLiteral("no InputError for '%1'").arg(bad)));
            } catch (const InputError& e) {
                QCOMPARE(e.message(), expected);
            }
        }
    }

    void runForwardUnderABudget() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const std::vector<int> ids = tokenizePrompt(tiny_->tokenizer(), QStringLiteral("one two three four five six"), true);
        const int S = int(ids.size());
        const ActivationCache full = runForward(*tiny_, ids);
        QCOMPARE(int(full.layers[1].result.size()), 4);
        const CacheEstimate e = estimateCacheBytes(tiny_->config(), S, ForwardOptions{});
        {
            // fits only without the per-head results: they are dropped, everything else is identical
            const ScopedEnv env("ATTNSCOPE_MEMORY_BUDGET", QByteArray::number(e.totalWithoutHeadResults()));
            const ActivationCache lean = runForward(*tiny_, ids);
            QVERIFY(lean.layers[0].result.empty() && lean.layers[1].result.empty());
            QCOMPARE(lean.layers[1].pattern[3], full.layers[1].pattern[3]);
            QCOMPARE(lean.logits, full.logits);
        }
        {
            const ScopedEnv env("ATTNSCOPE_MEMORY_BUDGET", "1000");
            try {
                runForward(*tiny_, ids);
                QFAIL("no InputError");
            } catch (const InputError& err) {
                QVERIFY2(err.message().startsWith(QStringLiteral("The activation cache for %1 tokens would need %2 ")
                                                      .arg(S).arg(formatBytes(e.residualsOnlyTotal(1, false)))),
                         qPrintable(err.message()));
                QVERIFY2(err.message().contains(QStringLiteral("the budget is %1 (set by ATTNSCOPE_MEMORY_BUDGET). Use a shorter "
                                                               "prompt.").arg(formatBytes(1000))),
                         qPrintable(err.message()));
            }
        }
    }

    void truncation_data() {
        QTest::addColumn<std::vector<int>>("ids");
        QTest::addColumn<int>("nCtx");
        QTest::addColumn<bool>("keepFirst");
        QTest::addColumn<std::vector<int>>("expected");
        const std::vector<int> five{9, 1, 2, 3, 4};
        QTest::newRow("fits") << five << 5 << true << five;
        QTest::newRow("last 3") << five << 3 << false << std::vector<int>{2, 3, 4};
        QTest::newRow("BOS + last 2") << five << 3 << true << std::vector<int>{9, 3, 4};
        QTest::newRow("n_ctx 1 keeps the last") << five << 1 << true << std::vector<int>{4};
        QTest::newRow("n_ctx 0") << five << 0 << true << std::vector<int>{};
        QTest::newRow("empty") << std::vector<int>{} << 4 << true << std::vector<int>{};
    }

    void truncation() {
        QFETCH(std::vector<int>, ids);
        QFETCH(int, nCtx);
        QFETCH(bool, keepFirst);
        QFETCH(std::vector<int>, expected);
        QCOMPARE(attnscope::keepLastTokens(ids, nCtx, keepFirst), expected);
    }

    void awkwardPrompts_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("joined"); // the labels without BOS, concatenated ("" = not checked)
        QTest::newRow("empty") << QString() << QString();
        QTest::newRow("whitespace only") << QStringLiteral("   \t\n ") << QStringLiteral("␣␣␣→↵␣");
        QTest::newRow("control chars") << QStringLiteral("a\x01\x7f\r\nb") << QStringLiteral("a\\x01\\x7F\\x0D↵b");
        QTest::newRow("right-to-left") << QStringLiteral("שלום עולם") << QString();
        QTest::newRow("emoji") << QStringLiteral("hi 🙂👩‍👩‍👧") << QString();
        QTest::newRow("combining marks") << QStringLiteral("e\u0301 Z\u0351\u0352a\u0300") << QString();
        QTest::newRow("lone surrogate") << (QStringLiteral("x") + QChar(0xD800) + QStringLiteral("y")) << QString();
    }

    void awkwardPrompts() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QString, text);
        QFETCH(QString, joined);
        const std::vector<int> ids = tokenizePrompt(*gpt2_, text, true);
        QCOMPARE(ids.front(), 50256);
        QString expected = text; // lossless, except that a lone surrogate is encoded as U+FFFD
        expected.replace(QChar(0xD800), QChar(QChar::ReplacementCharacter));
        QCOMPARE(gpt2_->decode(std::span(ids).subspan(1)), expected);
        const QStringList shown = tokenLabels(*gpt2_, ids);
        QCOMPARE(shown.size(), qsizetype(ids.size()));
        for (const QString& label : shown) {
            QVERIFY(!label.isEmpty());
            for (QChar c : label) // a label never carries a raw control character or newline
                QVERIFY2(c.category() != QChar::Other_Control, qPrintable(label));
        }
        if (!joined.isEmpty()) QCOMPARE(shown.mid(1).join(QString()), joined);
        // every token the model sees decodes to text or to byte escapes, and the prompt runs on a model
        const std::vector<int> tinyIds = tokenizePrompt(tiny_->tokenizer(), text, true);
        const ActivationCache c = runForward(*tiny_, keepLastTokens(tinyIds, tiny_->config().n_ctx, true));
        QVERIFY(c.logits.allFinite());
    }

    void emptyPromptWithoutBosIsAClearError() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        try {
            runForward(*tiny_, tokenizePrompt(tiny_->tokenizer(), QString(), false));
            QFAIL("no InputError");
        } catch (const InputError& e) {
            QCOMPARE(e.message(), QStringLiteral("The prompt is empty: there are no tokens to run."));
        }
    }

    void hundredKilobytePaste() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QString text;
        const QString line = QStringLiteral("Lorem ipsum dolor sit amet, שלום 🙂 e\u0301 12345 — ");
        while (text.toUtf8().size() < 100 * 1024) text += line;
        QElapsedTimer timer;
        timer.start();
        const std::vector<int> ids = tokenizePrompt(*gpt2_, text, true);
        const qint64 ms = timer.elapsed();
        qInfo("100 KB prompt: %zu GPT-2 tokens in %lld ms", ids.size(), ms);
        QVERIFY(ms < 10000 * kTimeScale);
        QVERIFY(ids.size() > 20000);
        QCOMPARE(gpt2_->decode(std::span(ids).subspan(1)), text);
        // too long for any context: a clear message, or the last n_ctx tokens when the user chooses
        const std::vector<int> tinyIds = tokenizePrompt(tiny_->tokenizer(), text, true);
        try {
            runForward(*tiny_, tinyIds);
            QFAIL("no InputError");
        } catch (const InputError& e) {
            QVERIFY2(e.message().startsWith(QStringLiteral("The prompt has %1 tokens but the model's context (n_ctx) is 64 tokens.")
                                                .arg(tinyIds.size())),
                     qPrintable(e.message()));
        }
        const std::vector<int> kept = keepLastTokens(tinyIds, 64, true);
        const ActivationCache c = runForward(*tiny_, kept);
        QCOMPARE(c.nPositions(), 64);
        QCOMPARE(c.tokens.front(), 511); // BOS kept
        QCOMPARE(c.tokens.back(), tinyIds.back());
    }

    void nanAndInfWeightsLoadAndAreNamed() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QCOMPARE(nonFiniteWeights(*tiny_), QStringList{});
        const QString dir = tmp_.filePath(QStringLiteral("nan"));
        QDir().mkpath(dir);
        copyFiles(tiny(), dir, {QStringLiteral("config.json"), QStringLiteral("vocab.json"), QStringLiteral("merges.txt")});
        QByteArray bytes = readFile(tiny() + QStringLiteral("/model.safetensors"));
        const SafetensorsHeader h = parseSafetensorsHeader(bytes, bytes.size(), QStringLiteral("model.safetensors"));
        auto poke = [&](const QString& name, qint64 index, float value) {
            for (const SafetensorsTensor& t : h.tensors)
                if (t.name == name) std::memcpy(bytes.data() + h.dataOffset + t.begin + index * 4, &value, 4);
        };
        poke(QStringLiteral("h.0.attn.c_attn.weight"), 0, std::numeric_limits<float>::quiet_NaN()); // W_Q[0][0]
        poke(QStringLiteral("h.1.mlp.c_fc.bias"), 3, std::numeric_limits<float>::infinity());
        writeFile(dir + QStringLiteral("/model.safetensors"), bytes);

        const auto model = loadModel(dir); // loads: NaN/Inf are valid float values
        QCOMPARE(nonFiniteWeights(*model), (QStringList{"blocks.0.attn.W_Q", "blocks.1.mlp.b_in"}));
        QCOMPARE(nonFiniteWeights(*model, 1), QStringList{"blocks.0.attn.W_Q"});
        const ActivationCache c = runForward(*model, tokenizePrompt(model->tokenizer(), QStringLiteral("The cat"), true));
        QVERIFY(!c.logits.allFinite());
        QVERIFY(std::isnan(c.layers[0].pattern[0](1, 0))); // head 0 reads q column 0
        QVERIFY(c.layers[0].pattern[1].allFinite());       // the other heads are untouched in layer 0
    }
};

QTEST_GUILESS_MAIN(TestHostileModel)
#include "tst_hostile_model.moc"
