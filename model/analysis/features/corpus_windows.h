#pragma once
// A text corpus read as the model's context windows, one at a time: a .txt file or a folder of .txt / .jsonl
// files (jsonl: one JSON object per line, its text in "text"), in sorted path order. Each document (a .jsonl
// line; a .txt file in pieces of whole lines of ≥ 64 KiB) is tokenized alone and cut into chunks of at most
// `windowTokens` tokens; a window is BOS (when the tokenizer has one) + one chunk. Windows are numbered 0, 1, …
// over the whole corpus, so the numbering does not depend on sharding or on where a run resumed.
// Bytes that are not UTF-8 are read as U+FFFD and counted. Never more than one piece is held in memory.

#include "model/tokenizers/tokenizer.h"

#include <QFile>
#include <QString>
#include <memory>
#include <vector>

namespace attnscope {

/// One corpus file: its path (as found), size in bytes and modification time (ms since the epoch, UTC).
struct CorpusFile {
    QString path;
    qint64 size = 0;
    qint64 mtime = 0;
};

/// The corpus files at `path` (a file, or every .txt / .jsonl below a folder, sorted by relative path).
/// Throws InputError when the path does not exist or a folder holds no .txt / .jsonl file.
std::vector<CorpusFile> listCorpusFiles(const QString& path);

/// `bytes` decoded as UTF-8, each byte that is not part of a well-formed sequence (stray continuation
/// bytes, bad lead bytes, overlong forms, surrogates, > U+10FFFF, truncated sequences) replaced by U+FFFD
/// and counted in *badBytes.
QString decodeUtf8Lossy(const QByteArray& bytes, qint64* badBytes);

/// One context window: its global number, its token ids ([BOS] + chunk) and whether ids[0] is BOS.
struct CorpusWindow {
    qint64 index = 0;
    std::vector<int> ids;
    bool bos = false;
};

/// Reads the windows of `files` in order (see the file comment). windowTokens ≥ 1 counts the chunk without BOS.
class CorpusWindows {
public:
    CorpusWindows(std::vector<CorpusFile> files, const Tokenizer& tokenizer, int windowTokens);
    /// The next window into *w; false at the end of the corpus. Throws InputError when a file cannot be read.
    bool next(CorpusWindow* w);
    qint64 bytesRead() const { return bytesRead_; }   ///< of all files so far (for progress)
    qint64 totalBytes() const { return totalBytes_; }
    qint64 badUtf8Bytes() const { return badBytes_; } ///< so far
    qint64 badJsonLines() const { return badJson_; }  ///< .jsonl lines without a string "text" (skipped)

private:
    bool readPiece(); ///< tokenizes the next piece into pending_; false at the end

    std::vector<CorpusFile> files_;
    const Tokenizer& tok_;
    int windowTokens_;
    std::vector<int> bos_;
    size_t fileIndex_ = 0;
    std::unique_ptr<QFile> file_;
    std::vector<int> pending_;
    size_t pendingPos_ = 0;
    qint64 nextIndex_ = 0, bytesRead_ = 0, totalBytes_ = 0, badBytes_ = 0, badJson_ = 0;
};

} // namespace attnscope
