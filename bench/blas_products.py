#!/usr/bin/python3
"""The matrix products of one gpt2-small pass, alone, through the system BLAS (numpy → libblas.so.3).

A reference for what a tuned library reaches on the GEMMs a pass cannot avoid, without the softmax, norms,
activations, cache writes or copies: float32, each weight its own array (340 MB, as in the model, so weights
stream from memory as in a real pass). Prints the best of 15 passes after one warm-up and the BLAS library
numpy loaded; stops with a message when that is the reference (netlib) BLAS.

    OPENBLAS_NUM_THREADS=2 OPENBLAS_CORETYPE=SkylakeX bench/blas_products.py 128   # or Haswell

By default the forward's projections: 12 layers × (x·W_QKV [768, 2304], z·W_O [768, 768], x·W_in [768, 3072],
h·W_out [3072, 768]) at S rows (docs/performance.md compares the app-cache forward with them). With --gradients,
every product group of "forward + backward to every hook" (the bench row forward_backward_128) separately:
the same projections; their backward with only activation gradients (dy·Wᵀ, the same FLOPs); attention's two
forward products per head (Q·Kᵀ, P·V) and four backward ones (Pᵀ·dz, dz·Vᵀ, dS·K, dSᵀ·Q), full S×S; the
full cache's per-head results z_h·W_O^h and all-position logits x·W_Uᵀ; and the dense logit backward
d_logits·W_U [S, 50257]·[50257, 768] that autograd runs (a logit difference has two nonzero entries, which
AttnScope reads as two rows of W_U). docs/performance.md "Gradients" adds them into the time the products
alone need on each side.
"""
import sys
import time

import numpy as np

from blas_library import mapped_tuned_blas

D, H, DH, M, L, V = 768, 12, 64, 3072, 12, 50257


def best_ms(fn, passes=15):
    fn()
    best = float("inf")
    for _ in range(passes):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    gradients = "--gradients" in sys.argv
    S = int(args[0]) if args else 128
    rng = np.random.default_rng(0)
    shapes = [(D, 3 * D), (D, D), (D, M), (M, D)]
    W = [[rng.standard_normal(s, dtype=np.float32) * 0.02 for s in shapes] for _ in range(L)]
    X = {k: rng.standard_normal((S, k), dtype=np.float32) for k in (D, 3 * D, M)}
    X[D] @ W[0][0]  # loads the BLAS
    blas = mapped_tuned_blas()
    if blas is None:
        print("blas_products.py: numpy's float32 products run on no tuned BLAS (libblas.so.3 is the reference "
              "netlib BLAS unless an optimised one is installed). Install OpenBLAS (apt-get install "
              "libopenblas0-pthread) and run again.", file=sys.stderr)
        return 2
    print("BLAS:", blas)

    def forward():
        for layer in W:
            for w in layer:
                X[w.shape[0]] @ w

    proj_flop = L * sum(2 * S * k * n for k, n in shapes)
    if not gradients:
        best = best_ms(forward) / 1e3
        print(f"S = {S}: 48 products, best of 15: {best * 1e3:.1f} ms, {proj_flop / best / 1e9:.0f} GFLOP/s "
              f"({proj_flop / 1e9:.2f} GFLOP)")
        return 0

    def backward():  # dx = dy·Wᵀ for each projection
        for layer in W:
            for w in layer:
                X[w.shape[1]] @ w.T

    q, k, v, dz = (rng.standard_normal((H, S, DH), dtype=np.float32) for _ in range(4))
    P = rng.random((H, S, S), dtype=np.float32)
    W_O = [layer[1].reshape(H, DH, D) for layer in W]
    W_U = rng.standard_normal((V, D), dtype=np.float32) * 0.02
    d_logits = rng.standard_normal((S, V), dtype=np.float32)

    def attention_forward():
        for _ in range(L):
            q @ k.transpose(0, 2, 1)
            P @ v

    def attention_backward():
        for _ in range(L):
            P.transpose(0, 2, 1) @ dz
            dz @ v.transpose(0, 2, 1)
            P @ k
            P.transpose(0, 2, 1) @ q

    def head_results():
        for w in W_O:
            q @ w

    groups = [  # name, function, GFLOP
        ("projections, forward (x·W)", forward, proj_flop),
        ("projections, backward (dy·Wᵀ)", backward, proj_flop),
        ("attention, forward (2 per head)", attention_forward, L * 2 * 2 * H * S * S * DH),
        ("attention, backward (4 per head)", attention_backward, L * 4 * 2 * H * S * S * DH),
        ("per-head results z_h·W_O^h", head_results, L * 2 * S * D * D),
        ("logits, all positions (x·W_Uᵀ)", lambda: X[D] @ W_U.T, 2 * S * D * V),
        ("dense logit backward (d_logits·W_U)", lambda: d_logits @ W_U, 2 * S * D * V),
    ]
    print(f"S = {S}, best of 15 each:")
    for name, fn, flop in groups:
        ms = best_ms(fn)
        print(f"  {name:40} {ms:8.1f} ms  {flop / 1e9:6.2f} GFLOP  {flop / ms / 1e6:4.0f} GFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
