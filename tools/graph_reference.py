#!/usr/bin/python3
"""Float64 reference attribution graph (circuit-tracer) on AttnScope's demo model and transcoders.

An independent PyTorch/numpy implementation of the attribution graph of Ameisen et al. (2025),
"Circuit Tracing: Revealing Computational Graphs in Language Models", following the open
`circuit-tracer` library (safety-research / decoderesearch circuit-tracer; read from
circuit_tracer/attribution/attribute_transformerlens.py, attribution/context_transformerlens.py,
replacement_model/replacement_model_transformerlens.py, utils/salient_logits.py, graph.py,
frontend/graph_models.py). circuit-tracer itself is not imported. The C++ implementation of
attribution graphs in AttnScope is tested against the files written here.

Run from the repository root (a few seconds):

    nice -n 10 /usr/bin/python3 tools/graph_reference.py [--prompt TEXT] [--out tests/data/graphs]
    nice -n 10 /usr/bin/python3 tools/graph_reference.py --set clt

--set transcoders (default) uses the per-layer set resources/demo-features/transcoders and writes
demo_graph_*; --set clt uses the cross-layer transcoder resources/demo-features/clt and writes
demo_clt_graph_* (see "Cross-layer transcoder" below); --transcoders PATH reads another
circuit-tracer folder of either kind (config.yaml's model_kind decides) under --set's file names.

Debian packages: python3-torch, python3-numpy, python3-yaml, python3-regex (the last one because
the tokenizer in tools/train_demo_model.py, imported here, uses it). Model code, safetensors reader
and tokenizer are imported from tools/train_demo_model.py; the model is loaded as
tools/train_demo_features.py loads it (then cast to float64).

Default prompt "In the beginning God created the" (BOS + 6 tokens, 530 active features, 561
nodes). The longer "In the beginning God created the heaven" has 632 features and a 666 x 666
adjacency (1.77 MB as float32), over the 1.5 MB budget of the two files.

Checks (assertions; the script fails if any does not hold): the float64 forward equals the demo
model module's logits; the frozen replacement model (transcoders + error nodes) reproduces the
clean logits and ln_2 outputs to 1e-10 and is affine in the feature activations (logits at 2a =
2 * logits at a - logits at 0); the adjacency from circuit-tracer's gradient injection (autograd,
route 1) equals the one from knocking out each node in a separate numpy forward of the frozen
replacement model (route 2) and the explicit backward recursion of attribution_direct_path
(route 3, the algorithm the C++ implementation follows); every target value = sum of its incoming edges + its constant; the
pruning masks are the same when computed from the float32-rounded adjacency; an intervention that
sets the chosen features to their own values reproduces the clean logits. For a cross-layer
transcoder also: ablating the chosen features plus the most influential layer-0 one with
everything else frozen (constrained_layers = every layer) changes every target by minus the sum of
their edges.

Writes into --out:
  demo_graph_reference.json   nodes, logits, completeness constants, influence, pruning masks,
                              replacement/completeness scores, intervention results, conventions
  demo_graph_adjacency.npy    adjacency, little-endian float32, C order [n_nodes, n_nodes],
                              row = target node, column = source node

Conventions (also written into the JSON as "conventions")
---------------------------------------------------------
Tokens: BOS (<|endoftext|>, id 4095) + GPT-2 BPE of the prompt; n_pos = len(tokens).
Model: GPT-2 (ln_1 -> attention -> +, ln_2 -> MLP -> +, ln_f, tied unembedding W_U = wte^T, no
  unembedding bias). LayerNorm(x) = (x - mean(x)) / sigma * g + b, sigma = sqrt(var_biased(x) + eps).
Transcoder (per layer L): pre = W_enc @ ln2_out + b_enc (W_enc [512, 128]), act = ReLU(pre),
  reconstruction = act @ W_dec + b_dec; input = ln_2 output (blocks.L.ln2.hook_normalized,
  including g and b), output = MLP output (blocks.L.hook_mlp_out). No skip connection.
Clean run: the real model in float64. Frozen from it: every attention pattern, every LayerNorm
  sigma (ln_1, ln_2, ln_f), per (layer, position).
BOS (position 0): feature activations are zeroed there (no feature nodes at position 0); the error
  vectors at position 0 are zero (error nodes exist, with all edges 0). The whole MLP output at
  position 0 is therefore a constant (it enters the bias terms). The token node at position 0 is a
  normal node with vector wte[BOS].
Nodes, in adjacency order: [active features sorted by (layer, pos, feature id)] then
  [error(L, p) for L in layers for p in positions] then [token(p) for p] then [logit(k) for the
  k selected logits, in descending probability]. n_nodes = n_feat + (n_layers + 1) * n_pos + n_logits.
Node ids (circuit-tracer frontend): feature "L_F_P", error "0_L_P", token "E_TOKENID_P",
  logit "(n_layers+1)_TOKENID_(n_pos-1)".
Logit selection (compute_salient_logits): probs = softmax(logits at the last position); take the
  10 most probable; keep the first min(10, searchsorted_left(cumsum(p), 0.95) + 1).
Source vectors (what a source node writes to the residual stream):
  feature (L, p, f): act * W_dec[f] into the MLP output of layer L at position p;
  error (L, p): mlp_out_real[L, p] - (act[L, p] @ W_dec + b_dec) (0 at p = 0), same place;
  token p: wte[token_p] into the embedding at position p (positional embeddings are not a node).
Target read-out vectors (injected gradient):
  feature target (L, p, f): W_enc[f] at the ln_2 output of layer L, position p; target value =
    pre-activation = W_enc[f] . ln2_out[L, p] + b_enc[f] (= the activation, as it is active);
  logit target (token t): u_t = W_U[:, t] - mean_v W_U[:, v] at the ln_f output at the last
    position; target value = u_t . lnf_out[last] = logit_t - mean_v logit_v.
Edge A[target, source] = (source vector) . d(target value)/d(place the source writes to), where the
  derivative is taken through the model with attention patterns and LayerNorm sigmas held at their
  clean values and no gradient through any MLP (MLP outputs are stop-gradient; the transcoder has
  no skip path). Rows of error, token nodes are zero; so are columns of logit nodes.
Completeness: target value = sum_s A[target, s] + constant[target], the constant being the value
  of the same target in the frozen (affine) replacement model with every node's vector set to 0
  (b_enc, the LayerNorm biases and what they pass on, positional embeddings, attention biases,
  b_dec of lower layers, the whole MLP output at BOS; for logits: u_t . b_f and the rest).
Pruning (graph.py): normalized = |A| / max(row sum of |A|, 1e-10); logit_weights = probabilities on
  the logit nodes, 0 elsewhere; influence = sum_{k>=1} w N^k; node_mask = influence >= threshold
  found by find_threshold(influence, 0.8); tokens and logits always kept; edge scores on the
  node-pruned matrix, threshold find_threshold(scores, 0.98); then the iterative outgoing/incoming
  clean-up of prune_graph. Scores: compute_graph_scores on the unpruned graph.
Intervention (ReplacementModel.feature_intervention defaults: freeze_attention=True,
  constrained_layers=None): attention patterns frozen to the clean run, LayerNorm sigmas live,
  real MLPs live (errors therefore not held constant), and at each intervened layer the MLP output
  gets sum over intervened features of (value - current activation) * W_dec[f], the current
  activation being ReLU(encoder) on the current ln_2 output (zeroed at BOS).
All computation in float64; the .npy holds the float64 adjacency rounded to float32.

Cross-layer transcoder (--set clt; the JSON's conventions say the same)
-----------------------------------------------------------------------
Folder as circuit-tracer's load_clt reads it: W_enc_i.safetensors {W_enc_i [d_t, d_model], b_enc_i
  [d_t], b_dec_i [d_model]}, W_dec_i.safetensors {W_dec_i [d_t, n_layers - i, d_model]}. Layer i's
  features: pre = W_enc_i @ ln2_out[i] + b_enc_i, act = ReLU(pre) (zero at BOS); they write into
  the MLP output of every layer j >= i: recon[j] = sum_{i<=j} act_i @ W_dec_i[:, j-i, :] + b_dec_j
  (b_dec_j is layer j's output bias).
Everything else as above, with: error(j, p) = mlp_out_real[j, p] - recon[j, p] (0 at p = 0); a
  feature source (L, p, f) writes act * W_dec_L[f, j-L] into the MLP output of layer j at p for
  every j >= L, and its edge into a target is the sum over those j that lie below the target
  (j < target layer for a feature target; every j for a logit) of that vector . the gradient at
  the MLP output of layer j; the intervention adds (value - current act) * W_dec_L[f, j-L] to the
  MLP output of every layer j >= L (circuit-tracer's layer_deltas). Node order, node ids, logit
  selection, completeness constants (now b_dec_j of every layer below the target), pruning and
  scores are unchanged.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_demo_model as demo  # noqa: E402

# The brief's prompt "In the beginning God created the heaven" gives 632 active features and a
# 666 x 666 float32 adjacency of 1.77 MB, over the 1.5 MB budget for the two files; this prompt
# (one token shorter, 7 positions with BOS) stays under it.
DEFAULT_PROMPT = "In the beginning God created the"
MAX_N_LOGITS = 10
DESIRED_LOGIT_PROB = 0.95
NODE_THRESHOLD = 0.8
EDGE_THRESHOLD = 0.98
N_INTERVENE = 3
SIZE_LIMIT = 1.5e6

CONVENTIONS = {
    "dtype": "all quantities computed in float64; adjacency .npy stores them rounded to float32",
    "tokens": "BOS <|endoftext|> (4095) + GPT-2 BPE of the prompt",
    "node_order": "active features sorted by (layer, pos, feature id); then error nodes "
                  "error(L, p) with index n_feat + L*n_pos + p; then token nodes token(p) with index "
                  "n_feat + n_layers*n_pos + p; then logit nodes in descending probability",
    "adjacency_orientation": "adjacency[target, source] (row = target, column = source); "
                             ".npy little-endian float32 C order [n_nodes, n_nodes]",
    "edge": "A[t, s] = (source vector) . d(target value)/d(residual location the source writes "
            "to), attention patterns and all LayerNorm sigmas frozen at the clean run, "
            "stop-gradient through every MLP (no transcoder skip path)",
    "source_vectors": {
        "feature": "activation * W_dec[f], added to the MLP output of its layer at its position",
        "error": "mlp_out_real[L,p] - (act[L,p] @ W_dec + b_dec); zero at position 0 (BOS)",
        "token": "wte[token id] at the embedding (positional embedding is not a node)",
    },
    "target_values": {
        "feature": "pre-activation W_enc[f] . ln2_out[L,p] + b_enc[f] (equals activation); "
                   "injected vector W_enc[f] at ln_2 output (L, p)",
        "logit": "u_t . lnf_out[last] = logit_t - mean_v logit_v, u_t = W_U[:,t] - mean_v W_U[:,v] "
                 "(W_U = wte^T); injected vector u_t at ln_f output, last position",
    },
    "bos": "position 0: feature activations zeroed (no feature nodes), error vectors zero (error "
           "nodes kept with zero edges), whole MLP output there is a constant; token node 0 normal",
    "completeness": "value[t] = sum_s A[t, s] + constant[t]; constant = value in the frozen affine "
                    "replacement model with every node vector set to zero",
    "transcoder": "pre = W_enc @ x + b_enc with W_enc [d_transcoder, d_model], x = ln_2 output "
                  "(with g, b); ReLU; recon = act @ W_dec + b_dec; no b_dec subtraction, no skip",
    "logit_selection": "top 10 by softmax prob at last position, keep first "
                       "min(10, searchsorted_left(cumsum(p), 0.95) + 1)",
    "pruning": "circuit-tracer graph.prune_graph, node_threshold 0.8, edge_threshold 0.98, "
               "normalize |A| by row sums clamped at 1e-10, logit weights = probabilities",
    "scores": "circuit-tracer graph.compute_graph_scores on the unpruned adjacency",
    "node_ids": "feature L_F_P, error 0_L_P, token E_TOKENID_P, logit (n_layers+1)_TOKENID_(n_pos-1) "
                "(circuit-tracer frontend; feature and error ids can coincide for layer 0)",
    "intervention": "feature_intervention defaults (freeze_attention=True, constrained_layers=None): "
                    "attention patterns frozen, LayerNorm sigmas and real MLPs live, MLP output of "
                    "layer L += sum (value - current act) * W_dec[f]; current act from the current "
                    "ln_2 output, zero at BOS",
    "influence": "node influence = sum_{k>=1} w N^k (compute_node_influence); cumulative = "
                 "prune_graph's cumulative_scores",
}

# --set: the bundled folder (relative to --root) and the output files' prefix
SETS = {"transcoders": ("resources/demo-features/transcoders", "demo"),
        "clt": ("resources/demo-features/clt", "demo_clt")}

# The same conventions for a cross-layer transcoder (--set clt): only what differs is replaced.
CLT_CONVENTIONS = dict(CONVENTIONS, **{
    "edge": "A[t, s] = sum over the places the source writes to of (source vector there) . "
            "d(target value)/d(that place); a cross-layer feature of layer L writes into the MLP "
            "output of every layer j >= L, and only the layers j below the target contribute "
            "(j < target layer for a feature target, every j for a logit); attention patterns and "
            "all LayerNorm sigmas frozen at the clean run, stop-gradient through every MLP (no "
            "skip path)",
    "source_vectors": {
        "feature": "activation * W_dec_L[f, j - L] added to the MLP output of every layer j >= L "
                   "at its position (L = the feature's layer)",
        "error": "mlp_out_real[j,p] - (sum_{i<=j} act[i,p] @ W_dec_i[:, j-i] + b_dec_j); zero at "
                 "position 0 (BOS)",
        "token": "wte[token id] at the embedding (positional embedding is not a node)",
    },
    "transcoder": "cross-layer (circuit-tracer load_clt): pre_i = W_enc_i @ x_i + b_enc_i with "
                  "W_enc_i [d_transcoder, d_model], x_i = ln_2 output of layer i (with g, b); "
                  "ReLU; recon[j] = sum_{i<=j} act_i @ W_dec_i[:, j-i, :] + b_dec_j (W_dec_i "
                  "[d_transcoder, n_layers - i, d_model], b_dec_j = layer j's output bias); no "
                  "b_dec subtraction, no skip",
    "completeness": "value[t] = sum_s A[t, s] + constant[t]; constant = value in the frozen affine "
                    "replacement model with every node vector set to zero (b_dec_j of the layers "
                    "below the target included)",
    "intervention": "feature_intervention defaults (freeze_attention=True, constrained_layers=None): "
                    "attention patterns frozen, LayerNorm sigmas and real MLPs live, MLP output of "
                    "layer j += sum over intervened features (L, f) with L <= j of (value - current "
                    "act) * W_dec_L[f, j - L]; current act from layer L's current ln_2 output, zero "
                    "at BOS",
})


# ----------------------------------------------------------------------------- loading

def load(root, tc_dir):
    """Model, its config, the transcoders as a list per layer of {W_enc [d_t, d], b_enc, b_dec,
    W_dec [d_t, d] (what layer L's features write into layer L), W_dec_later [W_dec_i[:, k]
    for k >= 1] (what a cross-layer transcoder's layer-L features write into layer L + k; empty
    for a per-layer set)}, the tokenizer, BOS id and config.yaml."""
    model_dir = os.path.join(root, "resources", "demo")
    with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(model_dir, "merges.txt"), encoding="utf-8") as f:
        merges = [tuple(l.rstrip("\n").split(" ")) for l in f.readlines()[1:]]
    _, byte_map = demo.bytes_to_unicode()
    enc = demo.GPT2Encoder(vocab, merges, byte_map)
    eot_id = vocab[demo.EOT]
    with open(os.path.join(model_dir, "config.json")) as f:
        hf = json.load(f)
    cfg = {k: hf[k] for k in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head",
                              "layer_norm_epsilon")}
    model = demo.GPT2(cfg)
    model.load_state_dict(demo.read_safetensors(os.path.join(model_dir, "model.safetensors")),
                          strict=True)
    model = model.double().eval()
    with open(os.path.join(tc_dir, "config.yaml")) as f:
        tcfg = yaml.safe_load(f)
    assert tcfg["feature_input_hook"] == "ln2.hook_normalized", tcfg
    assert tcfg["feature_output_hook"] == "hook_mlp_out", tcfg
    if tcfg.get("model_kind") == "cross_layer_transcoder":
        return model, cfg, load_clt(tc_dir, cfg["n_layer"]), enc, eot_id, tcfg
    tcs = []
    for path in tcfg["transcoders"]:
        t = {k: v.double() for k, v in demo.read_safetensors(os.path.join(tc_dir, path)).items()}
        assert "W_skip" not in t
        t["W_dec_later"] = []
        tcs.append(t)
    return model, cfg, tcs, enc, eot_id, tcfg


def load_clt(tc_dir, n_layers):
    """circuit-tracer's load_clt layout: W_enc_i.safetensors {W_enc_i [d_t, d_model], b_enc_i
    [d_t], b_dec_i [d_model] = layer i's output bias}, W_dec_i.safetensors {W_dec_i [d_t,
    n_layers - i, d_model]}, slice k = what layer i's features write into layer i + k."""
    tcs = []
    for i in range(n_layers):
        t = {}
        for kind in ("enc", "dec"):
            path = os.path.join(tc_dir, "W_%s_%d.safetensors" % (kind, i))
            t.update({k: v.double() for k, v in demo.read_safetensors(path).items()})
        assert sorted(t) == ["W_dec_%d" % i, "W_enc_%d" % i, "b_dec_%d" % i, "b_enc_%d" % i], \
            sorted(t)  # ReLU only: no threshold_i, no skip
        dec = t["W_dec_%d" % i]
        d_t, d_model = t["W_enc_%d" % i].shape
        assert dec.shape == (d_t, n_layers - i, d_model), dec.shape
        tcs.append({"W_enc": t["W_enc_%d" % i], "b_enc": t["b_enc_%d" % i],
                    "b_dec": t["b_dec_%d" % i], "W_dec": dec[:, 0].contiguous(),
                    "W_dec_later": [dec[:, k].contiguous() for k in range(1, n_layers - i)]})
    assert not os.path.exists(os.path.join(tc_dir, "W_enc_%d.safetensors" % n_layers))
    return tcs


