// libFuzzer target: Llama2cFile::fromBytes (parseLlama2cHeader) on arbitrary bytes as the whole checkpoint.
// ModelError is an expected rejection; a crash, sanitizer report or other exception is a bug.
// An accepted file must be exactly as long as its layout and every array view must lie inside it
// (the first and last float of each are read, so ASan sees any view past the end).

#include "model/core/errors.h"
#include "model/formats/llama2c_file.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    const QByteArray bytes = QByteArray::fromRawData(reinterpret_cast<const char*>(data), qsizetype(size));
    try {
        const auto f = Llama2cFile::fromBytes(bytes, QStringLiteral("fuzz.bin"));
        const Llama2cConfig& c = f->config();
        if (f->layout().fileSize != std::int64_t(size) || c.dim % c.nHeads != 0 || c.nHeads % c.nKvHeads != 0) std::abort();
        volatile float sink = 0;
        for (int w = 0; w < kLlama2cWeightCount; ++w) {
            const bool perLayer = f->layout().arrays[size_t(w)].perLayer;
            for (const int layer : perLayer ? std::initializer_list<int>{0, c.nLayers - 1} : std::initializer_list<int>{-1}) {
                const Llama2cTensorView v = f->tensor(Llama2cWeight(w), layer);
                if (v.numel < 1) std::abort();
                sink = sink + v.data[0] + v.data[v.numel - 1];
            }
        }
    } catch (const ModelError&) {
    }
    return 0;
}
