#include "induction_pair.h"

#include "model/analysis/attention/head_detectors.h"

namespace attnscope::test {

InductionPair inductionPair(const ModelConfig& cfg, int T) {
    const RepeatedSequence a = repeatedRandomSequence(cfg, -1, T, 11), b = repeatedRandomSequence(cfg, -1, T, 12);
    InductionPair p;
    p.clean.assign(a.tokens.begin(), a.tokens.end() - 1);
    p.corrupt = p.clean;
    for (int i = 0; i < T; ++i) p.corrupt[size_t(a.offset + i)] = b.tokens[size_t(b.offset + i)];
    p.answer = a.tokens.back();
    p.corruptAnswer = b.tokens[size_t(b.offset + T - 1)];
    return p;
}

} // namespace attnscope::test
