// libFuzzer target: parseHfConfig (config.json) on arbitrary bytes. ModelError is an expected
// rejection; an accepted config must have positive sizes with d_model = n_heads · d_head.

#include "model/core/errors.h"
#include "model/formats/hf_config.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    try {
        const ModelConfig c = parseHfConfig(QByteArray(reinterpret_cast<const char*>(data), qsizetype(size)));
        if (c.n_layers <= 0 || c.n_heads <= 0 || c.d_model <= 0 || c.d_head <= 0 || c.d_mlp <= 0 ||
            c.d_vocab <= 0 || c.n_ctx <= 0 || c.n_heads * c.d_head != c.d_model)
            std::abort();
    } catch (const ModelError&) {
    }
    return 0;
}
