#!/bin/sh
# Runs attnscope_bench and the tuned PyTorch reference on the same random-weight checkpoints (GPT-2 sizes
# small, medium, xl; Llama-family shapes llama-1b, llama-3b, qwen3-0.6b, gemma-2-2b, gemma-3-1b in BF16, which PyTorch upcasts
# to float32), one after the other, once for each compute kernel this CPU can run, and prints the ratios per kernel next to
# PyTorch forced to the same instruction set (docs/performance.md). Usage:
#   bench/run_comparison.sh [BUILD_DIR] [SIZES] [extra args for both, e.g. --seq 20,128 --runs 5]
#   e.g. bench/run_comparison.sh build small,llama-1b --seq 20,128 --lens-seq 20,128 --runs 3
#   FIRST_OPENS=0 bench/run_comparison.sh build llama-1b --gradients-only --runs 3   (forward + backward at
#   S = 128 only: time and peak RSS, with the app-cache forward's peak beside it)
# Environment: WORK_DIR (where checkpoints and JSON go; default a new temp folder), NICE (e.g. "nice -n 19"),
# KERNELS (e.g. "avx2": only these kernels; default every one `attnscope_bench --list-kernels` prints),
# ROUNDS (default 1): run both tools this many times, alternating, and compare the best round of each
# timing (bench/merge_rounds.py): on a machine whose speed drifts, a slow minute then hits both sides.
# FIRST_OPENS (default 5): after the rounds, each tool opens each model and runs its first forward (the first
# --seq) this many times, each time in a new process, alternating: a user's first open, which no earlier
# open in the same process has warmed (the in-process "open + first forward" row reopens the file, and
# PyTorch's tuned heap then reuses the pages of the previous read).
#
# PyTorch per kernel: OpenBLAS's kernel for the same instruction set (OPENBLAS_CORETYPE: SkylakeX for
# avx512, Haswell for avx2, Nehalem — SSE4.2, no AVX — for portable) and ATen's own kernels likewise
# (ATEN_CPU_CAPABILITY avx512, avx2, default).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
sizes=${2:-small}
[ $# -ge 2 ] && shift 2 || shift $#
work=${WORK_DIR:-$(mktemp -d /tmp/attnscope_bench.XXXXXX)}
nice=${NICE:-}
bench="$build/bench/attnscope_bench"
[ -x "$bench" ] || { echo "build $bench first" >&2; exit 1; }
kernels=${KERNELS:-$("$bench" --list-kernels 2>/dev/null | sort -r | tr '\n' ' ')}
rounds=${ROUNDS:-1}

models=""
for s in $(echo "$sizes" | tr ',' ' '); do
  case $s in
    llama-*|qwen3-*|gemma-*) name=$s ;;
    *b) name=llama-$s ;;
    *) name=gpt2-$s ;;
  esac
  [ -f "$work/$name/model.safetensors" ] || $nice "$bench" --write-models "$work" --sizes "$s"
  models="$models $work/$name"
done
margs=""
for m in $models; do margs="$margs --model $m"; done

echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(free -g | awk '/Mem:/{print $2}') GiB; load $(cut -d' ' -f1-3 /proc/loadavg); kernels: $kernels; rounds: $rounds"
r=1
while [ "$r" -le "$rounds" ]; do
  rm -rf "$work/round$r" # a JSON left from an earlier run with other sizes would be merged
  mkdir -p "$work/round$r"
  for k in $kernels; do
    case $k in
      avx512) coretype=SkylakeX; aten=avx512 ;;
      avx2) coretype=Haswell; aten=avx2 ;;
      *) coretype=Nehalem; aten=default ;;
    esac
    echo "== round $r of $rounds: AttnScope, kernel $k"
    for m in $models; do
      ATTNSCOPE_ISA=$k $nice "$bench" --model "$m" --json "$work/round$r/ours_${k}_$(basename "$m").json" "$@"
    done
    echo "== round $r of $rounds: PyTorch (tuned as ../shared/BASELINE.md), OPENBLAS_CORETYPE=$coretype ATEN_CPU_CAPABILITY=$aten"
    # shellcheck disable=SC2086
    env OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=$coretype \
        ATEN_CPU_CAPABILITY=$aten GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736 \
        $nice /usr/bin/python3 "$here/torch_reference.py" $margs --json "$work/round$r/torch_$k.json" "$@"
  done
  r=$((r + 1))
done
# one file per tool, kernel and model: the best round of every timing
for f in "$work"/round1/*.json; do
  name=$(basename "$f")
  files="" i=1
  while [ "$i" -le "$rounds" ]; do files="$files $work/round$i/$name"; i=$((i + 1)); done
  # shellcheck disable=SC2086
  /usr/bin/python3 "$here/merge_rounds.py" "$work/$name" $files
done

# a user's first open: a new process per open, ours and PyTorch's alternating; medians
first_opens=${FIRST_OPENS:-5}
seq0=$(echo " $* " | sed -n 's/.* --seq \([0-9]*\).*/\1/p')
seq0=${seq0:-20}
for k in $kernels; do
  case $k in
    avx512) coretype=SkylakeX; aten=avx512 ;;
    avx2) coretype=Haswell; aten=avx2 ;;
    *) coretype=Nehalem; aten=default ;;
  esac
  for m in $models; do
    out="$work/first_open_${k}_$(basename "$m").txt"
    : > "$out"
    i=1
    while [ "$i" -le "$first_opens" ]; do
      ATTNSCOPE_ISA=$k $nice "$bench" --model "$m" --first-open --seq "$seq0" | sed -n 's/^first_open_forward_ms \([0-9.]*\).*/ours \1/p' >> "$out"
      env OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=$coretype \
          ATEN_CPU_CAPABILITY=$aten GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736 \
          $nice /usr/bin/python3 "$here/torch_reference.py" --model "$m" --first-open --seq "$seq0" \
          | sed -n 's/^first_open_forward_ms \([0-9.]*\).*/torch \1/p' >> "$out"
      i=$((i + 1))
    done
  done
done

echo "== load $(cut -d' ' -f1-3 /proc/loadavg) after the runs"
for k in $kernels; do
  echo
  echo "## kernel $k (PyTorch: OPENBLAS_CORETYPE / ATEN_CPU_CAPABILITY for the same instruction set)"
  /usr/bin/python3 "$here/compare.py" "$work/torch_$k.json" "$work"/ours_${k}_*.json
  for f in "$work"/first_open_${k}_*.txt; do
    [ -s "$f" ] || continue
    /usr/bin/python3 - "$f" "$seq0" <<'PY'
import statistics, sys, os
t = {"ours": [], "torch": []}
for line in open(sys.argv[1]):
    who, ms = line.split()
    t[who].append(float(ms))
name = os.path.basename(sys.argv[1]).split("_", 3)[3][:-4]
if t["ours"] and t["torch"]:
    o, p = statistics.median(t["ours"]), statistics.median(t["torch"])
    what = f"first open + forward, new process, S={sys.argv[2]}"
    print(f"{name:12} {what:44} {o:9.1f} {p:9.1f} {o / p:7.2f} {min(t['ours']) / min(t['torch']):6.2f}"
          f"   (medians of {len(t['ours'])} processes each; target <= 1.0)")
PY
  done
done
