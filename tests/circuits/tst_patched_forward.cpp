// The patched-forward engine (model/analysis/circuits/patched_forward.h) against the plain forward pass with the
// same substitution made outright by a hook (forward_hooks.h), which recomputes every layer and every
// position: for every hook point, single and several positions, whole and per-head, in batches of many
// runs, at the last position and an earlier one, on tiny-gpt2 (GPT-2, Conv1D weights) and stories260K
// (Llama: RMSNorm, rotary, SwiGLU, grouped-query attention, weights stored [out, in]), a random Qwen 3 (q/k norms) and
// a random Gemma 2 (post-norms, soft-caps, a window on even layers). Bitwise: a patch
// equal to the base changes nothing and computes nothing; resid_pre at layer 0 patched everywhere gives the
// other prompt's logits (also when the prompts share a prefix, so only later positions are rerun, and at
// S ≥ 64 with a rerun of fewer than 64 rows, where the Llama weights need the GEMM's row class).

#include "model/analysis/circuits/patched_forward.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/bitwise_equal.h"
#include "support/hf_llama_folder.h"
#include "support/llama_checkpoint.h"
#include "support/test_paths.h"

#include <QTemporaryDir>
#include <QtTest>
#include <random>

using namespace attnscope;
using namespace attnscope::test;

