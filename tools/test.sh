#!/usr/bin/env bash
# Builds AttnScope (Release, in ./build) and runs every test with ctest.
# GUI tests run with QT_QPA_PLATFORM=offscreen (set per test by CMake): no display is needed.
# Compiles through ccache when it is installed (tools/ccache_env.sh). Without ../shared/testdata beside the
# clone the cases that read it skip; the summary at the end says how many and why (docs/development.md#tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
source tools/ccache_env.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${ATTNSCOPE_LAUNCHER[@]}"
cmake --build build -j"$(nproc)"
cd build
status=0
ctest --output-on-failure -j"$(nproc)" | tee ctest.log || status=$?
bash ../tools/test_skips.sh ctest.log Testing/Temporary/LastTest.log
exit "$status"
