#include "model/formats/llama2c_file.h"

#include "model/core/errors.h"

#include <QtEndian>
#include <limits>
#include <stdexcept>

namespace attnscope {

namespace {

constexpr std::int64_t kHeaderBytes = 7 * 4;
constexpr quint32 kVersionedMagic = 0x616b3432; // "ak42", export.py version 1 and 2

constexpr std::array<const char*, kLlama2cWeightCount> kNames{{
    "token_embedding_table", "rms_att_weight", "wq", "wk", "wv", "wo", "rms_ffn_weight",
    "w1", "w2", "w3", "rms_final_weight", "freq_cis_real", "freq_cis_imag", "wcls",
}};

/// Products and sums of sizes in int64; `ok` turns false on the first overflow.
struct CheckedSize {
    bool ok = true;
    std::int64_t mul(std::int64_t a, std::int64_t b) {
        std::int64_t r = 0;
        ok = ok && !__builtin_mul_overflow(a, b, &r);
        return r;
    }
    std::int64_t add(std::int64_t a, std::int64_t b) {
        std::int64_t r = 0;
        ok = ok && !__builtin_add_overflow(a, b, &r);
        return r;
    }
};

QString describe(const std::array<qint32, 7>& h) {
    return QStringLiteral("dim %1, hidden_dim %2, n_layers %3, n_heads %4, n_kv_heads %5, vocab_size %6, seq_len %7")
        .arg(h[0]).arg(h[1]).arg(h[2]).arg(h[3]).arg(h[4]).arg(h[5]).arg(h[6]);
}

/// Offsets of every array for `c` (in file order); false if a byte count overflows.
bool computeLayout(const Llama2cConfig& c, Llama2cLayout& layout) {
    const std::int64_t dim = c.dim, hidden = c.hiddenDim, kv = c.kvDim(), vocab = c.vocabSize;
    struct Entry {
        bool perLayer;
        std::vector<std::int64_t> shape;
    };
    const std::array<Entry, kLlama2cWeightCount> entries{{
        {false, {vocab, dim}},
        {true, {dim}},
        {true, {dim, dim}},
        {true, {kv, dim}},
        {true, {kv, dim}},
        {true, {dim, dim}},
        {true, {dim}},
        {true, {hidden, dim}},
        {true, {dim, hidden}},
        {true, {hidden, dim}},
        {false, {dim}},
        {false, {c.seqLen, c.headSize() / 2}},
        {false, {c.seqLen, c.headSize() / 2}},
        {false, {vocab, dim}},
    }};
    CheckedSize s;
    std::int64_t offset = kHeaderBytes;
    for (int i = 0; i < kLlama2cWeightCount; ++i) {
        Llama2cArray& a = layout.arrays[size_t(i)];
        a.perLayer = entries[size_t(i)].perLayer;
        a.shape = entries[size_t(i)].shape;
        a.numel = 1;
        for (const std::int64_t d : a.shape) a.numel = s.mul(a.numel, d);
        const bool stored = i != int(Llama2cWeight::Classifier) || !c.sharedClassifier;
        a.offset = stored ? offset : layout.arrays[size_t(Llama2cWeight::TokenEmbedding)].offset;
        if (stored) offset = s.add(offset, s.mul(4, a.perLayer ? s.mul(a.numel, c.nLayers) : a.numel));
    }
    layout.fileSize = offset;
    return s.ok;
}

} // namespace

QString llama2cWeightName(Llama2cWeight w) { return QString::fromLatin1(kNames[size_t(w)]); }

Llama2cLayout parseLlama2cHeader(QByteArrayView prefix, std::int64_t fileSize, const QString& file) {
    if (fileSize < kHeaderBytes || prefix.size() < kHeaderBytes)
        throw ModelError(file, QStringLiteral("file is %1 bytes, too short for the %2-byte llama2.c header")
                                   .arg(fileSize).arg(kHeaderBytes));
    std::array<qint32, 7> h{};
    for (int i = 0; i < 7; ++i) h[size_t(i)] = qFromLittleEndian<qint32>(prefix.data() + 4 * i);
    if (quint32(h[0]) == kVersionedMagic)
        throw ModelError(file, QStringLiteral("this is a llama2.c version %1 export (magic \"ak42\"); only the legacy "
                                              "version-0 layout is supported").arg(h[1]));

    static const char* const fields[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
    for (int i = 0; i < 7; ++i) {
        if (i == 5) continue;
        if (h[size_t(i)] <= 0)
            throw ModelError(file, QStringLiteral("header %1 is %2; it must be positive (%3)")
                                       .arg(QLatin1String(fields[i])).arg(h[size_t(i)]).arg(describe(h)));
    }
    if (h[5] == 0 || h[5] == std::numeric_limits<qint32>::min())
        throw ModelError(file, QStringLiteral("header vocab_size is %1; it must be non-zero (negative means an untied "
                                              "classifier) (%2)").arg(h[5]).arg(describe(h)));
    Llama2cLayout layout;
    Llama2cConfig& c = layout.config;
    c.dim = h[0];
    c.hiddenDim = h[1];
    c.nLayers = h[2];
    c.nHeads = h[3];
    c.nKvHeads = h[4];
    c.sharedClassifier = h[5] > 0;
    c.vocabSize = h[5] > 0 ? h[5] : -h[5];
    c.seqLen = h[6];
    if (c.dim % c.nHeads != 0)
        throw ModelError(file, QStringLiteral("header dim %1 is not divisible by n_heads %2").arg(c.dim).arg(c.nHeads));
    if (c.nHeads % c.nKvHeads != 0)
        throw ModelError(file, QStringLiteral("header n_heads %1 is not a multiple of n_kv_heads %2").arg(c.nHeads).arg(c.nKvHeads));
    if (c.headSize() % 2 != 0)
        throw ModelError(file, QStringLiteral("head size dim / n_heads = %1 is odd; rotary embeddings need pairs").arg(c.headSize()));

    if (!computeLayout(c, layout))
        throw ModelError(file, QStringLiteral("the header describes more than 2^63 bytes of weights (%1)").arg(describe(h)));
    if (fileSize != layout.fileSize) {
        // Would the other classifier choice fit exactly? (The sign of vocab_size is the only flag.)
        Llama2cLayout other;
        Llama2cConfig flipped = c;
        flipped.sharedClassifier = !c.sharedClassifier;
        const bool otherFits = computeLayout(flipped, other) && other.fileSize == fileSize;
        const QString hint = !otherFits ? QString()
                             : c.sharedClassifier
                                 ? QStringLiteral("; it would fit exactly with an untied classifier (negative vocab_size)")
                                 : QStringLiteral("; it would fit exactly with a tied classifier (positive vocab_size)");
        throw ModelError(file, QStringLiteral("file is %1 bytes, but its header (%2) describes %3 bytes%4")
                                   .arg(fileSize).arg(describe(h)).arg(layout.fileSize).arg(hint));
    }
    return layout;
}

std::shared_ptr<const Llama2cFile> Llama2cFile::open(const QString& path, const QString& label) {
    std::shared_ptr<Llama2cFile> f(new Llama2cFile());
    f->map_.open(path, label);
    f->layout_ = parseLlama2cHeader(f->map_.bytes(), f->map_.size(), f->label());
    return f;
}

std::shared_ptr<const Llama2cFile> Llama2cFile::fromBytes(const QByteArray& bytes, const QString& label) {
    std::shared_ptr<Llama2cFile> f(new Llama2cFile());
    const bool aligned = reinterpret_cast<quintptr>(bytes.constData()) % alignof(float) == 0;
    f->map_.adopt(aligned ? bytes : QByteArray(bytes.constData(), bytes.size()), label);
    f->layout_ = parseLlama2cHeader(f->map_.bytes(), f->map_.size(), f->label());
    return f;
}

Llama2cFile::~Llama2cFile() = default;

Llama2cTensorView Llama2cFile::tensor(Llama2cWeight w, int layer) const {
    const Llama2cArray& a = layout_.arrays[size_t(w)];
    if (a.perLayer ? (layer < 0 || layer >= layout_.config.nLayers) : layer != -1)
        throw std::out_of_range("Llama2cFile::tensor: layer out of range");
    const std::int64_t offset = a.offset + (a.perLayer ? std::int64_t(layer) * a.numel * 4 : 0);
    return {reinterpret_cast<const float*>(map_.data() + offset), a.shape, a.numel};
}

} // namespace attnscope
