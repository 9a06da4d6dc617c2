#include "tests/support/ggml_test_blocks.h"

#include <QFloat16>
#include <algorithm>
#include <cmath>
#include <cstring>

namespace attnscope::test {

quint16 f16Bits(float v) {
    const qfloat16 h(v);
    quint16 bits;
    std::memcpy(&bits, static_cast<const void*>(&h), 2);
    return bits;
}

float f16Value(quint16 bits) {
    qfloat16 h;
    std::memcpy(static_cast<void*>(&h), &bits, 2);
    return float(h);
}

namespace {

/// qs of a 32-element block: element j in the low nibble of byte j, element j+16 in the high nibble.
QByteArray nibbles32(const std::vector<int>& q) {
    QByteArray qs(16, '\0');
    for (int j = 0; j < 16; ++j) qs[j] = char((q[size_t(j)] & 15) | ((q[size_t(j + 16)] & 15) << 4));
    return qs;
}

/// qh of Q5_0/Q5_1: bit j = bit 4 of element j.
QByteArray highBits32(const std::vector<int>& q) {
    quint32 qh = 0;
    for (int j = 0; j < 32; ++j) qh |= quint32((q[size_t(j)] >> 4) & 1) << j;
    return leU32(qh);
}

/// qs of Q4_K/Q5_K: 64-element chunk c: byte 32c + l holds element 64c + l (low) and 64c + 32 + l (high).
QByteArray nibbles256(const std::vector<int>& q) {
    QByteArray qs(128, '\0');
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l)
            qs[32 * c + l] = char((q[size_t(64 * c + l)] & 15) | ((q[size_t(64 * c + 32 + l)] & 15) << 4));
    return qs;
}

} // namespace

QByteArray blockQ8_0(quint16 d, const std::vector<int>& q) {
    QByteArray b = leU16(d);
    for (int j = 0; j < 32; ++j) b += char(qint8(q[size_t(j)]));
    return b;
}
QByteArray blockQ4_0(quint16 d, const std::vector<int>& q) { return leU16(d) + nibbles32(q); }
QByteArray blockQ4_1(quint16 d, quint16 m, const std::vector<int>& q) { return leU16(d) + leU16(m) + nibbles32(q); }
QByteArray blockQ5_0(quint16 d, const std::vector<int>& q) { return leU16(d) + highBits32(q) + nibbles32(q); }
QByteArray blockQ5_1(quint16 d, quint16 m, const std::vector<int>& q) {
    return leU16(d) + leU16(m) + highBits32(q) + nibbles32(q);
}

QByteArray packScalesK4(const std::vector<int>& sc, const std::vector<int>& mn) {
    QByteArray s(12, '\0');
    for (int j = 0; j < 4; ++j) {
        s[j] = char((sc[size_t(j)] & 63) | ((sc[size_t(j + 4)] >> 4) << 6));
        s[j + 4] = char((mn[size_t(j)] & 63) | ((mn[size_t(j + 4)] >> 4) << 6));
        s[j + 8] = char((sc[size_t(j + 4)] & 15) | ((mn[size_t(j + 4)] & 15) << 4));
    }
    return s;
}

QByteArray blockQ4_K(quint16 d, quint16 dmin, const std::vector<int>& sc, const std::vector<int>& mn, const std::vector<int>& q) {
    return leU16(d) + leU16(dmin) + packScalesK4(sc, mn) + nibbles256(q);
}

QByteArray blockQ5_K(quint16 d, quint16 dmin, const std::vector<int>& sc, const std::vector<int>& mn, const std::vector<int>& q) {
    // qh[l]: bit 2c + h = bit 4 of element 64c + 32h + l
    QByteArray qh(32, '\0');
    for (int c = 0; c < 4; ++c)
        for (int h = 0; h < 2; ++h)
            for (int l = 0; l < 32; ++l)
                qh[l] = char(uchar(qh[l]) | (((q[size_t(64 * c + 32 * h + l)] >> 4) & 1) << (2 * c + h)));
    return leU16(d) + leU16(dmin) + packScalesK4(sc, mn) + qh + nibbles256(q);
}

QByteArray blockQ6_K(quint16 d, const std::vector<int>& sc, const std::vector<int>& q) {
    // Half n of 128 elements, l < 32: elements e = 128n + l + 32k (k = 0..3). Low 4 bits: k = 0, 1 in the
    // low nibbles of ql[64n + l], ql[64n + 32 + l]; k = 2, 3 in their high nibbles. High 2 bits: qh[32n + l]
    // bits 2k, 2k+1.
    QByteArray ql(128, '\0'), qh(64, '\0'), scales(16, '\0');
    for (int n = 0; n < 2; ++n)
        for (int l = 0; l < 32; ++l) {
            const auto e = [&](int k) { return q[size_t(128 * n + l + 32 * k)]; };
            ql[64 * n + l] = char((e(0) & 15) | ((e(2) & 15) << 4));
            ql[64 * n + 32 + l] = char((e(1) & 15) | ((e(3) & 15) << 4));
            qh[32 * n + l] = char((e(0) >> 4) | ((e(1) >> 4) << 2) | ((e(2) >> 4) << 4) | ((e(3) >> 4) << 6));
        }
    for (int j = 0; j < 16; ++j) scales[j] = char(qint8(sc[size_t(j)]));
    return ql + qh + scales + leU16(d);
}

