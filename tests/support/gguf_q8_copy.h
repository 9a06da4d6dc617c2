#pragma once
// A quantized copy of a GGUF model made by the tests' own small GGUF writer (gguf_writer.h): every
// metadata pair copied as it is, the matrices whose rows are whole 32-element blocks written as Q8_0 by
// the library's quantizeRowQ8_0 (ggml's quantize_row_q8_0_ref), everything else (norms, and matrices
// whose rows are not a multiple of 32, as llama.cpp's quantizer leaves them) copied unchanged. Or the same
// Q8_0 values decoded by hand (x = d·q) and written back as F32: the float32 model a Q8_0 forward must equal.

#include <QByteArray>
#include <QString>
#include <QStringList>

namespace attnscope::test {

enum class Q8Copy {
    Q8_0,          ///< matrices stored as Q8_0 blocks (general.file_type 7, MOSTLY_Q8_0)
    DequantizedF32 ///< the Q8_0 values decoded to float32 and stored as F32
};

/// The bytes of the copy of `source` (a GGUF file with F32 tensors). `kept` receives the names of the
/// 2-D tensors copied unchanged because their rows are not whole Q8_0 blocks. qFatal on error.
QByteArray ggufQ8_0Copy(const QString& source, Q8Copy mode, QStringList* kept = nullptr);

} // namespace attnscope::test
