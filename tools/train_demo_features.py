#!/usr/bin/python3
"""Train small sparse dictionaries on AttnScope's demo model and write them in public formats.

Writes into --out (default resources/demo-features/):
  resid-jumprelu/  JumpReLU SAE on blocks.0.hook_resid_post, SAELens 6 layout
                   (cfg.json + sae_weights.safetensors: W_enc [d_in, d_sae], b_enc, W_dec
                   [d_sae, d_in], b_dec, threshold).
  resid-topk/      TopK SAE (k 16) on the same hook, SAELens 6 layout (no threshold).
  transcoders/     circuit-tracer per-layer transcoder set: config.yaml + layer_L.safetensors
                   (W_enc [d_transcoder, d_model], W_dec [d_transcoder, d_model], b_enc, b_dec),
                   ReLU, reading blocks.L.ln2.hook_normalized, writing blocks.L.hook_mlp_out.
  clt/             circuit-tracer cross-layer transcoder (load_clt layout): config.yaml +
                   W_enc_i.safetensors {W_enc_i [d_transcoder, d_model], b_enc_i [d_transcoder],
                   b_dec_i [d_model] (layer i's output bias)} + W_dec_i.safetensors {W_dec_i
                   [d_transcoder, n_layers - i, d_model]}, ReLU; layer i's features read
                   blocks.i.ln2.hook_normalized and write blocks.j.hook_mlp_out for every j >= i.
                   Trained last, with its own generator; `--clt-only` trains just this one and
                   rewrites only its README section (nothing else is evaluated or written).
  README.md        how they were made, evaluation table, example features.
and the float64 reference tests/data/features/demo_reference.json, computed from the saved files.

Needs the same Debian packages as tools/train_demo_model.py (bible-kjv, bible-kjv-text,
python3-torch, python3-numpy, python3-regex) plus python3-yaml. Run:
  nice -n 10 /usr/bin/python3 tools/train_demo_features.py
  nice -n 10 /usr/bin/python3 tools/train_demo_features.py --clt-only --windows 1000
  (the other dictionaries' README command also used --windows 1000 --steps 1000)

Corpus, tokenizer, model code and the safetensors reader/writer are imported from
tools/train_demo_model.py. Activations come from the saved demo model run over the KJV in
windows of 128 tokens (<|endoftext|> as BOS + 127 corpus tokens); the chapters that model held
out (index 25 mod 50) are held out here too and used for the evaluation.
"""

import argparse
import collections
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_demo_model as demo  # noqa: E402

MODEL_NAME = "attnscope-demo"
CTX = 128
PROMPT = "In the beginning God created the heaven and the earth."


# ----------------------------------------------------------------------------- model with hooks

class Hooks:
    """Forward hooks on the demo GPT2 module that read and optionally replace activations.

    Hook names follow TransformerLens: blocks.L.hook_resid_post (output of block L),
    blocks.L.ln2.hook_normalized (ln_2 output = MLP input), blocks.L.hook_mlp_out (c_proj output).
    `patch` maps a hook name to fn(activation [B, T, D]) -> replacement.
    """

    def __init__(self, model):
        self.model = model
        self.cache = {}
        self.patch = {}
        self.record = set()
        for L, blk in enumerate(model.h):
            blk.register_forward_hook(self._make("blocks.%d.hook_resid_post" % L, tuple_out=True))
            blk.ln_2.register_forward_hook(self._make("blocks.%d.ln2.hook_normalized" % L))
            blk.mlp.c_proj.register_forward_hook(self._make("blocks.%d.hook_mlp_out" % L))

    def _make(self, name, tuple_out=False):
        def hook(_module, _inputs, output):
            act = output[0] if tuple_out else output
            if name in self.record:
                self.cache[name] = act.detach()
            if name in self.patch:
                act = self.patch[name](act)
                return (act,) + tuple(output[1:]) if tuple_out else act
            return None
        return hook

    @torch.no_grad()
    def run(self, idx, record=(), patch=None):
        """Logits [B, T, V]; recorded activations land in self.cache."""
        self.cache, self.record, self.patch = {}, set(record), dict(patch or {})
        logits, _ = self.model(idx)
        self.patch = {}
        return logits


def next_token_ce(logits, idx, skip_first=0):
    """Mean next-token cross-entropy; targets idx[:, 1:]. `skip_first` drops early positions."""
    lg = logits[:, skip_first:-1]
    tg = idx[:, skip_first + 1:]
    return F.cross_entropy(lg.reshape(-1, lg.shape[-1]), tg.reshape(-1)).item()


# ----------------------------------------------------------------------------- dictionaries

class Dictionary(torch.nn.Module):
    """One sparse dictionary: SAE (input = output, b_dec subtracted before encoding, as SAELens
    with apply_b_dec_to_input) or transcoder (no b_dec subtraction, as circuit-tracer).

    Trained on scaled activations (x_in / s_in, target / s_out, scales chosen so the centred
    mean squared norm is 1); `export` folds the scales back so the saved weights act on raw
    activations and the decoder rows stay unit norm.
    """

    def __init__(self, d_in, d_out, d_dict, kind, subtract_b_dec, k=None, gen=None):
        super().__init__()
        self.kind, self.subtract_b_dec, self.k = kind, subtract_b_dec, k
        w = torch.randn(d_dict, d_out, generator=gen)
        w = w / w.norm(dim=1, keepdim=True)
        self.W_dec = torch.nn.Parameter(w)
        # Encoder: the decoder transpose for SAEs, independent random for transcoders (input
        # and output spaces differ); columns of norm 0.5.
        w_enc = w.t().clone() if subtract_b_dec else torch.randn(d_in, d_dict, generator=gen)
        self.W_enc = torch.nn.Parameter(w_enc / w_enc.norm(dim=0, keepdim=True) * 0.5)
        self.b_enc = torch.nn.Parameter(torch.zeros(d_dict))
        self.b_dec = torch.nn.Parameter(torch.zeros(d_out))
        self.log_threshold = torch.nn.Parameter(torch.full((d_dict,), math.log(0.01)))

    def pre(self, x):
        if self.subtract_b_dec:
            x = x - self.b_dec
        return x @ self.W_enc + self.b_enc

    def encode(self, x, bandwidth=0.0):
        p = self.pre(x)
        if self.kind == "relu":
            return F.relu(p)
        if self.kind == "topk":
            top = p.topk(self.k, dim=-1)
            return torch.zeros_like(p).scatter(-1, top.indices, F.relu(top.values))
        return JumpReLUFn.apply(p, self.log_threshold.exp(), bandwidth)

    def forward(self, x, bandwidth=0.0):
        f = self.encode(x, bandwidth)
        return f, f @ self.W_dec + self.b_dec

    @torch.no_grad()
    def renorm_decoder(self):
        self.W_dec /= self.W_dec.norm(dim=1, keepdim=True)

    @torch.no_grad()
    def export(self, s_in, s_out):
        """Weights for raw activations: activations scaled by s_out, decoder rows unit norm."""
        r = s_out / s_in
        return {"W_enc": self.W_enc * r, "b_enc": self.b_enc * s_out, "W_dec": self.W_dec.clone(),
                "b_dec": self.b_dec * s_out, "threshold": self.log_threshold.exp() * s_out}


