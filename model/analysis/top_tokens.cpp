#include "model/analysis/top_tokens.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnscope {

std::vector<TokenScore> topTokens(const Eigen::Ref<const RowVector>& logits, int k) {
    const int n = int(logits.size());
    k = std::clamp(k, 0, n);
    if (k == 0) return {};
    const float maxLogit = logits.maxCoeff();
    const double logZ = double(maxLogit) + std::log((logits.array() - maxLogit).exp().cast<double>().sum());
    std::vector<int> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    auto better = [&](int a, int b) { return logits(a) > logits(b) || (logits(a) == logits(b) && a < b); };
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), better);
    std::vector<TokenScore> out;
    out.reserve(size_t(k));
    for (int i = 0; i < k; ++i) {
        const int id = idx[size_t(i)];
        out.push_back({id, logits(id), float(std::exp(double(logits(id)) - logZ))});
    }
    return out;
}

} // namespace attnscope
