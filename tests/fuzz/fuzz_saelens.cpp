// libFuzzer target: readSaeLensFolder on a folder made from the input: the bytes before the first NUL are cfg.json, the
// rest sae_weights.safetensors. ModelError and InputError (a field of the wrong JSON type) are expected rejections; an
// accepted SAE must have positive sizes, k inside [1, d_sae] for TopK, and tensors of the sizes cfg.json gives.

#include "fuzz_support.h"
#include "model/core/errors.h"
#include "model/features/saelens_folder.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    const QString folder = fuzz::writeFilePair(QStringLiteral("cfg.json"), QStringLiteral("sae_weights.safetensors"), data, size);
    try {
        const SparseCoder sae = readSaeLensFolder(folder);
        if (sae.d_in < 1 || sae.d_sae < 1 || sae.d_out < 1 || sae.hookIn.isEmpty()) std::abort();
        if (sae.activation == FeatureActivation::TopK && (sae.k < 1 || sae.k > sae.d_sae)) std::abort();
        if (sae.W_enc.rows != sae.d_in || sae.W_enc.cols != sae.d_sae || sae.W_dec.rows != sae.d_sae || sae.W_dec.cols != sae.d_out)
            std::abort();
    } catch (const ModelError&) {
    } catch (const InputError&) {
    }
    return 0;
}
