// A hand-built two-layer model with a planted circuit (tests/support/handmade_model.h,
// plantedInductionWeights: previous-token head L0H0 feeding induction head L1H0 by K-composition, distractor
// heads L0H1 and L1H1), recovered by every circuit tool: activation patching, path patching, information-flow
// routes, the attention-score split and composition scores.

#include "model/analysis/circuits/activation_patching.h"
#include "model/analysis/circuits/attention_score_split.h"
#include "model/analysis/circuits/composition_scores.h"
#include "model/analysis/circuits/information_flow.h"
#include "model/analysis/circuits/path_patching.h"
#include "model/transformer/forward.h"
#include "support/handmade_model.h"

#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

// R = 3 1 4 6 2 7 5 0; clean R + R[0..5]: the induction head predicts R[6] = 5 at the last position.
// corrupted: the first copy of R changed, so nothing to copy (the corrupted copy predicts 1, the token after its 7).
const std::vector<int> kR{3, 1, 4, 6, 2, 7, 5, 0}, kR2{6, 0, 2, 3, 7, 1, 4, 5};
constexpr int kT = 8, kAnswer = 5, kCorruptAnswer = 1, kAnswerPos = 6; // R[6] sits at position 6 of the first copy

std::vector<int> prompt(const std::vector<int>& first) {
    std::vector<int> t = first;
    t.insert(t.end(), kR.begin(), kR.begin() + 6);
    return t;
}

PatchingMetric metric() {
    PatchingMetric m;
    m.kind = PatchingMetricKind::LogitDiff;
    m.token = kAnswer;
    m.counterToken = kCorruptAnswer;
    return m;
}

} // namespace

class TestPlantedCircuit : public QObject {
    Q_OBJECT
    std::shared_ptr<const Model> model_ = makeModel(plantedInductionWeights());

private slots:
    void theModelDoesInduction() {
        ForwardOptions o;
        o.allLogits = true;
        const ActivationCache c = runForward(*model_, prompt(kR), o);
        for (int p = kT; p < int(c.tokens.size()); ++p) { // every position of the second copy predicts the next token of R
            Eigen::Index best;
            c.logits.row(p).maxCoeff(&best);
            QCOMPARE(int(best), kR[size_t(p - kT + 1)]);
        }
        QVERIFY(c.layers[0].pattern[0](5, 4) > 0.9f);                  // L0H0 attends to the previous token
        QVERIFY(c.layers[1].pattern[0](13, kAnswerPos) > 0.9f);        // L1H0 to the token after the earlier R[5]
    }

    void activationPatchingFindsBothHeads() {
        const PatchingRuns runs = preparePatchingRuns(*model_, prompt(kR), prompt(kR2));
        PatchingOptions o;
        o.hook = PatchHook::Z;
        o.metric = metric();
        const PatchingSweep s = runPatchingSweep(*model_, runs, o);
        const Matrix g = patchingGrid(model_->config(), 14, s, true);
        const QString text = QStringLiteral("L0H0 %1 L0H1 %2 L1H0 %3 L1H1 %4").arg(g(0, 0)).arg(g(0, 1)).arg(g(1, 0)).arg(g(1, 1));
        QVERIFY2(std::abs(g(1, 0) - 1.0f) < 0.1f, qPrintable(text)); // the induction head's output is the answer
        // the previous-token head moves it halfway: with its clean z the induction head attends where the clean
        // answer was but copies the corrupted token there, so the corrupted answer is lost and the clean one not won
        QVERIFY2(g(0, 0) > 0.3f, qPrintable(text));
        QVERIFY2(std::abs(g(0, 1)) < 0.1f && std::abs(g(1, 1)) < 0.1f, qPrintable(text));
    }

