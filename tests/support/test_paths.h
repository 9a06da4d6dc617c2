#pragma once
// Locations the tests read: the shared reference data (outside the repository) and the demo model.

#include <QDir>
#include <QString>
#include <QtTest>

namespace attnscope::test {

/// ../shared/testdata from the project root (absolute), or the environment's ATTNSCOPE_TESTDATA_DIR when set
/// (`ATTNSCOPE_TESTDATA_DIR=/nonexistent ctest` shows what a clone without it runs).
inline QString testdataDir() {
    const QString env = qEnvironmentVariable("ATTNSCOPE_TESTDATA_DIR");
    return env.isEmpty() ? QStringLiteral(ATTNSCOPE_TESTDATA_DIR) : env;
}
inline QString testdata(const QString& rel) { return testdataDir() + QLatin1Char('/') + rel; }
/// resources/demo in the source tree.
inline QString demoDir() { return QStringLiteral(ATTNSCOPE_DEMO_DIR); }

/// Whether the reference data folder is there. A clone without it skips what reads it (ATTNSCOPE_REQUIRE_TESTDATA).
inline bool testdataAvailable() { return QDir(testdataDir()).exists(); }
/// The one line a skipped case prints; tests/CMakeLists.txt matches "reference data missing" to count a suite whose
/// every case skipped as skipped, tools/test.sh to say why.
inline QByteArray missingTestdataMessage() {
    return QStringLiteral("reference data missing: no folder %1 (../shared/testdata beside the repository); "
                          "docs/development.md#reference-data says how to assemble it")
        .arg(QDir::cleanPath(testdataDir()))
        .toUtf8();
}

} // namespace attnscope::test

/// First line of a test case (or of initTestCase when every case needs it) that reads ../shared/testdata: skips it
/// when the folder is missing. Never for data the project makes (the demo, random checkpoints, tests/data).
#define ATTNSCOPE_REQUIRE_TESTDATA()                                                                         \
    do {                                                                                                     \
        if (!attnscope::test::testdataAvailable())                                                           \
            QSKIP(attnscope::test::missingTestdataMessage().constData());                                    \
    } while (false)
