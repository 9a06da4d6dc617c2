#!/usr/bin/python3
"""PyTorch peer of `attnscope_bench --sae-only`: the same TopK (k = 32) SAE on d_in 768 at S = 128, as SAELens's
TopKSAE runs it (sae_lens/saes/topk_sae.py: (x − b_dec) @ W_enc + b_enc, torch.topk, ReLU, scatter into a dense
[S, d_sae], then f @ W_dec + b_dec), plus listing the firing features per position; float32, 2 threads, no grad.
Run with the tuned BLAS (libopenblas0-pthread) and OPENBLAS_CORETYPE / ATEN_CPU_CAPABILITY for the kernel compared.
Prints JSON with the keys of attnscope_bench: sae.<d_sae>.{encode_ms, list_ms, decode_ms, total_ms}."""
import json
import sys
import time

import torch

from blas_library import mapped_tuned_blas

torch.set_num_threads(2)
torch.set_grad_enabled(False)


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def bench(d_in, d_sae, S, k, runs):
    g = torch.Generator().manual_seed(1)
    W_enc = torch.randn(d_in, d_sae, generator=g) / d_in ** 0.5
    W_dec = torch.randn(d_sae, d_in, generator=g) / d_sae ** 0.5
    b_enc = 0.01 * torch.randn(d_sae, generator=g)
    b_dec = 0.01 * torch.randn(d_in, generator=g)
    x = torch.randn(S, d_in, generator=g)
    enc, lst, dec = [], [], []
    for r in range(runs + 1):
        t = time.perf_counter()
        pre = (x - b_dec) @ W_enc + b_enc
        vals, idx = torch.topk(pre, k, dim=-1, sorted=False)
        f = torch.zeros_like(pre).scatter_(-1, idx, vals.relu())
        e = time.perf_counter() - t
        t = time.perf_counter()
        listed = [torch.nonzero(f[p]).flatten().tolist() for p in range(S)]
        l_ = time.perf_counter() - t
        t = time.perf_counter()
        xhat = f @ W_dec + b_dec
        d = time.perf_counter() - t
        assert listed and xhat.shape == x.shape
        if r:
            enc.append(e * 1e3)
            lst.append(l_ * 1e3)
            dec.append(d * 1e3)
    return {"d_in": d_in, "d_sae": d_sae, "S": S, "k": k, "encode_ms": median(enc), "list_ms": median(lst),
            "decode_ms": median(dec), "total_ms": median(enc) + median(lst) + median(dec)}


def main():
    sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "6144,24576,49152").split(",")]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    rows = {str(s): bench(768, s, 128, 32, runs) for s in sizes}
    print(json.dumps({"tool": "torch_sae", "blas": mapped_tuned_blas(), "sae": rows}, indent=1))


if __name__ == "__main__":
    main()
