#pragma once
// "Bitwise equal" for test assertions: same shape and the same bytes (NaN-safe, −0 ≠ +0).

#include "model/core/tensor.h"

#include <cstring>
#include <vector>

namespace attnscope::test {

inline bool same(const Matrix& a, const Matrix& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           (a.size() == 0 || std::memcmp(a.data(), b.data(), size_t(a.size()) * sizeof(float)) == 0); // empty: no data pointer
}

inline bool same(const std::vector<Matrix>& a, const std::vector<Matrix>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!same(a[i], b[i])) return false;
    return true;
}

} // namespace attnscope::test
