// Path patching (model/analysis/circuits/path_patching.h) against its definition run with two hooked forward passes
// (every head but the sender frozen at the base run's z, the receivers' inputs read where they are computed,
// then written into a fresh base run), on tiny-gpt2 and stories260K (grouped-query attention: a receiver's
// k is its own copy of the shared K/V head); the logits receiver of a last-layer sender is the sender's
// activation patching; parsing of heads and receivers.

#include "model/analysis/circuits/path_patching.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/test_paths.h"

#include <QtTest>
#include <random>

using namespace attnscope;
using namespace attnscope::test;

namespace {

std::vector<int> randomTokens(int S, int vocab, unsigned seed) {
    std::mt19937 gen(seed);
    std::vector<int> t(static_cast<size_t>(S));
    for (int& x : t) x = int(gen() % unsigned(vocab));
    return t;
}

/// The definition, with hooks: the metric through `receivers` together (their q/k/v inputs; or the logits
/// when the only receiver is "logits") of sender `s`.
double byHooks(const Model& model, const PatchingRuns& runs, const HeadId& s, const std::vector<PathReceiver>& receivers,
               const PathPatchingOptions& o) {
    const ModelConfig& cfg = model.config();
    const int L = cfg.d_head;
    const ActivationCache& base = *runs.corrupt;
    const ActivationCache& source = *runs.clean;
    const std::vector<int>& tokens = base.tokens;
    const int last = int(tokens.size()) - 1;
    std::vector<Matrix> recorded(receivers.size());
    auto hooksFor = [&](bool write) {
        auto h = std::make_shared<ForwardHooks>();
        for (PathReceiver::Input input : {PathReceiver::Input::Q, PathReceiver::Input::K, PathReceiver::Input::V}) {
            auto fn = [&, input, write](int l, Matrix& x) {
                for (size_t r = 0; r < receivers.size(); ++r)
                    if (receivers[r].input == input && receivers[r].layer == l) {
                        auto cols = x.middleCols(receivers[r].head * L, L);
                        if (write) cols = recorded[r];
                        else recorded[r] = cols;
                    }
            };
            (input == PathReceiver::Input::Q ? h->q : input == PathReceiver::Input::K ? h->k : h->v) = fn;
        }
        return h;
    };
    auto step2 = hooksFor(false);
    step2->z = [&](int l, Matrix& z) {
        if (l == s.layer) z.middleCols(s.head * L, L) = source.layer(l)->z.middleCols(s.head * L, L);
        if (l > s.layer) z = base.layer(l)->z; // every other head frozen
    };
    ForwardOptions f;
    f.cacheHeadResults = false;
    f.hooks = step2;
    const ActivationCache two = runForward(model, tokens, f);
    const RowVector cleanLogits = positionLogits(model, source, last);
    if (receivers.size() == 1 && receivers[0].input == PathReceiver::Input::Logits)
        return patchingMetricValue(o.metric, positionLogits(model, two, last), cleanLogits);
    f.hooks = hooksFor(true);
    return patchingMetricValue(o.metric, positionLogits(model, runForward(model, tokens, f), last), cleanLogits);
}

void checkModel(const Model& model) {
    const ModelConfig& cfg = model.config();
    const std::vector<int> clean = randomTokens(12, cfg.d_vocab, 21), corrupt = randomTokens(12, cfg.d_vocab, 22);
    const PatchingRuns runs = preparePatchingRuns(model, clean, corrupt);
    PathPatchingOptions o;
    o.metric.kind = PatchingMetricKind::KL;
    const int last = cfg.n_layers - 1;
    o.receivers = {{PathReceiver::Input::Q, last, 1}, {PathReceiver::Input::K, last, 2}, {PathReceiver::Input::V, 1, 0}, {}};
    const PathPatchingResult r = runPathPatching(model, runs, o);
    QCOMPARE(int(r.metric.rows()), cfg.n_layers * cfg.n_heads);
    QCOMPARE(int(r.metric.cols()), 5); // three head receivers, logits, all heads
    QCOMPARE(r.columns.last(), QStringLiteral("all heads"));
    int compared = 0;
    for (int i = 0; i < r.metric.rows(); ++i) {
        const HeadId s = r.options.senders[size_t(i)];
        for (int c = 0; c < 4; ++c) {
            const PathReceiver& rc = o.receivers[size_t(c)];
            if (rc.input != PathReceiver::Input::Logits && rc.layer <= s.layer) {
                QVERIFY(std::isnan(r.metric(i, c)));
                continue;
            }
            const double want = byHooks(model, runs, s, {rc}, o);
            QVERIFY2(std::abs(r.metric(i, c) - want) <= 1e-5 + 1e-4 * std::abs(want),
                     qPrintable(QStringLiteral("%1 → %2: %3, by hooks %4").arg(headIdName(s), pathReceiverName(rc))
                                    .arg(r.metric(i, c)).arg(want)));
            ++compared;
        }
    }
    QVERIFY(compared >= cfg.n_heads * 3);
    for (int i = 0; i < r.metric.rows(); ++i) { // all head receivers at once (those after the sender)
        const HeadId s = r.options.senders[size_t(i)];
        std::vector<PathReceiver> after;
        for (int c = 0; c < 3; ++c)
            if (o.receivers[size_t(c)].layer > s.layer) after.push_back(o.receivers[size_t(c)]);
        if (after.empty()) {
            QVERIFY(std::isnan(r.metric(i, 4)));
            continue;
        }
        const double want = byHooks(model, runs, s, after, o);
        QVERIFY2(std::abs(r.metric(i, 4) - want) <= 1e-5 + 1e-4 * std::abs(want), qPrintable(headIdName(s)));
    }
    // a sender in the last layer reaches the logits only directly: its activation patching
    PatchingOptions z;
    z.hook = PatchHook::Z;
    z.metric = o.metric;
    const PatchingSweep sweep = runPatchingSweep(model, runs, z);
    for (const PatchingCell& c : sweep.cells)
        if (c.layer == last) QCOMPARE(r.metric(c.layer * cfg.n_heads + c.head, 3), c.metric);
}

} // namespace