namespace {

/// Q4_0 / Q5_0 (ggml quantize_row_q4_0_ref / q5_0_ref): d = (signed value of largest magnitude) / −half.
void legacySymmetric(const float* x, int levels, bool five, TestQuantized& out) {
    const int half = (levels + 1) / 2;
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j)
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    const float d = max / float(-half);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    std::vector<int> q(32);
    for (int j = 0; j < 32; ++j) q[size_t(j)] = std::min(levels, int(qint8(x[j] * id + float(half) + 0.5f)));
    const quint16 d16 = f16Bits(d);
    out.bytes += five ? blockQ5_0(d16, q) : blockQ4_0(d16, q);
    out.step.insert(out.step.end(), 32, std::fabs(f16Value(d16)));
}

/// Q4_1 / Q5_1 (ggml quantize_row_q4_1_ref / q5_1_ref): d = (max − min) / levels, m = min.
void legacyAffine(const float* x, int levels, bool five, TestQuantized& out) {
    const float mn = *std::min_element(x, x + 32), mx = *std::max_element(x, x + 32);
    const float d = (mx - mn) / float(levels);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    std::vector<int> q(32);
    for (int j = 0; j < 32; ++j) q[size_t(j)] = std::min(levels, int(qint8((x[j] - mn) * id + 0.5f)));
    const quint16 d16 = f16Bits(d), m16 = f16Bits(mn);
    out.bytes += five ? blockQ5_1(d16, m16, q) : blockQ4_1(d16, m16, q);
    out.step.insert(out.step.end(), 32, std::fabs(f16Value(d16)));
}

/// Q4_K / Q5_K super-block: grid per sub-block j is −dmin·mn_j + d·sc_j·q, q in [0, levels], with
/// mn_j and sc_j rounded up so that the grid covers [min(0, min x), max x].
void kQuantAffine(const float* x, int levels, bool five, TestQuantized& out) {
    float lo[8], hi[8];
    float maxNegLo = 0;
    for (int j = 0; j < 8; ++j) {
        lo[j] = std::min(0.0f, *std::min_element(x + 32 * j, x + 32 * j + 32));
        hi[j] = *std::max_element(x + 32 * j, x + 32 * j + 32);
        maxNegLo = std::max(maxNegLo, -lo[j]);
    }
    const quint16 dmin16 = f16Bits(maxNegLo / 62);
    const float dmin = f16Value(dmin16);
    std::vector<int> sc(8), mn(8);
    float low[8], s[8], maxS = 0;
    for (int j = 0; j < 8; ++j) {
        mn[size_t(j)] = dmin > 0 ? std::min(63, int(std::ceil(-lo[j] / dmin))) : 0;
        low[j] = -(dmin * float(mn[size_t(j)]));
        s[j] = (hi[j] - low[j]) / float(levels);
        maxS = std::max(maxS, s[j]);
    }
    const quint16 d16 = f16Bits(maxS / 62);
    const float d = f16Value(d16);
    std::vector<int> q(256);
    for (int j = 0; j < 8; ++j) {
        sc[size_t(j)] = d > 0 ? std::min(63, int(std::ceil(s[j] / d))) : 0;
        const float step = d * float(sc[size_t(j)]);
        for (int l = 0; l < 32; ++l) {
            const int e = 32 * j + l;
            q[size_t(e)] = step > 0 ? std::clamp(int(std::lround((x[e] - low[j]) / step)), 0, levels) : 0;
            out.step.push_back(step);
        }
    }
    out.bytes += five ? blockQ5_K(d16, dmin16, sc, mn, q) : blockQ4_K(d16, dmin16, sc, mn, q);
}

/// Q6_K super-block: 16 sub-blocks of 16, x ≈ d·sc_j·(q − 32) with |q − 32| ≤ 31; odd sub-blocks get a
/// negative scale.
void kQuantSymmetric(const float* x, TestQuantized& out) {
    float s[16], maxS = 0;
    for (int j = 0; j < 16; ++j) {
        float amax = 0;
        for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * j + l]));
        s[j] = amax / 31;
        maxS = std::max(maxS, s[j]);
    }
    const quint16 d16 = f16Bits(maxS / 126);
    const float d = f16Value(d16);
    std::vector<int> sc(16), q(256);
    for (int j = 0; j < 16; ++j) {
        const int magnitude = d > 0 ? std::min(127, int(std::ceil(s[j] / d))) : 0;
        sc[size_t(j)] = j % 2 ? -magnitude : magnitude;
        const float scale = d * float(sc[size_t(j)]);
        for (int l = 0; l < 16; ++l) {
            const int e = 16 * j + l;
            q[size_t(e)] = scale != 0 ? std::clamp(int(std::lround(x[e] / scale)) + 32, 0, 63) : 32;
            out.step.push_back(std::fabs(scale));
        }
    }
    out.bytes += blockQ6_K(d16, sc, q);
}

} // namespace

TestQuantized quantizeForTest(quint32 type, const std::vector<float>& x) {
    TestQuantized out;
    const bool k = type == kTQ4_K || type == kTQ5_K || type == kTQ6_K;
    const size_t block = k ? 256 : 32;
    for (size_t i = 0; i + block <= x.size(); i += block) {
        const float* b = x.data() + i;
        switch (type) {
        case kTQ4_0: legacySymmetric(b, 15, false, out); break;
        case kTQ5_0: legacySymmetric(b, 31, true, out); break;
        case kTQ4_1: legacyAffine(b, 15, false, out); break;
        case kTQ5_1: legacyAffine(b, 31, true, out); break;
        case kTQ4_K: kQuantAffine(b, 15, false, out); break;
        case kTQ5_K: kQuantAffine(b, 31, true, out); break;
        case kTQ6_K: kQuantSymmetric(b, out); break;
        default: qFatal("quantizeForTest: unsupported type %u", type);
        }
    }
    return out;
}

} // namespace attnscope::test
