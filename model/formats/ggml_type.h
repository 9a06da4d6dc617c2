#pragma once
// Tensor element types of ggml/GGUF files: the type ids, their names, and the block geometry that
// gives a tensor's size in bytes. Ids and names: ggml include/ggml.h `enum ggml_type` (also listed in
// docs/gguf.md); block sizes: ggml src/ggml-common.h (block_q4_0 ... block_q6_K).

#include <QString>
#include <cstdint>
#include <optional>

namespace attnscope {

/// The ggml types this project reads (the values are ggml's type ids). Every other id, known to ggml or
/// not, is rejected by the GGUF reader; ggmlTypeName() still names it in the message.
enum class GgmlType : std::uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    BF16 = 30,
};

/// Elements per block of the K-quant super-blocks (ggml QK_K).
inline constexpr int kGgmlSuperBlock = 256;

/// The supported type with ggml id `id`, or nullopt (removed, unsupported or unknown ids).
std::optional<GgmlType> ggmlTypeFromId(std::uint32_t id);
/// ggml's name of type id `id` ("Q4_K", "IQ2_XXS", ...), including ids this project does not read and
/// ids ggml removed ("Q4_2"); an empty string for ids ggml never defined.
QString ggmlTypeName(std::uint32_t id);
inline QString ggmlTypeName(GgmlType t) { return ggmlTypeName(std::uint32_t(t)); }
/// "F32, F16, BF16, Q8_0, ..." for messages.
QString supportedGgmlTypeNames();

/// Elements per block: 1 for F32/F16/BF16, 32 for Q4_0..Q8_0, 256 for the K-quants.
int ggmlBlockSize(GgmlType t);
/// Bytes per block (ggml-common.h): F32 4, F16/BF16 2, Q4_0 18, Q4_1 20, Q5_0 22, Q5_1 24, Q8_0 34,
/// Q4_K 144, Q5_K 176, Q6_K 210.
int ggmlBlockBytes(GgmlType t);
/// True for the block-quantized types (every supported type except F32, F16 and BF16).
bool isQuantized(GgmlType t);

} // namespace attnscope