def decoded(tcs, acts):
    """What the features write into each layer's MLP output (no b_dec): layer L's own
    acts[L] @ W_dec, then the writes of lower layers' cross-layer decoders."""
    out = [acts[L] @ tcs[L]["W_dec"] for L in range(len(tcs))]
    for i, t in enumerate(tcs):
        for k, Wd in enumerate(t["W_dec_later"], start=1):
            out[i + k] = out[i + k] + acts[i] @ Wd
    return out


def weights(model, cfg):
    """Plain float64 tensors of the GPT-2 parameters (HF Conv1D: y = x @ W + b)."""
    d = cfg["n_embd"]
    W = {"wte": model.wte.weight.detach(), "wpe": model.wpe.weight.detach(),
         "gf": model.ln_f.weight.detach(), "bf": model.ln_f.bias.detach(), "layers": []}
    for blk in model.h:
        Wqkv, bqkv = blk.attn.c_attn.weight.detach(), blk.attn.c_attn.bias.detach()
        W["layers"].append({
            "g1": blk.ln_1.weight.detach(), "b1": blk.ln_1.bias.detach(),
            "Wq": Wqkv[:, :d], "Wk": Wqkv[:, d:2 * d], "Wv": Wqkv[:, 2 * d:],
            "bq": bqkv[:d], "bk": bqkv[d:2 * d], "bv": bqkv[2 * d:],
            "Wo": blk.attn.c_proj.weight.detach(), "bo": blk.attn.c_proj.bias.detach(),
            "g2": blk.ln_2.weight.detach(), "b2": blk.ln_2.bias.detach(),
            "Wfc": blk.mlp.c_fc.weight.detach(), "bfc": blk.mlp.c_fc.bias.detach(),
            "Wproj": blk.mlp.c_proj.weight.detach(), "bproj": blk.mlp.c_proj.bias.detach()})
    W["eps"] = cfg["layer_norm_epsilon"]
    W["H"] = cfg["n_head"]
    return W


