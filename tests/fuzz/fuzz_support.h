#pragma once
// Shared by the fuzz targets: the text a tokenizer must give back after a round trip; the files of the targets whose
// reader opens a path (a folder of files, an SQLite database, a zip through minizip).

#include <QByteArray>
#include <QByteArrayView>
#include <QDir>
#include <QFile>
#include <QString>
#include <QTemporaryDir>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace attnscope::fuzz {

/// `text` with every unpaired UTF-16 surrogate replaced by U+FFFD, as Tokenizer::encode documents
/// (QString::toUtf8 would write '?' instead).
inline QString withoutLoneSurrogates(const QString& text) {
    QString out = text;
    for (qsizetype i = 0; i < out.size(); ++i) {
        if (out.at(i).isHighSurrogate() && i + 1 < out.size() && out.at(i + 1).isLowSurrogate()) ++i;
        else if (out.at(i).isSurrogate()) out[i] = QChar(QChar::ReplacementCharacter);
    }
    return out;
}

/// A folder of this process for the files an input becomes (in /dev/shm when there: a write per execution).
inline const QDir& scratchDir() {
    static QTemporaryDir dir(QDir(QStringLiteral("/dev/shm")).exists() ? QStringLiteral("/dev/shm/attnscope-fuzz-XXXXXX")
                                                                     : QDir::tempPath() + QStringLiteral("/attnscope-fuzz-XXXXXX"));
    static const QDir d(dir.path());
    if (!dir.isValid()) std::abort();
    return d;
}

/// Writes `bytes` to `name` in scratchDir() (replacing it) and returns its path.
inline QString writeScratch(const QString& name, QByteArrayView bytes) {
    const QString path = scratchDir().filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(bytes.data(), bytes.size()) != bytes.size()) std::abort();
    return path;
}

/// An input of two files: the bytes before the first NUL and those after it (empty when there is none). The seeds are
/// made the same way (tools/fuzz.sh: `cat cfg.json; printf '\0'; cat sae_weights.safetensors`).
inline std::pair<QByteArrayView, QByteArrayView> splitAtNul(const uint8_t* data, size_t size) {
    const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
    if (!nul) return {QByteArrayView(data, qsizetype(size)), {}};
    return {QByteArrayView(data, nul - data), QByteArrayView(nul + 1, qsizetype(size) - (nul - data) - 1)};
}

/// A folder of two files from one input (splitAtNul): `first` gets the bytes before the NUL, `second` the rest. Returns
/// the folder (scratchDir()).
inline QString writeFilePair(const QString& first, const QString& second, const uint8_t* data, size_t size) {
    const auto [a, b] = splitAtNul(data, size);
    writeScratch(first, a);
    writeScratch(second, b);
    return scratchDir().path();
}

} // namespace attnscope::fuzz
