// keepFreedMemoryForReuse (model/core/heap_reuse.h): after it, a freed 64 MiB block is served again
// from pages the process already has, so touching it again costs no page faults (getrusage's minor
// faults). Before the call glibc mmaps such a block fresh each time (16k faults of 4 KiB).
// An earlier version compiled to a no-op because it tested __GLIBC__ before any header defined it.

#include "model/core/heap_reuse.h"

#include <QtTest>
#include <cstdlib>
#include <cstring>

#include <sys/resource.h>

namespace {

long minorFaults() {
    rusage r{};
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt;
}

/// Minor page faults while allocating, touching and freeing `bytes`.
long faultsOfOneBlock(size_t bytes) {
    const long before = minorFaults();
    auto* p = static_cast<char*>(std::malloc(bytes));
    std::memset(p, 1, bytes);
    asm volatile("" : : "g"(p) : "memory"); // the compiler may not elide the allocation and its writes
    std::free(p);
    return minorFaults() - before;
}

} // namespace

class TestHeapReuse : public QObject {
    Q_OBJECT
private slots:
    void freedBlocksAreReusedWithoutPageFaults() {
#if !defined(__GLIBC__)
        QSKIP("glibc only");
#elif defined(ATTNSCOPE_SANITIZE)
        QSKIP("AddressSanitizer's allocator replaces glibc malloc (and ignores mallopt)");
#else
        const size_t bytes = size_t(64) << 20;
        const long fresh = faultsOfOneBlock(bytes); // default malloc: a fresh mmap every time
        QVERIFY2(fresh > 8000, qPrintable(QString("default malloc faulted %1 pages").arg(fresh)));
        QVERIFY(attnscope::keepFreedMemoryForReuse());
        faultsOfOneBlock(bytes); // the first block on the heap is faulted in once
        const long reused = faultsOfOneBlock(bytes);
        QVERIFY2(reused < 100, qPrintable(QString("a reused 64 MiB block faulted %1 pages").arg(reused)));
#endif
    }
};

QTEST_GUILESS_MAIN(TestHeapReuse)
#include "tst_heap_reuse.moc"
