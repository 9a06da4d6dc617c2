#include "made_tokenizer.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtEndian>
#include <QtGlobal>
#include <algorithm>
#include <vector>

namespace attnscope::test {

namespace {

std::vector<QByteArray> pieces512() {
    std::vector<QByteArray> p{"<unk>", "\n<s>\n", "\n</s>\n"};
    for (int b = 0; b < 256; ++b) p.push_back(QByteArray("<0x") + QByteArray::number(b, 16).toUpper().rightJustified(2, '0') + ">");
    auto add = [&](const QByteArray& piece) {
        if (p.size() < 512 && std::find(p.begin(), p.end(), piece) == p.end()) p.push_back(piece);
    };
    for (char c = 'a'; c <= 'z'; ++c) add(QByteArray(1, c));
    for (char c = 'A'; c <= 'Z'; ++c) add(QByteArray(1, c));
    for (const char* s : {" ", ".", ",", "!", "?", "'", "\"", "-", ":", ";", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}) add(s);
    for (char c = 'a'; c <= 'z'; ++c) add(QByteArray(" ") + c);
    for (const char* w : {" the", " and", " was", " to", " a", " he", " she", " it", " in", " of", " day", " Once", " upon",
                          " time", " there", " little", " girl", " boy", " Lily", " Tim", " play", " happy", " said"})
        add(w);
    for (char a = 'a'; a <= 'z' && p.size() < 512; ++a)
        for (char b = 'a'; b <= 'z' && p.size() < 512; ++b) add(QByteArray(1, a) + b);
    return p;
}

} // namespace

QString madeTokenizer512() {
    static QTemporaryDir dir;
    static const QString path = [] {
        const QString file = dir.filePath(QStringLiteral("tokenizer.bin"));
        const std::vector<QByteArray> pieces = pieces512();
        Q_ASSERT(pieces.size() == 512);
        QByteArray out(4, '\0');
        qToLittleEndian<qint32>(16, out.data()); // max_token_length
        for (size_t i = 0; i < pieces.size(); ++i) {
            char record[8];
            qToLittleEndian<float>(i < 3 ? 0.0f : -float(i), record);
            qToLittleEndian<qint32>(qint32(pieces[i].size()), record + 4);
            out += QByteArray(record, 8) + pieces[i];
        }
        QFile f(file);
        if (!f.open(QIODevice::WriteOnly) || f.write(out) != out.size()) qFatal("cannot write %s", qPrintable(file));
        return file;
    }();
    return path;
}

} // namespace attnscope::test