def rectangle(x):
    return ((x > -0.5) & (x < 0.5)).to(x)


class JumpReLUFn(torch.autograd.Function):
    """JumpReLU z·H(z − θ) with the straight-through threshold gradient of Rajamanoharan et al.
    (2024): d/dθ = −(θ/ε)·rect((z − θ)/ε); no gradient to z through the step."""

    @staticmethod
    def forward(ctx, z, theta, eps):
        ctx.save_for_backward(z, theta)
        ctx.eps = eps
        return z * (z > theta).to(z)

    @staticmethod
    def backward(ctx, g):
        z, theta = ctx.saved_tensors
        eps = ctx.eps
        gz = (z > theta).to(z) * g
        gt = (-(theta / eps) * rectangle((z - theta) / eps) * g).sum(0)
        return gz, gt, None


class StepFn(torch.autograd.Function):
    """H(z − θ) with the pseudo-derivative d/dθ = −(1/ε)·rect((z − θ)/ε) (for the L0 penalty)."""

    @staticmethod
    def forward(ctx, z, theta, eps):
        ctx.save_for_backward(z, theta)
        ctx.eps = eps
        return (z > theta).to(z)

    @staticmethod
    def backward(ctx, g):
        z, theta = ctx.saved_tensors
        eps = ctx.eps
        gt = (-(1.0 / eps) * rectangle((z - theta) / eps) * g).sum(0)
        return torch.zeros_like(z), gt, None


def train_dictionary(d, x_in, x_out, args, gen, log, label):
    """Adam on MSE (summed over dimensions of the scaled target) + sparsity penalty.

    jumprelu: + λ·L0 through the step pseudo-derivative (bandwidth ε), λ warmed up;
    relu: + λ·Σ f (decoder rows are unit norm, so this is the norm-weighted L1);
    topk: no penalty. Decoder rows are renormalised to unit norm after every step.
    """
    n = x_in.shape[0]
    opt = torch.optim.Adam(d.parameters(), lr=args.lr, betas=(0.9, 0.999))
    with torch.no_grad():
        d.b_dec.copy_(x_out.mean(0))
    steps = args.steps
    t0 = time.time()
    hist = collections.deque(maxlen=100)
    for step in range(steps):
        lr = args.lr * min(1.0, 5.0 * (1.0 - step / steps))  # flat, then linear decay (last 20 %)
        for g in opt.param_groups:
            g["lr"] = lr
        i = torch.randint(0, n, (args.batch,), generator=gen)
        xi, xo = x_in[i], x_out[i]
        f, rec = d(xi, args.bandwidth)
        mse = (rec - xo).pow(2).sum(-1).mean()
        warm = min(1.0, (step + 1) / (0.1 * steps))
        if d.kind == "jumprelu":
            l0 = StepFn.apply(d.pre(xi), d.log_threshold.exp(), args.bandwidth).sum(-1).mean()
            loss = mse + warm * args.l0_coeff * l0
        elif d.kind == "relu":
            loss = mse + warm * args.l1_coeff * f.sum(-1).mean()
        else:
            loss = mse
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        d.renorm_decoder()
        hist.append(((f > 0).float().sum(-1).mean().item(), mse.item()))
        if step % 500 == 0 or step == steps - 1:
            a = np.mean(hist, axis=0)
            log("  %s step %d/%d  L0 %.1f  scaled MSE %.4f  (%.0fs)" % (
                label, step, steps, a[0], a[1], time.time() - t0))
    return time.time() - t0


# ----------------------------------------------------------------------------- CLT

CLT_BEGIN = "<!-- clt: written by tools/train_demo_features.py --clt-only -->"
CLT_END = "<!-- /clt -->"


class CrossLayerTranscoder(torch.nn.Module):
    """ReLU cross-layer transcoder (Ameisen et al. 2025; circuit-tracer's CrossLayerTranscoder):
    layer i's features f_i = ReLU(x_i·W_enc[i] + b_enc[i]) read layer i's MLP input and write to
    the MLP output of every layer j ≥ i: out[j] = Σ_{i≤j} f_i·W_dec[i][:, j − i] + b_dec[j].

    Trained on scaled activations (x_i / s_in[i], out[j] / s_out[j]); `export` folds the scales
    back and rescales each feature so its decoder (all output layers together) has unit norm.
    """

    def __init__(self, n_layers, d_model, d_dict, gen):
        super().__init__()
        self.n_layers, self.d_model = n_layers, d_model
        w_enc = torch.randn(n_layers, d_model, d_dict, generator=gen)
        self.W_enc = torch.nn.Parameter(w_enc / w_enc.norm(dim=1, keepdim=True) * 0.5)
        self.b_enc = torch.nn.Parameter(torch.zeros(n_layers, d_dict))
        decs = []
        for i in range(n_layers):
            w = torch.randn(d_dict, n_layers - i, d_model, generator=gen)
            decs.append(torch.nn.Parameter(w / w.flatten(1).norm(dim=1)[:, None, None]))
        self.W_dec = torch.nn.ParameterList(decs)
        self.b_dec = torch.nn.Parameter(torch.zeros(n_layers, d_model))

    def dec_norms(self, i):
        return self.W_dec[i].flatten(1).norm(dim=1)

    def forward(self, xs):
        """xs: per-layer inputs [B, d] -> (features per layer, outputs per layer)."""
        fs = [F.relu(x @ self.W_enc[i] + self.b_enc[i]) for i, x in enumerate(xs)]
        outs = [self.b_dec[j].expand(xs[0].shape[0], -1) for j in range(self.n_layers)]
        for i, f in enumerate(fs):
            w = (f @ self.W_dec[i].flatten(1)).view(-1, self.n_layers - i, self.d_model)
            for k in range(self.n_layers - i):
                outs[i + k] = outs[i + k] + w[:, k]
        return fs, outs

    @torch.no_grad()
    def export(self, s_in, s_out):
        """circuit-tracer tensors {W_enc_i [d_t, d_model], b_enc_i, b_dec_i, W_dec_i [d_t,
        n_layers − i, d_model]} acting on raw activations; decoder rows (over all output layers)
        unit norm, activations in units of that norm."""
        out = {}
        for i in range(self.n_layers):
            dec = self.W_dec[i] * torch.tensor(s_out[i:])[None, :, None]
            nrm = dec.flatten(1).norm(dim=1).clamp_min(1e-12)
            out["W_enc_%d" % i] = (self.W_enc[i] / s_in[i] * nrm).t().contiguous()
            out["b_enc_%d" % i] = self.b_enc[i] * nrm
            out["b_dec_%d" % i] = self.b_dec[i] * s_out[i]
            out["W_dec_%d" % i] = dec / nrm[:, None, None]
        return out


