#!/usr/bin/python3
"""PyTorch peer of `attnscope_bench --graph-only`: an attribution graph computed the way circuit-tracer's
attribution/attribute.py and attribution/context.py do it (read from the repository; circuit-tracer itself is not
imported), float32, 2 threads:

  setup      a forward of the prompt caching each MLP's input (ln2.hook_normalized) and output; the transcoders
             encode it (W_enc [d_sae, d_model], TopK without ReLU, or ReLU for the demo); BOS zeroed; decoder vectors
             a·W_dec[f], encoder vectors W_enc[f], error vectors, the salient logits (top 10 up to p = 0.95) and
             their demeaned unembedding columns.
  forward    input_ids.expand(batch_size, -1) through the model with circuit-tracer's stop-gradients: the attention
             patterns and every norm's scale detached, each MLP output replaced by skip + (mlp − skip).detach() with
             skip = input·0; the residual at each MLP input and the ln_final output kept.
  backward   batches of batch_size targets (logits first, then the features: in order when every feature is a node;
             with max_feature_nodes below the active features, in queues of update_interval x batch_size ranked by
             graph.py's compute_partial_influences over the rows so far, then the visited square, as circuit-tracer): the target's encoder row /
             logit direction injected into the gradient at its layer's kept residual by a tensor hook, a backward
             from the highest layer in the batch with retain_graph, and backward hooks at every hook_mlp_out and at
             hook_embed that contract the gradient with the sources written there (circuit-tracer's
             _compute_score_hook: einsum of grads[:, positions of the layer's features] with the decoder vectors,
             of grads with the error vectors, of the embedding gradient with the token embeddings).
  prune      graph.py's prune_graph and compute_graph_scores on the full adjacency.

Two shortcuts that keep the arithmetic and make the peer faster and leaner: q, k and the pattern, and each MLP, are
computed under no_grad (their outputs are detached in circuit-tracer anyway, so no gradient passes there; this
only spares autograd's saved tensors).

  bench/torch_graph.py MODEL_DIR [--d-sae 24576] [--k 64] [--seq 16] [--batch-size 512] [--max-feature-nodes 7500]
                      [--update-interval 4] [--transcoders DIR] [--runs 1]
  bench/torch_graph.py --demo      the demo model and its bundled transcoders: the adjacency against
                                   tests/data/graphs/demo_graph_adjacency.npy (the float64 reference)

MODEL_DIR: a random checkpoint of attnscope_bench --write-models (GPT-2, Llama or Gemma 2 layout: (1 + w) norms, the
embedding · √d_model, the post-attention and post-MLP norms with their scales detached, GeGLU, query_pre_attn_scalar,
the attention soft-cap inside the detached pattern, the final soft-cap on the probabilities). The transcoders are
random (uniform with the variance of N(0, 1/fan_in)), generated here with the shapes of attnscope_bench's, or, with
--transcoders DIR, the very files attnscope_bench --graph-transcoders DIR wrote (TopK or JumpReLU, BF16), read lazily
as circuit-tracer's lazy_encoder / lazy_decoder read them: one layer's W_enc upcast for its encode, then only the
active features' rows. The visiting queues are update_interval × batch_size features (attnscope_bench's are 1 024). Run with
Debian's /usr/bin/python3 (python3-torch) and OPENBLAS_CORETYPE / ATEN_CPU_CAPABILITY for the kernel compared.
Prints JSON: seconds per phase and peak RSS."""
import argparse
import json
import math
import mmap
import os
import struct
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import load_model, peak_rss_mib, reset_peak_rss  # noqa: E402

torch.set_num_threads(2)
torch.set_grad_enabled(True)  # torch_reference turns it off on import


# ---------------------------------------------------------------- the model, batched, with circuit-tracer's stop-gradients

