#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, in ./build-fuzz) and runs each one for
# SECONDS (default 600) on its seed corpus, two at a time. Crashing inputs land in
# build-fuzz/artifacts/<target>/; the grown corpora in build-fuzz/corpus/<target>/. Exits 1 when any
# target crashed, leaked or timed out (.ci/run runs every target for 30 s this way).
# Seeds: tests/fuzz/corpus/<target>/ (the repository's own), the demo dictionaries in resources/demo-features and, when
# ../shared/testdata/real-world is there, the real files other projects published (graphs, SAELens cfg.json with their
# weights, circuit-tracer configs), gathered into build-fuzz/seeds/<target>/ on each run.
#   tools/fuzz.sh [SECONDS] [TARGET...]     e.g. tools/fuzz.sh 60 prompt hf_config
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(safetensors_header hf_config sharded_index tokenizer_files prompt gguf llama2c llama2c_tokenizer npy_header
                                    graph_json saelens npz circuit_tracer_yaml gemma_scope2_config contexts_db feature_labels)
bash tools/install_deps.sh clang libclang-rt-14-dev # clang-14's libFuzzer runtime
source tools/ccache_env.sh
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DATTNSCOPE_FUZZ=ON -DATTNSCOPE_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "${ATTNSCOPE_LAUNCHER[@]}"
cmake --build build-fuzz --target fuzzers -j2
REAL=../shared/testdata/real-world
# seed FILE… into build-fuzz/seeds/$t: each file as it is, when it fits max_len
seed() { for f in "$@"; do [ -f "$f" ] && [ "$(stat -c %s "$f")" -le "$max_len" ] && cp "$f" "$seeds/$(basename "$(dirname "$f")")+$(basename "$f")"; done; true; }
# seed_pair FIRST SECOND: the two files of a two-file input (tests/fuzz/fuzz_support.h splitAtNul), SECOND left empty when absent
seed_pair() {
  [ -f "$1" ] || return 0
  local out="$seeds/$(basename "$(dirname "$1")")+$(basename "$1")"
  { cat "$1"; printf '\0'; [ -f "$2" ] && [ "$(stat -c %s "$2")" -le "$max_len" ] && cat "$2"; true; } > "$out"
}
run() {
  local t=$1
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t"
  local dict=() max_len=65536 seeds="build-fuzz/seeds/$t"
  case "$t" in
    prompt | llama2c | llama2c_tokenizer | npy_header | npz | contexts_db | feature_labels) ;;  # no dictionary
    gguf) dict=(-dict=tests/fuzz/gguf.dict) ;;
    circuit_tracer_yaml) dict=(-dict=tests/fuzz/yaml.dict) ;;
    *) dict=(-dict=tests/fuzz/json.dict) ;;
  esac
  case "$t" in
    graph_json) max_len=131072 ;;  # Neuronpedia's test fixtures are 12–88 kB
    saelens) max_len=262144 ;;     # cfg.json and the 132 kB weights of a real SAELens 3.4 SAE
  esac
  rm -rf "$seeds" && mkdir -p "$seeds"
  case "$t" in
    graph_json) seed "$REAL"/graphs/*/*.json ;;
    saelens)
      for d in "$REAL"/saelens/* resources/demo-features/resid-*; do seed_pair "$d/cfg.json" "$d/sae_weights.safetensors"; done ;;
    circuit_tracer_yaml) seed "$REAL"/transcoder-configs/*/*.yaml resources/demo-features/*/config.yaml ;;
  esac
  local rc=0
  nice -n 19 "build-fuzz/tests/fuzz/fuzz_$t" "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" "$seeds" "${dict[@]}" \
    -max_total_time="$SECONDS_EACH" -max_len="$max_len" -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 \
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
