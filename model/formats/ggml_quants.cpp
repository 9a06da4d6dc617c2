#include "model/formats/ggml_quants.h"

#include "model/formats/dtype.h"

#include <QtEndian>
#include <algorithm>
#include <cmath>

namespace attnscope {

namespace {

using uchar = unsigned char;

float half(const uchar* p) { return halfToFloat(qFromLittleEndian<quint16>(p)); }

// The f16 scale fields of a block: byte offset and name (ggml-common.h).
struct ScaleField {
    int offset;
    const char* name;
};
struct ScaleFields {
    ScaleField fields[2];
    int count;
};

ScaleFields scaleFields(GgmlType t) {
    switch (t) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q5_0: return {{{0, "d"}, {0, ""}}, 1};
    case GgmlType::Q4_1:
    case GgmlType::Q5_1: return {{{0, "d"}, {2, "m"}}, 2};
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: return {{{0, "d"}, {2, "dmin"}}, 2};
    case GgmlType::Q6_K: return {{{208, "d"}, {0, ""}}, 1};
    default: return {{{0, ""}, {0, ""}}, 0};
    }
}

// One block of each type: b = the block's bytes, y = its ggmlBlockSize outputs.

void blockQ8_0(const uchar* b, float* y) {
    const float d = half(b);
    for (int j = 0; j < 32; ++j) y[j] = float(std::int8_t(b[2 + j])) * d;
}

void blockQ4_0(const uchar* b, float* y) {
    const float d = half(b);
    const uchar* qs = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = float((qs[j] & 0x0F) - 8) * d;
        y[j + 16] = float((qs[j] >> 4) - 8) * d;
    }
}

void blockQ4_1(const uchar* b, float* y) {
    const float d = half(b);
    const float m = half(b + 2);
    const uchar* qs = b + 4;
    for (int j = 0; j < 16; ++j) {
        y[j] = float(qs[j] & 0x0F) * d + m;
        y[j + 16] = float(qs[j] >> 4) * d + m;
    }
}

/// The 5-bit quants of a Q5_0/Q5_1 block: qh (32 bits) holds bit 4 of element j at bit j.
void quants5(const uchar* qhBytes, const uchar* qs, int* q) {
    const quint32 qh = qFromLittleEndian<quint32>(qhBytes);
    for (int j = 0; j < 16; ++j) {
        q[j] = (qs[j] & 0x0F) | int(((qh >> j) & 1u) << 4);
        q[j + 16] = (qs[j] >> 4) | int(((qh >> (j + 16)) & 1u) << 4);
    }
}

void blockQ5_0(const uchar* b, float* y) {
    const float d = half(b);
    int q[32];
    quants5(b + 2, b + 6, q);
    for (int j = 0; j < 32; ++j) y[j] = float(q[j] - 16) * d;
}

void blockQ5_1(const uchar* b, float* y) {
    const float d = half(b);
    const float m = half(b + 2);
    int q[32];
    quants5(b + 4, b + 8, q);
    for (int j = 0; j < 32; ++j) y[j] = float(q[j]) * d + m;
}

