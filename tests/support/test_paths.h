#pragma once
// Locations the tests read: the shared reference data (outside the repository) and the demo model.

#include <QDir>
#include <QString>
#include <QtTest>

namespace attnscope::test {

// The locations are compiled into test_paths.cpp alone (tests/CMakeLists.txt): an absolute path in every suite's
// compile line would make each clone's compiles miss ccache's cache (docs/development.md#ci-time).

/// ../shared/testdata from the project root (absolute), or the environment's ATTNSCOPE_TESTDATA_DIR when set
/// (`ATTNSCOPE_TESTDATA_DIR=/nonexistent ctest` shows what a clone without it runs).
QString testdataDir();
inline QString testdata(const QString& rel) { return testdataDir() + QLatin1Char('/') + rel; }
/// resources/demo in the source tree.
QString demoDir();
/// `relative` (e.g. "tests/data/graphs/x.json") in the source tree; the source tree itself for an empty one.
QString sourceFile(const QString& relative);
/// The attnscope program this build made (the command-line and GUI suites run it).
QString attnscopeExe();

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
