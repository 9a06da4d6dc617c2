#!/usr/bin/env bash
# tools/test_skips.sh CTEST_OUTPUT LAST_TEST_LOG: after a ctest run (tools/test.sh), says how many tests ctest
# skipped and why: the reference data ../shared/testdata missing (tests/support/test_paths.h), or a compute kernel
# this CPU cannot run (tests/runner/kernel_runner.cpp); and how many suites ran without their cases that need the
# reference data.
set -euo pipefail
out=$1 log=$2
total=$(grep -Eo 'tests failed out of [0-9]+' "$out" | grep -Eo '[0-9]+$' || echo 0)
mapfile -t skipped < <(sed -nE 's/.*Test +#[0-9]+: ([^ ]+) .*\*\*\*Skipped.*/\1/p' "$out")
# LastTest.log: each test's output between "N/M Test: NAME" and "Test time"
declare -A cpu cases
while IFS=$'\t' read -r name kind; do
  case $kind in cpu) cpu[$name]=1 ;; cases) cases[$name]=1 ;; esac
done < <(awk '/^[0-9]+\/[0-9]+ Test: /{name=$3} /reference data missing:/{if (!(name in d)) {print name "\tcases"; d[name]=1}}
              /^SKIPPED: /{print name "\tcpu"} ' "$log" 2> /dev/null)
nData=0 nCpu=0 nOther=0
for t in "${skipped[@]}"; do
  if [ -n "${cpu[$t]:-}" ]; then nCpu=$((nCpu + 1)); elif [ -n "${cases[$t]:-}" ]; then nData=$((nData + 1)); else nOther=$((nOther + 1)); fi
done
partial=0
for t in "${!cases[@]}"; do printf '%s\n' "${skipped[@]}" | grep -qxF -- "$t" || partial=$((partial + 1)); done
echo "Skipped: ${#skipped[@]} of $total tests."
[ "$nData" -eq 0 ] || echo "  $nData: the reference data ../shared/testdata is missing (docs/development.md#reference-data says how to assemble it)"
[ "$nCpu" -eq 0 ] || echo "  $nCpu: this CPU cannot run the compute kernel they name"
[ "$nOther" -eq 0 ] || echo "  $nOther: other (see their output in build/Testing/Temporary/LastTest.log)"
[ "$partial" -eq 0 ] || echo "  and $partial more ran without their cases that need ../shared/testdata"
exit 0
