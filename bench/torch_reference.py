#!/usr/bin/python3
"""PyTorch reference for attnscope_bench: the same work on the same files, as a TransformerLens user
would run it (hand-parsed safetensors, a plain GPT-2 forward with hooks caching every intermediate,
logits only, chunked top-k for W_OV, logit lens). Run it through bench/run_comparison.sh, which sets
the tuning of ../shared/BASELINE.md before Python starts (OPENBLAS_CORETYPE, OMP_WAIT_POLICY,
GLIBC_TUNABLES). Use Debian's /usr/bin/python3 (python3-torch).

Writes JSON with the same keys as attnscope_bench: models.<name>.{open, forward_full_cache.<S>,
forward_logits_only.<S>, logit_lens.<S>, wov_top100}, times in ms (median of N after 1 warm-up).
"""
import argparse
import json
import math
import mmap
import os
import resource
import struct
import sys
import time

import numpy as np
import torch

from blas_library import mapped_tuned_blas

torch.set_num_threads(2)
torch.set_grad_enabled(False)


def peak_rss_mib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def current_rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1048576.0


def time_it(runs, fn):
    reset_peak_rss()
    fn()
    ms = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t) * 1e3)
    ms.sort()
    return {"median_ms": ms[len(ms) // 2], "min_ms": ms[0], "max_ms": ms[-1], "peak_rss_mib": peak_rss_mib()}


# ---------------------------------------------------------------- loading (hand-parsed safetensors)

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.int16}  # BF16: raw bits, reinterpreted below


def load_safetensors(path):
    """read() the whole file into one buffer, zero-copy torch views of every tensor; BF16 tensors are
    upcast to float32 as a notebook does (model.float()), F32 and F16 stay views."""
    with open(path, "rb") as f:
        buf = bytearray(os.fstat(f.fileno()).st_size)
        f.readinto(buf)
    return tensors_of(buf)


def tensors_of(buf):
    """Zero-copy torch views of every tensor of the safetensors bytes in `buf` (BF16 upcast to float32)."""
    n = struct.unpack("<Q", buf[:8])[0]
    header = json.loads(bytes(buf[8:8 + n]))
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        dt = DTYPES[info["dtype"]]
        arr = np.frombuffer(buf, dtype=dt, count=(b - a) // np.dtype(dt).itemsize, offset=base + a).reshape(info["shape"])
        t = torch.from_numpy(arr)
        tensors[name] = t.view(torch.bfloat16).float() if info["dtype"] == "BF16" else t
    return tensors


def load_safetensors_mapped(path):
    """mmap the file read-only and make zero-copy torch views of every tensor (what safetensors' safe_open
    does): nothing is read or allocated before the first forward touches it. In a new process this is
    PyTorch's fastest first open: read() into a fresh buffer first zero-fills and faults in as many
    anonymous pages as the file has (2.0-2.7 s for gpt2-small on the EPYC VM, against 3 ms here)."""
    import warnings
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return tensors_of(buf)


def load_model(folder, mapped=False):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    path = os.path.join(folder, "model.safetensors")
    t = load_safetensors_mapped(path) if mapped else load_safetensors(path)
    t = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in t.items()}
    return cfg, t


# ---------------------------------------------------------------- the model (HF GPT2LMHeadModel math)

def retaining(hook):
    """The hook, keeping the gradient of every activation it sees (Tensor.retain_grad), as TransformerLens's
    attribution patching does with backward hooks."""
    def h(k, v):
        if v.requires_grad:
            v.retain_grad()
        hook(k, v)
    return h


class HookedGPT2:
    """Plain GPT-2 forward; with cache=dict, stores every TransformerLens hook point."""

    def __init__(self, cfg, t):
        self.cfg, self.t = cfg, t
        self.L, self.H, self.D = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
        self.d_head = self.D // self.H
        self.eps = cfg.get("layer_norm_epsilon", 1e-5)
        self.W_U = t["wte.weight"]  # tied
        # GPT-2 has no soft-caps or sliding window: forward shares HookedLlama's Gemma 2 lines with these left off
        self.score_scale = 1.0 / math.sqrt(self.d_head)
        self.attn_cap = self.final_cap = self.window = None

    @staticmethod
    def softcap(x, cap):
        return x if cap is None else cap * torch.tanh(x / cap)

    def ln(self, x, w, b):
        return torch.nn.functional.layer_norm(x, (self.D,), w, b, self.eps)

    def forward(self, tokens, cache=None, last_only=False, z_patch=None, stop_at_layer=None):
        """z_patch = (layer, head, z [S, d_head]): that head's hook_z replaced (a TransformerLens hook).
        stop_at_layer = n (TransformerLens's argument): run blocks 0 … n − 1 only and return the residual stream."""
        t, H, dh, S = self.t, self.H, self.d_head, tokens.shape[0]
        hook = (lambda k, v: cache.__setitem__(k, v)) if cache is not None else (lambda k, v: None)
        embed = t["wte.weight"][tokens]
        if torch.is_grad_enabled():  # autograd to every hook point (the backward row): retain_grad on each
            embed = embed.detach().requires_grad_(True)
            hook = retaining(hook)
        pos = t["wpe.weight"][:S]
        hook("hook_embed", embed)
        hook("hook_pos_embed", pos)
        x = embed + pos
        mask = torch.triu(torch.ones(S, S, dtype=torch.bool), 1)
        if self.window:  # Gemma 2's even layers: query i sees keys i − window < j ≤ i
            window_mask = mask | torch.tril(torch.ones(S, S, dtype=torch.bool), -self.window)
        for l in range(self.L if stop_at_layer is None else stop_at_layer):
            p = f"h.{l}."
            hook(f"blocks.{l}.hook_resid_pre", x)
            ln1 = self.ln(x, t[p + "ln_1.weight"], t[p + "ln_1.bias"])
            hook(f"blocks.{l}.ln1.hook_normalized", ln1)
            qkv = torch.addmm(t[p + "attn.c_attn.bias"], ln1, t[p + "attn.c_attn.weight"])
            q, k, v = (m.reshape(S, H, dh).transpose(0, 1) for m in qkv.split(self.D, dim=1))  # [H, S, dh]
            hook(f"blocks.{l}.attn.hook_q", q)
            hook(f"blocks.{l}.attn.hook_k", k)
            hook(f"blocks.{l}.attn.hook_v", v)
            scores = self.softcap(torch.bmm(q, k.transpose(1, 2)) * self.score_scale, self.attn_cap)
            scores = scores.masked_fill(window_mask if self.window and self.sliding[l] else mask, float("-inf"))
            hook(f"blocks.{l}.attn.hook_attn_scores", scores)
            pattern = torch.softmax(scores, dim=-1)
            hook(f"blocks.{l}.attn.hook_pattern", pattern)
            z = torch.bmm(pattern, v)  # [H, S, dh]
            if z_patch is not None and z_patch[0] == l:
                z = z.clone()
                z[z_patch[1]] = z_patch[2]
            hook(f"blocks.{l}.attn.hook_z", z)
            z_cat = z.transpose(0, 1).reshape(S, self.D)
            W_O = t[p + "attn.c_proj.weight"]
            if cache is not None:  # per-head result z_h·W_O^h (hook_result), as AttnScope caches it
                hook(f"blocks.{l}.attn.hook_result", torch.bmm(z, W_O.reshape(H, dh, self.D)))
            attn_out = torch.addmm(t[p + "attn.c_proj.bias"], z_cat, W_O)
            hook(f"blocks.{l}.hook_attn_out", attn_out)
            x = x + attn_out
            hook(f"blocks.{l}.hook_resid_mid", x)
            ln2 = self.ln(x, t[p + "ln_2.weight"], t[p + "ln_2.bias"])
            hook(f"blocks.{l}.ln2.hook_normalized", ln2)
            pre = torch.addmm(t[p + "mlp.c_fc.bias"], ln2, t[p + "mlp.c_fc.weight"])
            hook(f"blocks.{l}.mlp.hook_pre", pre)
            post = torch.nn.functional.gelu(pre, approximate="tanh")
            hook(f"blocks.{l}.mlp.hook_post", post)
            mlp_out = torch.addmm(t[p + "mlp.c_proj.bias"], post, t[p + "mlp.c_proj.weight"])
            hook(f"blocks.{l}.hook_mlp_out", mlp_out)
            x = x + mlp_out
            hook(f"blocks.{l}.hook_resid_post", x)
        if stop_at_layer is not None:
            return x
        xf = self.ln(x[-1:] if last_only else x, t["ln_f.weight"], t["ln_f.bias"])
        hook("ln_final.hook_normalized", xf)
        return self.softcap(xf @ self.W_U.T, self.final_cap)

    def forward_split(self, tokens, embed):
        """The forward as TransformerLens runs it for EAP-IG (use_split_qkv_input, use_attn_result): each head's
        q, k and v read their own copy of resid_pre ([H, S, D], gradient retained), the MLP its copy of resid_mid, the
        logits the last resid_post. Returns (last position's logits, receiver inputs per layer (q, k, v, mlp), final
        residual, sender outputs [1 + L·(H + 1), S, D] in EAP-IG's order: input, per layer its heads and its MLP)."""
        t, H, dh, D, S = self.t, self.H, self.d_head, self.D, tokens.shape[0]
        grad = torch.is_grad_enabled()
        keep = (lambda v: (v.retain_grad(), v)[1]) if grad else (lambda v: v)
        x = embed + t["wpe.weight"][:S]
        mask = torch.triu(torch.ones(S, S, dtype=torch.bool), 1)
        senders, inputs = [embed], []
        for l in range(self.L):
            p = f"h.{l}."
            W = t[p + "attn.c_attn.weight"].reshape(D, 3, H, dh).permute(1, 2, 0, 3)  # [3, H, D, dh]
            bias = t[p + "attn.c_attn.bias"].reshape(3, H, 1, dh)
            qkv_in = [keep(x.unsqueeze(0).repeat(H, 1, 1)) for _ in range(3)]  # [H, S, D] each
            q, k, v = (torch.baddbmm(bias[i], self.ln(qkv_in[i], t[p + "ln_1.weight"], t[p + "ln_1.bias"]), W[i]) for i in range(3))
            scores = (torch.bmm(q, k.transpose(1, 2)) / math.sqrt(dh)).masked_fill(mask, float("-inf"))
            z = torch.bmm(torch.softmax(scores, dim=-1), v)  # [H, S, dh]
            result = torch.bmm(z, t[p + "attn.c_proj.weight"].reshape(H, dh, D))  # [H, S, D] hook_result
            senders.extend(result.unbind(0))
            x = x + result.sum(0) + t[p + "attn.c_proj.bias"]
            mlp_in = keep(x.clone())
            ln2 = self.ln(mlp_in, t[p + "ln_2.weight"], t[p + "ln_2.bias"])
            post = torch.nn.functional.gelu(torch.addmm(t[p + "mlp.c_fc.bias"], ln2, t[p + "mlp.c_fc.weight"]), approximate="tanh")
            mlp_out = torch.addmm(t[p + "mlp.c_proj.bias"], post, t[p + "mlp.c_proj.weight"])
            senders.append(mlp_out)
            x = x + mlp_out
            inputs.append((qkv_in, mlp_in))
        final = keep(x)
        logits = self.ln(final[-1:], t["ln_f.weight"], t["ln_f.bias"]) @ self.W_U.T
        return logits[0], inputs, final, torch.stack(senders)

    def eap_ig(self, clean, corrupt, t_ans, t_cnt, steps=5):
        """EAP-IG (hannamw/EAP-IG attribute.py get_scores_eap_ig) of logit[t_ans] − logit[t_cnt] at the last position:
        scores [sender, receiver] = Σ_pos,d (corrupt − clean sender output) · ∂metric/∂(receiver input), the gradient
        averaged over `steps` runs of the clean prompt with embeddings corrupt + (k/steps)(clean − corrupt). Receivers
        per layer: each head's q, k, v (head-major), then the MLP; then the logits. Only real edges are kept (a
        receiver reads the senders before it); returns the scores as one flat tensor in AttnScope's edge order."""
        H, L = self.H, self.L
        e_clean, e_corrupt = self.t["wte.weight"][clean], self.t["wte.weight"][corrupt]
        with torch.no_grad():
            delta = self.forward_split(corrupt, e_corrupt)[3] - self.forward_split(clean, e_clean)[3]  # [n_fwd, S, D]
        n_fwd = delta.shape[0]
        scores = torch.zeros(L * (3 * H + 1) + 1, n_fwd)
        for k in range(steps):
            with torch.enable_grad():
                embed = (e_corrupt + (k / steps) * (e_clean - e_corrupt)).detach().requires_grad_(True)
                logits, inputs, final, _ = self.forward_split(clean, embed)
                (logits[t_ans] - logits[t_cnt]).backward()
            with torch.no_grad():
                for l, (qkv_in, mlp_in) in enumerate(inputs):
                    g = torch.stack([m.grad for m in qkv_in], 1).reshape(3 * H, *mlp_in.shape)  # [(h, q/k/v), S, D]
                    r0, heads_before = l * (3 * H + 1), 1 + l * (H + 1)
                    scores[r0:r0 + 3 * H, :heads_before] += torch.einsum("bsd,fsd->bf", g, delta[:heads_before])
                    scores[r0 + 3 * H, :heads_before + H] += torch.einsum("sd,fsd->f", mlp_in.grad, delta[:heads_before + H])
                scores[-1] += torch.einsum("sd,fsd->f", final.grad, delta)
        scores /= steps
        reads = [1 + l * (H + 1) + (H if x == 3 * H else 0) for l in range(L) for x in range(3 * H + 1)] + [n_fwd]
        return torch.cat([scores[r, :n] for r, n in enumerate(reads)])

    def lens(self, cache, k=10):
        """Logit lens: resid_pre of every layer and the final residual, LN_final + W_U, softmax top-k."""
        t = self.t
        out = []
        for b in range(self.L + 1):
            r = cache[f"blocks.{b}.hook_resid_pre"] if b < self.L else cache[f"blocks.{self.L - 1}.hook_resid_post"]
            logits = self.ln(r, t["ln_f.weight"], t["ln_f.bias"]) @ self.W_U.T
            probs = torch.softmax(logits, dim=-1)
            out.append(torch.topk(probs, k, dim=-1))
        return out

    def wov_top(self, layer, head, k=100, chunk=1024):
        """Top-k of E·W_V^h·W_O^h·Eᵀ over all d_vocab² pairs: A = E·W_V^h, B = E·W_O^hᵀ, chunks of A·Bᵀ;
        rows whose max is below the current k-th best are skipped (BASELINE.md method)."""
        t, dh, D = self.t, self.d_head, self.D
        E = t["wte.weight"]
        W = t[f"h.{layer}.attn.c_attn.weight"]
        W_V = W[:, 2 * D + head * dh: 2 * D + (head + 1) * dh]
        W_O = t[f"h.{layer}.attn.c_proj.weight"][head * dh:(head + 1) * dh]
        A, B = E @ W_V, E @ W_O.T  # [V, dh]
        return top_pairs(A, B, k, chunk)


# ---------------------------------------------------------------- Llama (HF LlamaForCausalLM math)

class HookedLlama:
    """Plain Llama forward (RMSNorm, rotary in HF's rotate_half layout with Llama 3 rope_scaling, SwiGLU,
    grouped-query attention); with cache=dict, stores TransformerLens's hook points (rot_q/rot_k too).
    Weights are [out, in] as nn.Linear stores them, so projections are x @ W.T. model_type qwen3 adds the per-head
    q/k RMSNorm before RoPE (modeling_qwen3.py); gemma2 is modeling_gemma2.py: (1 + w) norms, embedding · √D,
    post-attention and post-MLP norms, GeGLU tanh, query_pre_attn_scalar, attention and final soft-caps, the
    sliding window on even layers; gemma3_text is modeling_gemma3.py: Gemma 2's blocks without soft-caps plus (1 + w)
    q/k norms, the window on the sliding layers (5 of every 6), RoPE base rope_local_base_freq on those and rope_theta
    (with linear rope_scaling) on the global ones."""

    def __init__(self, cfg, t):
        self.cfg, self.t = cfg, t
        self.L, self.H = cfg["num_hidden_layers"], cfg["num_attention_heads"]
        self.KV = cfg.get("num_key_value_heads", self.H)
        self.D = cfg["hidden_size"]
        self.dh = cfg.get("head_dim") or self.D // self.H
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.qwen3, self.gemma3 = cfg["model_type"] == "qwen3", cfg["model_type"] == "gemma3_text"
        self.gemma = cfg["model_type"] == "gemma2" or self.gemma3
        self.score_scale = 1.0 / math.sqrt(cfg.get("query_pre_attn_scalar", self.dh) if self.gemma else self.dh)
        self.attn_cap = cfg.get("attn_logit_softcapping") if self.gemma else None
        self.final_cap = cfg.get("final_logit_softcapping") if self.gemma else None
        self.window = cfg.get("sliding_window") if self.gemma else None
        pattern = cfg.get("sliding_window_pattern", 6)
        # the layers with the window: Gemma 2's even ones, Gemma 3's all but every pattern-th (layer_types when given)
        types = cfg.get("layer_types")
        self.sliding = [(types[l] == "sliding_attention") if types else (l % 2 == 0 if not self.gemma3 else (l + 1) % pattern != 0)
                        for l in range(self.L)]
        self.W_U = t.get("lm_head.weight", t["model.embed_tokens.weight"])  # [V, D]
        inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, self.dh, 2, dtype=torch.float64) / self.dh))
        rs = cfg.get("rope_scaling") or {}
        if rs.get("rope_type", rs.get("type")) == "llama3":  # HF _compute_llama3_parameters
            f, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
            wl = 2 * math.pi / inv
            scaled = torch.where(wl > old / lo, inv / f, inv)
            smooth = (old / wl - lo) / (hi - lo)
            mid = (1 - smooth) * scaled / f + smooth * scaled
            inv = torch.where((wl >= old / hi) & (wl <= old / lo), mid, scaled)
        self.inv_freq = inv.float()
        self.local_inv_freq = self.inv_freq
        if self.gemma3:  # sliding layers: their own base, unscaled; global layers: rope_theta with linear scaling
            base = cfg.get("rope_local_base_freq", 10000.0)
            self.local_inv_freq = (1.0 / (base ** (torch.arange(0, self.dh, 2, dtype=torch.float64) / self.dh))).float()
            if rs.get("rope_type", rs.get("type")) == "linear":
                self.inv_freq = self.inv_freq / rs["factor"]

    def rms(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * ((1.0 + w) if self.gemma else w)

    def softcap(self, x, cap):
        return torch.tanh(x / cap) * cap if cap else x

    def rope(self, x, cos, sin):  # x [H, S, dh]
        x1, x2 = x[..., : self.dh // 2], x[..., self.dh // 2:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    def forward(self, tokens, cache=None, last_only=False, z_patch=None, stop_at_layer=None):
        """z_patch = (layer, head, z [S, d_head]): that head's hook_z replaced (a TransformerLens hook).
        stop_at_layer = n (TransformerLens's argument): run blocks 0 … n − 1 only and return the residual stream."""
        t, H, KV, dh, S, D = self.t, self.H, self.KV, self.dh, tokens.shape[0], self.D
        hook = (lambda k, v: cache.__setitem__(k, v)) if cache is not None else (lambda k, v: None)
        x = t["model.embed_tokens.weight"][tokens]
        if self.gemma:  # Gemma2Model's / Gemma3TextScaledWordEmbedding's normalizer, in the weights' dtype (float32 here)
            x = x * torch.tensor(math.sqrt(D), dtype=x.dtype)
        if torch.is_grad_enabled():  # autograd to every hook point (the backward row): retain_grad on each
            x = x.detach().requires_grad_(True)
            hook = retaining(hook)
        hook("hook_embed", x)
        tables = []
        for inv in (self.inv_freq, self.local_inv_freq):
            freqs = torch.outer(torch.arange(S, dtype=torch.float32), inv)
            emb = torch.cat((freqs, freqs), dim=-1)
            tables.append((emb.cos(), emb.sin()))
        mask = torch.triu(torch.ones(S, S, dtype=torch.bool), 1)
        if self.window:  # Gemma 2's even layers: query i sees keys i − window < j ≤ i
            window_mask = mask | torch.tril(torch.ones(S, S, dtype=torch.bool), -self.window)
        for l in range(self.L):
            p = f"model.layers.{l}."
            hook(f"blocks.{l}.hook_resid_pre", x)
            ln1 = self.rms(x, t[p + "input_layernorm.weight"])
            hook(f"blocks.{l}.ln1.hook_normalized", ln1)
            q = (ln1 @ t[p + "self_attn.q_proj.weight"].T).reshape(S, H, dh).transpose(0, 1)
            k = (ln1 @ t[p + "self_attn.k_proj.weight"].T).reshape(S, KV, dh).transpose(0, 1)
            v = (ln1 @ t[p + "self_attn.v_proj.weight"].T).reshape(S, KV, dh).transpose(0, 1)
            cos, sin = tables[1 if self.gemma3 and self.sliding[l] else 0]
            if self.qwen3 or self.gemma3:  # Qwen3RMSNorm / Gemma3RMSNorm (1 + w) over head_dim
                q = self.rms(q, t[p + "self_attn.q_norm.weight"])
                k = self.rms(k, t[p + "self_attn.k_norm.weight"])
            hook(f"blocks.{l}.attn.hook_q", q)
            hook(f"blocks.{l}.attn.hook_k", k)
            hook(f"blocks.{l}.attn.hook_v", v)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            hook(f"blocks.{l}.attn.hook_rot_q", q)
            hook(f"blocks.{l}.attn.hook_rot_k", k)
            k, v = k.repeat_interleave(H // KV, dim=0), v.repeat_interleave(H // KV, dim=0)  # HF repeat_kv
            scores = self.softcap(torch.bmm(q, k.transpose(1, 2)) * self.score_scale, self.attn_cap)  # Gemma 2's cap
            scores = scores.masked_fill(window_mask if self.window and self.sliding[l] else mask, float("-inf"))
            hook(f"blocks.{l}.attn.hook_attn_scores", scores)
            pattern = torch.softmax(scores, dim=-1)
            hook(f"blocks.{l}.attn.hook_pattern", pattern)
            z = torch.bmm(pattern, v)
            if z_patch is not None and z_patch[0] == l:
                z = z.clone()
                z[z_patch[1]] = z_patch[2]
            hook(f"blocks.{l}.attn.hook_z", z)
            W_O = t[p + "self_attn.o_proj.weight"]  # [D, H·dh]
            if cache is not None:  # per-head result z_h·W_O^h (hook_result)
                hook(f"blocks.{l}.attn.hook_result", torch.bmm(z, W_O.T.reshape(H, dh, D)))
            attn_out = z.transpose(0, 1).reshape(S, H * dh) @ W_O.T
            if self.gemma:
                attn_out = self.rms(attn_out, t[p + "post_attention_layernorm.weight"])
            hook(f"blocks.{l}.hook_attn_out", attn_out)
            x = x + attn_out
            hook(f"blocks.{l}.hook_resid_mid", x)
            ln2 = self.rms(x, t[p + ("pre_feedforward_layernorm.weight" if self.gemma else "post_attention_layernorm.weight")])
            hook(f"blocks.{l}.ln2.hook_normalized", ln2)
            gate = ln2 @ t[p + "mlp.gate_proj.weight"].T
            up = ln2 @ t[p + "mlp.up_proj.weight"].T
            hook(f"blocks.{l}.mlp.hook_pre", gate)
            hook(f"blocks.{l}.mlp.hook_pre_linear", up)
            act = torch.nn.functional.gelu(gate, approximate="tanh") if self.gemma else torch.nn.functional.silu(gate)
            post = act * up
            hook(f"blocks.{l}.mlp.hook_post", post)
            mlp_out = post @ t[p + "mlp.down_proj.weight"].T
            if self.gemma:
                mlp_out = self.rms(mlp_out, t[p + "post_feedforward_layernorm.weight"])
            hook(f"blocks.{l}.hook_mlp_out", mlp_out)
            x = x + mlp_out
            hook(f"blocks.{l}.hook_resid_post", x)
        xf = self.rms(x[-1:] if last_only else x, t["model.norm.weight"])
        hook("ln_final.hook_normalized", xf)
        return self.softcap(xf @ self.W_U.T, self.final_cap)

    def lens(self, cache, k=10):
        out = []
        for b in range(self.L + 1):
            r = cache[f"blocks.{b}.hook_resid_pre"] if b < self.L else cache[f"blocks.{self.L - 1}.hook_resid_post"]
            probs = torch.softmax(self.softcap(self.rms(r, self.t["model.norm.weight"]) @ self.W_U.T, self.final_cap), dim=-1)
            out.append(torch.topk(probs, k, dim=-1))
        return out

    def wov_top(self, layer, head, k=100, chunk=1024):
        """Top-k of E·W_V^h·W_O^h·U (sources through W_E, outputs through W_U) over all d_vocab² pairs."""
        t, dh = self.t, self.dh
        kv = head // (self.H // self.KV)
        W_V = t[f"model.layers.{layer}.self_attn.v_proj.weight"][kv * dh:(kv + 1) * dh].T  # [D, dh]
        W_O = t[f"model.layers.{layer}.self_attn.o_proj.weight"][:, head * dh:(head + 1) * dh]  # [D, dh] = W_O^hᵀ
        A, B = t["model.embed_tokens.weight"] @ W_V, self.W_U @ W_O  # [V, dh]
        return top_pairs(A, B, k, chunk)


def top_pairs(A, B, k, chunk):
    """Top-k cells of A·Bᵀ in row chunks, skipping rows whose max is below the current k-th best."""
    V = A.shape[0]
    best_vals = torch.full((k,), float("-inf"))
    best_idx = torch.zeros(k, dtype=torch.long)
    for r0 in range(0, V, chunk):
        s = A[r0:r0 + chunk] @ B.T
        thr = best_vals.min()
        rows = torch.nonzero(s.max(dim=1).values > thr).flatten()
        if rows.numel() == 0:
            continue
        v, i = torch.topk(s[rows], min(k, B.shape[0]), dim=1)
        flat = (rows[:, None] + r0) * B.shape[0] + i
        cand_v = torch.cat([best_vals, v.flatten()])
        cand_i = torch.cat([best_idx, flat.flatten()])
        top = torch.topk(cand_v, k)
        best_vals, best_idx = top.values, cand_i[top.indices]
    return best_vals, best_idx // B.shape[0], best_idx % B.shape[0]


def bench_circuits(m, V, runs):
    """The z patching sweep of every head at S = 16 as a TransformerLens notebook runs it: cache the clean run,
    run the corrupted one, then one full forward of the corrupted prompt per head with that head's hook_z
    replaced by the clean run's (denoising), logit difference at the last position. Prompts of the form of
    attnscope_bench's row (random tokens, positions 1…7 corrupted; numpy's generator, not the same ids)."""
    S = 16
    clean = torch.from_numpy(np.random.default_rng(16).integers(0, V, S))
    other = torch.from_numpy(np.random.default_rng(17).integers(0, V, S))
    corrupt = clean.clone()
    corrupt[1:S // 2] = other[1:S // 2]
    t_ans, t_cnt = int(clean[-1]), int(other[-1])
    res = {}

    def sweep():
        cache = {}
        m.forward(clean, cache=cache, last_only=True)
        m.forward(corrupt, last_only=True)
        cells = []
        for l in range(m.L):
            zc = cache[f"blocks.{l}.attn.hook_z"]
            for h in range(m.H):
                logits = m.forward(corrupt, last_only=True, z_patch=(l, h, zc[h]))[-1]
                cells.append(float(logits[t_ans] - logits[t_cnt]))
        res["cells"] = cells

    r = time_it(runs, sweep)
    r["cells"] = len(res["cells"])
    r["first_cell_metric"] = res["cells"][0]
    print(f"  patching z, {len(res['cells'])} heads, S={S} (one forward per head) {r['median_ms']:.1f} ms", flush=True)
    out = {"z_patching_16": r}
    if isinstance(m, HookedGPT2):  # EAP-IG of every edge, 5 steps, the same prompts
        r = time_it(runs, lambda: res.__setitem__("eap", m.eap_ig(clean, corrupt, t_ans, t_cnt)))
        r["edges"], r["score_norm"] = int(res["eap"].numel()), float(res["eap"].norm())
        out["eap_ig_16"] = r
        print(f"  EAP-IG (5 steps), {r['edges']} edges, S={S} {r['median_ms']:.1f} ms", flush=True)
    out.update(bench_forward_backward(m, V, runs))
    return out


def bench_forward_backward(m, V, runs):
    """Forward + backward to every hook point at S = 128: retain_grad on each activation the cache holds, the
    gradient of logit[a] − logit[b] at the last position; with the peak RSS of the runs (attnscope_bench's
    forward_backward_128)."""
    S = 128
    res = {}
    tokens = torch.from_numpy(np.random.default_rng(S).integers(0, V, S))

    def forward_backward():
        with torch.enable_grad():
            cache = {}
            logits = m.forward(tokens, cache=cache)
            (logits[-1, int(tokens[-1])] - logits[-1, int(tokens[0])]).backward()
            res["grad_embed"] = cache["hook_embed"].grad

    r = time_it(runs, forward_backward)
    r["grad_embed_norm"] = float(res["grad_embed"].norm())
    print(f"  forward + backward to every hook, S={S} (autograd, retain_grad) {r['median_ms']:.1f} ms, peak RSS "
          f"{r['peak_rss_mib']:.0f} MiB", flush=True)
    return {"forward_backward_128": r}


def bench_model(folder, seqs, lens_seqs, runs, wov, circuits_only=False, gradients_only=False, forward_only=False):
    out = {}
    rss0 = current_rss_mib()
    t0 = time.perf_counter()
    cfg, t = load_model(folder)
    out["first_open_ms"] = (time.perf_counter() - t0) * 1e3
    out["rss_after_open_mib"] = current_rss_mib() - rss0
    # forward_only: no second copy of the weights (gemma-2-2b upcast to float32 is 10.4 GB): the open is timed once
    if forward_only:
        out["open"] = {"median_ms": out["first_open_ms"], "min_ms": out["first_open_ms"], "max_ms": out["first_open_ms"],
                       "peak_rss_mib": peak_rss_mib()}
    else:
        out["open"] = time_it(runs, lambda: load_model(folder))
    print(f"\n{folder}\n  open {out['open']['median_ms']:.1f} ms", flush=True)
    llama = cfg.get("model_type") in ("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text")
    m = HookedLlama(cfg, t) if llama else HookedGPT2(cfg, t)
    n_ctx = cfg["max_position_embeddings"] if llama else cfg["n_positions"]
    V = cfg["vocab_size"]
    if gradients_only:
        out["circuits"] = bench_forward_backward(m, V, runs)
        return out
    if not forward_only:
        out["circuits"] = bench_circuits(m, V, runs)
    if circuits_only:
        return out
    if seqs and seqs[0] <= n_ctx and not forward_only:
        # open + the first forward with the full cache, the shortest prompt: what a notebook user waits for
        S0 = seqs[0]
        tokens0 = torch.from_numpy(np.random.default_rng(S0).integers(0, V, S0))

        def open_and_forward():
            cfg1, t1 = load_model(folder)
            m1 = HookedLlama(cfg1, t1) if llama else HookedGPT2(cfg1, t1)
            c = {}
            c["logits"] = m1.forward(tokens0, cache=c)

        out["open_first_forward"] = time_it(runs, open_and_forward)
        out["open_first_forward"]["S"] = S0
        print(f"  open + first forward S={S0}: {out['open_first_forward']['median_ms']:.1f} ms", flush=True)
    full, logits_only, lens = {}, {}, {}
    for S in seqs:
        if S > n_ctx:
            continue
        tokens = torch.from_numpy(np.random.default_rng(S).integers(0, V, S))
        state = {}

        def run_full():
            state.pop("cache", None)  # free the previous cache first
            c = {}
            c["logits"] = m.forward(tokens, cache=c)
            state["cache"] = c

        full[str(S)] = time_it(runs, run_full)
        logits_only[str(S)] = time_it(runs, lambda: m.forward(tokens, last_only=True))
        print(f"  S={S}: full cache {full[str(S)]['median_ms']:.1f} ms, logits only {logits_only[str(S)]['median_ms']:.1f} ms",
              flush=True)
        if S in lens_seqs:
            lens[str(S)] = time_it(runs, lambda: m.lens(state["cache"]))
            print(f"  S={S}: logit lens {lens[str(S)]['median_ms']:.1f} ms", flush=True)
        state.clear()
    out["forward_full_cache"] = full
    out["forward_logits_only"] = logits_only
    out["logit_lens"] = lens
    if wov:
        layer = m.L // 2
        res = {}
        r = time_it(max(1, runs // 2), lambda: res.__setitem__("top", m.wov_top(layer, 0)))
        vals, rows, cols = res["top"]
        r.update({"layer": layer, "best_score": float(vals[0]), "score_100": float(vals[-1]), "runs": max(1, runs // 2)})
        out["wov_top100"] = r
        print(f"  W_OV top-100 L{layer}H0 {r['median_ms']:.1f} ms, best {int(rows[0])} -> {int(cols[0])} ({float(vals[0]):.6g})",
              flush=True)
    out["peak_rss_mib_process"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return out


def tuned_blas():
    """The tuned BLAS library PyTorch's float32 matmul runs on (blas_library.mapped_tuned_blas after one
    product), or None when it is the reference BLAS."""
    torch.ones(64, 64) @ torch.ones(64, 64)
    return mapped_tuned_blas()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", action="append", required=True, help="model folder (repeatable)")
    ap.add_argument("--seq", default="20,128,512,1024")
    ap.add_argument("--lens-seq", default="20,128,512,1024")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-wov", action="store_true")
    ap.add_argument("--circuits-only", action="store_true", help="only the open and circuit rows")
    ap.add_argument("--forward-only", action="store_true",
                    help="only the open, the forward rows for --seq and the lens rows for --lens-seq (no circuits, no W_OV)")
    ap.add_argument("--gradients-only", action="store_true", help="only the open and the forward + backward row (S = 128)")
    ap.add_argument("--first-open", action="store_true",
                    help="only open the (first) model and run its first forward with the full cache at the first --seq, once, "
                         "in this new process, the file mapped (its fastest first open); print the milliseconds")
    ap.add_argument("--json")
    a = ap.parse_args()
    seqs = [int(s) for s in a.seq.split(",") if s]
    lens_seqs = [int(s) for s in a.lens_seq.split(",") if s]
    blas = tuned_blas()
    if blas is None:
        print("torch_reference.py: PyTorch's float32 matmul runs on no tuned BLAS: Debian's python3-torch calls "
              "libblas.so.3, which is the reference (netlib) BLAS unless an optimised one is installed, about 10x "
              "slower, so every ratio would flatter AttnScope. Install OpenBLAS (apt-get install libopenblas0-pthread) "
              "and run again.", file=sys.stderr, flush=True)
        return 2
    if a.first_open:  # a user's first open in a process: nothing read before, no warmed heap
        S0 = seqs[0] if seqs else 20
        t0 = time.perf_counter()
        cfg, t = load_model(a.model[0], mapped=True)
        llama = cfg.get("model_type") in ("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text")
        m = HookedLlama(cfg, t) if llama else HookedGPT2(cfg, t)
        tokens = torch.from_numpy(np.random.default_rng(S0).integers(0, cfg["vocab_size"], S0))
        c = {}
        c["logits"] = m.forward(tokens, cache=c)
        print(f"first_open_forward_ms {(time.perf_counter() - t0) * 1e3:.1f} S {S0}", flush=True)
        return 0
    # ATen's own kernels (softmax, GELU, …) dispatch on ATEN_CPU_CAPABILITY; the config says which ran
    capability = next((line.split(":", 1)[1].strip() for line in torch.__config__.show().splitlines()
                       if "CPU capability usage" in line), "?")
    root = {"tool": "torch_reference", "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpu_capability": capability, "blas": blas,
            "env": {k: os.environ.get(k, "") for k in ("OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY", "OMP_WAIT_POLICY",
                                                        "GLIBC_TUNABLES", "OPENBLAS_NUM_THREADS")},
            "runs": a.runs, "models": {}}
    print(f"torch {torch.__version__} on {blas}: ATen CPU capability {capability}, OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', '(auto)')}", flush=True)
    for folder in a.model:
        root["models"][os.path.basename(os.path.normpath(folder))] = bench_model(folder, seqs, lens_seqs, a.runs,
                                                                                   not a.no_wov and not a.forward_only,
                                                                                   a.circuits_only, a.gradients_only,
                                                                                   a.forward_only)
    text = json.dumps(root, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text)
    else:
        print(text)


if __name__ == "__main__":
    sys.exit(main())
