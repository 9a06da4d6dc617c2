#include "test_paths.h"

namespace attnscope::test {

QString testdataDir() {
    const QString env = qEnvironmentVariable("ATTNSCOPE_TESTDATA_DIR");
    return env.isEmpty() ? QStringLiteral(ATTNSCOPE_TESTDATA_DIR) : env;
}

QString demoDir() { return QStringLiteral(ATTNSCOPE_SOURCE_DIR "/resources/demo"); }

QString sourceFile(const QString& relative) {
    return relative.isEmpty() ? QStringLiteral(ATTNSCOPE_SOURCE_DIR) : QStringLiteral(ATTNSCOPE_SOURCE_DIR "/") + relative;
}

QString attnscopeExe() { return QStringLiteral(ATTNSCOPE_EXE); }

} // namespace attnscope::test
