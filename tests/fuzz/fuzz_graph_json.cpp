// libFuzzer target: readGraphFile (a Neuronpedia / circuit-tracer attribution-graph JSON) on arbitrary bytes. InputError is
// an expected rejection; an accepted document must answer its accessors and write back (graphDocumentToJson).
// A thin entry point: the reader is graph_document.h's public readGraphFile, unchanged.

#include "fuzz_support.h"
#include "model/analysis/graphs/graph_document.h"
#include "model/core/errors.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    const QString path = fuzz::writeScratch(QStringLiteral("graph.json"), QByteArrayView(data, qsizetype(size)));
    try {
        const GraphDocument doc = readGraphFile(path);
        if (doc.nLayers() < 0 || doc.nPositions() < 1) std::abort();
        for (int i = 0; i < int(doc.nodes.size()); ++i) {
            (void)doc.nodeLabel(i);
            (void)doc.strongestLinks(i, true, 3);
            if (!(doc.sizeWeight(i) >= 0 && doc.sizeWeight(i) <= 1) && !std::isnan(doc.sizeWeight(i))) std::abort();
        }
        for (const GraphDocumentLink& l : doc.links)
            if (l.source < 0 || l.target < 0 || l.source >= int(doc.nodes.size()) || l.target >= int(doc.nodes.size())) std::abort();
        (void)graphDocumentToJson(doc);
    } catch (const InputError&) {
    } catch (const ModelError&) {
    }
    return 0;
}
