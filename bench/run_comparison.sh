#!/bin/sh
# Runs attnscope_bench and the tuned PyTorch reference on the same random GPT-2 checkpoints, one after
# the other, and prints the ratios (README "Benchmarks"). Usage:
#   bench/run_comparison.sh [BUILD_DIR] [SIZES] [extra args for both, e.g. --seq 20,128 --runs 5]
# Environment: WORK_DIR (where checkpoints and JSON go; default a new temp folder), NICE (e.g. "nice -n 19").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
sizes=${2:-small}
[ $# -ge 2 ] && shift 2 || shift $#
work=${WORK_DIR:-$(mktemp -d /tmp/attnscope_bench.XXXXXX)}
nice=${NICE:-}
bench="$build/bench/attnscope_bench"
[ -x "$bench" ] || { echo "build $bench first" >&2; exit 1; }

models=""
for s in $(echo "$sizes" | tr ',' ' '); do
  name=gpt2-$s
  [ -f "$work/$name/model.safetensors" ] || $nice "$bench" --write-models "$work" --sizes "$s"
  models="$models $work/$name"
done

echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(free -g | awk '/Mem:/{print $2}') GiB; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== AttnScope"
for m in $models; do
  $nice "$bench" --model "$m" --json "$work/ours_$(basename "$m").json" "$@"
done

echo "== PyTorch (tuned as ../shared/BASELINE.md)"
coretype=""
grep -q avx512f /proc/cpuinfo && coretype=SkylakeX
margs=""
for m in $models; do margs="$margs --model $m"; done
# shellcheck disable=SC2086
env OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE ${coretype:+OPENBLAS_CORETYPE=$coretype} \
    GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736 \
    $nice /usr/bin/python3 "$here/torch_reference.py" $margs --json "$work/torch.json" "$@"

echo "== load $(cut -d' ' -f1-3 /proc/loadavg) after the runs"
/usr/bin/python3 "$here/compare.py" "$work/torch.json" "$work"/ours_*.json
