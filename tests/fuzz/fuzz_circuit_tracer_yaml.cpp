// libFuzzer target: readCircuitTracerSet on a folder made from the input: the bytes before the first NUL are
// config.yaml (read with yaml-cpp), the rest layer_0.safetensors. ModelError and InputError (a field of the wrong YAML
// type) are expected rejections; an accepted set must have a transcoder per layer with positive sizes.

#include "fuzz_support.h"
#include "model/core/errors.h"
#include "model/features/circuit_tracer_set.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    const QString folder = fuzz::writeFilePair(QStringLiteral("config.yaml"), QStringLiteral("layer_0.safetensors"), data, size);
    try {
        const DictionarySet set = readCircuitTracerSet(folder);
        if (set.coders.empty()) std::abort();
        for (const SparseCoder& c : set.coders)
            if (c.d_in < 1 || c.d_sae < 1 || c.hookIn.isEmpty() || c.hookOut.isEmpty()) std::abort();
    } catch (const ModelError&) {
    } catch (const InputError&) {
    }
    return 0;
}
