#include "model/features/npz_archive.h"

#include "model/core/errors.h"

#include <QRegularExpression>
#include <limits>

#ifdef ATTNSCOPE_HAVE_MINIZIP
#include <minizip/unzip.h>
#endif

namespace attnscope {

namespace {

constexpr std::int64_t kMaxNpyHeaderBytes = 1 << 20;

std::uint32_t readLe(const uchar* p, int n) {
    std::uint32_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

} // namespace

NpyHeader parseNpyHeader(QByteArrayView bytes, const QString& label, const QString& entry) {
    auto fail = [&](const QString& what) { return ModelError(label, QStringLiteral("entry %1: %2").arg(entry, what)); };
    const auto* p = reinterpret_cast<const uchar*>(bytes.data());
    const std::int64_t n = bytes.size();
    if (n < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0) throw fail(QStringLiteral("not a .npy array (no \\x93NUMPY magic)"));
    const int major = p[6];
    if (major < 1 || major > 3) throw fail(QStringLiteral(".npy format version %1.%2 is not 1, 2 or 3").arg(major).arg(p[7]));
    const int lenBytes = major == 1 ? 2 : 4;
    if (n < 8 + lenBytes) throw fail(QStringLiteral("truncated .npy header"));
    const std::int64_t headerLen = readLe(p + 8, lenBytes);
    const std::int64_t start = 8 + lenBytes;
    if (headerLen > kMaxNpyHeaderBytes)
        throw fail(QStringLiteral(".npy header claims %1 bytes (at most %2)").arg(headerLen).arg(kMaxNpyHeaderBytes));
    if (start + headerLen > n)
        throw fail(QStringLiteral(".npy header claims %1 bytes but only %2 follow").arg(headerLen).arg(n - start));
    const QString dict = QString::fromLatin1(reinterpret_cast<const char*>(p + start), headerLen).trimmed();
    static const QRegularExpression descrRe(QStringLiteral("'descr'\\s*:\\s*'([^']*)'"));
    static const QRegularExpression fortranRe(QStringLiteral("'fortran_order'\\s*:\\s*(True|False)"));
    static const QRegularExpression shapeRe(QStringLiteral("'shape'\\s*:\\s*\\(([^)]*)\\)"));
    const auto d = descrRe.match(dict), f = fortranRe.match(dict), s = shapeRe.match(dict);
    if (!dict.startsWith(QLatin1Char('{')) || !dict.endsWith(QLatin1Char('}')) || !d.hasMatch() || !f.hasMatch() || !s.hasMatch())
        throw fail(QStringLiteral("the .npy header is not a dict with 'descr', 'fortran_order' and 'shape': %1").arg(dict.left(200)));
    NpyHeader h;
    const QString descr = d.captured(1);
    if (descr == QLatin1String("<f4")) h.dtype = DType::F32;
    else if (descr == QLatin1String("<f2")) h.dtype = DType::F16;
    else if (descr == QLatin1String("<f8")) h.dtype = DType::F64;
    else if (descr == QLatin1String("<i4")) h.dtype = DType::I32;
    else if (descr == QLatin1String("<i8")) h.dtype = DType::I64;
    else if (descr == QLatin1String("|b1")) h.dtype = DType::BOOL;
    else throw fail(QStringLiteral("dtype '%1' is not supported (little-endian float32, float16 or float64)").arg(descr));
    if (f.captured(1) == QLatin1String("True")) throw fail(QStringLiteral("fortran_order arrays are not supported"));
    const int elem = dtypeSize(h.dtype);
    h.numel = 1;
    for (const QString& part : s.captured(1).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const qlonglong dim = part.trimmed().toLongLong(&ok);
        if (!ok || dim < 0) throw fail(QStringLiteral("shape (%1) is not a tuple of non-negative integers").arg(s.captured(1)));
        if (dim > 0 && h.numel > std::numeric_limits<std::int64_t>::max() / elem / dim)
            throw fail(QStringLiteral("shape (%1) overflows").arg(s.captured(1)));
        h.numel *= dim;
        h.shape.push_back(dim);
    }
    h.dataOffset = start + headerLen;
    const std::int64_t want = h.numel * elem;
    if (n - h.dataOffset != want)
        throw fail(QStringLiteral("shape (%1) of %2 needs %3 bytes but the array holds %4")
                       .arg(s.captured(1), descr).arg(want).arg(n - h.dataOffset));
    return h;
}

const NpyArray* NpzArchive::find(const QString& name) const {
    for (const NpyArray& a : arrays_)
        if (a.name == name) return &a;
    return nullptr;
}

std::shared_ptr<const NpzArchive> NpzArchive::open(const QString& path, const QString& label) {
    std::shared_ptr<NpzArchive> z(new NpzArchive);
    z->map_.open(path, label);
    const QString& lab = z->map_.label();
#ifndef ATTNSCOPE_HAVE_MINIZIP
    throw ModelError(lab, QStringLiteral("this build reads no .npz archives (built without libminizip; install libminizip-dev and rebuild)"));
#else
    unzFile uf = unzOpen64(QFile::encodeName(path).constData());
    if (!uf) throw ModelError(lab, QStringLiteral("not a readable zip archive (.npz)"));
    struct Closer { unzFile f; ~Closer() { unzClose(f); } } closer{uf};
    const std::int64_t fileSize = z->map_.size();
    for (int rc = unzGoToFirstFile(uf); rc == UNZ_OK; rc = unzGoToNextFile(uf)) {
        unz_file_info64 info;
        char nameBuf[1024];
        if (unzGetCurrentFileInfo64(uf, &info, nameBuf, sizeof nameBuf, nullptr, 0, nullptr, 0) != UNZ_OK)
            throw ModelError(lab, QStringLiteral("a zip entry's header cannot be read"));
        QString name = QString::fromUtf8(nameBuf);
        const QString entry = name;
        if (!name.endsWith(QLatin1String(".npy"))) continue;
        name.chop(4);
        const auto usize = std::int64_t(info.uncompressed_size), csize = std::int64_t(info.compressed_size);
        if (usize < 0 || csize < 0 || csize > fileSize)
            throw ModelError(lab, QStringLiteral("entry %1: claims %2 compressed bytes but the file has %3").arg(entry).arg(csize).arg(fileSize));
        if (unzOpenCurrentFile(uf) != UNZ_OK) throw ModelError(lab, QStringLiteral("entry %1: cannot be opened").arg(entry));
        NpyArray a;
        a.name = name;
        if (info.compression_method == 0) { // stored: in place in the mapping
            const auto pos = std::int64_t(unzGetCurrentFileZStreamPos64(uf));
            if (usize != csize || pos <= 0 || pos > fileSize || usize > fileSize - pos)
                throw ModelError(lab, QStringLiteral("entry %1: claims %2 bytes at offset %3 but the file has %4")
                                          .arg(entry).arg(usize).arg(pos).arg(fileSize));
            const uchar* base = z->map_.data() + pos;
            a.header = parseNpyHeader(QByteArrayView(base, usize), lab, entry);
            a.data = base + a.header.dataOffset;
        } else if (info.compression_method == 8) { // deflated: inflate after checking the claim
            if (usize > csize * 1032 + 1024)
                throw ModelError(lab, QStringLiteral("entry %1: claims %2 bytes inflated from %3 (more than deflate can produce)")
                                          .arg(entry).arg(usize).arg(csize));
            std::vector<uchar>& buf = z->inflated_.emplace_back(size_t(usize));
            std::int64_t got = 0;
            while (got < usize) {
                const int chunk = int(std::min<std::int64_t>(usize - got, 1 << 30));
                const int r = unzReadCurrentFile(uf, buf.data() + got, unsigned(chunk));
                if (r <= 0) break;
                got += r;
            }
            if (got != usize || unzCloseCurrentFile(uf) != UNZ_OK)
                throw ModelError(lab, QStringLiteral("entry %1: inflates to %2 bytes, not the %3 it claims (or fails its CRC)")
                                          .arg(entry).arg(got).arg(usize));
            a.header = parseNpyHeader(QByteArrayView(buf.data(), usize), lab, entry);
            a.data = buf.data() + a.header.dataOffset;
        } else {
            throw ModelError(lab, QStringLiteral("entry %1: compression method %2 is not stored or deflate").arg(entry).arg(info.compression_method));
        }
        unzCloseCurrentFile(uf);
        z->arrays_.push_back(std::move(a));
    }
    return z;
#endif
}

} // namespace attnscope
