#!/usr/bin/env bash
# Builds AttnScope with AddressSanitizer + UndefinedBehaviorSanitizer (gcc, -O1 -g, in ./build-asan)
# and runs the whole test suite under them: any heap overflow, use-after-free, leak or undefined
# behaviour fails the test that triggered it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
cmake -S . -B build-asan -DATTNSCOPE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g"
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/tools/lsan.supp:print_suppressions=0"
cd build-asan && ctest --output-on-failure -j"$(nproc)"
