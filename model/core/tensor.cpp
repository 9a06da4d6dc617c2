#include "model/core/tensor.h"

#include "model/core/weight_panels.h"

#include <QtGlobal>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace attnscope {

namespace {

/// IEEE binary16 bits → float32 (exact: normals, subnormals, ±0, ±Inf, NaN).
float halfToFloat(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    std::uint32_t bits = std::uint32_t(h & 0x7fffu) << 13;
    float f;
    std::memcpy(&f, &bits, 4);
    f *= 5.192296858534828e33f; // 2^112: rebias the exponent (subnormal halves become normal floats, exactly)
    std::memcpy(&bits, &f, 4);
    if ((h & 0x7c00u) == 0x7c00u) bits = 0x7f800000u | (std::uint32_t(h & 0x3ffu) << 13); // Inf, NaN
    bits |= sign;
    std::memcpy(&f, &bits, 4);
    return f;
}

/// Stored element i (in elements from p) of a 16- or 32-bit weight as float32.
float storedValue(const void* p, Eigen::Index i, WeightType type) {
    switch (type) {
    case WeightType::F32:
        return static_cast<const float*>(p)[i];
    case WeightType::F16:
        return halfToFloat(static_cast<const std::uint16_t*>(p)[i]);
    case WeightType::BF16: {
        const std::uint32_t bits = std::uint32_t(static_cast<const std::uint16_t*>(p)[i]) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    case WeightType::Blocks:
        break;
    }
    return 0.0f;
}

/// Rows [r, r + n) of w as float32 into out (n × w.cols) from its packed copy (weight_panels.h) when it has
/// one that covers w: the stored values, so the same floats as reading w in place, without bringing back
/// the file pages the copy replaced. False when there is none.
bool copyRowsFromPanels(const Weight& w, Eigen::Index r, Eigen::Index n, float* out) {
    if (!w.panels || w.type == WeightType::Blocks) return false;
    Eigen::Index r0 = 0, c0 = 0, inner = 0;
    int nr = 0;
    const void* packed = w.panels->packedBlock(w, r0, c0, inner, nr);
    if (!packed) return false;
    for (Eigen::Index i = 0; i < n; ++i) {
        const Eigen::Index R = r0 + r + i;
        float* o = out + i * w.cols;
        for (Eigen::Index c = 0; c < w.cols;) {
            const Eigen::Index C = c0 + c, j = C % nr, run = std::min<Eigen::Index>(nr - j, w.cols - c);
            const size_t e = size_t((C / nr * inner + R) * nr + j);
            if (w.type == WeightType::F32)
                std::memcpy(o + c, static_cast<const float*>(packed) + e, size_t(run) * sizeof(float));
            else
                for (Eigen::Index k = 0; k < run; ++k) o[c + k] = storedValue(packed, Eigen::Index(e) + k, w.type);
            c += run;
        }
    }
    return true;
}

} // namespace

const float* Weight::data() const {
    if (!isF32View() && ptr) throw std::logic_error("Weight::data() of a weight that is not float32 [rows, cols]");
    return static_cast<const float*>(ptr);
}

MatrixView Weight::view() const {
    if (!isF32View() && ptr) throw std::logic_error("Weight::view() of a weight that is not float32 [rows, cols]: use toMatrix()");
    return MatrixView(static_cast<const float*>(ptr), rows, cols, Eigen::OuterStride<>(stride));
}

const void* Weight::storedAt(Eigen::Index row, Eigen::Index i) const {
    if (type == WeightType::Blocks) {
        Q_ASSERT(i % decoder->blockElements == 0 && stride % decoder->blockElements == 0);
        const Eigen::Index perRow = stride / decoder->blockElements * decoder->blockBytes;
        return static_cast<const char*>(ptr) + row * perRow + i / decoder->blockElements * decoder->blockBytes;
    }
    return static_cast<const char*>(ptr) + (row * stride + i) * elementBytes();
}

size_t Weight::storedSpanBytes() const {
    if (empty() || rows == 0 || cols == 0) return 0;
    const Eigen::Index storedRows = transposed ? cols : rows, storedCols = transposed ? rows : cols;
    if (type == WeightType::Blocks) {
        const Eigen::Index B = decoder->blockElements;
        const auto* end = static_cast<const char*>(storedAt(storedRows - 1, 0)) + (storedCols + B - 1) / B * decoder->blockBytes;
        return size_t(end - static_cast<const char*>(ptr));
    }
    return size_t((storedRows - 1) * stride + storedCols) * size_t(elementBytes());
}

float Weight::at(Eigen::Index r, Eigen::Index c) const {
    if (type == WeightType::Blocks) { // decode the block holding the element
        const Eigen::Index row = transposed ? c : r, i = transposed ? r : c, B = decoder->blockElements;
        float block[256];
        decoder->decode(storedAt(row, i / B * B), 1, block);
        return block[i % B];
    }
    return storedValue(ptr, transposed ? c * stride + r : r * stride + c, type);
}

void Weight::copyRow(Eigen::Index r, float* out) const {
    if (copyRowsFromPanels(*this, r, 1, out)) return;
    if (isF32View()) {
        std::memcpy(out, static_cast<const float*>(ptr) + r * stride, size_t(cols) * sizeof(float));
        return;
    }
    if (type == WeightType::Blocks && !transposed) { // a stored row: decode its blocks (views start at a block)
        const Eigen::Index B = decoder->blockElements;
        std::vector<float> buf(size_t((cols + B - 1) / B) * size_t(B));
        decoder->decode(storedAt(r, 0), long((cols + B - 1) / B), buf.data());
        std::memcpy(out, buf.data(), size_t(cols) * sizeof(float));
        return;
    }
    for (Eigen::Index c = 0; c < cols; ++c) out[c] = at(r, c);
}

RowVector Weight::rowVector(Eigen::Index r) const {
    RowVector v(cols);
    copyRow(r, v.data());
    return v;
}

bool Weight::allFinite() const {
    if (empty()) return true;
    if (type == WeightType::F32 || type == WeightType::Blocks) {
        if (isF32View()) return view().allFinite();
        return toMatrix().allFinite();
    }
    // 16-bit: a NaN/Inf has every exponent bit set (F16: 0x7c00, BF16: 0x7f80)
    const std::uint16_t mask = type == WeightType::F16 ? 0x7c00 : 0x7f80;
    const Eigen::Index storedRows = transposed ? cols : rows, storedCols = transposed ? rows : cols;
    int bad = 0;
    for (Eigen::Index r = 0; r < storedRows; ++r) {
        const auto* row = static_cast<const std::uint16_t*>(ptr) + r * stride;
        for (Eigen::Index c = 0; c < storedCols; ++c) bad |= int((row[c] & mask) == mask);
    }
    return bad == 0;
}

Matrix Weight::toMatrix() const {
    if (panels) {
        Matrix m(rows, cols);
        if (copyRowsFromPanels(*this, 0, rows, m.data())) return m;
    }
    if (isF32View()) return view();
    Matrix m(rows, cols);
    if (transposed) {
        for (Eigen::Index c = 0; c < cols; ++c)
            for (Eigen::Index r = 0; r < rows; ++r) m(r, c) = at(r, c);
    } else {
        for (Eigen::Index r = 0; r < rows; ++r) copyRow(r, m.data() + r * cols);
    }
    return m;
}

namespace {
/// A block-quantized view must start and end on block boundaries along the stored rows (storedAt addresses
/// whole blocks); a slice inside a block would silently read the block's first elements.
void requireWholeBlocks(const Weight& w, Eigen::Index first, Eigen::Index n, Eigen::Index extent) {
    if (w.type != WeightType::Blocks || !w.decoder) return;
    const Eigen::Index B = w.decoder->blockElements;
    if (first % B != 0 || (n % B != 0 && first + n != extent))
        throw std::logic_error("a view of a block-quantized weight must start and end on its blocks");
}
} // namespace

Weight Weight::colBlock(Eigen::Index c0, Eigen::Index n) const {
    if (!transposed) requireWholeBlocks(*this, c0, n, cols);
    Weight w = *this;
    if (ptr) w.ptr = transposed ? storedAt(c0, 0) : storedAt(0, c0);
    w.cols = n;
    return w;
}

Weight Weight::rowBlock(Eigen::Index r0, Eigen::Index n) const {
    if (transposed) requireWholeBlocks(*this, r0, n, rows);
    Weight w = *this;
    if (ptr) w.ptr = transposed ? storedAt(0, r0) : storedAt(r0, 0);
    w.rows = n;
    return w;
}

Weight Weight::t() const {
    Weight w = *this;
    std::swap(w.rows, w.cols);
    w.transposed = !transposed;
    return w;
}

} // namespace attnscope