def train_clt(clt, xs, ys, args, gen, log):
    """Adam on Σ_j squared error of the scaled out[j] + λ·Σ_i Σ_f f_i·‖W_dec[i][f]‖ (the
    decoder norm over all output layers, so the penalty cannot be dodged by shrinking the
    encoder), λ warmed up over the first 10 % and the learning rate decayed over the last 20 %."""
    n = xs[0].shape[0]
    opt = torch.optim.Adam(clt.parameters(), lr=args.lr, betas=(0.9, 0.999))
    with torch.no_grad():
        clt.b_dec.copy_(torch.stack([y.mean(0) for y in ys]))
    steps = args.clt_steps
    t0 = time.time()
    hist = collections.deque(maxlen=100)
    for step in range(steps):
        lr = args.lr * min(1.0, 5.0 * (1.0 - step / steps))
        for g in opt.param_groups:
            g["lr"] = lr
        i = torch.randint(0, n, (args.batch,), generator=gen)
        fs, outs = clt([x[i] for x in xs])
        mses = [(o - y[i]).pow(2).sum(-1).mean() for o, y in zip(outs, ys)]
        l1 = sum((f * clt.dec_norms(L)).sum(-1).mean() for L, f in enumerate(fs))
        warm = min(1.0, (step + 1) / (0.1 * steps))
        loss = sum(mses) + warm * args.clt_l1_coeff * l1
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        hist.append([(f > 0).float().sum(-1).mean().item() for f in fs] + [m.item() for m in mses])
        if step % 500 == 0 or step == steps - 1:
            a = np.mean(hist, axis=0)
            log("  clt step %d/%d  L0 %s  scaled MSE %s  (%.0fs)" % (
                step, steps, " ".join("%.1f" % v for v in a[:clt.n_layers]),
                " ".join("%.4f" % v for v in a[clt.n_layers:]), time.time() - t0))
    return time.time() - t0


def clt_config(n_layers):
    return {"model_name": MODEL_NAME, "model_kind": "cross_layer_transcoder",
            "scan": "%s/clt" % MODEL_NAME,
            "feature_input_hook": "ln2.hook_normalized", "feature_output_hook": "hook_mlp_out"}


def save_clt(out_dir, tensors, n_layers):
    os.makedirs(out_dir, exist_ok=True)
    for i in range(n_layers):
        demo.write_safetensors(os.path.join(out_dir, "W_enc_%d.safetensors" % i), [
            (k, tensors[k]) for k in ("W_enc_%d" % i, "b_enc_%d" % i, "b_dec_%d" % i)])
        demo.write_safetensors(os.path.join(out_dir, "W_dec_%d.safetensors" % i),
                               [("W_dec_%d" % i, tensors["W_dec_%d" % i])])
    with open(os.path.join(out_dir, "config.yaml"), "w") as f:
        f.write("# circuit-tracer cross-layer transcoder for AttnScope's demo model; written by "
                "tools/train_demo_features.py --clt-only.\n# Files W_enc_i.safetensors "
                "(W_enc_i, b_enc_i, b_dec_i) and W_dec_i.safetensors (W_dec_i) in this folder.\n")
        yaml.safe_dump(clt_config(n_layers), f, sort_keys=False)


def load_clt(out_dir, n_layers, dtype):
    """{name: tensor} of the saved CLT (circuit-tracer key names)."""
    t = {}
    for i in range(n_layers):
        for kind in ("enc", "dec"):
            path = os.path.join(out_dir, "W_%s_%d.safetensors" % (kind, i))
            t.update({k: v.to(dtype) for k, v in demo.read_safetensors(path).items()})
    return t


def clt_apply(t, xs):
    """Saved CLT on per-layer inputs xs[i] [..., d]: (features per layer, outputs per layer)."""
    n = len(xs)
    fs = [F.relu(x @ t["W_enc_%d" % i].t() + t["b_enc_%d" % i]) for i, x in enumerate(xs)]
    outs = [sum(fs[i] @ t["W_dec_%d" % i][:, j - i] for i in range(j + 1)) + t["b_dec_%d" % j]
            for j in range(n)]
    return fs, outs


@torch.no_grad()
def evaluate_clt(hooks, t, n_layers, windows, batch=32):
    """Held-out metrics over non-BOS positions: per layer L0 and FVU (x = true MLP output); CE
    clean, with every layer's MLP output replaced by the CLT's output at every non-BOS position
    (layer j's features read the spliced forward's own ln_2 output), and zero-ablated (every MLP
    output 0)."""
    ins = ["blocks.%d.ln2.hook_normalized" % L for L in range(n_layers)]
    outs_n = ["blocks.%d.hook_mlp_out" % L for L in range(n_layers)]
    l0 = [[] for _ in range(n_layers)]
    err, xs = [0.0] * n_layers, [[] for _ in range(n_layers)]
    ce = {"clean": [], "spliced": [], "zero": []}
    for s in range(0, windows.shape[0], batch):
        w = windows[s:s + batch]
        ce["clean"].append(next_token_ce(hooks.run(w, record=ins + outs_n), w))
        fs, rec = clt_apply(t, [hooks.cache[n][:, 1:] for n in ins])
        for L in range(n_layers):
            x = hooks.cache[outs_n[L]][:, 1:]
            l0[L].append((fs[L] > 0).float().sum(-1).flatten())
            err[L] += (x - rec[L]).pow(2).sum().item()
            xs[L].append(x.reshape(-1, x.shape[-1]))
        feats = {}

        def splice(a, L):
            x = hooks.cache[ins[L]]
            feats[L] = F.relu(x @ t["W_enc_%d" % L].t() + t["b_enc_%d" % L])
            r = sum(feats[i] @ t["W_dec_%d" % i][:, L - i] for i in range(L + 1)) + \
                t["b_dec_%d" % L]
            return torch.cat([a[:, :1], r[:, 1:]], dim=1)

        patch = {outs_n[L]: (lambda a, L=L: splice(a, L)) for L in range(n_layers)}
        ce["spliced"].append(next_token_ce(hooks.run(w, record=ins, patch=patch), w))
        ce["zero"].append(next_token_ce(hooks.run(w, patch={n: torch.zeros_like
                                                            for n in outs_n}), w))
    res = {"L0": [], "fvu": []}
    for L in range(n_layers):
        x = torch.cat(xs[L])
        res["L0"].append(torch.cat(l0[L]).mean().item())
        res["fvu"].append(err[L] / (x - x.mean(0)).pow(2).sum().item())
    res.update({"loss_%s" % k: float(np.mean(v)) for k, v in ce.items()})
    res["loss_recovered"] = ((res["loss_zero"] - res["loss_spliced"])
                             / (res["loss_zero"] - res["loss_clean"]))
    return res


