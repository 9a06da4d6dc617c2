#include "model/formats/ggml_type.h"

#include <QStringList>
#include <array>

namespace attnscope {

namespace {

struct SupportedType {
    GgmlType type;
    int blockSize;
    int blockBytes;
};
// Order of supportedGgmlTypeNames(). Sizes: ggml-common.h static_asserts on the block structs.
constexpr std::array<SupportedType, 11> kSupported{{
    {GgmlType::F32, 1, 4},
    {GgmlType::F16, 1, 2},
    {GgmlType::BF16, 1, 2},
    {GgmlType::Q8_0, 32, 2 + 32},
    {GgmlType::Q4_0, 32, 2 + 16},
    {GgmlType::Q4_1, 32, 2 + 2 + 16},
    {GgmlType::Q5_0, 32, 2 + 4 + 16},
    {GgmlType::Q5_1, 32, 2 + 2 + 4 + 16},
    {GgmlType::Q4_K, kGgmlSuperBlock, 2 + 2 + 12 + 128},
    {GgmlType::Q5_K, kGgmlSuperBlock, 2 + 2 + 12 + 32 + 128},
    {GgmlType::Q6_K, kGgmlSuperBlock, 128 + 64 + 16 + 2},
}};

// ggml.h enum ggml_type, index = id; "" where ggml never assigned the id.
constexpr std::array<const char*, 43> kNames{{
    "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1",
    "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
    "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M",
    "BF16", "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",
    "NVFP4", "Q1_0", "Q2_0",
}};

const SupportedType& traits(GgmlType t) {
    for (const SupportedType& s : kSupported)
        if (s.type == t) return s;
    return kSupported[0]; // unreachable: every enumerator is listed
}

} // namespace

std::optional<GgmlType> ggmlTypeFromId(std::uint32_t id) {
    for (const SupportedType& s : kSupported)
        if (std::uint32_t(s.type) == id) return s.type;
    return std::nullopt;
}

QString ggmlTypeName(std::uint32_t id) {
    return id < kNames.size() ? QString::fromLatin1(kNames[id]) : QString();
}

QString supportedGgmlTypeNames() {
    QStringList names;
    for (const SupportedType& s : kSupported) names << ggmlTypeName(s.type);
    return names.join(QLatin1String(", "));
}

int ggmlBlockSize(GgmlType t) { return traits(t).blockSize; }
int ggmlBlockBytes(GgmlType t) { return traits(t).blockBytes; }
bool isQuantized(GgmlType t) { return traits(t).blockSize > 1; }

} // namespace attnscope
