#include "model/analysis/common/top_tokens.h"

#include "model/core/kernels/compute_kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

namespace attnscope {

namespace {

constexpr int kScanMaxK = 64;  // up to this k: threshold scan with a sorted buffer; above: partial sort
constexpr int kScanBlock = 64; // logits compared with the threshold per step (four AVX-512 registers)

/// Better = higher logit, then lower id (the order topTokens documents).
bool better(float va, int a, float vb, int b) { return va > vb || (va == vb && a < b); }

/// Σ_j exp(x_j − m) over the row: the exps in float32 by the compute kernel, summed in double.
double sumExp(const Eigen::Ref<const RowVector>& logits, float m) {
    return computeKernels().sumExp(logits.data(), long(logits.size()), m);
}

/// Whether any of x[0, kScanBlock) is above thr: one vectorised compare per register, OR-reduced.
inline bool anyAbove(const float* x, float thr) {
    int any = 0;
    for (int l = 0; l < kScanBlock; ++l) any |= int(x[l] > thr);
    return any != 0;
}

/// Ids of the k best logits, best first, for k ≤ kScanMaxK: one pass that keeps the best k so far in a
/// sorted buffer and compares blocks of logits with the k-th best (a logit enters only if strictly
/// above it: an equal one comes later, so it has a higher id and loses the tie).
void scanTop(const float* x, int n, int k, int* ids) {
    float vals[kScanMaxK];
    auto insert = [&](int filled, float v, int id) { // into the sorted prefix [0, filled), keeping ≤ k
        int j = std::min(filled, k - 1);
        while (j > 0 && better(v, id, vals[j - 1], ids[j - 1])) {
            vals[j] = vals[j - 1];
            ids[j] = ids[j - 1];
            --j;
        }
        vals[j] = v;
        ids[j] = id;
    };
    for (int i = 0; i < k; ++i) insert(i, x[i], i);
    float thr = vals[k - 1];
    int i = k;
    for (; i + kScanBlock <= n; i += kScanBlock) {
        if (!anyAbove(x + i, thr)) [[likely]]
            continue;
        for (int l = 0; l < kScanBlock; ++l)
            if (x[i + l] > thr) {
                insert(k, x[i + l], i + l);
                thr = vals[k - 1];
            }
    }
    for (; i < n; ++i)
        if (x[i] > thr) {
            insert(k, x[i], i);
            thr = vals[k - 1];
        }
}

} // namespace

std::vector<TokenScore> topTokens(const Eigen::Ref<const RowVector>& logits, int k) {
    const int n = int(logits.size());
    k = std::clamp(k, 0, n);
    if (k == 0) return {};
    std::vector<int> idx;
    const int* top = nullptr;
    std::array<int, kScanMaxK> scanIds;
    if (k <= kScanMaxK) {
        scanTop(logits.data(), n, k, scanIds.data());
        top = scanIds.data();
    } else { // large k: a partial sort of all ids
        idx.resize(size_t(n));
        std::iota(idx.begin(), idx.end(), 0);
        std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                          [&](int a, int b) { return better(logits(a), a, logits(b), b); });
        top = idx.data();
    }
    // numerically stable log-sum-exp: logZ = m + log Σ exp(x − m), m = the maximum = the best logit
    const float maxLogit = logits(top[0]);
    const double logZ = double(maxLogit) + std::log(sumExp(logits, maxLogit));
    std::vector<TokenScore> out;
    out.reserve(size_t(k));
    for (int i = 0; i < k; ++i) {
        const int id = top[i];
        out.push_back({id, logits(id), float(std::exp(double(logits(id)) - logZ))});
    }
    return out;
}

} // namespace attnscope