def clt_section(r, args, n_tok, n_eval_tok, train_s, size, dead):
    """The README entry for clt/ (between CLT_BEGIN and CLT_END)."""
    per = ", ".join("layer %d: L0 %.1f, FVU %.3f" % (L, r["L0"][L], r["fvu"][L])
                    for L in range(len(r["L0"])))
    return """{begin}
## Cross-layer transcoder (`clt/`)

A ReLU cross-layer transcoder (Ameisen et al. 2025) in circuit-tracer's `load_clt` layout:
layer i's 512 features read `blocks.i.ln2.hook_normalized` and write to the MLP output
(`hook_mlp_out`) of every layer j ≥ i, out[j] = Σ_{{i≤j}} f_i·W_dec_i[:, j − i, :] + b_dec_j.
`config.yaml` (`model_kind: cross_layer_transcoder`, `scan: attnscope-demo/clt`);
`W_enc_i.safetensors` holds `W_enc_i` [512, 128] (encode x·W_enc_iᵀ + b_enc_i, no b_dec
subtraction), `b_enc_i` [512], `b_dec_i` [128] (layer i's output bias); `W_dec_i.safetensors`
holds `W_dec_i` [512, 2 − i, 128]. F32, {size:.2f} MB. Each feature's decoder over all its
output layers has unit norm.

Made by `{cmd}` ({train_min:.1f} min of training, {threads} thread): the same {n_tok} training
positions as above, both layers trained jointly, Adam (lr {lr}, batch {batch}, {steps} steps), loss = Σ_j
squared error of layer j's scaled MLP output + λ·Σ f·‖decoder‖ with λ = {l1}. Held out
({n_eval_tok} non-BOS positions): {per}; {dead} dead features (never fired on the
training activations). Cross-entropy clean {lc:.3f}, with both MLP outputs replaced by the CLT at non-BOS
positions {ls:.3f}, both zero-ablated {lz:.3f}: {rec:.1f} % of the loss recovered.
{end}
""".format(begin=CLT_BEGIN, end=CLT_END, size=size / 1e6, threads=args.threads,
           cmd="nice -n 10 /usr/bin/python3 " + " ".join(sys.argv),
           train_min=train_s / 60, n_tok=n_tok, lr=args.lr, batch=args.batch,
           steps=args.clt_steps, l1=args.clt_l1_coeff, n_eval_tok=n_eval_tok, per=per,
           dead=dead, lc=r["loss_clean"], ls=r["loss_spliced"], lz=r["loss_zero"],
           rec=100 * r["loss_recovered"])


def readme_with_clt(text, section):
    """README text with the CLT section replaced (or inserted before "## Reference") and the
    clt/ row in the files table."""
    row = ("| `clt/` | ReLU cross-layer transcoder (2 layers), d_transcoder 512 per layer | "
           "circuit-tracer CLT: `config.yaml`, `W_enc_i.safetensors`, `W_dec_i.safetensors` "
           "(below) |\n")
    if row not in text:
        a = text.index("\n", text.index("| `transcoders/` |")) + 1
        text = text[:a] + row + text[a:]
    if CLT_BEGIN in text:
        a, b = text.index(CLT_BEGIN), text.index(CLT_END) + len(CLT_END) + 1
        text = text[:a] + section + text[b:]
    else:
        a = text.index("## Reference")
        text = text[:a] + section + "\n" + text[a:]
    return text


@torch.no_grad()
def clt_dead(t, xs, n_layers, chunk=16384):
    """Features that never fire on the training inputs, summed over layers."""
    dead = 0
    for i in range(n_layers):
        fired = torch.zeros(t["b_enc_%d" % i].shape[0], dtype=torch.bool)
        for s in range(0, xs[i].shape[0], chunk):
            fired |= (F.relu(xs[i][s:s + chunk] @ t["W_enc_%d" % i].t() + t["b_enc_%d" % i])
                      > 0).any(0)
        dead += int((~fired).sum())
    return dead


def run_clt(hooks, flat, val_w, n_layer, args, log):
    """Train, save, reload and evaluate the CLT; returns its README section."""
    d_model = flat["blocks.0.hook_mlp_out"].shape[1]
    xs = [flat["blocks.%d.ln2.hook_normalized" % L] for L in range(n_layer)]
    ys = [flat["blocks.%d.hook_mlp_out" % L] for L in range(n_layer)]
    s_in, s_out = [centred_scale(x) for x in xs], [centred_scale(y) for y in ys]
    log("training clt (scales in %s, out %s)" % (s_in, s_out))
    gen = torch.Generator().manual_seed(args.seed + 1)
    clt = CrossLayerTranscoder(n_layer, d_model, args.d_dict, gen)
    train_s = train_clt(clt, [x / s for x, s in zip(xs, s_in)],
                        [y / s for y, s in zip(ys, s_out)], args, gen, log)
    out_dir = os.path.join(args.out, "clt")
    save_clt(out_dir, clt.export(s_in, s_out), n_layer)
    t = load_clt(out_dir, n_layer, torch.float32)
    r = evaluate_clt(hooks, t, n_layer, val_w)
    dead = clt_dead(t, xs, n_layer)
    size = sum(os.path.getsize(os.path.join(out_dir, x)) for x in os.listdir(out_dir))
    log("clt: L0 %s, FVU %s, CE clean %.3f spliced %.3f zero %.3f (%.1f %% recovered), "
        "%d dead, %d bytes" % (r["L0"], r["fvu"], r["loss_clean"], r["loss_spliced"],
                               r["loss_zero"], 100 * r["loss_recovered"], dead, size))
    return clt_section(r, args, xs[0].shape[0], val_w.shape[0] * (CTX - 1), train_s, size, dead)


# ----------------------------------------------------------------------------- data

def windows_from(stream, eot_id, n_max=None):
    """Non-overlapping windows [BOS] + 127 tokens of `stream` (long tensor) -> [N, 128]."""
    body = CTX - 1
    n = len(stream) // body
    w = stream[:n * body].view(n, body)
    if n_max is not None and n > n_max:
        w = w[torch.linspace(0, n - 1, n_max).long()]
    return torch.cat([torch.full((w.shape[0], 1), eot_id, dtype=torch.long), w], dim=1)


@torch.no_grad()
def collect(hooks, windows, names, batch=64):
    """Activations of `names` at every position: {name: [N, T, D] float32}."""
    out = {n: [] for n in names}
    for s in range(0, windows.shape[0], batch):
        hooks.run(windows[s:s + batch], record=names)
        for n in names:
            out[n].append(hooks.cache[n].float())
    return {n: torch.cat(v) for n, v in out.items()}


def centred_scale(x):
    """s with E‖(x − mean)/s‖² = 1."""
    return (x - x.mean(0)).pow(2).sum(-1).mean().sqrt().item()


# ----------------------------------------------------------------------------- saved formats

def sae_cfg(arch, d_in, d_sae, hook, k=None):
    """cfg.json as SAELens 6 SAE.save_model writes it (SAEConfig.to_dict field order)."""
    cfg = {"d_in": d_in, "d_sae": d_sae, "dtype": "float32", "device": "cpu",
           "apply_b_dec_to_input": True, "normalize_activations": "none",
           "reshape_activations": "none",
           "metadata": {"model_name": MODEL_NAME, "hook_name": hook, "hook_head_index": None,
                        "context_size": CTX, "prepend_bos": True, "seqpos_slice": [None],
                        "model_from_pretrained_kwargs": {},
                        "dataset_path": "Debian bible-kjv-text via `bible -f \"Gen1:1-Rev22:21\"`"}}
    if k is not None:
        cfg["k"] = k
        cfg["rescale_acts_by_decoder_norm"] = False
    cfg["architecture"] = arch
    return cfg


def save_sae(out_dir, cfg, tensors, names):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "cfg.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    demo.write_safetensors(os.path.join(out_dir, "sae_weights.safetensors"),
                           [(n, tensors[n]) for n in names])