    void pathPatchingFindsTheKPath() {
        const PatchingRuns runs = preparePatchingRuns(*model_, prompt(kR), prompt(kR2));
        PathPatchingOptions o;
        o.metric = metric();
        o.senders = {{0, 0}, {0, 1}};
        o.receivers = {{PathReceiver::Input::K, 1, 0}, {PathReceiver::Input::Q, 1, 0}, {PathReceiver::Input::V, 1, 0}, {}};
        const PathPatchingResult r = runPathPatching(*model_, runs, o);
        QString text;
        for (int i = 0; i < 2; ++i)
            for (int c = 0; c < int(r.normalised.cols()); ++c)
                text += QStringLiteral("%1→%2 %3  ").arg(headIdName(r.options.senders[size_t(i)]), r.columns[c]).arg(r.normalised(i, c));
        // L0H0 reaches the output through L1H0's keys, not its queries, values or the logits directly
        QVERIFY2(r.normalised(0, 0) > 0.3, qPrintable(text));
        QVERIFY(!std::isnan(r.normalised(0, 4))); // the "all heads" column (three head receivers)
        for (int c : {1, 2, 3}) QVERIFY2(std::abs(r.normalised(0, c)) < 0.1, qPrintable(text));
        for (int c = 0; c < 4; ++c) QVERIFY2(std::abs(r.normalised(1, c)) < 0.1, qPrintable(text));
    }

    void flowRoutesFollowTheCircuit() {
        const ActivationCache c = runForward(*model_, prompt(kR));
        const FlowGraph g = flowGraph(flowContributions(*model_, c), {0.1, true, 13});
        const auto edge = [&](int layer, int from, int to) -> const FlowEdge* {
            for (const FlowEdge& e : g.edges)
                if (e.kind == FlowEdge::Kind::Attention && e.fromBoundary == 2 * layer && e.fromPosition == from && e.toPosition == to)
                    return &e;
            return nullptr;
        };
        const FlowEdge* induction = edge(1, kAnswerPos, 13);
        QVERIFY(induction);
        QVERIFY(induction->heads[0] > 0.9 * induction->weight); // through L1H0
        const FlowEdge* previous = edge(0, kAnswerPos - 1, kAnswerPos);
        QVERIFY(previous);                                       // L0H0 moved R[5] next to R[6]
        QVERIFY(previous->heads[0] > 0.9 * previous->weight);
        for (const FlowEdge& e : g.edges) // no layer-1 attention edge from elsewhere into the last position
            if (e.kind == FlowEdge::Kind::Attention && e.fromBoundary == 2 && e.toPosition == 13) QVERIFY(e.fromPosition == kAnswerPos || e.fromPosition == 13);
    }

    void theScoreSplitNamesL0H0OnTheKeySide() {
        const ActivationCache c = runForward(*model_, prompt(kR));
        const AttentionScoreSplit s = splitAttentionScore(*model_, c, 1, 0, 13, kAnswerPos);
        QVERIFY(s.checkError < 1e-3);
        Eigen::Index r, col;
        s.terms.maxCoeff(&r, &col);
        QCOMPARE(s.queryComponents[size_t(r)].name, QStringLiteral("embed")); // the current token …
        QCOMPARE(s.keyComponents[size_t(col)].name, QStringLiteral("L0H0"));  // … matches what L0H0 wrote at the key
        QVERIFY(s.terms(r, col) > 0.8 * s.score);
    }

    void compositionRanksTheCircuitFirst() {
        const auto k = compositionScores(*model_, CompositionKind::K);
        const float circuit = k->score(0, 0, 1, 0);
        QVERIFY(circuit > k->baseline.mean + 5 * k->baseline.sd);
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b)
                if (a || b) QVERIFY(k->score(0, a, 1, b) < circuit / 2);
        const auto q = compositionScores(*model_, CompositionKind::Q), v = compositionScores(*model_, CompositionKind::V);
        QVERIFY(q->score(0, 0, 1, 0) < circuit / 2 && v->score(0, 0, 1, 0) < circuit / 2);
    }
};

QTEST_GUILESS_MAIN(TestPlantedCircuit)
#include "tst_planted_circuit.moc"
