// libFuzzer target: opening a feature contexts database (SQLite through Qt SQL's QSQLITE driver; context_store.h) from
// arbitrary bytes, read-only, and reading it as `attnscope --contexts-db` and the feature card do: the metadata, every
// record, each feature's top contexts with their windows' token ids, its histogram. InputError is an expected
// rejection; what is read must be usable as read (a context's position inside its window, kHistogramBins counts).

#include "fuzz_support.h"
#include "model/analysis/features/context_store.h"
#include "model/core/errors.h"

#include <QCoreApplication>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    static QCoreApplication app(*argc, *argv); // Qt SQL loads its driver plugin through the application
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    const QString path = fuzz::writeScratch(QStringLiteral("contexts.db"), QByteArrayView(data, qsizetype(size)));
    try {
        const ContextStore store(path, false);
        (void)store.meta();
        int features = 0;
        for (const auto& [feature, records] : store.allRecords()) {
            for (size_t i = 1; i < records.size(); ++i)
                if (ranksBefore(records[i], records[i - 1])) std::abort();
            // what featureContextsToJson and the feature card index: the max token inside its window, every histogram bin
            for (const FeatureContext& c : store.topContexts(feature, 3))
                if (c.position < 0 || size_t(c.position) >= c.ids.size()) std::abort();
            const auto [firing, counts] = store.histogram(feature);
            if (firing < 0 || counts.size() != size_t(kHistogramBins)) std::abort();
            if (++features == 8) break;
        }
    } catch (const InputError&) {
    }
    return 0;
}