def transcoder_config(n_layers):
    return {"model_name": MODEL_NAME, "model_kind": "transcoder_set",
            "scan": "%s/transcoders" % MODEL_NAME,
            "feature_input_hook": "ln2.hook_normalized", "feature_output_hook": "hook_mlp_out",
            "transcoders": ["layer_%d.safetensors" % L for L in range(n_layers)]}


class Loaded:
    """A saved dictionary reloaded from disk, evaluated in the dtype of its tensors."""

    def __init__(self, tensors, kind, subtract_b_dec, k=None, transpose_enc=False):
        self.t = tensors
        self.W_enc = tensors["W_enc"].t() if transpose_enc else tensors["W_enc"]  # [d_in, d]
        self.kind, self.sub, self.k = kind, subtract_b_dec, k

    def encode(self, x):
        t = self.t
        p = (x - t["b_dec"] if self.sub else x) @ self.W_enc + t["b_enc"]
        if self.kind == "topk":
            top = p.topk(self.k, dim=-1)
            return torch.zeros_like(p).scatter(-1, top.indices, F.relu(top.values))
        f = F.relu(p)
        if self.kind == "jumprelu":
            f = f * (p > t["threshold"]).to(p)
        return f

    def decode(self, f):
        return f @ self.t["W_dec"] + self.t["b_dec"]


def load_saved(out, dtype):
    """{key: (Loaded, hook_in, hook_out)} from the files on disk."""
    def rd(*p):
        return {k: v.to(dtype) for k, v in demo.read_safetensors(os.path.join(out, *p)).items()}

    res = {}
    for name in ("resid-jumprelu", "resid-topk"):
        with open(os.path.join(out, name, "cfg.json")) as f:
            cfg = json.load(f)
        hook = cfg["metadata"]["hook_name"]
        res[name] = (Loaded(rd(name, "sae_weights.safetensors"), cfg["architecture"],
                            cfg["apply_b_dec_to_input"], cfg.get("k")), hook, hook)
    with open(os.path.join(out, "transcoders", "config.yaml")) as f:
        tc = yaml.safe_load(f)
    for L, path in enumerate(tc["transcoders"]):
        t = rd("transcoders", path)
        kind = "jumprelu" if "activation_function.threshold" in t else "relu"
        if kind == "jumprelu":
            t["threshold"] = t["activation_function.threshold"]
        res["transcoder-%d" % L] = (Loaded(t, kind, False, transpose_enc=True),
                                    "blocks.%d.%s" % (L, tc["feature_input_hook"]),
                                    "blocks.%d.%s" % (L, tc["feature_output_hook"]))
    return res


# ----------------------------------------------------------------------------- evaluation

@torch.no_grad()
def evaluate(hooks, saved, windows, batch=32):
    """Held-out metrics per dictionary over non-BOS positions.

    L0 and FVU use every non-BOS position. Losses are mean next-token CE over positions
    0..126 of each window (predicting tokens 1..127): clean; spliced with x̂ at every non-BOS
    position (BOS keeps its true activation); spliced at every position including BOS (the
    SAELens convention); and with the hook output zero at every position.
    """
    rows = {}
    clean = []
    for s in range(0, windows.shape[0], batch):
        clean.append(next_token_ce(hooks.run(windows[s:s + batch]), windows[s:s + batch]))
    loss_clean = float(np.mean(clean))
    for key, (dic, h_in, h_out) in saved.items():
        l0, err, xs, spl, spl_all, zab = [], 0.0, [], [], [], []
        for s in range(0, windows.shape[0], batch):
            w = windows[s:s + batch]
            hooks.run(w, record=[h_in, h_out])
            x_in, x_out = hooks.cache[h_in][:, 1:], hooks.cache[h_out][:, 1:]
            f = dic.encode(x_in)
            rec = dic.decode(f)
            l0.append((f > 0).float().sum(-1).flatten())
            err += (x_out - rec).pow(2).sum().item()
            xs.append(x_out.reshape(-1, x_out.shape[-1]))

            def splice_non_bos(a, dic=dic, h_in=h_in, h_out=h_out):
                src = hooks.cache[h_in] if h_in != h_out else a
                r = dic.decode(dic.encode(src))
                return torch.cat([a[:, :1], r[:, 1:]], dim=1)

            def splice_all(a, dic=dic, h_in=h_in, h_out=h_out):
                src = hooks.cache[h_in] if h_in != h_out else a
                return dic.decode(dic.encode(src))

            rec_names = [h_in] if h_in != h_out else []
            spl.append(next_token_ce(hooks.run(w, record=rec_names,
                                               patch={h_out: splice_non_bos}), w))
            spl_all.append(next_token_ce(hooks.run(w, record=rec_names,
                                                   patch={h_out: splice_all}), w))
            zab.append(next_token_ce(hooks.run(w, patch={h_out: torch.zeros_like}), w))
        xs = torch.cat(xs)
        var = (xs - xs.mean(0)).pow(2).sum().item()
        l0 = torch.cat(l0)
        rows[key] = {"hook_in": h_in, "hook_out": h_out, "L0": l0.mean().item(),
                     "fvu": err / var, "loss_clean": loss_clean,
                     "loss_spliced": float(np.mean(spl)),
                     "loss_spliced_incl_bos": float(np.mean(spl_all)),
                     "loss_zero_ablated": float(np.mean(zab))}
        r = rows[key]
        r["loss_recovered"] = ((r["loss_zero_ablated"] - r["loss_spliced"])
                               / (r["loss_zero_ablated"] - r["loss_clean"]))
    return rows


# ----------------------------------------------------------------------------- feature reports

def tok_str(enc, i):
    return enc.decode([i]).replace("\n", "\\n") if i != len(enc.vocab) - 1 else "<BOS>"


@torch.no_grad()
def feature_report(enc, dic, x_in, windows, W_U, n_feat=6, n_ctx=5, chunk=16384):
    """Pick `n_feat` live features spread over the density range; for each: density, top
    contexts (8 tokens before, the max token in [brackets], 3 after) and the decoder direction's
    top tokens through the tied embedding (W_dec[f] · W_Uᵀ, no ln_final)."""
    N, T = windows.shape[0], windows.shape[1] - 1
    flat = x_in.reshape(-1, x_in.shape[-1])
    d = dic.t["W_dec"].shape[0]
    count = torch.zeros(d)
    best_val = torch.full((d, 64), -1.0)
    best_idx = torch.zeros((d, 64), dtype=torch.long)
    for s in range(0, flat.shape[0], chunk):
        f = dic.encode(flat[s:s + chunk])
        count += (f > 0).float().sum(0)
        v, i = f.t().topk(min(64, f.shape[0]), dim=1)
        cat_v = torch.cat([best_val, v], 1)
        cat_i = torch.cat([best_idx, i + s], 1)
        o = cat_v.topk(64, dim=1).indices
        best_val, best_idx = cat_v.gather(1, o), cat_i.gather(1, o)
    density = count / flat.shape[0]
    alive = [int(i) for i in torch.argsort(density) if 1e-3 < density[i] < 0.2]
    picks = [alive[int(round(q * (len(alive) - 1)))] for q in np.linspace(0.1, 0.9, n_feat)] \
        if alive else []
    reports = []
    for fi in picks:
        ctxs, seen, cur_tok, prev_tok = [], set(), [], []
        for v, pos in zip(best_val[fi].tolist(), best_idx[fi].tolist()):
            if v <= 0 or len(ctxs) >= n_ctx:
                break
            wi, ti = pos // T, pos % T + 1  # +1: BOS (position 0) was excluded
            if wi in seen:
                continue
            seen.add(wi)
            ids = windows[wi].tolist()
            left = "".join(tok_str(enc, t) for t in ids[max(1, ti - 8):ti])
            right = "".join(tok_str(enc, t) for t in ids[ti + 1:ti + 4])
            ctxs.append((v, "%s[%s]%s" % (left, tok_str(enc, ids[ti]), right)))
            cur_tok.append(ids[ti])
            prev_tok.append(ids[ti - 1])
        logit = dic.t["W_dec"][fi].float() @ W_U.t()
        top = [tok_str(enc, int(i)) for i in logit.topk(8).indices]
        reports.append({"feature": fi, "density": density[fi].item(),
                        "max": best_val[fi, 0].item(), "contexts": ctxs,
                        "label": guess_label(enc, cur_tok, prev_tok), "top_tokens": top})
    dead = int((density == 0).sum())
    return reports, dead, density


