#pragma once
// ggml quantized blocks for the tests, written from the layouts of ggml src/ggml-common.h independently
// of model/formats: encoders (block fields → bytes) and small quantizers for round trips.

#include "tests/support/gguf_writer.h"

#include <QByteArray>
#include <vector>

namespace attnscope::test {

/// IEEE binary16 bits of v (round to nearest even, via qfloat16) and back.
quint16 f16Bits(float v);
float f16Value(quint16 bits);

// Encoders. d, m, dmin are f16 bits; q are the stored (unsigned) quants, one per element:
QByteArray blockQ8_0(quint16 d, const std::vector<int>& q);            ///< q in [-128, 127], 32 elements
QByteArray blockQ4_0(quint16 d, const std::vector<int>& q);            ///< q in [0, 15], 32 elements
QByteArray blockQ4_1(quint16 d, quint16 m, const std::vector<int>& q); ///< q in [0, 15]
QByteArray blockQ5_0(quint16 d, const std::vector<int>& q);            ///< q in [0, 31]
QByteArray blockQ5_1(quint16 d, quint16 m, const std::vector<int>& q); ///< q in [0, 31]
/// The 12 scale bytes of a Q4_K/Q5_K block for 6-bit sub-block scales sc[8] and minimums mn[8]:
/// sub-blocks 0..3 in the low 6 bits of bytes j and j+4; 4..7 in the nibbles of bytes 8..11 with
/// their top 2 bits in the top bits of bytes j−4 (scale) and j (minimum).
QByteArray packScalesK4(const std::vector<int>& sc, const std::vector<int>& mn);
/// q in [0, 15], 256 elements; element e is in sub-block e / 32.
QByteArray blockQ4_K(quint16 d, quint16 dmin, const std::vector<int>& sc, const std::vector<int>& mn, const std::vector<int>& q);
/// q in [0, 31].
QByteArray blockQ5_K(quint16 d, quint16 dmin, const std::vector<int>& sc, const std::vector<int>& mn, const std::vector<int>& q);
/// sc[16] in [-128, 127] (sub-blocks of 16), q in [0, 63] (the value is q − 32).
QByteArray blockQ6_K(quint16 d, const std::vector<int>& sc, const std::vector<int>& q);

/// Quantized test data: the blocks and, per element, the quantization step of its (sub-)block
/// computed from the stored f16 scales.
struct TestQuantized {
    QByteArray bytes;
    std::vector<float> step;
};
/// Quantizes x (a multiple of the type's block size) to `type` (kTQ4_0 ... kTQ6_K). Q4_0, Q4_1, Q5_0 and
/// Q5_1 follow ggml's reference quantizers (quantize_row_q4_0_ref ...; Q4_0/Q5_0 may be off by one step
/// at the clamp); the K-quants use a simple scheme whose grid covers each sub-block (scales rounded up),
/// so every element is within half a step; Q6_K flips the sign of every other sub-block's scale.
TestQuantized quantizeForTest(quint32 type, const std::vector<float>& x);

} // namespace attnscope::test
