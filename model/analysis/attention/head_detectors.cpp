#include "model/analysis/attention/head_detectors.h"

#include "model/core/errors.h"
#include "model/transformer/forward.h"

#include <QCoreApplication>
#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

namespace attnscope {

std::vector<int> headDetectorTargets(HeadDetector detector, std::span<const int> tokens, int i) {
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

std::vector<HeadScores> scoreHeads(const ActivationCache& cache, const std::vector<HeadDetector>& detectors,
                                   const Progress& progress,
                                   const std::function<void(int, const std::shared_ptr<const LayerCache>&)>& onLayer) {
    const int nLayers = cache.nLayers();
    const int nHeads = cache.nHeads();
    const int S = cache.nPositions();
    std::vector<HeadScores> out(detectors.size());
    std::vector<std::vector<std::vector<int>>> t(detectors.size()); // [detector][query] targets
    for (size_t d = 0; d < detectors.size(); ++d) {
        out[d].detector = detectors[d];
        out[d].scores = Matrix::Zero(nLayers, nHeads);
        for (int i = 0; i < S; ++i) {
            t[d].push_back(headDetectorTargets(detectors[d], cache.tokens, i));
            if (!t[d].back().empty()) ++out[d].nQueries;
        }
    }
    // layer by layer (a residuals-only cache recomputes each once); queries ascending per head
    for (int l = 0; l < nLayers; ++l) {
        progress.step(l, nLayers, QStringLiteral("layer %1").arg(l));
        const std::shared_ptr<const LayerCache> lc = cache.layer(l);
        for (size_t d = 0; d < detectors.size(); ++d)
            for (int h = 0; h < nHeads; ++h) {
                const Matrix& pattern = lc->pattern[size_t(h)];
                for (int i = 0; i < S; ++i) {
                    if (t[d][size_t(i)].empty()) continue;
                    float mass = 0;
                    for (int j : t[d][size_t(i)]) mass += pattern(i, j);
                    out[d].scores(l, h) += mass;
                }
            }
        if (onLayer) onLayer(l, lc);
    }
    for (HeadScores& s : out) {
        if (s.nQueries == 0) s.scores.setConstant(std::numeric_limits<float>::quiet_NaN());
        else s.scores /= float(s.nQueries);
    }
    progress.step(nLayers, nLayers, QString());
    return out;
}

HeadScores scoreHeads(const ActivationCache& cache, HeadDetector detector) {
    return scoreHeads(cache, std::vector<HeadDetector>{detector}).front();
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