def guess_label(enc, cur, prev):
    """A mechanical one-line description from the top contexts."""
    if not cur:
        return "no activations"
    c = collections.Counter(cur).most_common(1)[0]
    p = collections.Counter(prev).most_common(1)[0]
    if c[1] >= max(3, p[1]):
        return "the token `%s` (%d of %d top contexts)" % (tok_str(enc, c[0]), c[1], len(cur))
    if p[1] >= 3:
        return "the token after `%s` (%d of %d top contexts)" % (tok_str(enc, p[0]), p[1],
                                                                 len(cur))
    toks = ", ".join("`%s`" % tok_str(enc, t) for t, _ in collections.Counter(cur).most_common(4))
    return "mixed tokens (%s)" % toks


# ----------------------------------------------------------------------------- reference

@torch.no_grad()
def reference(model_path, cfg, saved64, enc, eot_id):
    """Float64 reference for PROMPT from the saved model and dictionary files."""
    model = demo.GPT2(cfg)
    model.load_state_dict(demo.read_safetensors(model_path), strict=True)
    model = model.double().eval()
    hooks = Hooks(model)
    ids = [eot_id] + enc.encode(PROMPT)
    idx = torch.tensor([ids])
    names = sorted({h for _, h_in, h_out in saved64.values() for h in (h_in, h_out)})
    logits = hooks.run(idx, record=names)
    cache = dict(hooks.cache)
    loss_clean = next_token_ce(logits, idx)
    ref = {"prompt": PROMPT, "bos_token_id": eot_id, "token_ids": ids,
           "tokens": [tok_str(enc, i) for i in ids],
           "loss_clean": loss_clean,
           "logits_last_clean": logits[0, -1, :20].tolist(),
           "notes": ("float64; losses are mean next-token cross-entropy over positions 0..S-2; "
                     "loss_spliced replaces hook_out at every position including BOS with the "
                     "reconstruction (for transcoders: the transcoder output computed from the "
                     "true hook_in of that forward pass); loss_zero_ablated sets hook_out to 0 at "
                     "every position; fvu = sum_pos |x - x_hat|^2 / sum_pos |x - mean_pos x|^2 "
                     "over all positions including BOS; features are [index, activation] sorted "
                     "by activation descending, every nonzero one"),
           "dictionaries": {}}
    for key, (dic, h_in, h_out) in saved64.items():
        x_in, x = cache[h_in][0], cache[h_out][0]
        f = dic.encode(x_in)
        rec = dic.decode(f)
        feats = []
        for row in f:
            nz = torch.nonzero(row > 0).flatten().tolist()
            feats.append(sorted(([i, row[i].item()] for i in nz), key=lambda p: -p[1]))
        sq = (x - rec).pow(2).sum(-1)
        fvu = sq.sum().item() / (x - x.mean(0)).pow(2).sum().item()

        def splice(a, dic=dic, h_in=h_in, h_out=h_out):
            src = hooks.cache[h_in][0] if h_in != h_out else a[0]
            return dic.decode(dic.encode(src))[None]

        rec_names = [h_in] if h_in != h_out else []
        ref["dictionaries"][key] = {
            "hook_in": h_in, "hook_out": h_out,
            "features": feats, "reconstruction": rec.tolist(),
            "squared_error": sq.tolist(), "fvu": fvu,
            "loss_clean": loss_clean,
            "loss_spliced": next_token_ce(hooks.run(idx, record=rec_names,
                                                    patch={h_out: splice}), idx),
            "loss_zero_ablated": next_token_ce(hooks.run(idx, patch={h_out: torch.zeros_like}),
                                               idx)}
    return ref


# ----------------------------------------------------------------------------- README

