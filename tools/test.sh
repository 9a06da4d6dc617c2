#!/usr/bin/env bash
# Builds AttnScope (Release, in ./build) and runs every test with ctest.
# GUI tests run with QT_QPA_PLATFORM=offscreen (set per test by CMake): no display is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
cd build && ctest --output-on-failure -j"$(nproc)"
