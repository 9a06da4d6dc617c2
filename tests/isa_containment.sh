#!/usr/bin/env bash
# Checks that the default binary runs on every x86-64 CPU: no AVX or AVX-512 instruction (a v-prefixed
# mnemonic, a ymm/zmm or opmask register) outside the compute kernels compiled for those instruction
# sets (attnscope::kernels::avx2, ::avx512, ::avx512vnni, ::avxvnni, ::avx512ymmvnni; model/core/kernels), and the kernels do have
# them (so the check is not vacuous). Usage: isa_containment.sh OBJDUMP BINARY
set -euo pipefail
objdump=$1
binary=$2
"$objdump" -d --no-show-raw-insn -C "$binary" | awk '
/^[0-9a-f]+ <.*>:$/ {
    fn = $0
    ns = ""
    if (match(fn, /attnscope::kernels::(avx2|avx512|avx512vnni|avxvnni|avx512ymmvnni)::/)) ns = substr(fn, RSTART + 20, RLENGTH - 22)
    next
}
/^ +[0-9a-f]+:\t/ {
    n = split($0, part, "\t")
    if (n < 2) next
    insn = part[2]
    avx = (insn ~ /^v[a-z]/ || insn ~ /^k(mov|and|or|xor|not|shift|test|add|unpck)/ || insn ~ /%[yz]mm[0-9]|%k[0-7]/)
    if (!avx) next
    if (ns != "") { inKernel[ns]++; next }
    bad++
    if (!(fn in seen)) { seen[fn] = insn; order[++nf] = fn }
}
END {
    for (i = 1; i <= nf && i <= 20; ++i) printf "AVX outside the kernels: %s  first: %s\n", order[i], seen[order[i]]
    if (bad > 0) { printf "%d AVX instructions in %d functions outside the compute kernels\n", bad, nf; exit 1 }
    if (inKernel["avx2"] == 0 || inKernel["avx512"] == 0 || inKernel["avx512vnni"] == 0) {
        printf "expected AVX instructions in the avx2, avx512 and avx512vnni kernels, found %d, %d, %d\n",
               inKernel["avx2"], inKernel["avx512"], inKernel["avx512vnni"]
        exit 1
    }
    printf "ok: AVX only inside the kernels (avx2 %d, avx512 %d, avx512vnni %d instructions)\n",
           inKernel["avx2"], inKernel["avx512"], inKernel["avx512vnni"]
}'