def metrics_table(rows):
    lines = ["| dictionary | hook in → hook out | L0 | FVU | CE clean | CE spliced (non-BOS) | "
             "CE spliced (all, incl. BOS) | CE zero-ablated | loss recovered |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for key, r in rows.items():
        hooks = r["hook_in"] if r["hook_in"] == r["hook_out"] else "%s → %s" % (
            r["hook_in"], r["hook_out"])
        lines.append("| %s | `%s` | %.1f | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f %% |" % (
            key, hooks, r["L0"], r["fvu"], r["loss_clean"], r["loss_spliced"],
            r["loss_spliced_incl_bos"], r["loss_zero_ablated"], 100 * r["loss_recovered"]))
    return "\n".join(lines)


def features_md(key, reports, dead):
    out = ["### %s\n" % key, "%d of 512 features never fired on the training activations.\n"
           % dead]
    for r in reports:
        out.append("- **feature %d**: %s; fires on %.2f %% of tokens, max %.2f." % (
            r["feature"], r["label"], 100 * r["density"], r["max"]))
        out.append("  Decoder direction through W_U: %s" % ", ".join(
            "`%s`" % t for t in r["top_tokens"]))
        for v, c in r["contexts"]:
            out.append("  - %.2f: `%s`" % (v, c.replace("`", "'")))
    return "\n".join(out) + "\n"


README = """# Demo features

Sparse dictionaries for the bundled demo model (`resources/demo`, a 2-layer GPT-2 trained on the
King James Bible), in the file formats of SAELens 6 and circuit-tracer, so AttnScope has features
to show without downloads. Made by `tools/train_demo_features.py`; every number below was written
by that script.

## Files

| folder | what | format |
| --- | --- | --- |
| `resid-jumprelu/` | JumpReLU SAE on `blocks.0.hook_resid_post`, d_in 128, d_sae 512 | SAELens 6: `cfg.json`, `sae_weights.safetensors` (`W_enc` [128, 512], `b_enc`, `W_dec` [512, 128], `b_dec`, `threshold`) |
| `resid-topk/` | TopK SAE (k = 16) on the same hook | SAELens 6, `architecture` `topk`, no threshold |
| `transcoders/` | one ReLU transcoder per MLP layer (2), d_transcoder 512 | circuit-tracer transcoder set: `config.yaml`, `layer_0.safetensors`, `layer_1.safetensors` (`W_enc` [512, 128], `W_dec` [512, 128], `b_enc` [512], `b_dec` [128]) |

All tensors F32. Sizes: {sizes}.

- SAEs encode like SAELens: pre = (x − b_dec)·W_enc + b_enc; JumpReLU keeps ReLU(pre) where
  pre > threshold (strict), TopK keeps ReLU of the 16 largest pre-activations; x̂ = f·W_dec + b_dec.
- Transcoders encode like circuit-tracer's `SingleLayerTranscoder`: pre = x·W_encᵀ + b_enc (no
  b_dec subtraction), f = ReLU(pre), out = f·W_dec + b_dec. They read
  `blocks.L.ln2.hook_normalized` (the output of ln_2 including its weight and bias, i.e. the MLP
  input; circuit-tracer loads models with `fold_ln=False`, so this hook is exactly what the MLP
  sees) and predict `blocks.L.hook_mlp_out` (the MLP output before it is added to the residual).
  `config.yaml` names the hooks without the `blocks.L.` prefix (`ln2.hook_normalized`,
  `hook_mlp_out`), as circuit-tracer's Gemma Scope transcoder configs do; it lists the layer
  files relative to the folder of `config.yaml` (circuit-tracer opens local paths as given, so
  run it from this folder or make them absolute). ReLU rather than JumpReLU was chosen so the
  three dictionaries cover three activation functions, and because ReLU files (no
  `activation_function.threshold`) load in every circuit-tracer version's `load_relu_transcoder`.
- Decoder rows are unit norm (renormalised after every training step); the activation scale is
  folded into the encoder, biases and thresholds, so activations are in units of the hook's norm.

## How they were made

- Command: `{cmd}` ({threads} thread, torch {torch}, seed {seed}). Whole script {total_min:.1f} minutes.
- Corpus: Debian `bible-kjv-text` through `bible -f "Gen1:1-Rev22:21"`, chapters tokenized with the
  demo's BPE, each chapter preceded by `<|endoftext|>` (id {eot}), exactly as in
  `tools/train_demo_model.py`. The chapters that model held out (index 25 mod 50) are held out
  here too.
- Activations: the demo model (this script's forward is `tools/train_demo_model.py`'s
  `GPT2` loaded from `resources/demo/model.safetensors`, HF GPT-2 semantics) over {n_win}
  non-overlapping windows of 128 tokens (BOS `<|endoftext|>` + 127 corpus tokens) of the
  training chapters: {n_tok} token positions. BOS positions are excluded from training (SAELens
  practice: the BOS residual is an outlier the model uses as an attention sink).
- Training: Adam (lr {lr}, flat then linear decay over the last 20 %), batch {batch}, {steps}
  steps per dictionary, on activations scaled so their centred mean squared norm is 1 (scales
  folded back at export). Encoder initialised as the decoder transpose (SAEs), b_dec as the
  data mean. Losses: squared error summed over dimensions plus
  - JumpReLU SAE: λ·L0 with λ = {l0}, the L0 and the threshold trained through the
    straight-through pseudo-derivatives of Rajamanoharan et al. 2024 (rectangle kernel,
    bandwidth {bw} in scaled units), threshold initialised to 0.01;
  - TopK SAE: no penalty (k = 16 fixes the sparsity);
  - transcoders: λ·Σ f with λ = {l1} (an L1 penalty; decoder rows are unit norm).
  Training times: {train_times}.

## Evaluation on the held-out chapters

{n_eval_win} windows ({n_eval_tok} non-BOS positions). L0 = mean number of active features per
token; FVU = Σ‖x − x̂‖² / Σ‖x − x̄‖² over non-BOS positions (for transcoders x is the true MLP
output). Cross-entropy is the mean next-token loss over positions 0..126 of each window (nats).
"Spliced (non-BOS)" replaces the hook output with the reconstruction at every position but BOS,
which keeps its true activation; "spliced (all)" replaces it everywhere including BOS (what
SAELens' evaluation and the reference file do); "zero-ablated" sets it to 0 everywhere. Loss
recovered = (CE zero − CE spliced non-BOS) / (CE zero − CE clean).

{table}

## Example features

Six live features per dictionary, spread over the firing-density range (features firing on
between 0.1 % and 20 % of tokens, taken at evenly spaced density quantiles). Descriptions are
mechanical: the token most common at the maximum-activating positions (or the token before it).
Contexts are the highest activations over the training activations, one per window, with the
8 tokens before and 3 after; the activating token is in [brackets] and `\\n` is a verse break.
"Decoder direction through W_U" is the raw decoder row times the tied embedding
(W_dec[f]·W_Uᵀ with W_U = wte, no ln_final), top 8 tokens.

{features}
## Reference

`tests/data/features/demo_reference.json` is computed in float64 from the saved files (reloaded)
for the prompt "{prompt}" with BOS prepended: token ids, the clean forward's first 20 logits at the
last position, and for each dictionary the active features per position, x̂, ‖x − x̂‖² per
position, FVU over all positions including BOS, and the prompt's loss clean, spliced at every
position including BOS, and zero-ablated.
"""


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resources/demo")
    ap.add_argument("--out", default="resources/demo-features")
    ap.add_argument("--reference", default="tests/data/features/demo_reference.json")
    ap.add_argument("--windows", type=int, default=4000, help="training windows of 128 tokens")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--l0-coeff", type=float, default=2e-3)
    ap.add_argument("--l1-coeff", type=float, default=2e-2)
    ap.add_argument("--bandwidth", type=float, default=0.01)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--d-dict", type=int, default=512)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="", help="comma list of resid-jumprelu,resid-topk,"
                                               "transcoders,clt to train (the others are reused)")
    ap.add_argument("--clt-only", action="store_true",
                    help="train only the cross-layer transcoder (clt/), update its README "
                         "section and stop (no other evaluation, no reference file)")
    ap.add_argument("--clt-steps", type=int, default=1200)
    ap.add_argument("--clt-l1-coeff", type=float, default=0.15)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    t_start = time.time()

    def log(msg):
        print(msg, flush=True)

    # Tokenizer and corpus, as tools/train_demo_model.py does it.
    with open(os.path.join(args.model, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(args.model, "merges.txt"), encoding="utf-8") as f:
        merges = [tuple(l.rstrip("\n").split(" ")) for l in f.readlines()[1:]]
    _, byte_map = demo.bytes_to_unicode()
    enc = demo.GPT2Encoder(vocab, merges, byte_map)
    eot_id = vocab[demo.EOT]
    chapters = demo.load_kjv_chapters()
    docs = [[eot_id] + enc.encode(ch) for ch in chapters]  # held out: index 25 mod 50
    train_ids = [t for ci, doc in enumerate(docs) if ci % 50 != 25 for t in doc]
    val_ids = [t for ci, doc in enumerate(docs) if ci % 50 == 25 for t in doc]
    log("corpus: %d chapters, %d train tokens, %d held-out tokens (%.0fs)" % (
        len(chapters), len(train_ids), len(val_ids), time.time() - t_start))

    with open(os.path.join(args.model, "config.json")) as f:
        hf = json.load(f)
    cfg = {k: hf[k] for k in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head",
                              "layer_norm_epsilon")}
    model_path = os.path.join(args.model, "model.safetensors")
    model = demo.GPT2(cfg)
    model.load_state_dict(demo.read_safetensors(model_path), strict=True)
    model.eval()
    hooks = Hooks(model)
    n_layer, d_model = cfg["n_layer"], cfg["n_embd"]

    train_w = windows_from(torch.tensor(train_ids), eot_id, args.windows)
    val_w = windows_from(torch.tensor(val_ids), eot_id)
    resid = "blocks.0.hook_resid_post"
    if args.clt_only:
        names = ["blocks.%d.ln2.hook_normalized" % L for L in range(n_layer)] + [
            "blocks.%d.hook_mlp_out" % L for L in range(n_layer)]
        t = time.time()
        acts = collect(hooks, train_w, names)
        flat = {n: a[:, 1:].reshape(-1, d_model) for n, a in acts.items()}  # drop BOS
        log("activations: %d windows, %d positions (%.0fs)" % (
            train_w.shape[0], flat[names[0]].shape[0], time.time() - t))
        section = run_clt(hooks, flat, val_w, n_layer, args, log)
        path = os.path.join(args.out, "README.md")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(readme_with_clt(text, section))
        log("done in %.1f minutes" % ((time.time() - t_start) / 60))
        return
    names = [resid] + ["blocks.%d.ln2.hook_normalized" % L for L in range(n_layer)] + [
        "blocks.%d.hook_mlp_out" % L for L in range(n_layer)]
    t = time.time()
    acts = collect(hooks, train_w, names)
    acts = {n: a[:, 1:].contiguous() for n, a in acts.items()}  # drop BOS
    flat = {n: a.reshape(-1, d_model) for n, a in acts.items()}
    log("activations: %d windows, %d positions (%.0fs)" % (
        train_w.shape[0], flat[resid].shape[0], time.time() - t))

    only = set(filter(None, args.only.split(","))) or {"resid-jumprelu", "resid-topk",
                                                       "transcoders", "clt"}
    train_times = {}
    s_res = centred_scale(flat[resid])
    x_res = flat[resid] / s_res
    for key, kind, k in (("resid-jumprelu", "jumprelu", None), ("resid-topk", "topk", args.k)):
        if key not in only:
            continue
        log("training %s (scale %.3f)" % (key, s_res))
        d = Dictionary(d_model, d_model, args.d_dict, kind, True, k, gen)
        train_times[key] = train_dictionary(d, x_res, x_res, args, gen, log, key)
        w = d.export(s_res, s_res)
        tensor_names = ["W_enc", "b_enc", "W_dec", "b_dec"] + (
            ["threshold"] if kind == "jumprelu" else [])
        save_sae(os.path.join(args.out, key), sae_cfg(kind, d_model, args.d_dict, resid, k), w,
                 tensor_names)
    if "transcoders" in only:
        tdir = os.path.join(args.out, "transcoders")
        os.makedirs(tdir, exist_ok=True)
        tc = transcoder_config(n_layer)
        for L in range(n_layer):
            xi = flat["blocks.%d.ln2.hook_normalized" % L]
            xo = flat["blocks.%d.hook_mlp_out" % L]
            s_in, s_out = centred_scale(xi), centred_scale(xo)
            log("training transcoder %d (scales in %.3f out %.3f)" % (L, s_in, s_out))
            d = Dictionary(d_model, d_model, args.d_dict, "relu", False, None, gen)
            train_times["transcoder-%d" % L] = train_dictionary(d, xi / s_in, xo / s_out, args,
                                                                gen, log, "transcoder-%d" % L)
            w = d.export(s_in, s_out)
            demo.write_safetensors(os.path.join(tdir, tc["transcoders"][L]), [
                ("W_enc", w["W_enc"].t()), ("W_dec", w["W_dec"]), ("b_enc", w["b_enc"]),
                ("b_dec", w["b_dec"])])
        with open(os.path.join(tdir, "config.yaml"), "w") as f:
            f.write("# circuit-tracer transcoder set for AttnScope's demo model; written by "
                    "tools/train_demo_features.py.\n# Layer files are relative to this folder.\n")
            yaml.safe_dump(tc, f, sort_keys=False)

    # Last, with its own generator, so the dictionaries above are trained as without it.
    clt_md = run_clt(hooks, flat, val_w, n_layer, args, log) if "clt" in only else None

    # Everything below reads the saved files back.
    saved = load_saved(args.out, torch.float32)
    t = time.time()
    rows = evaluate(hooks, saved, val_w)
    log(metrics_table(rows))
    log("evaluation %.0fs" % (time.time() - t))

    W_U = model.wte.weight.detach()
    feats_md = []
    for key, (dic, h_in, _) in saved.items():
        reports, dead, _ = feature_report(enc, dic, acts[h_in], train_w, W_U)
        feats_md.append(features_md(key, reports, dead))
        rows[key]["dead_features"] = dead
    log("\n".join(feats_md))

    saved64 = load_saved(args.out, torch.float64)
    ref = reference(model_path, cfg, saved64, enc, eot_id)
    os.makedirs(os.path.dirname(args.reference), exist_ok=True)
    with open(args.reference, "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    for key, r in ref["dictionaries"].items():
        log("reference %s: fvu %.4f loss clean %.4f spliced %.4f zero %.4f" % (
            key, r["fvu"], r["loss_clean"], r["loss_spliced"], r["loss_zero_ablated"]))

    files = []
    for root, _, fs in os.walk(args.out):
        files += [os.path.join(root, x) for x in fs if x != "README.md"]
    size = sum(os.path.getsize(p) for p in files)
    times = ", ".join("%s %.1f min" % (k, v / 60) for k, v in train_times.items()) or \
        "(none trained in this run)"
    readme = README.format(
        sizes="%d files, %.2f MB" % (len(files), size / 1e6),
        cmd="nice -n 10 /usr/bin/python3 " + " ".join(sys.argv), threads=args.threads,
        torch=torch.__version__, seed=args.seed, total_min=(time.time() - t_start) / 60,
        eot=eot_id, n_win=train_w.shape[0], n_tok=flat[resid].shape[0], lr=args.lr,
        batch=args.batch, steps=args.steps, l0=args.l0_coeff, bw=args.bandwidth, l1=args.l1_coeff,
        train_times=times, n_eval_win=val_w.shape[0], n_eval_tok=val_w.shape[0] * (CTX - 1),
        table=metrics_table(rows), features="\n".join(feats_md), prompt=PROMPT)
    readme_path = os.path.join(args.out, "README.md")
    if clt_md is None and os.path.exists(readme_path):  # keep the existing CLT entry
        with open(readme_path) as f:
            old = f.read()
        if CLT_BEGIN in old:
            clt_md = old[old.index(CLT_BEGIN):old.index(CLT_END) + len(CLT_END)] + "\n"
    if clt_md is not None:
        readme = readme_with_clt(readme, clt_md)
    with open(readme_path, "w") as f:
        f.write(readme)
    log("done in %.1f minutes" % ((time.time() - t_start) / 60))


if __name__ == "__main__":
    main()