class Model:
    """GPT-2 (HF Conv1D names) or Llama (HF names) in TransformerLens's order of hooks, batched [B, T, D]."""

    def __init__(self, cfg, t):
        self.t = t
        self.gemma = cfg.get("model_type") == "gemma2"
        self.llama = cfg.get("model_type") in ("llama", "mistral", "qwen2", "gemma2")
        self.score_scale = 1.0 / math.sqrt(cfg.get("query_pre_attn_scalar", 0) or 1)  # set below for the others
        self.attn_cap = cfg.get("attn_logit_softcapping") if self.gemma else None
        self.final_cap = cfg.get("final_logit_softcapping") if self.gemma else None
        self.window = cfg.get("sliding_window") if self.gemma else None
        if self.llama:
            self.L, self.H, self.D = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
            self.KV = cfg.get("num_key_value_heads", self.H)
            self.dh = cfg.get("head_dim") or self.D // self.H
            self.eps = cfg.get("rms_norm_eps", 1e-6)
            self.W_E = t["model.embed_tokens.weight"]
            self.W_U = t.get("lm_head.weight", self.W_E).T  # [D, V]
            inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, self.dh, 2, dtype=torch.float64) / self.dh))
            rs = cfg.get("rope_scaling") or {}
            if rs.get("rope_type", rs.get("type")) == "llama3":
                f, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
                wl = 2 * math.pi / inv
                scaled = torch.where(wl > old / lo, inv / f, inv)
                smooth = (old / wl - lo) / (hi - lo)
                inv = torch.where((wl >= old / hi) & (wl <= old / lo), (1 - smooth) * scaled / f + smooth * scaled, scaled)
            self.inv_freq = inv.float()
            self.bos = cfg.get("bos_token_id", 0)
            if not self.gemma:
                self.score_scale = 1.0 / math.sqrt(self.dh)
        else:
            self.L, self.H, self.D = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
            self.KV, self.dh = self.H, self.D // self.H
            self.eps = cfg.get("layer_norm_epsilon", 1e-5)
            self.W_E = t["wte.weight"]
            self.W_U = self.W_E.T
            self.bos = cfg.get("bos_token_id", 50256)
            self.score_scale = 1.0 / math.sqrt(self.dh)

    def norm(self, x, w, b):
        """LayerNorm / RMSNorm with its scale detached (hook_scale stop-gradient)."""
        if self.llama:
            return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps).detach() * ((1.0 + w) if self.gemma else w)
        x = x - x.mean(-1, keepdim=True)
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps).detach() * w + b

    def lw(self, l):
        t = self.t
        if self.llama:
            p = f"model.layers.{l}."
            if self.gemma:  # sandwich norms: post-attention and post-MLP RMSNorms, the MLP's input pre_feedforward
                return {"ln1": (t[p + "input_layernorm.weight"], None), "ln2": (t[p + "pre_feedforward_layernorm.weight"], None),
                        "ln1_post": (t[p + "post_attention_layernorm.weight"], None),
                        "ln2_post": (t[p + "post_feedforward_layernorm.weight"], None),
                        "q": t[p + "self_attn.q_proj.weight"].T, "k": t[p + "self_attn.k_proj.weight"].T,
                        "v": t[p + "self_attn.v_proj.weight"].T, "o": t[p + "self_attn.o_proj.weight"].T,
                        "gate": t[p + "mlp.gate_proj.weight"].T, "up": t[p + "mlp.up_proj.weight"].T,
                        "down": t[p + "mlp.down_proj.weight"].T, "sliding": l % 2 == 0}
            return {"ln1": (t[p + "input_layernorm.weight"], None), "ln2": (t[p + "post_attention_layernorm.weight"], None),
                    "q": t[p + "self_attn.q_proj.weight"].T, "k": t[p + "self_attn.k_proj.weight"].T,
                    "v": t[p + "self_attn.v_proj.weight"].T, "o": t[p + "self_attn.o_proj.weight"].T,
                    "gate": t[p + "mlp.gate_proj.weight"].T, "up": t[p + "mlp.up_proj.weight"].T,
                    "down": t[p + "mlp.down_proj.weight"].T}
        p = f"h.{l}."
        D = self.D
        W, b = t[p + "attn.c_attn.weight"], t[p + "attn.c_attn.bias"]
        return {"ln1": (t[p + "ln_1.weight"], t[p + "ln_1.bias"]), "ln2": (t[p + "ln_2.weight"], t[p + "ln_2.bias"]),
                "q": W[:, :D], "k": W[:, D:2 * D], "v": W[:, 2 * D:], "bq": b[:D], "bk": b[D:2 * D], "bv": b[2 * D:],
                "o": t[p + "attn.c_proj.weight"], "bo": t[p + "attn.c_proj.bias"],
                "fc": t[p + "mlp.c_fc.weight"], "bfc": t[p + "mlp.c_fc.bias"],
                "proj": t[p + "mlp.c_proj.weight"], "bproj": t[p + "mlp.c_proj.bias"]}

    def heads(self, x, n):
        B, T, _ = x.shape
        return x.reshape(B, T, n, self.dh).transpose(1, 2)  # [B, n, T, dh]

    def attention(self, h, w, T):
        B = h.shape[0]
        with torch.no_grad():  # the pattern is detached (hook_pattern stop-gradient)
            q, k = h @ w["q"], h @ w["k"]
            if not self.llama:
                q, k = q + w["bq"], k + w["bk"]
            q, k = self.heads(q, self.H), self.heads(k, self.KV)
            if self.llama:
                freqs = torch.outer(torch.arange(T, dtype=torch.float32), self.inv_freq)
                emb = torch.cat((freqs, freqs), dim=-1)
                cos, sin = emb.cos(), emb.sin()
                rot = lambda x: x * cos + torch.cat((-x[..., self.dh // 2:], x[..., :self.dh // 2]), -1) * sin  # noqa: E731
                q, k = rot(q), rot(k)
                k = k.repeat_interleave(self.H // self.KV, dim=1)
            s = (q @ k.transpose(-1, -2)) * self.score_scale
            if self.attn_cap:  # Gemma 2's attention soft-cap
                s = self.attn_cap * torch.tanh(s / self.attn_cap)
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
            if self.window and w.get("sliding"):  # even layers: query i sees keys i − window < j ≤ i
                mask |= torch.tril(torch.ones(T, T, dtype=torch.bool), -self.window)
            s = s.masked_fill(mask, float("-inf"))
            pattern = s.softmax(-1)
        v = h @ w["v"]
        if not self.llama:
            v = v + w["bv"]
        v = self.heads(v, self.KV)
        if self.KV != self.H:
            v = v.repeat_interleave(self.H // self.KV, dim=1)
        z = (pattern @ v).transpose(1, 2).reshape(B, T, self.H * self.dh)
        out = z @ w["o"]
        if self.gemma:
            return self.norm(out, *w["ln1_post"])
        return out if self.llama else out + w["bo"]

    def mlp(self, h, w):
        if self.gemma:  # GeGLU (gelu_pytorch_tanh), then the post-MLP norm: hook_mlp_out is after it
            return self.norm((torch.nn.functional.gelu(h @ w["gate"], approximate="tanh") * (h @ w["up"])) @ w["down"],
                             *w["ln2_post"])
        if self.llama:
            return (torch.nn.functional.silu(h @ w["gate"]) * (h @ w["up"])) @ w["down"]
        return torch.nn.functional.gelu(torch.addmm(w["bfc"], h.reshape(-1, self.D), w["fc"]), approximate="tanh").matmul(
            w["proj"]).add(w["bproj"]).reshape(h.shape)

    def final_norm(self, x):
        t = self.t
        return self.norm(x, t["model.norm.weight"], None) if self.llama else self.norm(x, t["ln_f.weight"], t["ln_f.bias"])

    def forward(self, ids, embed_hook=None, mlp_out_hooks=None, keep=None):
        """ids [B, T]. keep: list filled with the residual at each MLP input and the ln_final output (n_layers + 1).
        Returns the MLP inputs and outputs (clean, for the setup) when no hooks are given."""
        B, T = ids.shape
        embed = self.W_E[ids]
        if self.gemma:  # Gemma2Model's normalizer, in the weights' dtype (float32 here)
            embed = embed * torch.tensor(math.sqrt(self.D), dtype=embed.dtype)
        if embed_hook is not None:
            embed = embed.detach().requires_grad_(True)  # hook_embed's enable_gradient
            embed.register_hook(embed_hook)
        x = embed if self.llama else embed + self.t["wpe.weight"][:T]
        ins, outs = [], []
        for l in range(self.L):
            w = self.lw(l)
            x = x + self.attention(self.norm(x, *w["ln1"]), w, T)
            h2 = self.norm(x, *w["ln2"])  # ln2.hook_normalized: the transcoder's input
            with torch.no_grad():
                m = self.mlp(h2, w)
            if keep is not None:
                keep.append(h2)
                skip = h2 * 0
                m = skip + (m - skip).detach()
                if mlp_out_hooks is not None:
                    m.register_hook(mlp_out_hooks[l])
            ins.append(h2)
            outs.append(m)
            x = x + m
        xf = self.final_norm(x)
        if keep is not None:
            keep.append(xf)
        return ins, outs, xf


# ---------------------------------------------------------------- transcoders

class OwnedTranscoders:
    """Per-layer transcoders held as float32 tensors: dicts of W_enc [d_sae, d_model], W_dec [d_sae, d_model],
    b_enc, b_dec and, for JumpReLU, threshold."""

    def __init__(self, layers, k=None):
        self.layers, self.k = layers, k

    def __len__(self):
        return len(self.layers)

    def encoder(self, l):
        return self.layers[l]["W_enc"], self.layers[l]["b_enc"], self.layers[l].get("threshold")

    def rows(self, l, name, idx):
        return self.layers[l][name][idx]

    def b_dec(self, l):
        return self.layers[l]["b_dec"]


def random_transcoders(L, D, d_sae, k, seed=1):
    g = torch.Generator().manual_seed(seed)
    u = lambda shape, a: (torch.rand(shape, generator=g) * 2 - 1) * a  # noqa: E731
    return OwnedTranscoders([{"W_enc": u((d_sae, D), math.sqrt(3.0 / D)), "W_dec": u((d_sae, D), math.sqrt(3.0 / d_sae)),
                              "b_enc": u((d_sae,), 0.01), "b_dec": u((D,), 0.01)} for _ in range(L)], k)


class FileTranscoders:
    """A circuit-tracer transcoder folder (config.yaml, one safetensors per layer: W_enc and W_dec [d_sae, d_model],
    b_enc, b_dec, activation_function.threshold for JumpReLU), memory-mapped and read lazily as circuit-tracer's
    TranscoderSet does with lazy_encoder / lazy_decoder: a layer's W_enc is upcast to float32 for its encode and
    dropped, and only the active features' rows of W_dec and W_enc are read. BF16 rows are upcast to float32."""

    def __init__(self, folder):
        import re
        with open(os.path.join(folder, "config.yaml")) as f:
            text = f.read()
        self.files = [os.path.join(folder, n) for n in re.findall(r"^- (\S+\.safetensors)$", text, re.M)]
        act = re.search(r"^activation: (\S+)$", text, re.M)
        k = re.search(r"^k: (\d+)$", text, re.M)
        self.jump = act is not None and act.group(1) == "jump_relu"
        self.k = None if self.jump or k is None else int(k.group(1))
        self.maps = []
        for path in self.files:
            with open(path, "rb") as f:
                buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            n = struct.unpack("<Q", buf[:8])[0]
            self.maps.append((buf, json.loads(bytes(buf[8:8 + n])), 8 + n))

    def __len__(self):
        return len(self.files)

    def _array(self, l, name):
        import numpy as np
        buf, header, base = self.maps[l]
        info = header[name]
        a, b = info["data_offsets"]
        dt = {"BF16": np.int16, "F16": np.float16, "F32": np.float32}[info["dtype"]]
        arr = np.frombuffer(buf, dtype=dt, count=(b - a) // np.dtype(dt).itemsize, offset=base + a)
        return arr.reshape(info["shape"]), info["dtype"]

    @staticmethod
    def _float(arr, dtype):
        import numpy as np
        t = torch.from_numpy(np.ascontiguousarray(arr))
        return t.view(torch.bfloat16).float() if dtype == "BF16" else t.float()

    def encoder(self, l):
        get = lambda n: self._float(*self._array(l, n))  # noqa: E731
        return get("W_enc"), get("b_enc"), get("activation_function.threshold") if self.jump else None

    def rows(self, l, name, idx):
        arr, dtype = self._array(l, name)
        return self._float(arr[idx.numpy()], dtype)

    def b_dec(self, l):
        return self._float(*self._array(l, "b_dec"))


def encode(tcs, l, x):
    """One layer's activations [T, d_sae]: ReLU (the demo), circuit-tracer's TopK (the k largest, no ReLU) or
    JumpReLU (x · (x > threshold))."""
    W_enc, b_enc, threshold = tcs.encoder(l)
    pre = x @ W_enc.T + b_enc
    del W_enc
    if threshold is not None:
        return pre * (pre > threshold)
    if tcs.k is None:
        return pre.relu()
    v, i = torch.topk(pre, tcs.k, dim=-1)
    return torch.zeros_like(pre).scatter_(-1, i, v)


# ---------------------------------------------------------------- graph.py

def normalize_matrix(m):
    a = m.abs()
    return a / a.sum(dim=1, keepdim=True).clamp(min=1e-10)


def compute_influence(A, w, max_iter=1000):
    cur = w @ A
    infl = cur.clone()
    it = 0
    while cur.any():
        if it >= max_iter:
            raise RuntimeError("influence did not converge")
        cur = cur @ A
        infl += cur
        it += 1
    return infl


def find_threshold(scores, threshold):
    s = torch.sort(scores, descending=True).values
    cum = torch.cumsum(s, dim=0) / torch.sum(s)
    i = min(int(torch.searchsorted(cum, threshold)), len(cum) - 1)
    return s[i]


def prune_graph(adj, logit_p, n_tokens, n_features, node_threshold=0.8, edge_threshold=0.98):
    n_logits = len(logit_p)
    w = torch.zeros(adj.shape[0])
    w[-n_logits:] = logit_p
    node_influence = compute_influence(normalize_matrix(adj), w)
    node_mask = node_influence >= find_threshold(node_influence, node_threshold)
    node_mask[-n_logits - n_tokens:] = True
    pruned = adj.clone()
    pruned[~node_mask] = 0
    pruned[:, ~node_mask] = 0
    normalized_pruned = normalize_matrix(pruned)
    pruned_influence = compute_influence(normalized_pruned, w) + w
    edge_scores = normalized_pruned * pruned_influence[:, None]
    edge_mask = edge_scores >= find_threshold(edge_scores.flatten(), edge_threshold)
    old = node_mask.clone()
    node_mask[:-n_logits - n_tokens] &= edge_mask[:, :-n_logits - n_tokens].any(0)
    node_mask[:n_features] &= edge_mask[:n_features].any(1)
    while not torch.all(node_mask == old):
        old[:] = node_mask
        edge_mask[~node_mask] = False
        edge_mask[:, ~node_mask] = False
        node_mask[:-n_logits - n_tokens] &= edge_mask[:, :-n_logits - n_tokens].any(0)
        node_mask[:n_features] &= edge_mask[:n_features].any(1)
    return node_mask, edge_mask, node_influence


def graph_scores(adj, logit_p, n_tokens, n_features, n_error):
    n_logits = len(logit_p)
    w = torch.zeros(adj.shape[0])
    w[-n_logits:] = logit_p
    N = normalize_matrix(adj)
    infl = compute_influence(N, w)
    tok = infl[-n_logits - n_tokens:-n_logits].sum()
    err = infl[n_features:n_features + n_error].sum()
    non_err = 1 - N[:, n_features:n_features + n_error].sum(-1)
    out = infl + w
    return float(tok / (tok + err)), float((non_err * out).sum() / out.sum())


# ---------------------------------------------------------------- attribution (attribute.py)

def compute_partial_influences(edge_matrix, logit_p, row_to_node_index, max_iter=128):
    """graph.py's compute_partial_influences: |rows| normalised by max(row sum, 1e-8), prod from the logit
    probabilities, prod <- prod[row_to_node_index] @ N until 0 (a normalised copy, as circuit-tracer makes it)."""
    normalized = edge_matrix.abs()
    normalized /= normalized.sum(dim=1, keepdim=True).clamp(min=1e-8)
    influences = torch.zeros(edge_matrix.shape[1])
    prod = torch.zeros(edge_matrix.shape[1])
    prod[-len(logit_p):] = logit_p
    for _ in range(max_iter):
        prod = prod[row_to_node_index] @ normalized
        if not prod.any():
            break
        influences += prod
    else:
        raise RuntimeError("Failed to converge")
    return influences


def attribute(m, tcs, ids, batch_size, phases, max_feature_nodes=None, update_interval=4):
    T, L = len(ids), m.L
    t0 = time.perf_counter()
    with torch.no_grad():  # setup_attribution
        ins, outs, xf = m.forward(ids[None])
        acts = torch.stack([encode(tcs, l, ins[l][0]) for l in range(L)])  # [L, T, d_sae]
        if ids[0] == m.bos:
            acts[:, 0] = 0
        am = acts.to_sparse()
        del acts
        f_layer, f_pos, f_id = am.indices()
        f_act = am.values()
        dec_rows = [tcs.rows(l, "W_dec", f_id[f_layer == l]) for l in range(L)]  # the active rows only (sparse decode)
        recon = torch.stack([torch.zeros(T, m.D).index_add_(0, f_pos[f_layer == l], dec_rows[l] * f_act[f_layer == l, None])
                             + tcs.b_dec(l) for l in range(L)])
        errors = torch.stack([outs[l][0] for l in range(L)]) - recon
        if ids[0] == m.bos:
            errors[:, 0] = 0
        decoder_vecs = torch.cat(dec_rows) * f_act[:, None]
        del dec_rows
        encoder_vecs = torch.cat([tcs.rows(l, "W_enc", f_id[f_layer == l]) for l in range(L)])
        token_vecs = m.W_E[ids] * (math.sqrt(m.D) if m.gemma else 1.0)
        logits = xf[0, -1] @ m.W_U
        if m.final_cap:  # Gemma 2's final soft-cap, on the probabilities only
            logits = m.final_cap * torch.tanh(logits / m.final_cap)
        probs = logits.softmax(-1)
        top_p, top_idx = torch.topk(probs, 10)
        cut = int(torch.searchsorted(torch.cumsum(top_p, 0), 0.95)) + 1
        top_p, top_idx = top_p[:cut], top_idx[:cut]
        logit_vecs = (m.W_U[:, top_idx] - m.W_U.mean(dim=-1, keepdim=True)).T
    n_feat = len(f_id)
    n_logits = len(top_idx)
    logit_offset = n_feat + (L + 1) * T
    n = logit_offset + n_logits
    phases["setup_s"] = time.perf_counter() - t0

    # the hooks: each contracts a gradient with the sources written there into the batch buffer [rows, batch]
    state = {}
    layer_slices = []
    for l in range(L):
        idx = (f_layer == l).nonzero().flatten()
        layer_slices.append((int(idx[0]) if len(idx) else 0, int(idx[-1]) + 1 if len(idx) else 0))

    def mlp_hook(l):
        a, b = layer_slices[l]
        pos = f_pos[a:b]
        e0 = n_feat + l * T

        def fn(grads):
            buf = state["buf"]
            buf[a:b] += torch.einsum("bpd,pd->pb", grads[:, pos], decoder_vecs[a:b])
            buf[e0:e0 + T] += torch.einsum("bpd,pd->pb", grads, errors[l])
        return fn

    def embed_hook(grads):
        t0_ = n_feat + L * T
        state["buf"][t0_:t0_ + T] += torch.einsum("bpd,pd->pb", grads, token_vecs)

    t0 = time.perf_counter()
    keep = []
    m.forward(ids[None].expand(batch_size, -1), embed_hook=embed_hook, mlp_out_hooks=[mlp_hook(l) for l in range(L)], keep=keep)
    phases["forward_s"] = time.perf_counter() - t0

    def compute_batch(layers, positions, values, retain):
        state["buf"] = torch.zeros(logit_offset, batch_size)
        bidx = torch.arange(len(layers))
        handles = []
        for layer in layers.unique().tolist():
            msk = layers == layer

            def inject(g, bi=bidx[msk], pi=positions[msk], v=values[msk]):
                g = g.clone()
                g.index_put_((bi, pi), v)
                return g
            handles.append(keep[layer].register_hook(inject))
        last = int(layers.max())
        try:
            keep[last].backward(gradient=torch.zeros_like(keep[last]), retain_graph=retain)
        finally:
            for h in handles:
                h.remove()
        return state.pop("buf").T[:len(layers)]

    # circuit-tracer's phases 3-5 (attribute_transformerlens.py): logit rows, then features by partial influence
    t0 = time.perf_counter()
    max_nodes = min(max_feature_nodes or n_feat, n_feat)
    edge_matrix = torch.zeros(max_nodes + n_logits, n)
    row_to_node_index = torch.zeros(max_nodes + n_logits, dtype=torch.long)
    for i in range(0, n_logits, batch_size):
        vecs = logit_vecs[i:i + batch_size]
        rows = compute_batch(torch.full((len(vecs),), L), torch.full((len(vecs),), T - 1), vecs, True)
        edge_matrix[i:i + len(vecs), :logit_offset] = rows
        row_to_node_index[i:i + len(vecs)] = torch.arange(i, i + len(vecs)) + logit_offset
    st, n_visited, batches = n_logits, 0, 1
    visited = torch.zeros(n_feat, dtype=torch.bool)
    influence_s = 0.0
    while n_visited < max_nodes:
        if max_nodes == n_feat:
            pending = torch.arange(n_feat)
        else:
            t1 = time.perf_counter()
            influences = compute_partial_influences(edge_matrix[:st], top_p, row_to_node_index[:st])
            feature_rank = torch.argsort(influences[:n_feat], descending=True)
            pending = feature_rank[~visited[feature_rank]][:min(update_interval * batch_size, max_nodes - n_visited)]
            influence_s += time.perf_counter() - t1
        for idx in [pending[i:i + batch_size] for i in range(0, len(pending), batch_size)]:
            n_visited += len(idx)
            rows = compute_batch(f_layer[idx], f_pos[idx], encoder_vecs[idx], n_visited < max_nodes)
            edge_matrix[st:st + len(idx), :logit_offset] = rows
            row_to_node_index[st:st + len(idx)] = idx
            visited[idx] = True
            st += len(idx)
            batches += 1
    selected = torch.where(visited)[0]
    if max_nodes < n_feat:
        edge_matrix = edge_matrix[:, torch.cat([selected, torch.arange(n_feat, n)])]
    edge_matrix = edge_matrix[row_to_node_index.argsort()]
    adj = torch.zeros(edge_matrix.shape[1], edge_matrix.shape[1])
    adj[:max_nodes] = edge_matrix[:max_nodes]
    adj[-n_logits:] = edge_matrix[max_nodes:]
    del edge_matrix
    phases["partial_influence_s"] = influence_s
    phases["active_features"] = n_feat
    phases["backward_s"] = time.perf_counter() - t0
    phases["batches"] = batches
    del keep, state
    return adj, top_p, max_nodes, (f_layer[selected], f_pos[selected], f_id[selected])


def run(m, tcs, ids, batch_size, max_feature_nodes=None, update_interval=4):
    phases = {}
    t0 = time.perf_counter()
    adj, top_p, n_feat, feats = attribute(m, tcs, ids, batch_size, phases, max_feature_nodes, update_interval)
    t1 = time.perf_counter()
    T, L = len(ids), m.L
    node_mask, edge_mask, _ = prune_graph(adj, top_p, T, n_feat)
    scores = graph_scores(adj, top_p, T, n_feat, L * T)
    phases["prune_scores_s"] = time.perf_counter() - t1
    phases["total_s"] = time.perf_counter() - t0
    phases.update({"nodes": adj.shape[0], "features": n_feat, "kept_nodes": int(node_mask.sum()),
                   "replacement_score": scores[0], "completeness_score": scores[1]})
    return phases, adj, feats


def demo_check(root):
    import numpy as np
    sys.path.insert(0, os.path.join(root, "tools"))
    import train_demo_model as demo
    cfg, t = load_model(os.path.join(root, "resources", "demo"))
    m = Model(cfg, t)
    tc_dir = os.path.join(root, "resources", "demo-features", "transcoders")
    tcs = OwnedTranscoders([demo.read_safetensors(os.path.join(tc_dir, f"layer_{l}.safetensors")) for l in range(m.L)])
    with open(os.path.join(root, "tests", "data", "graphs", "demo_graph_reference.json")) as f:
        ref = json.load(f)
    ids = torch.tensor(ref["token_ids"])
    phases, adj, _ = run(m, tcs, ids, 512)
    want = torch.from_numpy(np.load(os.path.join(root, "tests", "data", "graphs", "demo_graph_adjacency.npy")))
    assert adj.shape == want.shape, (adj.shape, want.shape)
    err = float((adj - want).abs().max() / want.abs().max())
    phases.update({"demo_max_abs_diff_over_max": err, "reference_scores": ref["scores"]})
    print(json.dumps(phases, indent=1))
    assert err < 1e-4, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?")
    ap.add_argument("--demo", action="store_true")
    ap.add_argument("--d-sae", type=int, default=24576)
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--update-interval", type=int, default=4,
                    help="batches per partial-influence ranking (circuit-tracer's update_interval); 8 with --batch-size 128")
    ap.add_argument("--transcoders", help="attnscope_bench's --graph-transcoders folder (BF16 files, TopK or JumpReLU), "
                                          "read lazily; without it, random float32 TopK transcoders of --d-sae and --k")
    ap.add_argument("--max-feature-nodes", type=int, default=7500,
                    help="circuit-tracer's max_feature_nodes (0: every active feature); with --batch-size 256 the "
                         "visiting queues (update_interval 4 x batch_size) are attnscope_bench's")
    a = ap.parse_args()
    if a.demo:
        demo_check(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        return
    cfg, t = load_model(a.model, mapped=True)
    m = Model(cfg, t)
    if a.transcoders:
        tcs = FileTranscoders(a.transcoders)
        if len(tcs) != m.L:
            raise SystemExit(f"{a.transcoders}: {len(tcs)} transcoders for {m.L} layers")
    else:
        tcs = random_transcoders(m.L, m.D, a.d_sae, a.k)
    g = torch.Generator().manual_seed(a.seq)
    ids = torch.randint(0, min(m.W_E.shape[0], 50257), (a.seq,), generator=g)
    ids[0] = m.bos
    out = []
    for _ in range(a.runs):
        reset_peak_rss()
        phases, adj, _ = run(m, tcs, ids, a.batch_size, a.max_feature_nodes or None, a.update_interval)
        phases["peak_rss_mib"] = peak_rss_mib()
        del adj
        out.append(phases)
        print(json.dumps(phases), file=sys.stderr, flush=True)
    from blas_library import mapped_tuned_blas
    print(json.dumps({"tool": "torch_graph", "model": os.path.basename(os.path.normpath(a.model)), "blas": mapped_tuned_blas(),
                      "batch_size": a.batch_size, "max_feature_nodes": a.max_feature_nodes, "transcoders": a.transcoders or "random float32",
                      "d_sae": a.d_sae, "k": tcs.k, "S": a.seq, "runs": out}, indent=1))


if __name__ == "__main__":
    main()