namespace {

std::shared_ptr<const Model> tinyGpt2() { return loadModel(testdata("tiny-gpt2")); }
std::shared_ptr<const Model> stories() {
    return loadModel(testdata("stories260K/stories260K.bin"), {}, LoadOptions{testdata("stories260K/tok512.bin")});
}
/// Llama with F16 matrices stored [out, in] (GGUF): with packed copies they switch to the GEMM's row class at
/// transposedKernelMinRows(W) = 2 rows on AVX-512 and AVX2, not at 64 as stories260K's float32 ones.
std::shared_ptr<const Model> tinyRandomF16() { return loadModel(testdata("llama/llama-2-tiny-random.gguf")); }
/// A random checkpoint of `spec` written once as an HF folder `name` (with tok512.bin) and opened.
std::shared_ptr<const Model> randomFolder(const QString& name, const LlamaSpec& spec, std::uint32_t seed) {
    static QTemporaryDir dir;
    const QString path = dir.filePath(name);
    if (!QFileInfo::exists(path + "/config.json"))
        writeHfLlamaFolder(randomLlama(spec, seed), path, Storage::F32, testdata("stories260K/tok512.bin"), "tokenizer.bin");
    return loadModel(path);
}
/// A random Qwen 3 (per-head q/k RMSNorm before RoPE, GQA, head_dim 16 ≠ 32 / 4).
std::shared_ptr<const Model> qwen3() { return randomFolder("qwen3", smallLlamaSpec("qwen3", 32, 4, 2, 16, 48), 5); }
/// A random Gemma 2 (post-norms, soft-caps that bind, window 3 on layer 0, query_pre_attn_scalar 4).
std::shared_ptr<const Model> gemma2() { return randomFolder("gemma2", smallGemma2Spec(), 6); }
/// A random Gemma 3 ((1 + w) q/k norms, six layers: window 3 and RoPE base 1e4 on the five sliding ones, 1e6 scaled by 8
/// on the global one): the patched runs rotate each layer by its own table.
std::shared_ptr<const Model> gemma3() { return randomFolder("gemma3", smallGemma3Spec(), 8); }

std::vector<int> randomTokens(int S, int vocab, unsigned seed) {
    std::mt19937 gen(seed);
    std::vector<int> t(static_cast<size_t>(S));
    for (int& x : t) x = int(gen() % unsigned(vocab));
    return t;
}

ActivationCache fullRun(const Model& model, const std::vector<int>& tokens, std::shared_ptr<const ForwardHooks> hooks = {}) {
    ForwardOptions o;
    o.cacheHeadResults = false;
    o.hooks = std::move(hooks);
    return runForward(model, tokens, o);
}

/// The reference: runForward with `patch` substituted outright by a hook; logits at `position`.
RowVector hookedLogits(const Model& model, const std::vector<int>& tokens, const ActivationPatch& patch, int position) {
    auto hooks = std::make_shared<ForwardHooks>();
    const int L = model.config().d_head;
    auto replace = [patch, L](int layer, Matrix& x) {
        if (layer != patch.layer) return;
        const Eigen::Index c0 = patch.head >= 0 ? Eigen::Index(patch.head) * L : 0;
        const Eigen::Index n = patch.head >= 0 ? L : x.cols();
        for (int i = 0; i < x.rows(); ++i)
            if (patch.positions.empty() || std::find(patch.positions.begin(), patch.positions.end(), i) != patch.positions.end())
                x.row(i).segment(c0, n) = patch.values->row(i).segment(c0, n);
    };
    switch (patch.hook) {
    case PatchHook::ResidPre: hooks->resid_pre = replace; break;
    case PatchHook::AttnOut: hooks->attn_out = replace; break;
    case PatchHook::MlpOut: hooks->mlp_out = replace; break;
    case PatchHook::Z: hooks->z = replace; break;
    case PatchHook::Q: hooks->q = replace; break;
    case PatchHook::K: hooks->k = replace; break;
    case PatchHook::V: hooks->v = replace; break;
    case PatchHook::Pattern:
        hooks->pattern = [patch](int layer, int head, Matrix& p) {
            if (layer != patch.layer || head != patch.head) return false;
            for (int i = 0; i < p.rows(); ++i)
                if (patch.positions.empty() || std::find(patch.positions.begin(), patch.positions.end(), i) != patch.positions.end())
                    p.row(i) = patch.values->row(i);
            return true;
        };
        break;
    }
    return positionLogits(model, fullRun(model, tokens, hooks), position);
}

double relativeError(const RowVector& a, const RowVector& b) {
    return double((a - b).cwiseAbs().maxCoeff()) / std::max(1e-6, double(b.cwiseAbs().maxCoeff()));
}

/// Every hook point at a few layers, heads and positions, as one batch, against the hooked forward.
/// Two patches: head 2's z in layer 0 from `clean`, and layer 1's attention frozen at `base` (attn_out replaced at
/// every position). Both caches must be full caches that outlive the patches.
std::vector<ActivationPatch> head2AndFrozenLayer1(const ActivationCache& clean, const ActivationCache& base) {
    ActivationPatch p;
    p.hook = PatchHook::Z;
    p.layer = 0;
    p.head = 2;
    p.values = &clean.stored(0).z;
    ActivationPatch freeze;
    freeze.hook = PatchHook::AttnOut;
    freeze.layer = 1;
    freeze.values = &base.stored(1).attn_out;
    return {p, freeze};
}

void checkAgainstHooked(const Model& model, int S, int position, double tolerance) {
    const ModelConfig& cfg = model.config();
    const std::vector<int> clean = randomTokens(S, cfg.d_vocab, 1), corrupt = randomTokens(S, cfg.d_vocab, 2);
    const ActivationCache cleanCache = fullRun(model, clean), base = fullRun(model, corrupt);
    const int t = position < 0 ? S - 1 : position;
    std::vector<PatchedRun> runs;
    for (PatchHook hook : {PatchHook::ResidPre, PatchHook::AttnOut, PatchHook::MlpOut, PatchHook::Z, PatchHook::Q, PatchHook::K,
                           PatchHook::V, PatchHook::Pattern})
        for (int layer : {0, cfg.n_layers - 1})
            for (const std::vector<int>& positions : {std::vector<int>{}, std::vector<int>{t}, std::vector<int>{1, t / 2}})
                for (int head : {-1, 1}) {
                    if (head < 0 && hook == PatchHook::Pattern) continue;
                    if (head >= 0 && !isHeadHook(hook)) continue;
                    ActivationPatch p;
                    p.hook = hook;
                    p.layer = layer;
                    p.head = head;
                    p.positions = positions;
                    p.values = &hookActivation(*cleanCache.layer(layer), hook, std::max(head, 0));
                    runs.push_back({{p}, {}});
                }
    const std::vector<PatchedResult> got = runPatched(model, base, runs, {position});
    QCOMPARE(got.size(), runs.size());
    int recomputed = 0;
    for (size_t i = 0; i < runs.size(); ++i) {
        const ActivationPatch& p = runs[i].patches[0];
        const RowVector want = hookedLogits(model, corrupt, p, t);
        const double err = relativeError(got[i].logits, want);
        QVERIFY2(err < tolerance, qPrintable(QStringLiteral("%1 L%2 head %3 at %4 positions: relative error %5")
                                                 .arg(patchHookName(p.hook)).arg(p.layer).arg(p.head)
                                                 .arg(p.positions.size()).arg(err)));
        if (got[i].firstLayer >= 0) {
            ++recomputed;
            QCOMPARE(got[i].firstLayer, p.layer);
        }
    }
    QVERIFY(recomputed > int(runs.size()) / 2); // most patches change something
}

/// resid_pre of layer 0 patched at every position from `source`: the source run's logits, bitwise.
void checkEverything(const Model& model, const std::vector<int>& source, const std::vector<int>& target) {
    const ActivationCache src = fullRun(model, source), base = fullRun(model, target);
    ActivationPatch p;
    p.hook = PatchHook::ResidPre;
    p.layer = 0;
    p.values = &src.layer(0)->resid_pre;
    const PatchedRun run{{p}, {}};
    const auto got = runPatched(model, base, std::span(&run, 1));
    ForwardOptions last;
    last.allLogits = false;
    const RowVector want = runForward(model, source, last).logits.row(0);
    QVERIFY(same(Matrix(got[0].logits), Matrix(want)));
    int firstDiff = 0;
    while (source[size_t(firstDiff)] == target[size_t(firstDiff)]) ++firstDiff;
    QCOMPARE(got[0].firstPosition, firstDiff); // only the positions from the first different token were rerun
}

} // namespace

