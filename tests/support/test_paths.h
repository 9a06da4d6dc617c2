#pragma once
// Locations the tests read: the shared reference data (outside the repository) and the demo model.

#include <QString>

namespace attnscope::test {

/// ../shared/testdata from the project root (absolute).
inline QString testdataDir() { return QStringLiteral(ATTNSCOPE_TESTDATA_DIR); }
inline QString testdata(const QString& rel) { return testdataDir() + QLatin1Char('/') + rel; }
/// resources/demo in the source tree.
inline QString demoDir() { return QStringLiteral(ATTNSCOPE_DEMO_DIR); }

} // namespace attnscope::test
