// libFuzzer target: parseSafetensorsHeader on arbitrary bytes, as the whole file (prefix = file).
// Any ModelError is an expected rejection; a crash, sanitizer report or other exception is a bug.
// A header that passes must describe tensors that lie inside the data area.

#include "model/core/errors.h"
#include "model/formats/safetensors_file.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    const QByteArrayView bytes(reinterpret_cast<const char*>(data), qsizetype(size));
    try {
        const SafetensorsHeader h = parseSafetensorsHeader(bytes, std::int64_t(size), QStringLiteral("fuzz.safetensors"));
        std::int64_t covered = 0;
        for (const SafetensorsTensor& t : h.tensors) {
            if (t.begin != covered || t.end < t.begin || t.end > h.dataBytes ||
                t.byteSize() != t.numel * std::int64_t(dtypeSize(t.dtype)))
                std::abort(); // a validated header must tile the data area exactly
            covered = t.end;
        }
        if (covered != h.dataBytes || h.dataOffset + h.dataBytes != std::int64_t(size)) std::abort();
    } catch (const ModelError&) {
    }
    return 0;
}