# ----------------------------------------------------------------------------- forward passes

def sigma_of(x, eps):
    xc = x - x.mean(-1, keepdim=True)
    return torch.sqrt(xc.pow(2).mean(-1, keepdim=True) + eps)


def layer_norm(x, g, b, sigma):
    return (x - x.mean(-1, keepdim=True)) / sigma * g + b


def attention(h, lw, H, pattern=None):
    """h [..., T, d] -> (attention output, pattern [..., H, T, T]). With `pattern` given it is
    used instead of the one from q, k (frozen)."""
    T, d = h.shape[-2], h.shape[-1]
    dh = d // H

    def heads(t):
        return t.view(*t.shape[:-1], H, dh).transpose(-2, -3)  # [..., H, T, dh]
    v = heads(h @ lw["Wv"] + lw["bv"])
    if pattern is None:
        q, k = heads(h @ lw["Wq"] + lw["bq"]), heads(h @ lw["Wk"] + lw["bk"])
        s = q @ k.transpose(-1, -2) / math.sqrt(dh)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        pattern = s.masked_fill(~mask, float("-inf")).softmax(-1)
    z = (pattern @ v).transpose(-2, -3).reshape(*h.shape[:-1], d)
    return z @ lw["Wo"] + lw["bo"], pattern


def mlp_real(h2, lw):
    return demo.gelu_new(h2 @ lw["Wfc"] + lw["bfc"]) @ lw["Wproj"] + lw["bproj"]


def encode(tc, x):
    return x @ tc["W_enc"].t() + tc["b_enc"]


@torch.no_grad()
def clean_forward(W, ids):
    """Real model, recording what the attribution freezes and what the transcoders read."""
    T = len(ids)
    x = W["wte"][ids] + W["wpe"][:T]
    rec = {"s1": [], "s2": [], "pattern": [], "mlp_in": [], "mlp_out": [], "resid_mid": []}
    for lw in W["layers"]:
        s1 = sigma_of(x, W["eps"])
        a, pat = attention(layer_norm(x, lw["g1"], lw["b1"], s1), lw, W["H"])
        x = x + a
        s2 = sigma_of(x, W["eps"])
        h2 = layer_norm(x, lw["g2"], lw["b2"], s2)
        m = mlp_real(h2, lw)
        rec["s1"].append(s1)
        rec["s2"].append(s2)
        rec["pattern"].append(pat)
        rec["resid_mid"].append(x)
        rec["mlp_in"].append(h2)
        rec["mlp_out"].append(m)
        x = x + m
    rec["sf"] = sigma_of(x, W["eps"])
    rec["lnf_out"] = layer_norm(x, W["gf"], W["bf"], rec["sf"])
    rec["logits"] = rec["lnf_out"] @ W["wte"].t()
    return rec


