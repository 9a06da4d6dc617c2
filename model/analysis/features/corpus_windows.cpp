#include "model/analysis/features/corpus_windows.h"

#include "model/core/errors.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>

namespace attnscope {

namespace {

constexpr qint64 kPieceBytes = 64 * 1024;

bool isCorpusFile(const QString& name) {
    return name.endsWith(QLatin1String(".txt"), Qt::CaseInsensitive) || name.endsWith(QLatin1String(".jsonl"), Qt::CaseInsensitive);
}

/// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629), 0 when it is not one.
int sequenceLength(const unsigned char* s, qint64 i, qint64 n) {
    const unsigned c = s[i];
    if (c < 0x80) return 1;
    int len = 0;
    unsigned lo = 0x80, hi = 0xBF; // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return 0;
    if (i + len > n) return 0;
    if (s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (int k = 2; k < len; ++k)
        if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
    return len;
}

} // namespace

std::vector<CorpusFile> listCorpusFiles(const QString& path) {
    const QFileInfo info(path);
    if (!info.exists()) throw InputError(QStringLiteral("%1: no such corpus file or folder").arg(path));
    std::vector<CorpusFile> files;
    auto add = [&](const QFileInfo& f) {
        files.push_back({f.filePath(), f.size(), f.lastModified().toUTC().toMSecsSinceEpoch()});
    };
    if (info.isFile()) {
        add(info);
        return files;
    }
    QStringList found;
    QDirIterator it(path, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString f = it.next();
        if (isCorpusFile(f)) found << f;
    }
    std::sort(found.begin(), found.end());
    for (const QString& f : found) add(QFileInfo(f));
    if (files.empty()) throw InputError(QStringLiteral("%1: the folder holds no .txt or .jsonl file").arg(path));
    return files;
}

QString decodeUtf8Lossy(const QByteArray& bytes, qint64* badBytes) {
    const auto* s = reinterpret_cast<const unsigned char*>(bytes.constData());
    const qint64 n = bytes.size();
    QString out;
    out.reserve(n);
    qint64 runStart = 0, i = 0;
    while (i < n) {
        const int len = sequenceLength(s, i, n);
        if (len > 0) {
            i += len;
            continue;
        }
        out += QString::fromUtf8(bytes.constData() + runStart, i - runStart);
        out += QChar(0xFFFD);
        ++*badBytes;
        runStart = ++i;
    }
    out += QString::fromUtf8(bytes.constData() + runStart, n - runStart);
    return out;
}

CorpusWindows::CorpusWindows(std::vector<CorpusFile> files, const Tokenizer& tokenizer, int windowTokens)
    : files_(std::move(files)), tok_(tokenizer), windowTokens_(std::max(windowTokens, 1)) {
    if (const std::optional<int> b = tok_.bosId()) bos_.push_back(*b);
    for (const CorpusFile& f : files_) totalBytes_ += f.size;
}

bool CorpusWindows::readPiece() {
    pending_.clear();
    pendingPos_ = 0;
    while (fileIndex_ < files_.size()) {
        const CorpusFile& cf = files_[fileIndex_];
        if (!file_) {
            file_ = std::make_unique<QFile>(cf.path);
            if (!file_->open(QIODevice::ReadOnly))
                throw InputError(QStringLiteral("%1: cannot read: %2").arg(cf.path, file_->errorString()));
        }
        if (file_->atEnd()) {
            file_.reset();
            ++fileIndex_;
            continue;
        }
        const bool jsonl = cf.path.endsWith(QLatin1String(".jsonl"), Qt::CaseInsensitive);
        QByteArray bytes;
        if (jsonl) {
            bytes = file_->readLine();
        } else {
            while (bytes.size() < kPieceBytes && !file_->atEnd()) bytes += file_->readLine();
        }
        bytesRead_ += bytes.size();
        QString text = decodeUtf8Lossy(bytes, &badBytes_);
        if (jsonl) {
            if (text.trimmed().isEmpty()) continue;
            const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8());
            const QJsonValue v = doc.isObject() ? doc.object().value(QLatin1String("text")) : QJsonValue();
            if (!v.isString()) {
                ++badJson_;
                continue;
            }
            text = v.toString();
        }
        pending_ = tok_.encode(text);
        if (!pending_.empty()) return true;
    }
    return false;
}

bool CorpusWindows::next(CorpusWindow* w) {
    if (pendingPos_ >= pending_.size() && !readPiece()) return false;
    const size_t n = std::min(pending_.size() - pendingPos_, size_t(windowTokens_));
    w->index = nextIndex_++;
    w->bos = !bos_.empty();
    w->ids = bos_;
    w->ids.insert(w->ids.end(), pending_.begin() + qint64(pendingPos_), pending_.begin() + qint64(pendingPos_ + n));
    pendingPos_ += n;
    return true;
}

} // namespace attnscope
