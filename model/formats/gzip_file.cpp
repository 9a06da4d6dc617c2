#include "model/formats/gzip_file.h"

#include "model/core/errors.h"
#include "model/formats/json_file.h"

#ifdef ATTNSCOPE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace attnscope {

bool gzipSupported() {
#ifdef ATTNSCOPE_HAVE_ZLIB
    return true;
#else
    return false;
#endif
}

bool looksGzipped(const QByteArray& bytes) {
    return bytes.size() >= 2 && uchar(bytes[0]) == 0x1f && uchar(bytes[1]) == 0x8b;
}

QByteArray readGzipFile(const QString& path, const QString& fileLabel, qint64 maxBytes) {
    const QByteArray in = readSmallFile(path, fileLabel, maxBytes);
    if (!looksGzipped(in)) throw ModelError(fileLabel, QStringLiteral("not a gzip file (it does not start with 1f 8b)"));
#ifndef ATTNSCOPE_HAVE_ZLIB
    throw ModelError(fileLabel, QStringLiteral("gzip files need zlib, which this build was made without (install zlib1g-dev and rebuild)"));
#else
    QByteArray out;
    z_stream zs{};
    // 16 + MAX_WBITS: a gzip wrapper, not zlib's
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw ModelError(fileLabel, QStringLiteral("zlib could not start inflating"));
    struct End { z_stream* z; ~End() { inflateEnd(z); } } end{&zs};
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.constData()));
    zs.avail_in = uInt(in.size());
    constexpr qint64 kChunk = 1 << 20;
    for (;;) {
        const qint64 room = std::min<qint64>(kChunk, maxBytes - out.size());
        if (room <= 0) {
            // the output is full: refuse if anything is left to inflate
            char probe;
            zs.next_out = reinterpret_cast<Bytef*>(&probe);
            zs.avail_out = 1;
            const int rc = inflate(&zs, Z_NO_FLUSH);
            if (zs.avail_out == 0 || (rc == Z_STREAM_END && zs.avail_in > 0))
                throw ModelError(fileLabel, QStringLiteral("inflates to more than %1 bytes").arg(maxBytes));
            if (rc == Z_STREAM_END) break;
            throw ModelError(fileLabel, QStringLiteral("truncated gzip data"));
        }
        const qint64 before = out.size();
        out.resize(before + room);
        zs.next_out = reinterpret_cast<Bytef*>(out.data() + before);
        zs.avail_out = uInt(room);
        const int rc = inflate(&zs, Z_NO_FLUSH);
        out.resize(before + room - zs.avail_out);
        if (rc == Z_STREAM_END) {
            if (zs.avail_in == 0) break;
            // another member follows (gzip -d concatenates them); trailing zero padding is ignored as gzip does
            const QByteArray rest = QByteArray::fromRawData(reinterpret_cast<const char*>(zs.next_in), int(zs.avail_in));
            if (rest.count('\0') == rest.size()) break;
            if (inflateReset(&zs) != Z_OK) throw ModelError(fileLabel, QStringLiteral("zlib could not restart inflating"));
            continue;
        }
        if (rc == Z_BUF_ERROR && zs.avail_in == 0) throw ModelError(fileLabel, QStringLiteral("truncated gzip data"));
        if (rc != Z_OK)
            throw ModelError(fileLabel, QStringLiteral("corrupt gzip data: %1").arg(QString::fromUtf8(zs.msg ? zs.msg : "inflate failed")));
    }
    return out;
#endif
}

} // namespace attnscope