def frozen_replacement_np(Wn, recn, emb, mlp_outs):
    """Second route, numpy: the frozen replacement model as an affine map.

    emb [B, T, d] token-node embeddings, mlp_outs[L] [B, T, d] the MLP outputs (sum of feature
    vectors, error vector and constants). Attention patterns and sigmas from the clean run.
    Returns (ln2 outputs per layer [B, T, d], ln_f output [B, T, d])."""
    x = emb + Wn["wpe"][:emb.shape[1]]
    ln2 = []
    H = Wn["H"]
    for L, lw in enumerate(Wn["layers"]):
        h = (x - x.mean(-1, keepdims=True)) / recn["s1"][L] * lw["g1"] + lw["b1"]
        v = h @ lw["Wv"] + lw["bv"]                                   # [B, T, d]
        B, T, d = v.shape
        v = v.reshape(B, T, H, d // H)
        z = np.einsum("hqk,bkhe->bqhe", recn["pattern"][L], v).reshape(B, T, d)
        x = x + z @ lw["Wo"] + lw["bo"]
        ln2.append((x - x.mean(-1, keepdims=True)) / recn["s2"][L] * lw["g2"] + lw["b2"])
        x = x + mlp_outs[L]
    lnf = (x - x.mean(-1, keepdims=True)) / recn["sf"] * Wn["gf"] + Wn["bf"]
    return ln2, lnf


# ----------------------------------------------------------------------------- attribution

def salient_logits(logits_last, W_U):
    """circuit-tracer compute_salient_logits; W_U [d_model, d_vocab]."""
    probs = torch.softmax(logits_last, -1)
    top_p, top_idx = torch.topk(probs, MAX_N_LOGITS)
    cutoff = int(torch.searchsorted(torch.cumsum(top_p, 0), DESIRED_LOGIT_PROB)) + 1
    top_p, top_idx = top_p[:cutoff], top_idx[:cutoff]
    demeaned = W_U[:, top_idx] - W_U.mean(dim=-1, keepdim=True)
    return top_idx, top_p, demeaned.t()


def attribution_autograd(W, ids, rec, tcs, feats, acts_dense, err, logit_vecs):
    """Route 1, as circuit-tracer does it: a forward of the real model with stop-gradients on
    attention patterns, LayerNorm sigmas and MLP outputs (output = skip + (mlp - skip).detach(),
    skip = input * 0), one batch row per target; the target's read-out vector replaces the
    gradient at the ln_2 output (features) or at the ln_f output (logits); the backward starts
    from the ln_f output with a zero gradient. Rows are gradients at the MLP outputs / embedding
    contracted with the source vectors."""
    T = len(ids)
    n_layers = len(W["layers"])
    n_feat = len(feats)
    n_logits = logit_vecs.shape[0]
    B = n_feat + n_logits
    t_layer = [f[0] for f in feats] + [n_layers] * n_logits
    t_pos = [f[1] for f in feats] + [T - 1] * n_logits
    inject = torch.cat([torch.stack([tcs[L]["W_enc"][fi] for (L, _, fi) in feats])
                        if n_feat else torch.zeros(0, W["wte"].shape[1], dtype=torch.float64),
                        logit_vecs])
    t_layer, t_pos = torch.tensor(t_layer), torch.tensor(t_pos)
    bidx = torch.arange(B)

    def injector(layer):
        m = t_layer == layer

        def fn(g):
            g = g.clone()
            g[bidx[m], t_pos[m]] = inject[m]
            return g
        return fn

    embed = W["wte"][ids].expand(B, T, -1).clone().requires_grad_(True)  # hook_embed
    x = embed + W["wpe"][:T]
    mlp_nodes = []
    for L, lw in enumerate(W["layers"]):
        s1 = sigma_of(x, W["eps"]).detach()
        a, _ = attention(layer_norm(x, lw["g1"], lw["b1"], s1), lw, W["H"],
                         pattern=rec["pattern"][L].detach())
        x = x + a
        s2 = sigma_of(x, W["eps"]).detach()
        h2 = layer_norm(x, lw["g2"], lw["b2"], s2)
        h2.register_hook(injector(L))
        skip = h2 * 0
        m = skip + (mlp_real(h2, lw) - skip).detach()
        m.retain_grad()  # hook_mlp_out.hook_out_grad
        mlp_nodes.append(m)
        x = x + m
    sf = sigma_of(x, W["eps"]).detach()
    lnf = layer_norm(x, W["gf"], W["bf"], sf)
    lnf.register_hook(injector(n_layers))
    assert torch.allclose(lnf[0], rec["lnf_out"], rtol=0, atol=1e-12)
    lnf.backward(gradient=torch.zeros_like(lnf))

    rows = torch.zeros(B, n_feat + (n_layers + 1) * T, dtype=torch.float64)
    for j, (L, p, fi) in enumerate(feats):
        rows[:, j] = mlp_nodes[L].grad[:, p] @ (acts_dense[L, p, fi] * tcs[L]["W_dec"][fi])
        for k, Wd in enumerate(tcs[L]["W_dec_later"], start=1):  # cross-layer writes
            rows[:, j] += mlp_nodes[L + k].grad[:, p] @ (acts_dense[L, p, fi] * Wd[fi])
    for L in range(n_layers):
        for p in range(T):
            rows[:, n_feat + L * T + p] = mlp_nodes[L].grad[:, p] @ err[L, p]
    for p in range(T):
        rows[:, n_feat + n_layers * T + p] = embed.grad[:, p] @ W["wte"][ids[p]]
    return rows


def attribution_knockout(W, rec, tcs, ids, feats, acts_dense, err, mlp_const, logit_vecs):
    """Route 2, numpy, forward only: the frozen replacement model is affine in the node vectors,
    so column s of the adjacency = values(all nodes) - values(all nodes but s). Also returns the
    node values and the constants (values with every node vector set to zero)."""
    np64 = lambda t: t.detach().numpy().astype(np.float64)  # noqa: E731
    Wn = {"wpe": np64(W["wpe"]), "gf": np64(W["gf"]), "bf": np64(W["bf"]), "H": W["H"],
          "layers": [{k: np64(v) for k, v in lw.items()} for lw in W["layers"]]}
    recn = {"s1": [np64(s) for s in rec["s1"]], "s2": [np64(s) for s in rec["s2"]],
            "sf": np64(rec["sf"]), "pattern": [np64(p) for p in rec["pattern"]]}
    T = len(ids)
    n_layers = len(W["layers"])
    n_feat = len(feats)
    n_src = n_feat + (n_layers + 1) * T
    B = n_src + 2  # row 0: all nodes; rows 1..n_src: knock out source s; last: no nodes
    wte = np64(W["wte"])
    tok = wte[ids]
    emb = np.broadcast_to(tok, (B, T, tok.shape[1])).copy()
    emb[-1] = 0.0
    errn = np64(err)
    dec = [np64(acts_dense[L]) @ np64(tcs[L]["W_dec"]) for L in range(n_layers)]
    for i in range(n_layers):
        for k, Wd in enumerate(tcs[i]["W_dec_later"], start=1):
            dec[i + k] = dec[i + k] + np64(acts_dense[i]) @ np64(Wd)
    mlp_outs = []
    for L in range(n_layers):
        mo = np.broadcast_to(np64(mlp_const[L]) + dec[L] + errn[L], (B, T, tok.shape[1])).copy()
        mo[-1] = np64(mlp_const[L])
        mlp_outs.append(mo)
    for j, (L, p, fi) in enumerate(feats):
        mlp_outs[L][1 + j, p] -= float(acts_dense[L, p, fi]) * np64(tcs[L]["W_dec"][fi])
        for k, Wd in enumerate(tcs[L]["W_dec_later"], start=1):
            mlp_outs[L + k][1 + j, p] -= float(acts_dense[L, p, fi]) * np64(Wd[fi])
    for L in range(n_layers):
        for p in range(T):
            mlp_outs[L][1 + n_feat + L * T + p, p] -= errn[L, p]
    for p in range(T):
        emb[1 + n_feat + n_layers * T + p, p] -= tok[p]
    ln2, lnf = frozen_replacement_np(Wn, recn, emb, mlp_outs)
    vals = np.zeros((B, n_feat + logit_vecs.shape[0]))
    for j, (L, p, fi) in enumerate(feats):
        vals[:, j] = ln2[L][:, p] @ np64(tcs[L]["W_enc"][fi]) + float(tcs[L]["b_enc"][fi])
    vals[:, n_feat:] = lnf[:, T - 1] @ np64(logit_vecs).T
    cols = vals[0][:, None] - vals[1:1 + n_src].T   # [n_targets, n_src]
    return cols, vals[0], vals[-1], ln2, lnf


def attribution_direct_path(W, rec, tcs, ids, feats, acts_dense, err, logit_vecs):
    """Route 3, numpy: the explicit backward recursion that the C++ implementation follows.

    C(v) = v - mean(v). For each target a residual-stream gradient G [T, d] is carried downwards:
      logit target u:          G = 0 except G[T-1] = C(g_f * u) / sf[T-1], starting above layer
                               n_layers-1;
      feature target (L,p,f):  G = 0 except G[p] = C(g2_L * W_enc[f]) / s2[L,p] at resid_mid of L,
                               then the attention of layer L, then the layers below.
    Layer L (from the top): edges from MLP-L sources read G (the gradient at resid_post[L]); the
    MLP is stop-gradient, so G passes unchanged to resid_mid[L]; the attention then gives
      G'[k] = G[k] + C(g1_L * sum_h W_V^h (sum_q A[L,h,q,k] W_O^h G[q])) / s1[L,k]
    (W_V^h = c_attn V columns of head h [d, dh], W_O^h = c_proj rows of head h [dh, d], so
    W_O^h G[q] is a dh-vector and W_V^h maps it back to d).
    Token edges read G after layer 0's attention (the gradient at the embedding)."""
    np64 = lambda t: t.detach().numpy().astype(np.float64)  # noqa: E731
    T = len(ids)
    n_layers = len(W["layers"])
    H = W["H"]
    n_feat = len(feats)
    targets = [(L, p, np64(tcs[L]["W_enc"][f])) for (L, p, f) in feats]
    targets += [(n_layers, T - 1, u) for u in np64(logit_vecs)]
    lws = [{k: np64(v) for k, v in lw.items()} for lw in W["layers"]]
    s1 = [np64(s)[:, 0] for s in rec["s1"]]
    s2 = [np64(s)[:, 0] for s in rec["s2"]]
    sf = np64(rec["sf"])[:, 0]
    pats = [np64(p) for p in rec["pattern"]]
    C = lambda v: v - v.mean(-1, keepdims=True)  # noqa: E731
    d = lws[0]["g1"].shape[0]
    dh = d // H
    wte = np64(W["wte"])
    rows = np.zeros((len(targets), n_feat + (n_layers + 1) * T))
    for r, (Lt, pt, vec) in enumerate(targets):
        G = np.zeros((T, d))
        if Lt == n_layers:
            G[pt] = C(np64(W["gf"]) * vec) / sf[pt]
        else:
            G[pt] = C(lws[Lt]["g2"] * vec) / s2[Lt][pt]
        grads_post = {}
        for L in range(min(Lt, n_layers - 1), -1, -1):
            lw = lws[L]
            if L < Lt:
                grads_post[L] = G.copy()  # gradient at resid_post[L] = at MLP-L output
            back = np.zeros((T, d))
            for h in range(H):
                sl = slice(h * dh, (h + 1) * dh)
                gz = G @ lw["Wo"][sl].T                   # [T(q), dh]
                gv = pats[L][h].T @ gz                     # [T(k), dh]  sum_q A[h,q,k] gz[q]
                back += gv @ lw["Wv"][:, sl].T             # [T(k), d]
            G = G + C(lw["g1"] * back) / s1[L][:, None]
        for j, (L, p, f) in enumerate(feats):
            if L in grads_post:
                rows[r, j] = grads_post[L][p] @ (float(acts_dense[L, p, f]) *
                                                 np64(tcs[L]["W_dec"][f]))
                # a cross-layer feature's writes into layers L + k below the target
                for k, Wd in enumerate(tcs[L]["W_dec_later"], start=1):
                    if L + k in grads_post:
                        rows[r, j] += grads_post[L + k][p] @ (float(acts_dense[L, p, f]) *
                                                              np64(Wd[f]))
        for L in grads_post:
            rows[r, n_feat + L * T:n_feat + (L + 1) * T] = (grads_post[L] * np64(err[L])).sum(-1)
        rows[r, n_feat + n_layers * T:] = (G * wte[ids]).sum(-1)
    return rows


# ----------------------------------------------------------------------------- pruning (graph.py)

def normalize_matrix(m):
    a = np.abs(m)
    return a / np.maximum(a.sum(axis=1, keepdims=True), 1e-10)


def compute_influence(A, w, max_iter=1000):
    cur = w @ A
    infl = cur.copy()
    it = 0
    while cur.any():
        if it >= max_iter:
            raise RuntimeError("influence did not converge")
        cur = cur @ A
        infl += cur
        it += 1
    return infl


def find_threshold(scores, threshold):
    s = np.sort(scores)[::-1]
    cum = np.cumsum(s) / np.sum(s)
    i = int(np.searchsorted(cum, threshold, side="left"))
    i = min(i, len(cum) - 1)
    return s[i]


def prune_graph(adj, logit_p, n_tokens, n_features, node_threshold, edge_threshold):
    n = adj.shape[0]
    n_logits = len(logit_p)
    w = np.zeros(n)
    w[-n_logits:] = logit_p
    node_influence = compute_influence(normalize_matrix(adj), w)
    node_thr = find_threshold(node_influence, node_threshold)
    node_mask = node_influence >= node_thr
    node_mask[-n_logits - n_tokens:] = True
    pruned = adj.copy()
    pruned[~node_mask] = 0
    pruned[:, ~node_mask] = 0
    normalized_pruned = normalize_matrix(pruned)
    pruned_influence = compute_influence(normalized_pruned, w) + w
    edge_scores = normalized_pruned * pruned_influence[:, None]
    edge_thr = find_threshold(edge_scores.flatten(), edge_threshold)
    edge_mask = edge_scores >= edge_thr
    old = node_mask.copy()
    k = n - n_logits - n_tokens
    node_mask[:k] &= edge_mask[:, :k].any(0)
    node_mask[:n_features] &= edge_mask[:n_features].any(1)
    while not np.all(node_mask == old):
        old[:] = node_mask
        edge_mask[~node_mask] = False
        edge_mask[:, ~node_mask] = False
        node_mask[:k] &= edge_mask[:, :k].any(0)
        node_mask[:n_features] &= edge_mask[:n_features].any(1)
    order = np.argsort(-node_influence, kind="stable")
    cum = np.cumsum(node_influence[order]) / np.sum(node_influence)
    cumulative = np.zeros(n)
    cumulative[order] = cum
    return {"node_influence": node_influence, "node_threshold_value": float(node_thr),
            "edge_threshold_value": float(edge_thr), "node_mask": node_mask,
            "edge_mask": edge_mask, "edge_scores": edge_scores, "cumulative_scores": cumulative}


def graph_scores(adj, logit_p, n_tokens, n_features, n_layers):
    n = adj.shape[0]
    n_logits = len(logit_p)
    error_start = n_features
    error_end = error_start + n_tokens * n_layers
    token_end = error_end + n_tokens
    w = np.zeros(n)
    w[-n_logits:] = logit_p
    N = normalize_matrix(adj)
    infl = compute_influence(N, w)
    token_infl = infl[error_end:token_end].sum()
    error_infl = infl[error_start:error_end].sum()
    replacement = token_infl / (token_infl + error_infl)
    non_error = 1 - N[:, error_start:error_end].sum(-1)
    out_infl = infl + w
    completeness = (non_error * out_infl).sum() / out_infl.sum()
    return float(replacement), float(completeness)


# ----------------------------------------------------------------------------- bounded feature nodes

BOUNDED_CASES = [(40, 8, 1), (150, 16, 2), (333, 64, 4)]  # (max_feature_nodes, batch_size, update_interval)
BOUNDED_CONVENTIONS = (
    "circuit-tracer's attribute (attribution/attribute_transformerlens.py) with max_feature_nodes below the active "
    "features: phase 3 logit rows first; phase 4 visits features in queues of update_interval * batch_size, each "
    "the unvisited features ranked by compute_partial_influences (graph.py: |rows| normalised by max(row sum, 1e-8), "
    "prod = logit probabilities on the logit columns, prod <- prod[row_to_node_index] @ N until 0) over the rows so "
    "far, ties broken by the lower node index (torch.argsort(stable=True)); phase 5 keeps the visited features' "
    "columns and sorts the rows into node order; then prune_graph and compute_graph_scores on that square. A row "
    "does not depend on which rows were computed before it, so the rows here are the full graph's (float64 autograd). "
    "selected_features: [layer, pos, feature] of the visited features in node order.")


def compute_partial_influences(edge_matrix, logit_p, row_to_node_index, max_iter=128):
    normalized = edge_matrix.abs()
    normalized = normalized / normalized.sum(dim=1, keepdim=True).clamp(min=1e-8)
    influences = torch.zeros(edge_matrix.shape[1], dtype=torch.float64)
    prod = torch.zeros(edge_matrix.shape[1], dtype=torch.float64)
    prod[-len(logit_p):] = logit_p
    for _ in range(max_iter):
        prod = prod[row_to_node_index] @ normalized
        if not prod.any():
            break
        influences += prod
    else:
        raise RuntimeError("Failed to converge")
    return influences


CUSTOM_CONVENTIONS = (
    "circuit-tracer's custom attribution targets (attribution/targets.py CustomTarget): the direction u is injected "
    "at ln_f's output of the last position as given (not demeaned); value = u . ln_f(x)[last]. row: the target's "
    "incoming edges over [features, errors, tokens] (float64 autograd, route 1); value and constant from the "
    "knock-out forward (route 2), constant = value - sum(row).")


def custom_targets(W, idx, ids, rec, tcs, feats, acts, err, mlp_const, W_U, logit_idx, enc, out_dir):
    """Three custom targets: logit(top 1) - logit(top 2), the decoder row of layer 1's first active feature, and a
    fixed pseudo-random vector written to demo_target_vector.npy (float32)."""
    x, y = int(logit_idx[0]), int(logit_idx[1])
    L1 = [f for f in feats if f[0] == 1][0]
    gen = np.random.default_rng(7)
    vec32 = (gen.standard_normal(W_U.shape[0]) / np.sqrt(W_U.shape[0])).astype("<f4")
    os.makedirs(out_dir, exist_ok=True)
    np.save(os.path.join(out_dir, "demo_target_vector.npy"), vec32)
    specs = [("diff:%s,%s" % (enc.decode([x]), enc.decode([y])), W_U[:, x] - W_U[:, y]),
             ("feature: 1:%d" % L1[2], tcs[1]["W_dec"][L1[2]].clone()),
             ("vector: demo_target_vector.npy", torch.tensor(vec32.astype(np.float64)))]
    vecs = torch.stack([v for _, v in specs])
    rows = attribution_autograd(W, idx, rec, tcs, feats, acts, err, vecs).numpy()[len(feats):]
    _, values, constants, _, _ = attribution_knockout(W, rec, tcs, ids, feats, acts, err, mlp_const, vecs)
    values, constants = values[len(feats):], constants[len(feats):]
    lnf_last = rec["lnf_out"][len(ids) - 1]
    out = []
    for k, (spec, v) in enumerate(specs):
        value = float(v @ lnf_last)
        assert abs(value - values[k]) <= 1e-10 * max(1.0, abs(value)), (value, values[k])
        assert abs(rows[k].sum() + constants[k] - value) <= 1e-10 * max(1.0, abs(value))
        out.append({"spec": spec, "value": value, "constant": float(constants[k]), "row": rows[k].tolist()})
    return {"conventions": CUSTOM_CONVENTIONS, "targets": out}


def bounded_case(rows, feats, logit_p, T, n_layers, n_feat, n_logits, max_feature_nodes, batch_size, update_interval):
    """circuit-tracer's phases 3-5 on the full rows [n_feat + n_logits, logit_offset], then pruning and scores."""
    logit_offset = n_feat + (n_layers + 1) * T
    total_nodes = logit_offset + n_logits
    full_rows = torch.tensor(rows, dtype=torch.float64)
    edge_matrix = torch.zeros(max_feature_nodes + n_logits, total_nodes, dtype=torch.float64)
    row_to_node_index = torch.zeros(max_feature_nodes + n_logits, dtype=torch.long)
    edge_matrix[:n_logits, :logit_offset] = full_rows[n_feat:]
    row_to_node_index[:n_logits] = torch.arange(n_logits) + logit_offset
    st = n_logits
    visited = torch.zeros(n_feat, dtype=torch.bool)
    n_visited = 0
    lp = torch.tensor(logit_p, dtype=torch.float64)
    while n_visited < max_feature_nodes:
        influences = compute_partial_influences(edge_matrix[:st], lp, row_to_node_index[:st])
        feature_rank = torch.argsort(influences[:n_feat], descending=True, stable=True)
        queue_size = min(update_interval * batch_size, max_feature_nodes - n_visited)
        pending = feature_rank[~visited[feature_rank]][:queue_size]
        for idx_batch in [pending[i:i + batch_size] for i in range(0, len(pending), batch_size)]:
            n_visited += len(idx_batch)
            edge_matrix[st:st + len(idx_batch), :logit_offset] = full_rows[idx_batch]
            row_to_node_index[st:st + len(idx_batch)] = idx_batch
            visited[idx_batch] = True
            st += len(idx_batch)
    selected = torch.where(visited)[0]
    col_read = torch.cat([selected, torch.arange(n_feat, total_nodes)])
    edge_matrix = edge_matrix[:, col_read]
    edge_matrix = edge_matrix[row_to_node_index.argsort()]
    m = edge_matrix.shape[1]
    adj = torch.zeros(m, m, dtype=torch.float64)
    adj[:max_feature_nodes] = edge_matrix[:max_feature_nodes]
    adj[-n_logits:] = edge_matrix[max_feature_nodes:]
    adj = adj.numpy()
    pr = prune_graph(adj, logit_p, T, max_feature_nodes, NODE_THRESHOLD, EDGE_THRESHOLD)
    replacement, completeness = graph_scores(adj, logit_p, T, max_feature_nodes, n_layers)
    return {"max_feature_nodes": max_feature_nodes, "batch_size": batch_size, "update_interval": update_interval,
            "selected_features": [list(feats[int(i)]) for i in selected],
            "n_kept_nodes": int(pr["node_mask"].sum()), "n_kept_edges": int(pr["edge_mask"].sum()),
            "replacement_score": replacement, "completeness_score": completeness}


# ----------------------------------------------------------------------------- intervention

def decoder_writes(tcs, L, fi, dv):
    """[(layer j, dv * decoder row of feature fi of layer L into layer j)]: layer L first, then
    the later layers a cross-layer transcoder writes to."""
    return [(L, dv * tcs[L]["W_dec"][fi])] + [
        (L + k, dv * Wd[fi]) for k, Wd in enumerate(tcs[L]["W_dec_later"], start=1)]


@torch.no_grad()
def feature_intervention(W, ids, rec, tcs, interventions, constrained_acts=None):
    """ReplacementModel.feature_intervention with its defaults (freeze_attention=True,
    constrained_layers=None): patterns frozen to the clean run, LayerNorm sigmas live, real MLPs,
    MLP output += sum (value - current activation) * W_dec[f]. Returns (logits, activations).

    With `constrained_acts` (the clean activations [n_layers, T, d_t]) it is instead
    constrained_layers = every layer: LayerNorm sigmas and MLP outputs frozen at the clean run
    too, deltas from the clean activations, so the change is the sum of direct effects (a
    self-check of the deltas, a cross-layer feature's included, against the adjacency)."""
    if constrained_acts is not None:
        return constrained_intervention(W, ids, rec, tcs, interventions, constrained_acts)
    T = len(ids)
    x = W["wte"][ids] + W["wpe"][:T]
    acts_all = []
    # circuit-tracer's layer_deltas: a cross-layer feature's change also lands in later layers
    pending = torch.zeros(len(W["layers"]), T, W["wte"].shape[1], dtype=W["wte"].dtype)
    for L, lw in enumerate(W["layers"]):
        a, _ = attention(layer_norm(x, lw["g1"], lw["b1"], sigma_of(x, W["eps"])), lw, W["H"],
                         pattern=rec["pattern"][L])
        x = x + a
        h2 = layer_norm(x, lw["g2"], lw["b2"], sigma_of(x, W["eps"]))
        acts = torch.relu(encode(tcs[L], h2))
        acts[0] = 0  # zero_positions = slice(0, 1)
        m = mlp_real(h2, lw)
        delta = pending[L].clone()
        for (Li, p, fi, value) in interventions:
            if Li == L:
                for j, vec in decoder_writes(tcs, L, fi, value - acts[p, fi]):
                    if j == L:
                        delta[p] += vec
                    else:
                        pending[j][p] += vec
        acts_new = acts.clone()
        for (Li, p, fi, value) in interventions:
            if Li == L:
                acts_new[p, fi] = value
        acts_all.append(acts_new)
        x = x + m + delta
    logits = layer_norm(x, W["gf"], W["bf"], sigma_of(x, W["eps"])) @ W["wte"].t()
    return logits, torch.stack(acts_all)


@torch.no_grad()
def constrained_intervention(W, ids, rec, tcs, interventions, acts_clean):
    """feature_intervention with constrained_layers = every layer (see there); returns (logits,
    pre-activations of every layer [n_layers, T, d_t])."""
    T = len(ids)
    x = W["wte"][ids] + W["wpe"][:T]
    deltas = torch.zeros(len(W["layers"]), T, W["wte"].shape[1], dtype=W["wte"].dtype)
    for (L, p, fi, value) in interventions:
        for j, vec in decoder_writes(tcs, L, fi, value - acts_clean[L, p, fi]):
            deltas[j, p] += vec
    pres = []
    for L, lw in enumerate(W["layers"]):
        a, _ = attention(layer_norm(x, lw["g1"], lw["b1"], rec["s1"][L]), lw, W["H"],
                         pattern=rec["pattern"][L])
        x = x + a
        pres.append(encode(tcs[L], layer_norm(x, lw["g2"], lw["b2"], rec["s2"][L])))
        x = x + rec["mlp_out"][L] + deltas[L]
    logits = layer_norm(x, W["gf"], W["bf"], rec["sf"]) @ W["wte"].t()
    return logits, torch.stack(pres)


# ----------------------------------------------------------------------------- QK tracing (issue 46)

QK_CELLS = [(1, 0, 6, 2), (1, 3, 6, 6), (0, 1, 5, 1), (1, 2, 6, 3)]  # (layer, head, query, key)


@torch.no_grad()
def qk_reference(W, rec, tcs, ids, feats, acts, err, mlp_const, cells, top=10):
    """QK traces of `cells`, independently of qk_trace.cpp's backward: every source is removed from the frozen
    replacement model in its own float64 forward (patterns and LayerNorm sigmas of the clean run), so c_q(s) is the
    head's query at (L, q) with every source minus the query without s (the model is affine: exact), likewise c_k(s);
    q0, k0 come from the forward with no source. Columns: the active features (feats' order), error (L, p) at
    n_feat + L * T + p, token p at n_feat + n_layers * T + p."""
    T, nL, H = len(ids), len(W["layers"]), W["H"]
    d = W["wte"].shape[1]
    dh = d // H
    for t in tcs:
        assert not t["W_dec_later"], "the QK reference is for a per-layer set"
    n_feat = len(feats)
    n_cols = n_feat + nL * T + T
    emb_full = W["wte"][torch.tensor(ids)]
    mlp_full = torch.stack([mlp_const[L] + acts[L] @ tcs[L]["W_dec"] + err[L] for L in range(nL)])  # [L, T, d]
    # variants: 0 every source, 1 + c without column c, n_cols + 1 none
    B = n_cols + 2
    emb = emb_full.expand(B, T, d).clone()
    mlp = mlp_full[:, None].expand(nL, B, T, d).clone()
    for c, (L, p, f) in enumerate(feats):
        mlp[L, 1 + c, p] -= acts[L, p, f] * tcs[L]["W_dec"][f]
    for L in range(nL):
        for p in range(T):
            mlp[L, 1 + n_feat + L * T + p, p] -= err[L, p]
    for p in range(T):
        emb[1 + n_feat + nL * T + p, p] = 0
    emb[B - 1] = 0
    for L in range(nL):
        mlp[L, B - 1] = mlp_const[L]

    def resid_pre(layer):
        x = emb + W["wpe"][:T]
        for l in range(layer):
            lw = W["layers"][l]
            h = (x - x.mean(-1, keepdim=True)) / rec["s1"][l] * lw["g1"] + lw["b1"]
            v = (h @ lw["Wv"] + lw["bv"]).view(B, T, H, dh)
            z = torch.einsum("hqk,bkhe->bqhe", rec["pattern"][l], v).reshape(B, T, d)
            x = x + z @ lw["Wo"] + lw["bo"] + mlp[l]
        return x

    out = []
    for (L, h, q, k) in cells:
        lw = W["layers"][L]
        x = resid_pre(L)
        ln = (x - x.mean(-1, keepdim=True)) / rec["s1"][L] * lw["g1"] + lw["b1"]
        sl = slice(h * dh, (h + 1) * dh)
        qv = ln[:, q] @ lw["Wq"][:, sl] + lw["bq"][sl]  # [B, dh]
        kv = ln[:, k] @ lw["Wk"][:, sl] + lw["bk"][sl]
        scale = 1.0 / math.sqrt(dh)
        cq, ck = qv[0] - qv[1:B - 1], kv[0] - kv[1:B - 1]  # [n_cols, dh]
        q0, k0, qf, kf = qv[B - 1], kv[B - 1], qv[0], kv[0]
        # the frozen model is affine: the sources' parts add up to the whole
        assert (cq.sum(0) + q0 - qf).abs().max() <= 1e-10 * max(1.0, qf.abs().max().item())
        assert (ck.sum(0) + k0 - kf).abs().max() <= 1e-10 * max(1.0, kf.abs().max().item())
        score = scale * float(qf @ kf)
        clean = rec["pattern"][L][h, q, k]  # the score is the clean run's: its softmax gives the pattern
        pairs = scale * cq @ ck.t()
        pair_total = float(pairs.sum())
        constant, q_constant, k_constant = scale * float(q0 @ k0), scale * float(q0 @ ck.sum(0)), scale * float(cq.sum(0) @ k0)
        assert abs(pair_total + constant + q_constant + k_constant - score) <= 1e-10 * max(1.0, abs(score))
        flat = pairs.flatten()
        order = torch.argsort(flat.abs(), descending=True)[:top]
        qm, km = scale * (cq @ kf), scale * (ck @ qf)
        big_q = torch.argsort(cq.norm(dim=1), descending=True)[:8].tolist()
        big_k = torch.argsort(ck.norm(dim=1), descending=True)[:8].tolist()
        out.append({"layer": L, "head": h, "query": q, "key": k, "score": score, "pattern": float(clean),
                    "constant": constant, "q_constant": q_constant, "k_constant": k_constant, "pairs_total": pair_total,
                    "top_pairs": [[int(i) // n_cols, int(i) % n_cols, float(flat[i])] for i in order],
                    "q_marginals": qm.tolist(), "k_marginals": km.tolist(),
                    "c_q": [{"column": c, "c": cq[c].tolist()} for c in big_q],
                    "c_k": [{"column": c, "c": ck[c].tolist()} for c in big_k]})
    return {"generator": "tools/graph_reference.py --qk-only", "n_columns": n_cols, "n_features": n_feat,
            "conventions": "QK tracing of the frozen replacement model (docs/graphs.md): c_q(s) = the head's query at "
                           "(layer, query) with every source minus without s, in separate float64 forwards; q0 with none; "
                           "score = (q . k) / sqrt(d_head) = sum of all pairs + constant + q_constant + k_constant; "
                           "marginals scale c_q(s) . k and scale q . c_k(s); columns: features, errors (L * T + p), tokens",
            "cells": out}


def to_json(v, ind=0):
    """Readable and compact JSON: dicts indented (up to depth 3), lists of dicts one element a
    line, everything else on one line."""
    pad = " " * ind
    if isinstance(v, dict) and ind < 6 and any(isinstance(x, (dict, list)) for x in v.values()):
        items = ["%s %s: %s" % (pad, json.dumps(k), to_json(x, ind + 1)) for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        items = ["%s %s" % (pad, to_json(x, ind + 1)) if any(isinstance(y, (dict, list))
                 for y in x.values()) else "%s %s" % (pad, json.dumps(x, ensure_ascii=False))
                 for x in v]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    if isinstance(v, dict):
        return json.dumps(v, ensure_ascii=False)
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def top_logits(logits_last, enc, k=10):
    probs = torch.softmax(logits_last, -1)
    p, i = torch.topk(probs, k)
    return [{"token_id": int(t), "token": enc.decode([int(t)]), "logit": float(logits_last[t]),
             "prob": float(q)} for t, q in zip(i, p)]


# ----------------------------------------------------------------------------- main

def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompt", default=DEFAULT_PROMPT)
    ap.add_argument("--out", default=os.path.join(root, "tests", "data", "graphs"))
    ap.add_argument("--root", default=root, help="repository root (resources/ is read there)")
    ap.add_argument("--set", choices=sorted(SETS), default="transcoders",
                    help="bundled feature set: transcoders (per-layer, writes demo_graph_*) or "
                         "clt (cross-layer, writes demo_clt_graph_*)")
    ap.add_argument("--transcoders", default=None,
                    help="circuit-tracer folder to use instead of the --set one (relative to "
                         "--root); the output file names still follow --set")
    ap.add_argument("--qk-only", action="store_true",
                    help="write only demo_qk_reference.json: QK traces of a few attention cells (qk_reference)")
    ap.add_argument("--bounded-only", action="store_true",
                    help="write only demo_graph_bounded_reference.json: circuit-tracer's max_feature_nodes ordering "
                         "(see bounded_cases)")
    args = ap.parse_args()
    t0 = time.time()
    torch.set_num_threads(1)
    torch.manual_seed(0)

    tc_rel, prefix = SETS[args.set]
    if args.transcoders:
        tc_rel = args.transcoders
    model, cfg, tcs, enc, eot_id, tcfg = load(args.root, os.path.join(args.root, tc_rel))
    is_clt = tcfg.get("model_kind") == "cross_layer_transcoder"
    W = weights(model, cfg)
    n_layers, d_model = cfg["n_layer"], cfg["n_embd"]
    ids = [eot_id] + enc.encode(args.prompt)
    T = len(ids)
    idx = torch.tensor(ids)

    # 1. clean forward, checked against the demo model module
    rec = clean_forward(W, idx)
    with torch.no_grad():
        ref_logits, _ = model(idx[None])
    d_clean = (ref_logits[0] - rec["logits"]).abs().max().item()
    assert d_clean <= 1e-10, d_clean

    # transcoders, BOS zeroed as circuit-tracer (zero_positions = slice(0, 1))
    pre = torch.stack([encode(tcs[L], rec["mlp_in"][L]) for L in range(n_layers)])  # [L, T, F]
    acts = torch.relu(pre)
    acts[:, 0] = 0
    dec = decoded(tcs, acts)
    recon = torch.stack([dec[L] + tcs[L]["b_dec"] for L in range(n_layers)])
    mlp_out = torch.stack(rec["mlp_out"])
    err = mlp_out - recon
    err[:, 0] = 0
    # constants of the MLP output: b_dec, except at BOS where the whole real MLP output is constant
    mlp_const = torch.stack([tcs[L]["b_dec"].expand(T, -1).clone() for L in range(n_layers)])
    mlp_const[:, 0] = mlp_out[:, 0]
    nz = acts.nonzero().tolist()
    feats = [(int(L), int(p), int(f)) for L, p, f in nz]  # sorted by (layer, pos, feature)
    n_feat = len(feats)

    # replacement model reproduces the clean logits; it is affine in the feature activations
    def replacement_logits(a_scale):
        emb = W["wte"][idx][None].numpy()
        mo = [(mlp_const[L] + a_scale * dec[L] + err[L])[None].numpy() for L in range(n_layers)]
        Wn = {"wpe": W["wpe"].numpy(), "gf": W["gf"].numpy(), "bf": W["bf"].numpy(), "H": W["H"],
              "layers": [{k: v.numpy() for k, v in lw.items()} for lw in W["layers"]]}
        recn = {"s1": [s.numpy() for s in rec["s1"]], "s2": [s.numpy() for s in rec["s2"]],
                "sf": rec["sf"].numpy(), "pattern": [p.numpy() for p in rec["pattern"]]}
        ln2, lnf = frozen_replacement_np(Wn, recn, emb, mo)
        return ln2, (lnf @ W["wte"].numpy().T)[0]
    ln2_1, lg1 = replacement_logits(1.0)
    lg0 = replacement_logits(0.0)[1]
    lg2 = replacement_logits(2.0)[1]
    d_repl = np.abs(lg1 - rec["logits"].numpy()).max()
    assert d_repl <= 1e-10, d_repl
    d_ln2 = max(np.abs(ln2_1[L][0] - rec["mlp_in"][L].numpy()).max() for L in range(n_layers))
    assert d_ln2 <= 1e-10, d_ln2
    d_lin = np.abs((lg2 - lg1) - (lg1 - lg0)).max()
    assert d_lin <= 1e-10 * max(1.0, np.abs(lg1 - lg0).max()), d_lin
    d_lin2 = np.abs(lg2 - (2 * lg1 - lg0)).max()
    assert d_lin2 <= 1e-10, d_lin2

    if args.qk_only:
        out = qk_reference(W, rec, tcs, ids, feats, acts, err, mlp_const, QK_CELLS)
        out["prompt"], out["token_ids"] = args.prompt, ids
        os.makedirs(args.out, exist_ok=True)
        jpath = os.path.join(args.out, prefix + "_qk_reference.json")
        with open(jpath, "w", encoding="utf-8") as f:
            f.write(to_json(out) + "\n")
        print("%s %d bytes; %.1fs" % (jpath, os.path.getsize(jpath), time.time() - t0))
        return

    # 2. logit nodes
    W_U = W["wte"].t()  # [d_model, vocab]
    logit_idx, logit_p, logit_vecs = salient_logits(rec["logits"][T - 1], W_U)
    n_logits = len(logit_idx)
    n_nodes = n_feat + (n_layers + 1) * T + n_logits
    err_off, tok_off, logit_off = n_feat, n_feat + n_layers * T, n_feat + (n_layers + 1) * T

    # 3. adjacency, route 1 (autograd, circuit-tracer's injection) and route 2 (knockout)
    rows = attribution_autograd(W, idx, rec, tcs, feats, acts, err, logit_vecs).numpy()
    cols, values, constants, _, _ = attribution_knockout(
        W, rec, tcs, ids, feats, acts, err, mlp_const, logit_vecs)
    scale = max(1.0, np.abs(rows).max())
    d_routes = np.abs(rows - cols).max()
    assert d_routes <= 1e-10 * scale, d_routes
    rows3 = attribution_direct_path(W, rec, tcs, ids, feats, acts, err, logit_vecs)
    d_routes3 = np.abs(rows - rows3).max()
    assert d_routes3 <= 1e-10 * scale, d_routes3
    adj = np.zeros((n_nodes, n_nodes))
    adj[:n_feat, :logit_off] = rows[:n_feat]
    adj[logit_off:, :logit_off] = rows[n_feat:]
    if args.bounded_only:
        out = {"conventions": BOUNDED_CONVENTIONS, "generator": "tools/graph_reference.py --bounded-only",
               "prompt": args.prompt, "token_ids": ids, "n_active_features": n_feat,
               "cases": [bounded_case(rows, feats, logit_p.numpy(), T, n_layers, n_feat, n_logits, *c)
                         for c in BOUNDED_CASES],
               "custom_targets": custom_targets(W, idx, ids, rec, tcs, feats, acts, err, mlp_const, W_U,
                                                logit_idx, enc, args.out)}
        os.makedirs(args.out, exist_ok=True)
        jpath = os.path.join(args.out, prefix + "_graph_bounded_reference.json")
        with open(jpath, "w", encoding="utf-8") as f:
            f.write(to_json(out) + "\n")
        for c in out["cases"]:
            print("max_feature_nodes %d (batch %d, interval %d): %d nodes, %d edges kept; scores %.4f %.4f" % (
                c["max_feature_nodes"], c["batch_size"], c["update_interval"], c["n_kept_nodes"],
                c["n_kept_edges"], c["replacement_score"], c["completeness_score"]))
        print("%s %d bytes; %.1fs" % (jpath, os.path.getsize(jpath), time.time() - t0))
        return

    # 4. completeness: value = sum of incoming edges + constant
    pre_active = np.array([float(pre[L, p, f]) for L, p, f in feats])
    logit_vals = (rec["logits"][T - 1][logit_idx] - rec["logits"][T - 1].mean()).numpy()
    value_expected = np.concatenate([pre_active, logit_vals])
    assert np.abs(values - value_expected).max() <= 1e-10, np.abs(values - value_expected).max()
    incoming = rows.sum(1)
    d_complete = np.abs(incoming + constants - values).max()
    assert d_complete <= 1e-10 * max(1.0, np.abs(values).max()), d_complete
    # feature activations equal their pre-activations (ReLU, active)
    assert np.allclose([float(acts[L, p, f]) for L, p, f in feats], pre_active, rtol=0, atol=0)

    # 5. pruning and scores
    lp = logit_p.numpy()
    pr = prune_graph(adj, lp, T, n_feat, NODE_THRESHOLD, EDGE_THRESHOLD)
    replacement_score, completeness_score = graph_scores(adj, lp, T, n_feat, n_layers)
    kept_edges = np.argwhere(pr["edge_mask"])  # [target, source], row-major order
    # the masks must not depend on the float32 rounding of the stored adjacency
    pr32 = prune_graph(adj.astype(np.float32).astype(np.float64), lp, T, n_feat,
                       NODE_THRESHOLD, EDGE_THRESHOLD)
    assert np.array_equal(pr32["node_mask"], pr["node_mask"])
    assert np.array_equal(pr32["edge_mask"], pr["edge_mask"])
    sc32 = graph_scores(adj.astype(np.float32).astype(np.float64), lp, T, n_feat, n_layers)

    # 6. interventions on the top-influence features
    infl = pr["node_influence"]
    top_feats = sorted(range(n_feat), key=lambda j: (-infl[j], j))[:N_INTERVENE]
    chosen = [feats[j] for j in top_feats]
    # sanity: setting the features to their own values reproduces the clean logits
    lg_same, _ = feature_intervention(W, idx, rec, tcs,
                                      [(L, p, f, float(acts[L, p, f])) for L, p, f in chosen])
    assert (lg_same - rec["logits"]).abs().max().item() <= 1e-10
    if is_clt:
        # direct effects: ablating the chosen features with everything but them frozen changes
        # each target (feature pre-activation, demeaned logit) by minus the sum of their edges
        # (the chosen features plus the most influential one of layer 0, which writes into
        # every layer)
        abl = chosen + [feats[min((j for j in range(n_feat) if feats[j][0] == 0),
                                  key=lambda j: (-infl[j], j))]]
        abl = sorted(set(abl))
        lg_c, pre_c = feature_intervention(W, idx, rec, tcs, [(L, p, f, 0.0) for L, p, f in abl],
                                           constrained_acts=acts)
        cols_c = [feats.index(c) for c in abl]
        got = np.concatenate([
            [float(pre_c[L, p, f] - pre[L, p, f]) for L, p, f in feats],
            (lg_c[T - 1][logit_idx] - lg_c[T - 1].mean() - torch.tensor(logit_vals)).numpy()])
        want = -rows[:, cols_c].sum(1)
        d_direct = np.abs(got - want).max()
        assert d_direct <= 1e-10 * scale, d_direct
    interventions_out = []
    for name, factor in (("ablate", 0.0), ("scale_2x", 2.0)):
        iv = [(L, p, f, factor * float(acts[L, p, f])) for L, p, f in chosen]
        lg, acts_iv = feature_intervention(W, idx, rec, tcs, iv)
        interventions_out.append({
            "name": name,
            "interventions": [{"layer": L, "pos": p, "feature": f, "value": v,
                               "node_index": feats.index((L, p, f))} for L, p, f, v in iv],
            "top_logits_last": top_logits(lg[T - 1], enc),
            "logits_last_for_graph_logit_tokens": [float(lg[T - 1][t]) for t in logit_idx],
            "n_active_features_after": int((acts_iv > 0).sum()),
        })

    # ------------------------------------------------------------------ output
    nodes = []
    for j, (L, p, f) in enumerate(feats):
        nodes.append({"index": j, "type": "feature", "layer": L, "pos": p, "feature": f,
                      "activation": float(acts[L, p, f]), "node_id": "%d_%d_%d" % (L, f, p)})
    for L in range(n_layers):
        for p in range(T):
            nodes.append({"index": err_off + L * T + p, "type": "error", "layer": L, "pos": p,
                          "error_norm": float(err[L, p].norm()), "node_id": "0_%d_%d" % (L, p)})
    for p in range(T):
        nodes.append({"index": tok_off + p, "type": "token", "pos": p, "token_id": ids[p],
                      "token": enc.decode([ids[p]]), "node_id": "E_%d_%d" % (ids[p], p)})
    for k in range(n_logits):
        t = int(logit_idx[k])
        nodes.append({"index": logit_off + k, "type": "logit", "pos": T - 1, "token_id": t,
                      "token": enc.decode([t]), "prob": float(logit_p[k]),
                      "logit": float(rec["logits"][T - 1][t]),
                      "node_id": "%d_%d_%d" % (n_layers + 1, t, T - 1)})
    target_rows = list(range(n_feat)) + list(range(logit_off, n_nodes))
    for r, ni in enumerate(target_rows):
        nodes[ni]["value"] = float(values[r])
        nodes[ni]["incoming_sum"] = float(incoming[r])
        nodes[ni]["constant"] = float(constants[r])
    for ni in range(n_nodes):
        nodes[ni]["influence"] = float(pr["node_influence"][ni])
        nodes[ni]["cumulative_influence"] = float(pr["cumulative_scores"][ni])
        nodes[ni]["kept"] = bool(pr["node_mask"][ni])

    out = {
        "description": "circuit-tracer attribution graph, float64 reference, written by "
                       "tools/graph_reference.py" + (" --set clt" if args.set == "clt" else ""),
        "conventions": CLT_CONVENTIONS if is_clt else CONVENTIONS,
        "source": {"circuit_tracer": "decoderesearch/circuit-tracer 4bb8c0e (2026-04-18), "
                                     "safety-research/circuit-tracer d797c82 (2025-06-11)",
                   "torch": torch.__version__, "numpy": np.__version__},
        "model": "resources/demo", "transcoders": tc_rel,
        **({"transcoder_kind": "cross_layer_transcoder"} if is_clt else {}),
        "scan": tcfg.get("scan"),
        "prompt": args.prompt, "bos_token_id": eot_id, "token_ids": ids,
        "tokens": [enc.decode([i]) for i in ids],
        "n_layers": n_layers, "n_pos": T, "d_model": d_model,
        "d_transcoder": int(tcs[0]["W_enc"].shape[0]),
        "n_features": n_feat, "n_error_nodes": n_layers * T, "n_token_nodes": T,
        "n_logits": n_logits, "n_nodes": n_nodes,
        "offsets": {"error": err_off, "token": tok_off, "logit": logit_off},
        "settings": {"max_n_logits": MAX_N_LOGITS, "desired_logit_prob": DESIRED_LOGIT_PROB,
                     "node_threshold": NODE_THRESHOLD, "edge_threshold": EDGE_THRESHOLD},
        "clean": {
            "logits_last_logsumexp": float(torch.logsumexp(rec["logits"][T - 1], -1)),
            "logits_last_mean": float(rec["logits"][T - 1].mean()),
            "top_logits_last": top_logits(rec["logits"][T - 1], enc),
        },
        "frozen": {
            "ln1_sigma": [[float(v) for v in rec["s1"][L][:, 0]] for L in range(n_layers)],
            "ln2_sigma": [[float(v) for v in rec["s2"][L][:, 0]] for L in range(n_layers)],
            "lnf_sigma": [float(v) for v in rec["sf"][:, 0]],
        },
        "logit_nodes": {"token_ids": [int(t) for t in logit_idx],
                        "probs": [float(q) for q in logit_p],
                        "prob_sum": float(logit_p.sum())},
        "nodes": nodes,
        "adjacency_file": prefix + "_graph_adjacency.npy",
        "adjacency_stats": {"max_abs": float(np.abs(adj).max()),
                            "sum_abs": float(np.abs(adj).sum()),
                            "nonzero": int((adj != 0).sum())},
        "checks": {"clean_vs_module_max_abs": d_clean, "replacement_vs_clean_max_abs": float(d_repl),
                   "linearity_2a_max_abs": float(d_lin2),
                   "autograd_vs_knockout_max_abs": float(d_routes),
                   "autograd_vs_direct_path_max_abs": float(d_routes3),
                   "completeness_max_abs": float(d_complete),
                   **({"constrained_ablation_vs_edges_max_abs": float(d_direct),
                       "constrained_ablation_features": [list(c) for c in abl]} if is_clt else {})},
        "pruning": {
            "node_threshold_value": pr["node_threshold_value"],
            "node_influence_next_below_threshold": float(
                infl[infl < pr["node_threshold_value"]].max()),
            "edge_threshold_value": pr["edge_threshold_value"],
            "edge_score_next_below_threshold": float(
                pr["edge_scores"][pr["edge_scores"] < pr["edge_threshold_value"]].max()),
            "n_nodes_above_node_threshold": int((infl >= pr["node_threshold_value"]).sum()),
            "masks_same_from_float32_adjacency": True,
            "n_kept_nodes": int(pr["node_mask"].sum()),
            "n_kept_edges": int(len(kept_edges)),
            "node_mask": [int(b) for b in pr["node_mask"]],
            "kept_edges": [[int(t), int(s)] for t, s in kept_edges],
            "kept_edges_format": "[target, source] node indices, row-major (target, then source)",
        },
        "scores": {"replacement_score": replacement_score,
                   "completeness_score": completeness_score,
                   "from_float32_adjacency": {"replacement_score": sc32[0],
                                              "completeness_score": sc32[1]}},
        "intervention": {
            "method": (CLT_CONVENTIONS if is_clt else CONVENTIONS)["intervention"],
            "features": "the %d feature nodes with the largest node influence" % N_INTERVENE,
            "graph_logit_tokens": [int(t) for t in logit_idx],
            "results": interventions_out,
        },
    }
    os.makedirs(args.out, exist_ok=True)
    jpath = os.path.join(args.out, prefix + "_graph_reference.json")
    npath = os.path.join(args.out, prefix + "_graph_adjacency.npy")
    np.save(npath, adj.astype("<f4"))
    with open(jpath, "w", encoding="utf-8") as f:
        f.write(to_json(out) + "\n")
    with open(jpath, encoding="utf-8") as f:
        assert json.load(f)["n_nodes"] == n_nodes
    sj, sn = os.path.getsize(jpath), os.path.getsize(npath)
    print("tokens %d, features %d, logits %d (p %.4f), nodes %d" % (
        T, n_feat, n_logits, float(logit_p.sum()), n_nodes))
    print("checks: module %.2e, replacement %.2e, linearity %.2e, routes %.2e / %.2e, "
          "completeness %.2e" % (d_clean, d_repl, d_lin2, d_routes, d_routes3, d_complete))
    print("pruning: %d nodes, %d edges kept; replacement score %.4f, completeness score %.4f" % (
        int(pr["node_mask"].sum()), len(kept_edges), replacement_score, completeness_score))
    for r in interventions_out:
        print("%s: %s" % (r["name"], ", ".join("%r %.3f" % (t["token"], t["prob"])
                                              for t in r["top_logits_last"][:5])))
    print("%s %d bytes, %s %d bytes, total %d (limit %d); %.1fs" % (
        jpath, sj, npath, sn, sj + sn, SIZE_LIMIT, time.time() - t0))
    if sj + sn > SIZE_LIMIT:
        print("WARNING: over the size limit; use a shorter --prompt")
        sys.exit(1)


if __name__ == "__main__":
    main()
