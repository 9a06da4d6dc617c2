#!/usr/bin/python3
"""PyTorch peer of `attnscope --feature-contexts`: the corpus pass a Python user writes — windows of BOS + 127 tokens,
a GPT-2 forward up to the SAE's hook point and no further (bench/torch_reference.py's HookedGPT2 with TransformerLens's
stop_at_layer, as AttnScope stops), encode with a TopK or JumpReLU / ReLU SAE (SAELens cfg.json + sae_weights.safetensors), and a
running top N per feature (torch.topk over the kept N and the window's rows). float32, 2 threads, no grad, no
database. Prints tokens/s as JSON.

  bench/torch_corpus.py MODEL_DIR SAE_DIR TOKENS.json [--top 20] [--window 128]

TOKENS.json: {"token_ids": [...]} of the whole corpus, e.g. `attnscope --model MODEL_DIR --text corpus.txt --no-bos
--tokenize --dump-json TOKENS.json`."""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import HookedGPT2, load_model, load_safetensors  # noqa: E402

torch.set_num_threads(2)
torch.set_grad_enabled(False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("sae")
    ap.add_argument("tokens")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--window", type=int, default=128)
    a = ap.parse_args()
    cfg, t = load_model(a.model)
    m = HookedGPT2(cfg, t)
    with open(os.path.join(a.sae, "cfg.json")) as f:
        sc = json.load(f)
    w = load_safetensors(os.path.join(a.sae, "sae_weights.safetensors"))
    hook = sc.get("metadata", {}).get("hook_name") or sc.get("hook_name")
    arch, k = sc.get("architecture", "standard"), sc.get("k")
    W_enc, b_enc, b_dec = w["W_enc"].float(), w["b_enc"].float(), w["b_dec"].float()
    theta = w["threshold"].float() if "threshold" in w else None
    d_sae = W_enc.shape[1]
    stop_at = int(hook.split(".")[1]) + 1  # blocks.L.…: the forward stops after block L (stop_at_layer)
    with open(a.tokens) as f:
        ids = json.load(f)["token_ids"]
    bos = cfg.get("bos_token_id", 50256)
    n = a.window - 1
    windows = [[bos] + ids[i:i + n] for i in range(0, len(ids), n)]
    best = torch.full((a.top, d_sae), -float("inf"))
    where = torch.zeros((a.top, d_sae), dtype=torch.long)
    tokens = 0
    t0 = time.perf_counter()
    for wi, win in enumerate(windows):
        cache = {}
        m.forward(torch.tensor(win), cache=_Only(cache, hook), stop_at_layer=stop_at)
        x = cache[hook][1:]  # BOS left out, as AttnScope does
        pre = (x - b_dec * sc.get("apply_b_dec_to_input", True)) @ W_enc + b_enc
        if arch == "topk":
            v, i = torch.topk(pre, k, dim=-1)
            f = torch.zeros_like(pre).scatter_(-1, i, v.relu())
        elif theta is not None:
            f = pre.relu() * (pre > theta)
        else:
            f = pre.relu()
        both = torch.cat([best, f])
        pos = torch.cat([where, (wi * a.window + 1 + torch.arange(f.shape[0]))[:, None].expand(-1, d_sae)])
        best, idx = torch.topk(both, a.top, dim=0)
        where = torch.gather(pos, 0, idx)
        tokens += len(win)
    s = time.perf_counter() - t0
    print(json.dumps({"tool": "torch_corpus", "windows": len(windows), "tokens": tokens, "seconds": s,
                      "tokens_per_s": tokens / s, "d_sae": d_sae, "hook": hook}))


class _Only(dict):
    """A cache dict that keeps one hook point (as run_with_cache(names_filter=...) would)."""

    def __init__(self, out, name):
        super().__init__()
        self.out, self.name = out, name

    def __setitem__(self, k, v):
        if k == self.name:
            self.out[k] = v


if __name__ == "__main__":
    main()
