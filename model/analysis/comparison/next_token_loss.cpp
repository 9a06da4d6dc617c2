#include "model/analysis/comparison/next_token_loss.h"

#include "model/core/kernels/compute_kernels.h"

#include <cmath>
#include <limits>

namespace attnscope {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

double NextTokenPredictions::loss() const {
    const int n = nPositions() - 1;
    if (n < 1) return kNaN;
    double sum = 0;
    for (int p = 0; p < n; ++p) sum -= targetLogProb[size_t(p)];
    return sum / n;
}

void appendPredictions(const Matrix& logitRows, int firstPosition, std::span<const int> tokens, int topK,
                       NextTokenPredictions& out) {
    const int S = int(tokens.size());
    for (Eigen::Index r = 0; r < logitRows.rows(); ++r) {
        const int p = firstPosition + int(r);
        const auto row = logitRows.row(r);
        std::vector<TokenScore> top = topTokens(row, std::max(1, topK));
        out.argmax.push_back(top.front().id);
        if (p + 1 < S) {
            const float m = row.maxCoeff();
            const double logZ = double(m) + std::log(computeKernels().sumExp(row.data(), long(row.size()), m));
            out.targetLogProb.push_back(double(row(tokens[size_t(p + 1)])) - logZ);
        } else {
            out.targetLogProb.push_back(kNaN);
            out.lastLogits = row;
        }
        if (topK < 1) top.clear();
        out.top.push_back(std::move(top));
    }
}

NextTokenPredictions nextTokenPredictions(const Matrix& logits, std::span<const int> tokens, int topK) {
    NextTokenPredictions out;
    appendPredictions(logits, 0, tokens, topK, out);
    return out;
}

double topOneAgreement(const NextTokenPredictions& x, const NextTokenPredictions& y) {
    const int n = std::min(x.nPositions(), y.nPositions()) - 1;
    if (n < 1) return kNaN;
    int same = 0;
    for (int p = 0; p < n; ++p) same += x.argmax[size_t(p)] == y.argmax[size_t(p)];
    return double(same) / n;
}

} // namespace attnscope
