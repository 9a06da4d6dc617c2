// libFuzzer target: NpzArchive::open (Gemma Scope's params.npz, a zip read through minizip) on arbitrary bytes.
// ModelError is an expected rejection; every array of an accepted archive must be readable to its last byte (a read
// past a mapping or an inflated buffer is an AddressSanitizer report).

#include "model/core/errors.h"
#include "model/features/npz_archive.h"
#include "fuzz_support.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    const QString path = fuzz::writeScratch(QStringLiteral("params.npz"), QByteArrayView(data, qsizetype(size)));
    try {
        const auto npz = NpzArchive::open(path);
        unsigned sum = 0;
        for (const NpyArray& a : npz->arrays()) {
            std::int64_t n = 1;
            for (std::int64_t d : a.header.shape) n *= d;
            if (n != a.header.numel || npz->find(a.name) == nullptr) std::abort();
            const std::int64_t bytes = a.header.numel * dtypeSize(a.header.dtype);
            if (bytes > 0 && !a.data) std::abort();
            for (std::int64_t i = 0; i < bytes; ++i) sum += a.data[i];
        }
        volatile unsigned keep = sum;
        (void)keep;
    } catch (const ModelError&) {
    }
    return 0;
}
