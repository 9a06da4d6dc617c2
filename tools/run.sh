#!/usr/bin/env bash
# Installs missing packages, builds AttnScope and opens it (on the bundled demo model unless a
# model path is given). Extra arguments go to attnscope, e.g. tools/run.sh ~/models/gpt2
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target attnscope
exec ./build/app/attnscope "$@"
