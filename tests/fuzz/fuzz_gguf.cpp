// libFuzzer target: GgufFile::fromBytes (parseGgufHeader) on arbitrary bytes as the whole file.
// ModelError is an expected rejection; a crash, sanitizer report or other exception is a bug.
// An accepted file must keep its promises: every tensor inside the file, none overlapping, sizes
// consistent with the type's blocks; every metadata value readable (toVariant, the typed getters
// either answer or throw ModelError); the first and last row of every tensor dequantizable.

#include "model/core/errors.h"
#include "model/formats/ggml_quants.h"
#include "model/formats/gguf_file.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

using namespace attnscope;

void check(bool ok) {
    if (!ok) std::abort();
}

template <typename Get>
void tryGet(const Get& get) {
    try {
        get();
    } catch (const ModelError&) {
    }
}

void checkTensors(const GgufFile& f) {
    const GgufHeader& h = f.header();
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    for (const GgufTensorInfo& t : f.tensors()) {
        check(t.nDims >= 1 && t.nDims <= 4 && t.numel >= 1 && t.ne[0] % ggmlBlockSize(t.type) == 0);
        check(t.byteSize == ggmlRowBytes(t.type, t.numel) && t.byteSize == t.rows() * t.rowBytes());
        check(t.fileOffset == h.dataOffset + t.offset && t.offset % h.alignment == 0);
        check(t.fileOffset >= h.dataOffset && t.byteSize <= f.fileSize() - t.fileOffset);
        check(f.findTensor(t.name) == &t);
        ranges.emplace_back(t.fileOffset, t.fileOffset + t.byteSize);
        std::vector<float> row(size_t(t.rowLength()));
        for (const std::int64_t r : {std::int64_t(0), t.rows() - 1}) tryGet([&] { f.dequantizeRows(t, r, 1, row.data()); });
        tryGet([&] { f.checkScales(t); });
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) check(ranges[i].first >= ranges[i - 1].second);
}

void checkMetadata(const GgufFile& f) {
    for (const GgufKeyValue& kv : f.metadata()) {
        check(f.find(kv.key) == &kv.value);
        check(kv.value.offset >= 24 && kv.value.byteSize <= f.fileSize() - kv.value.offset);
        f.toVariant(kv.value);
        tryGet([&] { f.u64(kv.key); });
        tryGet([&] { f.i64(kv.key); });
        tryGet([&] { f.f64(kv.key); });
        tryGet([&] { f.boolean(kv.key); });
        tryGet([&] { f.string(kv.key); });
        tryGet([&] { check(f.stringArray(kv.key).size() == kv.value.count); });
        tryGet([&] { f.f32Array(kv.key); });
        tryGet([&] { f.intArray(kv.key); });
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const QByteArray bytes = QByteArray::fromRawData(reinterpret_cast<const char*>(data), qsizetype(size));
    try {
        const auto f = GgufFile::fromBytes(bytes, QStringLiteral("fuzz.gguf"));
        check(f->fileSize() == std::int64_t(size));
        check(f->tensors().empty() || f->header().dataOffset <= f->fileSize());
        checkMetadata(*f);
        checkTensors(*f);
    } catch (const ModelError&) {
    }
    return 0;
}