class TestPathPatching : public QObject {
    Q_OBJECT
private slots:
    void tinyGpt2() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        checkModel(*loadModel(testdata("tiny-gpt2")));
    }
    void stories260K() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        checkModel(*loadModel(testdata("stories260K/stories260K.bin"), {}, LoadOptions{testdata("stories260K/tok512.bin")}));
    }

    void parsesHeadsAndReceivers() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto model = loadModel(testdata("tiny-gpt2"));
        const ModelConfig& cfg = model->config();
        const std::vector<HeadId> h = parseHeadList(cfg, QStringLiteral("0.1, L1H3"));
        QCOMPARE(int(h.size()), 2);
        QVERIFY((h[0] == HeadId{0, 1}) && (h[1] == HeadId{1, 3}));
        const std::vector<PathReceiver> r = parseReceiverList(cfg, QStringLiteral("1.2.k,logits,L1H0.v"));
        QCOMPARE(int(r.size()), 3);
        QCOMPARE(pathReceiverName(r[0]), QStringLiteral("L1H2.k"));
        QCOMPARE(pathReceiverName(r[1]), QStringLiteral("logits"));
        QCOMPARE(pathReceiverName(r[2]), QStringLiteral("L1H0.v"));
        for (const char* bad : {"2.0", "0.4", "x", "1.2.z", ""}) {
            bool threw = false;
            try {
                if (std::strcmp(bad, "1.2.z") == 0) parseReceiverList(cfg, QString::fromLatin1(bad));
                else parseHeadList(cfg, QString::fromLatin1(bad));
            } catch (const InputError& e) {
                threw = !e.message().isEmpty();
            }
            QVERIFY2(threw, bad);
        }
    }
};

QTEST_GUILESS_MAIN(TestPathPatching)
#include "tst_path_patching.moc"
