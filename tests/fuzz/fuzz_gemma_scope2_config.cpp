// libFuzzer target: readGemmaScope2Config (the config.json beside a Gemma Scope 2 params.safetensors) on arbitrary
// bytes. ModelError and InputError (a field of the wrong JSON type) are expected rejections; an accepted config has a
// non-negative width and hooks that are TransformerLens names or empty.

#include "fuzz_support.h"
#include "model/core/errors.h"
#include "model/features/gemma_scope_params.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    const QString path = fuzz::writeScratch(QStringLiteral("config.json"), QByteArrayView(data, qsizetype(size)));
    try {
        const GemmaScope2Config c = readGemmaScope2Config(path);
        if (c.width < 0) std::abort();
        for (const QString& h : {c.hookIn, c.hookOut})
            if (!h.isEmpty() && !h.startsWith(QLatin1String("blocks."))) std::abort();
    } catch (const ModelError&) {
    } catch (const InputError&) {
    }
    return 0;
}