class TestPatchedForward : public QObject {
    Q_OBJECT
private slots:
    void hooksThatChangeNothingChangeNothing() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        for (const auto& model : {tinyGpt2(), stories()}) {
            const std::vector<int> tokens = randomTokens(12, model->config().d_vocab, 3);
            auto hooks = std::make_shared<ForwardHooks>();
            hooks->resid_pre = hooks->q = hooks->k = hooks->v = hooks->z = hooks->attn_out = hooks->mlp_out = [](int, Matrix&) {};
            hooks->pattern = [](int, int, Matrix&) { return false; };
            const ActivationCache a = fullRun(*model, tokens), b = fullRun(*model, tokens, hooks);
            QVERIFY(same(a.logits, b.logits));
            for (int l = 0; l < model->config().n_layers; ++l) {
                QVERIFY(same(a.layers[size_t(l)].q_rot, b.layers[size_t(l)].q_rot));
                QVERIFY(same(a.layers[size_t(l)].z, b.layers[size_t(l)].z));
            }
        }
    }

    void patchingNothingIsTheBaseRunBitwise() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        for (const auto& model : {tinyGpt2(), stories(), tinyRandomF16(), qwen3(), gemma2(), gemma3()}) {
            const ModelConfig& cfg = model->config();
            const std::vector<int> tokens = randomTokens(10, cfg.d_vocab, 4);
            const ActivationCache base = fullRun(*model, tokens);
            std::vector<PatchedRun> runs;
            for (PatchHook hook : {PatchHook::ResidPre, PatchHook::Z, PatchHook::Pattern, PatchHook::MlpOut}) {
                ActivationPatch p;
                p.hook = hook;
                p.layer = cfg.n_layers - 1;
                p.head = hook == PatchHook::Pattern ? 0 : -1;
                p.values = &hookActivation(*base.layer(p.layer), hook, 0);
                runs.push_back({{p}, {}});
            }
            runs.push_back({}); // no patch at all
            ForwardOptions last;
            last.allLogits = false;
            const RowVector want = runForward(*model, tokens, last).logits.row(0);
            for (const PatchedResult& r : runPatched(*model, base, runs)) {
                QCOMPARE(r.firstLayer, -1);
                QVERIFY(same(Matrix(r.logits), Matrix(want)));
            }
        }
    }

    void patchingEverythingIsTheSourceRunBitwise() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        for (const auto& model : {tinyGpt2(), stories(), tinyRandomF16(), qwen3(), gemma2(), gemma3()}) {
            const int V = model->config().d_vocab;
            std::vector<int> a = randomTokens(14, V, 5), b = randomTokens(14, V, 6);
            b[0] = a[0];
            checkEverything(*model, a, b); // from position 1
            std::vector<int> c = a;
            c[9] = (a[9] + 1) % V;
            checkEverything(*model, a, c); // only positions 9..13 rerun
            c = a;
            c[13] = (a[13] + 1) % V;
            checkEverything(*model, a, c); // one row rerun: below every GEMM row class, padded into the pass's
        }
        // S ≥ 64 and a rerun of 6 rows: Llama's [out, in] weights must stay in the GEMM's row class
        const auto llama = stories();
        std::vector<int> a = randomTokens(80, llama->config().d_vocab, 7), b = a;
        b[74] = (a[74] + 3) % llama->config().d_vocab;
        checkEverything(*llama, a, b);
        checkEverything(*llama, b, a);
    }

    void equalsTheHookedForwardTinyGpt2() { ATTNSCOPE_REQUIRE_TESTDATA(); checkAgainstHooked(*tinyGpt2(), 12, -1, 1e-5); }
    void equalsTheHookedForwardAtAnEarlierPosition() { ATTNSCOPE_REQUIRE_TESTDATA(); checkAgainstHooked(*tinyGpt2(), 12, 7, 1e-5); }
    void equalsTheHookedForwardLlama() { ATTNSCOPE_REQUIRE_TESTDATA(); checkAgainstHooked(*stories(), 12, -1, 1e-5); }
    void equalsTheHookedForwardLlamaLong() { ATTNSCOPE_REQUIRE_TESTDATA(); checkAgainstHooked(*stories(), 70, 66, 1e-5); }
    void equalsTheHookedForwardLlamaF16() { ATTNSCOPE_REQUIRE_TESTDATA(); checkAgainstHooked(*tinyRandomF16(), 12, -1, 1e-5); }
    void equalsTheHookedForwardQwen3() { ATTNSCOPE_REQUIRE_TESTDATA(); checkAgainstHooked(*qwen3(), 12, -1, 1e-5); }
    void equalsTheHookedForwardGemma2() { ATTNSCOPE_REQUIRE_TESTDATA(); checkAgainstHooked(*gemma2(), 12, -1, 1e-5); }
    void equalsTheHookedForwardGemma3() { ATTNSCOPE_REQUIRE_TESTDATA(); checkAgainstHooked(*gemma3(), 12, -1, 1e-5); }

    void capturesTheReceiversInputs() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto model = stories();
        const ModelConfig& cfg = model->config();
        const std::vector<int> clean = randomTokens(11, cfg.d_vocab, 8), corrupt = randomTokens(11, cfg.d_vocab, 9);
        const ActivationCache cleanCache = fullRun(*model, clean), base = fullRun(*model, corrupt);
        const PatchedRun run{head2AndFrozenLayer1(cleanCache, base), {{PatchHook::Q, 2, 3}, {PatchHook::K, 1, 5}, {PatchHook::V, 0, 1}}};
        const auto got = runPatched(*model, base, std::span(&run, 1));
        // reference: the same substitutions by hooks, reading q/k/v where they are computed
        auto hooks = std::make_shared<ForwardHooks>();
        const int L = cfg.d_head;
        Matrix q2, k1, v0;
        hooks->z = [&](int l, Matrix& z) {
            if (l == 0) z.middleCols(2 * L, L) = cleanCache.layer(0)->z.middleCols(2 * L, L);
        };
        hooks->attn_out = [&](int l, Matrix& a) {
            if (l == 1) a = base.layer(1)->attn_out;
        };
        hooks->q = [&](int l, Matrix& q) {
            if (l == 2) q2 = q.middleCols(3 * L, L);
        };
        hooks->k = [&](int l, Matrix& k) {
            if (l == 1) k1 = k.middleCols(5 * L, L);
        };
        hooks->v = [&](int l, Matrix& v) {
            if (l == 0) v0 = v.middleCols(1 * L, L);
        };
        const RowVector want = positionLogits(*model, fullRun(*model, corrupt, hooks), 10);
        QVERIFY(relativeError(got[0].logits, want) < 1e-5);
        QCOMPARE(int(got[0].captured.size()), 3);
        QVERIFY((got[0].captured[0] - q2).cwiseAbs().maxCoeff() < 1e-5f);
        QVERIFY((got[0].captured[1] - k1).cwiseAbs().maxCoeff() < 1e-5f);
        QVERIFY(same(got[0].captured[2], v0)); // before the patched head's layer: the base's
        QVERIFY(!same(got[0].captured[0], base.layer(2)->q.middleCols(3 * L, L)));
    }

    /// Qwen 3's q/k norms on the capture path that skips a layer's attention: layer 1's attn_out is frozen, and
    /// its q (head 3) and k (head 1, K/V head 0) are captured from the run's own resid_pre, through q_norm/k_norm.
    void capturesThroughQkNorms() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto model = qwen3();
        const ModelConfig& cfg = model->config();
        const std::vector<int> clean = randomTokens(9, cfg.d_vocab, 8), corrupt = randomTokens(9, cfg.d_vocab, 9);
        const ActivationCache cleanCache = fullRun(*model, clean), base = fullRun(*model, corrupt);
        const PatchedRun run{head2AndFrozenLayer1(cleanCache, base), {{PatchHook::Q, 1, 3}, {PatchHook::K, 1, 1}}};
        const auto got = runPatched(*model, base, std::span(&run, 1));
        auto hooks = std::make_shared<ForwardHooks>();
        const int L = cfg.d_head;
        Matrix q, k;
        hooks->z = [&](int l, Matrix& z) {
            if (l == 0) z.middleCols(2 * L, L) = cleanCache.layer(0)->z.middleCols(2 * L, L);
        };
        hooks->q = [&](int l, Matrix& m) {
            if (l == 1) q = m.middleCols(3 * L, L);
        };
        hooks->k = [&](int l, Matrix& m) {
            if (l == 1) k = m.middleCols(1 * L, L);
        };
        hooks->attn_out = [&](int l, Matrix& a) {
            if (l == 1) a = base.layer(1)->attn_out;
        };
        const RowVector want = positionLogits(*model, fullRun(*model, corrupt, hooks), 8);
        QVERIFY(relativeError(got[0].logits, want) < 1e-5);
        QCOMPARE(int(got[0].captured.size()), 2);
        QVERIFY((got[0].captured[0] - q).cwiseAbs().maxCoeff() < 1e-5f);
        QVERIFY((got[0].captured[1] - k).cwiseAbs().maxCoeff() < 1e-5f);
        QVERIFY(!same(got[0].captured[0], base.layer(1)->q.middleCols(3 * L, L)));
    }

    void rejectsBadPatches() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto model = tinyGpt2();
        const ActivationCache base = fullRun(*model, randomTokens(6, model->config().d_vocab, 10));
        ActivationPatch p;
        p.hook = PatchHook::Z;
        p.layer = 7;
        p.values = &base.layer(0)->z;
        const auto expectError = [&](const ActivationPatch& patch, const char* words) {
            const PatchedRun run{{patch}, {}};
            try {
                runPatched(*model, base, std::span(&run, 1));
                QFAIL("no error");
            } catch (const InputError& e) {
                QVERIFY2(e.message().contains(QString::fromUtf8(words)), qPrintable(e.message()));
            }
        };
        expectError(p, "layers 0..1");
        p.layer = 0;
        p.head = 9;
        expectError(p, "heads 0..3");
        p.head = 0;
        p.positions = {6};
        expectError(p, "positions 0..5");
        p.positions = {};
        p.values = &base.layer(0)->resid_pre; // right width by chance? d_model = n_heads·d_head here, so use pattern
        p.hook = PatchHook::Pattern;
        expectError(p, "6×64");
    }
};

QTEST_GUILESS_MAIN(TestPatchedForward)
#include "tst_patched_forward.moc"