/// Scale and minimum of sub-block j (0..7) from the 12 packed bytes of a Q4_K/Q5_K block
/// (ggml get_scale_min_k4): j < 4 in the low 6 bits of bytes j and j+4; j ≥ 4 in the nibbles of byte
/// j+4 plus the top 2 bits of bytes j−4 and j.
void scaleMinK4(int j, const uchar* s, int& sc, int& mn) {
    if (j < 4) {
        sc = s[j] & 63;
        mn = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/// Q4_K and Q5_K: qh is null for Q4_K.
void blockQxK(const uchar* b, const uchar* qh, const uchar* qs, float* y) {
    const float d = half(b);
    const float dmin = half(b + 2);
    const uchar* scales = b + 4;
    for (int c = 0; c < 4; ++c) { // 64 elements: sub-blocks 2c (low nibbles) and 2c+1 (high nibbles)
        for (int h = 0; h < 2; ++h) {
            int sc, mn;
            scaleMinK4(2 * c + h, scales, sc, mn);
            const float d1 = d * float(sc);
            const float m1 = dmin * float(mn);
            const int shift = 4 * h;
            const int bit = 2 * c + h;
            for (int l = 0; l < 32; ++l) {
                int q = (qs[32 * c + l] >> shift) & 0x0F;
                if (qh) q += ((qh[l] >> bit) & 1) << 4;
                *y++ = d1 * float(q) - m1;
            }
        }
    }
}

void blockQ4_K(const uchar* b, float* y) { blockQxK(b, nullptr, b + 16, y); }
void blockQ5_K(const uchar* b, float* y) { blockQxK(b, b + 16, b + 48, y); }

void blockQ6_K(const uchar* b, float* y) {
    const uchar* ql = b;
    const uchar* qh = b + 128;
    const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192);
    const float d = half(b + 208);
    for (int n = 0; n < 2; ++n) { // two halves of 128 elements
        for (int l = 0; l < 32; ++l) {
            // elements l, l+32, l+64, l+96 of the half: low nibbles of ql[l], ql[l+32], then high nibbles;
            // 2 high bits each from qh[l]; sub-block (of 16) = element / 16
            const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            const int is = l / 16;
            y[l] = d * float(sc[is]) * float(q1);
            y[l + 32] = d * float(sc[is + 2]) * float(q2);
            y[l + 64] = d * float(sc[is + 4]) * float(q3);
            y[l + 96] = d * float(sc[is + 6]) * float(q4);
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

using BlockFn = void (*)(const uchar*, float*);

BlockFn blockFunction(GgmlType t) {
    switch (t) {
    case GgmlType::Q8_0: return blockQ8_0;
    case GgmlType::Q4_0: return blockQ4_0;
    case GgmlType::Q4_1: return blockQ4_1;
    case GgmlType::Q5_0: return blockQ5_0;
    case GgmlType::Q5_1: return blockQ5_1;
    case GgmlType::Q4_K: return blockQ4_K;
    case GgmlType::Q5_K: return blockQ5_K;
    case GgmlType::Q6_K: return blockQ6_K;
    default: return nullptr;
    }
}

} // namespace

std::int64_t ggmlRowBytes(GgmlType t, std::int64_t n) { return n / ggmlBlockSize(t) * ggmlBlockBytes(t); }

std::optional<GgmlBadScale> findNonFiniteScale(GgmlType t, const void* src, std::int64_t n) {
    const ScaleFields f = scaleFields(t);
    if (f.count == 0) return std::nullopt;
    const auto* bytes = static_cast<const uchar*>(src);
    const std::int64_t blocks = n / ggmlBlockSize(t);
    const int stride = ggmlBlockBytes(t);
    for (std::int64_t i = 0; i < blocks; ++i) {
        for (int k = 0; k < f.count; ++k) {
            const uchar* p = bytes + i * stride + f.fields[k].offset;
            if ((qFromLittleEndian<quint16>(p) & 0x7C00) == 0x7C00) // exponent all ones: Inf or NaN
                return GgmlBadScale{i, f.fields[k].name, half(p)};
        }
    }
    return std::nullopt;
}

std::optional<GgmlBadScale> dequantizeGgml(GgmlType t, const void* src, std::int64_t n, float* dst) {
    switch (t) {
    case GgmlType::F32: convertToF32(DType::F32, src, n, dst); return std::nullopt;
    case GgmlType::F16: convertToF32(DType::F16, src, n, dst); return std::nullopt;
    case GgmlType::BF16: convertToF32(DType::BF16, src, n, dst); return std::nullopt;
    default: break;
    }
    const BlockFn block = blockFunction(t);
    const auto* bytes = static_cast<const uchar*>(src);
    const int size = ggmlBlockSize(t);
    const int stride = ggmlBlockBytes(t);
    const std::int64_t blocks = n / size;
    for (std::int64_t i = 0; i < blocks; ++i) block(bytes + i * stride, dst + i * size);
    return findNonFiniteScale(t, src, n);
}

namespace {
/// The kernels' decode callback: dequantizeGgml's arithmetic without its scale check (the loader checks
/// scales once; this runs for every micro-panel of every product).
template <GgmlType T>
void decodeBlocks(const void* blocks, long nBlocks, float* out) {
    static const BlockFn block = blockFunction(T);
    const auto* bytes = static_cast<const uchar*>(blocks);
    const int size = ggmlBlockSize(T), stride = ggmlBlockBytes(T);
    for (long i = 0; i < nBlocks; ++i) block(bytes + i * stride, out + i * size);
}
} // namespace

const BlockDecoder* blockDecoder(GgmlType t) {
    static const BlockDecoder q8_0{32, 34, &decodeBlocks<GgmlType::Q8_0>, "Q8_0"};
    static const BlockDecoder q4_0{32, 18, &decodeBlocks<GgmlType::Q4_0>, "Q4_0"};
    static const BlockDecoder q4_1{32, 20, &decodeBlocks<GgmlType::Q4_1>, "Q4_1"};
    static const BlockDecoder q5_0{32, 22, &decodeBlocks<GgmlType::Q5_0>, "Q5_0"};
    static const BlockDecoder q5_1{32, 24, &decodeBlocks<GgmlType::Q5_1>, "Q5_1"};
    static const BlockDecoder q4_K{kGgmlSuperBlock, 144, &decodeBlocks<GgmlType::Q4_K>, "Q4_K"};
    static const BlockDecoder q5_K{kGgmlSuperBlock, 176, &decodeBlocks<GgmlType::Q5_K>, "Q5_K"};
    static const BlockDecoder q6_K{kGgmlSuperBlock, 210, &decodeBlocks<GgmlType::Q6_K>, "Q6_K"};
    switch (t) {
    case GgmlType::Q8_0: return &q8_0;
    case GgmlType::Q4_0: return &q4_0;
    case GgmlType::Q4_1: return &q4_1;
    case GgmlType::Q5_0: return &q5_0;
    case GgmlType::Q5_1: return &q5_1;
    case GgmlType::Q4_K: return &q4_K;
    case GgmlType::Q5_K: return &q5_K;
    case GgmlType::Q6_K: return &q6_K;
    default: return nullptr;
    }
}

void quantizeRowQ8_0(const float* src, std::int64_t n, void* dst) {
    auto* out = static_cast<uchar*>(dst);
    for (std::int64_t i = 0; i < n / 32; ++i) {
        const float* x = src + 32 * i;
        uchar* b = out + 34 * i;
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) {
            const float a = std::fabs(x[j]);
            if (std::isnan(a)) { // propagates into the scale
                amax = a;
                break;
            }
            amax = std::max(amax, a);
        }
        const float d = amax / 127.0f;
        qToLittleEndian<quint16>(floatToHalf(d), b);
        const bool finite = std::isfinite(d);
        const float id = (finite && d != 0.0f) ? 1.0f / d : 0.0f;
        for (int j = 0; j < 32; ++j)
            b[2 + j] = uchar(std::int8_t(finite ? std::round(x[j] * id) : 0.0f));
    }
}

} // namespace attnscope
