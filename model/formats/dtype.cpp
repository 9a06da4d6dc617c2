#include "model/formats/dtype.h"

#include <QtEndian>
#include <QFloat16>
#include <array>
#include <cstring>

namespace attnscope {

namespace {
struct DTypeEntry {
    DType dtype;
    const char* name;
    int size;
};
constexpr std::array<DTypeEntry, 15> kDTypes{{
    {DType::BOOL, "BOOL", 1}, {DType::U8, "U8", 1}, {DType::I8, "I8", 1},
    {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E5M2, "F8_E5M2", 1},
    {DType::I16, "I16", 2}, {DType::U16, "U16", 2}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
    {DType::I32, "I32", 4}, {DType::U32, "U32", 4}, {DType::F32, "F32", 4},
    {DType::I64, "I64", 8}, {DType::U64, "U64", 8}, {DType::F64, "F64", 8},
}};

const DTypeEntry& entry(DType dtype) {
    for (const auto& e : kDTypes)
        if (e.dtype == dtype) return e;
    return kDTypes[0]; // unreachable: every enumerator is listed
}
} // namespace

std::optional<DType> dtypeFromString(const QString& name) {
    for (const auto& e : kDTypes)
        if (name == QLatin1String(e.name)) return e.dtype;
    return std::nullopt;
}

QString dtypeName(DType dtype) { return QString::fromLatin1(entry(dtype).name); }

int dtypeSize(DType dtype) { return entry(dtype).size; }

bool isWeightDtype(DType dtype) { return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16; }

void convertToF32(DType dtype, const void* src, std::int64_t n, float* dst) {
    const auto* bytes = static_cast<const uchar*>(src);
    switch (dtype) {
    case DType::F32:
        for (std::int64_t i = 0; i < n; ++i) dst[i] = qFromLittleEndian<float>(bytes + 4 * i);
        return;
    case DType::F16: {
        // qfloat16 is a 2-byte trivially copyable type; copy in chunks to respect alignment/endianness.
        constexpr std::int64_t kChunk = 4096;
        qfloat16 buf[kChunk];
        for (std::int64_t i0 = 0; i0 < n; i0 += kChunk) {
            const std::int64_t m = std::min(kChunk, n - i0);
            for (std::int64_t i = 0; i < m; ++i) {
                const quint16 bits = qFromLittleEndian<quint16>(bytes + 2 * (i0 + i));
                std::memcpy(static_cast<void*>(&buf[i]), &bits, 2);
            }
            qFloatFromFloat16(dst + i0, buf, m);
        }
        return;
    }
    case DType::BF16:
        for (std::int64_t i = 0; i < n; ++i) {
            const quint32 bits = quint32(qFromLittleEndian<quint16>(bytes + 2 * i)) << 16;
            std::memcpy(&dst[i], &bits, 4);
        }
        return;
    default:
        Q_ASSERT_X(false, "convertToF32", "not a float weight dtype");
    }
}

float halfToFloat(std::uint16_t bits) {
    qfloat16 h;
    std::memcpy(static_cast<void*>(&h), &bits, 2);
    return float(h);
}

std::uint16_t floatToHalf(float value) {
    const qfloat16 h(value); // Qt rounds half to even (F16C or its table conversion)
    std::uint16_t bits;
    std::memcpy(&bits, static_cast<const void*>(&h), 2);
    return bits;
}

} // namespace attnscope
