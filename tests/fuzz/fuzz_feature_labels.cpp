// libFuzzer target: readFeatureLabels (Neuronpedia's explanation exports and label CSVs) on arbitrary bytes. The first
// byte picks the file's kind: .jsonl, .jsonl.gz (the rest inflated through zlib, with its cap) or .csv. ModelError and
// InputError (a member of the wrong JSON type) are expected rejections; accepted labels are non-empty, at a layer ≥ −1
// (−1: a CSV without layers) and a feature ≥ 0, and the counts agree.

#include "fuzz_support.h"
#include "model/core/errors.h"
#include "model/features/feature_labels.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    if (size == 0) return 0;
    static const char* const names[] = {"batch-0.jsonl", "batch-0.jsonl.gz", "labels.csv"};
    const QString path = fuzz::writeScratch(QString::fromLatin1(names[data[0] % 3]), QByteArrayView(data + 1, qsizetype(size - 1)));
    try {
        const FeatureLabels labels = readFeatureLabels(path);
        for (const auto& [key, text] : labels.labels)
            if (key.first < -1 || key.second < 0 || text.isEmpty() || labels.label(key.first, key.second).isEmpty()) std::abort();
        if (labels.files.size() != 1 || labels.duplicates < 0) std::abort();
        (void)labels.summary();
    } catch (const ModelError&) {
    } catch (const InputError&) {
    }
    return 0;
}
