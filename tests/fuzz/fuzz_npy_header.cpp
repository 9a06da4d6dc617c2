// libFuzzer target: parseNpyHeader (a .npy array of Gemma Scope's params.npz) on arbitrary bytes. ModelError is an
// expected rejection; an accepted header must describe exactly the bytes after it.

#include "model/core/errors.h"
#include "model/features/npz_archive.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    try {
        const NpyHeader h = parseNpyHeader(QByteArrayView(data, qsizetype(size)), QStringLiteral("params.npz"), QStringLiteral("W_enc.npy"));
        std::int64_t n = 1;
        for (std::int64_t d : h.shape) n *= d;
        if (n != h.numel || h.dataOffset < 10 || h.dataOffset + h.numel * dtypeSize(h.dtype) != std::int64_t(size)) std::abort();
    } catch (const ModelError&) {
    }
    return 0;
}
