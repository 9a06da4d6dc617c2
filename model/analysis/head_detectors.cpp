#include "model/analysis/head_detectors.h"

#include "model/core/errors.h"
#include "model/transformer/forward.h"

#include <QCoreApplication>
#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

namespace attnscope {

namespace {

/// Target keys T(i) of query i (row i of the detection pattern D), ascending, without repeats.
std::vector<int> targets(HeadDetector detector, const std::vector<int>& tokens, int i) {
    std::vector<int> t;
    switch (detector) {
    case HeadDetector::PreviousToken:
        if (i >= 1) t.push_back(i - 1);
        break;
    case HeadDetector::FirstToken:
        if (i >= 1) t.push_back(0);
        break;
    case HeadDetector::DuplicateToken:
        for (int j = 0; j < i; ++j)
            if (tokens[size_t(j)] == tokens[size_t(i)]) t.push_back(j);
        break;
    case HeadDetector::Induction:
        for (int j = 0; j < i; ++j)
            if (tokens[size_t(j)] == tokens[size_t(i)]) t.push_back(j + 1); // j + 1 <= i, already unique
        break;
    }
    return t;
}

} // namespace

QString headDetectorName(HeadDetector detector) {
    switch (detector) {
    case HeadDetector::PreviousToken: return QStringLiteral("previous-token");
    case HeadDetector::DuplicateToken: return QStringLiteral("duplicate-token");
    case HeadDetector::Induction: return QStringLiteral("induction");
    case HeadDetector::FirstToken: return QStringLiteral("first-token");
    }
    return {};
}

QString headDetectorFormula(HeadDetector detector) {
    switch (detector) {
    case HeadDetector::PreviousToken:
        return QStringLiteral("mean over query positions i ≥ 1 of pattern[i][i−1]");
    case HeadDetector::DuplicateToken:
        return QStringLiteral("mean over query positions i whose token occurred earlier of "
                              "Σ pattern[i][j] over earlier positions j < i with token[j] = token[i]");
    case HeadDetector::Induction:
        return QStringLiteral("on [BOS] + R + R (R = T random tokens): mean over second-half query positions i of "
                              "pattern[i][i−T+1], the token after the previous occurrence of token[i]");
    case HeadDetector::FirstToken:
        return QStringLiteral("mean over query positions i ≥ 1 of pattern[i][0] (attention to the first token)");
    }
    return {};
}

HeadScores scoreHeads(const ActivationCache& cache, HeadDetector detector) {
    const int nLayers = int(cache.layers.size());
    const int nHeads = nLayers ? int(cache.layers[0].pattern.size()) : 0;
    const int S = cache.nPositions();
    HeadScores out;
    out.detector = detector;
    out.scores = Matrix::Zero(nLayers, nHeads);
    for (int i = 0; i < S; ++i) {
        const std::vector<int> t = targets(detector, cache.tokens, i);
        if (t.empty()) continue;
        ++out.nQueries;
        for (int l = 0; l < nLayers; ++l)
            for (int h = 0; h < nHeads; ++h) {
                const Matrix& pattern = cache.layers[size_t(l)].pattern[size_t(h)];
                float mass = 0;
                for (int j : t) mass += pattern(i, j);
                out.scores(l, h) += mass;
            }
    }
    if (out.nQueries == 0) out.scores.setConstant(std::numeric_limits<float>::quiet_NaN());
    else out.scores /= float(out.nQueries);
    return out;
}

RepeatedSequence repeatedRandomSequence(const ModelConfig& cfg, int bos, int repeatLength, std::uint32_t seed) {
    if (bos < 0) bos = cfg.bos_token_id;
    RepeatedSequence seq;
    seq.offset = bos >= 0 ? 1 : 0;
    seq.repeatLength = repeatLength > 0 ? repeatLength : std::min(50, (cfg.n_ctx - seq.offset) / 2);
    const int T = seq.repeatLength;
    if (T < 1 || seq.offset + 2 * T > cfg.n_ctx)
        throw InputError(QCoreApplication::translate("analysis",
                             "A repeated sequence of 2 × %1 tokens does not fit the model's context of %2 tokens.")
                             .arg(T).arg(cfg.n_ctx));
    // candidate ids: the vocabulary without BOS/EOS; a partial Fisher–Yates shuffle picks T distinct ones
    std::vector<int> ids;
    ids.reserve(size_t(std::max(0, cfg.d_vocab)));
    for (int id = 0; id < cfg.d_vocab; ++id)
        if (id != bos && id != cfg.eos_token_id) ids.push_back(id);
    if (int(ids.size()) < T)
        throw InputError(QCoreApplication::translate("analysis",
                             "The vocabulary has %1 usable tokens, fewer than the %2 distinct tokens the repeated sequence needs.")
                             .arg(ids.size()).arg(T));
    std::mt19937 rng(seed);
    for (int k = 0; k < T; ++k) {
        const size_t pick = size_t(k) + size_t(rng() % std::uint32_t(ids.size() - size_t(k)));
        std::swap(ids[size_t(k)], ids[pick]);
    }
    if (seq.offset) seq.tokens.push_back(bos);
    for (int copy = 0; copy < 2; ++copy) seq.tokens.insert(seq.tokens.end(), ids.begin(), ids.begin() + T);
    return seq;
}

HeadScores inductionScores(const Model& model, int bos, const Progress& progress) {
    if (bos < 0) bos = model.tokenizer().bosId().value_or(-1);
    const RepeatedSequence seq = repeatedRandomSequence(model.config(), bos);
    ForwardOptions opt;
    opt.cacheHeadResults = false;
    opt.allLogits = false;
    const ActivationCache cache = runForward(model, seq.tokens, opt, progress);
    return scoreHeads(cache, HeadDetector::Induction);
}

} // namespace attnscope
