#!/usr/bin/env bash
# Installs missing packages, builds AttnScope and opens it: on the bundled demo model the first time
# (with the model picker over it), later on the last session, unless a model path or name is given.
# Extra arguments go to attnscope, e.g. tools/run.sh ~/models/gpt2, tools/run.sh gpt2, tools/run.sh demo
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target attnscope
exec ./build/app/attnscope "$@"
