#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, in ./build-fuzz) and runs each one for
# SECONDS (default 600) on its seed corpus, two at a time. Crashing inputs land in
# build-fuzz/artifacts/<target>/; the grown corpora in build-fuzz/corpus/<target>/. Exits 1 when any
# target crashed, leaked or timed out (.ci/run runs every target for 30 s this way).
#   tools/fuzz.sh [SECONDS] [TARGET...]     e.g. tools/fuzz.sh 60 prompt hf_config
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(safetensors_header hf_config sharded_index tokenizer_files prompt gguf llama2c llama2c_tokenizer npy_header)
bash tools/install_deps.sh clang libclang-rt-14-dev # clang-14's libFuzzer runtime
source tools/ccache_env.sh
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DATTNSCOPE_FUZZ=ON -DATTNSCOPE_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "${ATTNSCOPE_LAUNCHER[@]}"
cmake --build build-fuzz --target fuzzers -j2
run() {
  local t=$1
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t"
  local dict=()
  case "$t" in
    prompt | llama2c | llama2c_tokenizer | npy_header) ;;  # no dictionary
    gguf) dict=(-dict=tests/fuzz/gguf.dict) ;;
    *) dict=(-dict=tests/fuzz/json.dict) ;;
  esac
  local rc=0
  nice -n 19 "build-fuzz/tests/fuzz/fuzz_$t" "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" "${dict[@]}" \
    -max_total_time="$SECONDS_EACH" -max_len=65536 -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/artifacts/$t/" > "build-fuzz/fuzz_$t.log" 2>&1 || rc=$?
  echo "$rc" > "build-fuzz/fuzz_$t.rc"
  echo "$t: exit $rc — $(grep -E '^#[0-9]+.*(DONE|pulse)' "build-fuzz/fuzz_$t.log" | tail -1)"
  [ "$rc" -eq 0 ] || tail -40 "build-fuzz/fuzz_$t.log"
}
rm -f build-fuzz/fuzz_*.rc
for ((i = 0; i < ${#TARGETS[@]}; i += 2)); do
  run "${TARGETS[i]}" &
  [ $((i + 1)) -lt ${#TARGETS[@]} ] && run "${TARGETS[i + 1]}" &
  wait
done
failed=0
for t in "${TARGETS[@]}"; do
  [ "$(cat "build-fuzz/fuzz_$t.rc" 2>/dev/null || echo 1)" -eq 0 ] || { echo "fuzz_$t failed: see build-fuzz/fuzz_$t.log" >&2; failed=1; }
done
exit $failed
