#include "model/transformer/prompt_truncation.h"

#include <cstddef>

namespace attnscope {

std::vector<int> keepLastTokens(const std::vector<int>& ids, int nCtx, bool keepFirst) {
    if (nCtx <= 0) return {};
    const std::size_t n = std::size_t(nCtx);
    if (ids.size() <= n) return ids;
    std::vector<int> out;
    out.reserve(n);
    if (keepFirst && n > 1) out.push_back(ids.front());
    out.insert(out.end(), ids.end() - std::ptrdiff_t(n - out.size()), ids.end());
    return out;
}

} // namespace attnscope
