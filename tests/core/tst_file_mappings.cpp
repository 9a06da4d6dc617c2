// model/core/file_mappings.h: the pages a weight's packed copy replaces are dropped only where they are a
// read-only mapping of a file (MappedFile), and read back with the same bytes; heap memory, whose pages
// MADV_DONTNEED would zero, and ranges outside a mapping are never touched.

#include "model/core/file_mappings.h"
#include "model/formats/mapped_file.h"

#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>
#include <vector>

using namespace attnscope;

namespace {

/// 64 pages of a pattern that no page repeats.
QByteArray patternBytes() {
    const long page = sysconf(_SC_PAGESIZE);
    QByteArray b(int(64 * page), Qt::Uninitialized);
    for (int i = 0; i < b.size(); ++i) b[i] = char((i * 131 + i / int(page)) & 0xFF);
    return b;
}

} // namespace

class TestFileMappings : public QObject {
    Q_OBJECT
private slots:
    void heapMemoryIsNeverDropped() {
        const QByteArray pattern = patternBytes();
        const long page = sysconf(_SC_PAGESIZE);
        std::vector<char> heap(size_t(pattern.size() + 2 * page));
        char* aligned = heap.data() + (page - reinterpret_cast<std::uintptr_t>(heap.data()) % page);
        std::memcpy(aligned, pattern.constData(), size_t(pattern.size()));
        QCOMPARE(dropMappedPages(aligned, size_t(pattern.size())), size_t(0));
        populateMappedPages(aligned, size_t(pattern.size()));
        QCOMPARE(std::memcmp(aligned, pattern.constData(), size_t(pattern.size())), 0);
    }

    void mappedFilePagesAreDroppedAndReadBack() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("weights.bin"));
        const QByteArray pattern = patternBytes();
        {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            QCOMPARE(f.write(pattern), qint64(pattern.size()));
        }
        const uchar* base = nullptr;
        {
            MappedFile m;
            m.open(path, QString());
            base = m.data();
            QCOMPARE(m.size(), std::int64_t(pattern.size()));
            QCOMPARE(std::memcmp(m.data(), pattern.constData(), size_t(pattern.size())), 0); // resident now
            const long page = sysconf(_SC_PAGESIZE);
            // a range that starts and ends inside pages: only the whole pages between are dropped
            QCOMPARE(dropMappedPages(m.data() + 100, size_t(10 * page)), size_t(9 * page));
            QCOMPARE(dropMappedPages(m.data(), size_t(pattern.size())), size_t(pattern.size()));
            // past the end of the mapping: not a mapped range, nothing dropped
            QCOMPARE(dropMappedPages(m.data() + page, size_t(pattern.size())), size_t(0));
            QCOMPARE(std::memcmp(m.data(), pattern.constData(), size_t(pattern.size())), 0); // read back, same bytes
            populateMappedPages(m.data(), size_t(pattern.size()));
            QCOMPARE(std::memcmp(m.data(), pattern.constData(), size_t(pattern.size())), 0);
        }
        // unmapped: no longer registered, so not dropped (and not touched)
        QCOMPARE(dropMappedPages(base, size_t(pattern.size())), size_t(0));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), pattern); // the file is unchanged
    }
};

QTEST_GUILESS_MAIN(TestFileMappings)
#include "tst_file_mappings.moc"
