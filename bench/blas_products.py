#!/usr/bin/python3
"""The projection products of one gpt2-small forward, alone, through the system BLAS (numpy → libblas.so.3).

A reference for what a tuned library reaches on the GEMMs the forward cannot avoid, without the attention,
norms, cache writes or unembedding: 12 layers × (x·W_QKV [768, 2304], z·W_O [768, 768], x·W_in [768,
3072], h·W_out [3072, 768]) at S rows, float32, each weight its own array (340 MB, as in the model, so
weights stream from memory as in a real pass). Prints the best of 15 passes after one warm-up and the BLAS
library numpy loaded; stops with a message when that is the reference (netlib) BLAS. Used in README
"Benchmarks" (Zen 4 section) to compare AttnScope's whole app-cache forward with OpenBLAS's products alone
on the same instruction set:

    OPENBLAS_NUM_THREADS=2 OPENBLAS_CORETYPE=SkylakeX bench/blas_products.py 128   # or Haswell
"""
import sys
import time

import numpy as np

from blas_library import mapped_tuned_blas


def main():
    S = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    rng = np.random.default_rng(0)
    shapes = [(768, 2304), (768, 768), (768, 3072), (3072, 768)]
    W = [[rng.standard_normal(s, dtype=np.float32) * 0.02 for s in shapes] for _ in range(12)]
    X = {k: rng.standard_normal((S, k), dtype=np.float32) for k in (768, 3072)}
    flops = 12 * sum(2 * S * k * n for k, n in shapes)
    X[768] @ W[0][0]  # loads the BLAS
    blas = mapped_tuned_blas()
    if blas is None:
        print("blas_products.py: numpy's float32 products run on no tuned BLAS (libblas.so.3 is the reference "
              "netlib BLAS unless an optimised one is installed). Install OpenBLAS (apt-get install "
              "libopenblas0-pthread) and run again.", file=sys.stderr)
        return 2
    print("BLAS:", blas)
    best = float("inf")
    for r in range(16):
        t = time.perf_counter()
        for layer in W:
            for w in layer:
                X[w.shape[0]] @ w
        if r > 0:
            best = min(best, time.perf_counter() - t)
    print(f"S = {S}: 48 products, best of 15: {best * 1e3:.1f} ms, {flops / best / 1e9:.0f} GFLOP/s "
          f"({flops / 1e9:.2f} GFLOP)")


if __name__ == "__main__":
    sys.exit(main())
