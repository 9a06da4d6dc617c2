#include "model/formats/gguf_probe.h"

#include "model/core/errors.h"
#include "model/formats/gguf_file.h"

#include <QFile>
#include <QFileInfo>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>

namespace attnscope {

namespace {
constexpr std::uint32_t kMagic = 0x46554747; // "GGUF" read as a little-endian u32
} // namespace

QString ggufFileTypeName(int fileType) {
    // llama.h enum llama_ftype (LLAMA_FTYPE_MOSTLY_*); 4–6 are obsolete
    static const char* const names[] = {"F32",    "F16",     "Q4_0",   "Q4_1",   "",       "",      "",
                                        "Q8_0",   "Q5_0",    "Q5_1",   "Q2_K",   "Q3_K_S", "Q3_K_M", "Q3_K_L",
                                        "Q4_K_S", "Q4_K_M",  "Q5_K_S", "Q5_K_M", "Q6_K",   "IQ2_XXS", "IQ2_XS",
                                        "Q2_K_S", "IQ3_XS",  "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",  "IQ3_M",
                                        "IQ2_S",  "IQ2_M",   "IQ4_XS", "IQ1_M",  "BF16",   "",       "",
                                        "",       "TQ1_0",   "TQ2_0"};
    if (fileType >= 0 && fileType < int(std::size(names)) && names[fileType][0]) return QString::fromLatin1(names[fileType]);
    return QStringLiteral("file type %1").arg(fileType);
}

QString GgufSummary::quantization() const {
    if (fileType >= 0) return ggufFileTypeName(fileType);
    QString best = tensorTypes.isEmpty() ? QString() : QStringLiteral("F32");
    std::int64_t bestCount = 0;
    for (auto it = tensorTypes.begin(); it != tensorTypes.end(); ++it)
        if (it.key() != QLatin1String("F32") && it.value() > bestCount) {
            best = it.key();
            bestCount = it.value();
        }
    return best;
}

bool hasGgufMagic(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return false;
    std::uint32_t magic = 0;
    return f.read(reinterpret_cast<char*>(&magic), 4) == 4 && magic == kMagic;
}

GgufSummary probeGguf(const QString& path) {
    // the validating reader: it parses the metadata and tensor infos (a mapping, header pages only)
    const std::shared_ptr<const GgufFile> f = GgufFile::open(path, QFileInfo(path).fileName());
    GgufSummary s;
    s.version = f->version();
    s.tensorCount = std::int64_t(f->tensors().size());
    s.metadataCount = std::int64_t(f->metadata().size());
    auto stringOr = [&](const QString& key) { return f->contains(key) ? f->string(key) : QString(); };
    s.architecture = stringOr(QStringLiteral("general.architecture"));
    s.name = stringOr(QStringLiteral("general.name"));
    if (f->contains(QStringLiteral("general.file_type"))) s.fileType = int(f->u64(QStringLiteral("general.file_type")));
    const QString blocks = s.architecture + QStringLiteral(".block_count");
    if (f->contains(blocks)) s.blockCount = int(f->u64(blocks));
    for (const GgufTensorInfo& t : f->tensors()) {
        s.tensorTypes[ggmlTypeName(t.type)] += 1;
        if (s.parameterCount <= INT64_MAX - t.numel) s.parameterCount += t.numel;
    }
    return s;
}

} // namespace attnscope
