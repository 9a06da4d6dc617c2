#pragma once
// Element types of tensors in weight files, as safetensors names them, and conversion of the
// 16-bit float types to float32.

#include <QString>
#include <cstdint>
#include <optional>

namespace attnscope {

/// A tensor element type. Names and sizes follow the safetensors specification
/// (huggingface/safetensors, `Dtype` in safetensors/src/tensor.rs).
enum class DType { BOOL, U8, I8, F8_E4M3, F8_E5M2, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64 };

/// The dtype named by a safetensors header string ("F32", "BF16", ...); nullopt for unknown names.
std::optional<DType> dtypeFromString(const QString& name);
/// The safetensors name of a dtype ("F32", ...).
QString dtypeName(DType dtype);
/// Bytes per element (1, 2, 4 or 8).
int dtypeSize(DType dtype);
/// True for the types weights may be stored in: F32, F16, BF16.
bool isWeightDtype(DType dtype);

/// Converts n little-endian elements of `dtype` (F32, F16 or BF16) at `src` (any alignment) to float32.
/// F16 uses Qt's IEEE binary16 conversion (qFloatFromFloat16); BF16 is the upper 16 bits of a
/// float32 (Google Brain bfloat16), so the conversion is exact. NaN/Inf are preserved.
void convertToF32(DType dtype, const void* src, std::int64_t n, float* dst);

/// One IEEE binary16 value (its bits) as float32; exact, NaN/Inf preserved.
float halfToFloat(std::uint16_t bits);
/// float32 to IEEE binary16 bits, rounded to nearest, ties to even (as ggml's GGML_FP32_TO_FP16);
/// values beyond ±65504 round to ±Inf, NaN stays NaN.
std::uint16_t floatToHalf(float value);

} // namespace attnscope
