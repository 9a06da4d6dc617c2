#pragma once
// The check every hostile-file test makes: opening is refused with a ModelError that names the file
// and says what is wrong, quickly (no hang; a huge allocation before a bounds check would escape as
// std::bad_alloc and fail the test instead).

#include "model/core/errors.h"
#include "tests/support/time_scale.h"

#include <QElapsedTimer>
#include <QStringList>
#include <QTest>

namespace attnscope::test {

/// Runs open() and checks that it throws ModelError for `fileName` ("<fileName>: <problem>") whose
/// problem contains every string of `problem`, within two seconds. Reports through QTest (the caller's
/// test fails; check QTest::currentTestFailed() to stop early).
template <typename Open>
void checkRejected(const Open& open, const QString& fileName, const QStringList& problem) {
    QElapsedTimer timer;
    timer.start();
    try {
        open();
        QFAIL("no ModelError");
    } catch (const ModelError& e) {
        QCOMPARE(e.file(), fileName);
        QVERIFY2(e.message().startsWith(fileName + QStringLiteral(": ")), qPrintable(e.message()));
        for (const QString& p : problem) QVERIFY2(e.problem().contains(p), qPrintable(e.message()));
    }
    QVERIFY2(timer.elapsed() < 2000 * kTimeScale, qPrintable(QStringLiteral("took %1 ms").arg(timer.elapsed())));
}

} // namespace attnscope::test
