#!/usr/bin/env python3
"""PyTorch-autograd reference gradients of a scalar metric at every hook point of a transformer forward.

Writes, into tests/data/gradients/ (read by tests/gradients/tst_gradient_references.cpp):
  tiny-gpt2.json        ../shared/testdata/tiny-gpt2 (GPT-2, LayerNorm, gelu_new, learned positions)
                        metrics logit_diff, logprob and kl
  stories260K.json      ../shared/testdata/stories260K/stories260K.bin (llama2.c legacy format; RMSNorm,
                        SwiGLU, GQA 8 query / 4 kv heads, interleaved RoPE), metric logit_diff
  llama-gqa-swa.json    a random Mistral-style model (GQA 4/2 heads, sliding window 3, untied head, HF
                        rotate_half RoPE), metric logit_diff
  llama-gqa-swa/        that model as a Hugging Face folder: config.json, model.safetensors (float32),
                        tokenizer.json (a minimal 64-token SentencePiece-style BPE, only so that the folder
                        opens)
  qwen3-qknorm.json     a random Qwen 3 (per-head q/k RMSNorm after the projections, before RoPE; GQA 4/2,
                        head_dim 16, tied head), metric logit_diff; folder qwen3-qknorm/ as above
  gemma2-softcap.json   a random Gemma 2 ((1 + w) RMSNorms, post-attention/post-feedforward norms, embedding
                        times float32(sqrt(d_model)), GeGLU with gelu tanh, query_pre_attn_scalar, attention
                        and final logit soft-caps that both bind, sliding window on the even layers, tied
                        head), metric logit_diff; folder gemma2-softcap/ as above

Run by hand from the repository root (the app and CI never run it; its outputs are committed):

    /usr/bin/python3 tools/gradient_references.py

Needs only Python 3, numpy and PyTorch (Debian python3-torch); no `transformers`: every forward pass is
written out below from the math, in float64. The random model uses a fixed seed, so a rerun rewrites the
same files (up to the PyTorch version written into "source").

Definitions
-----------
Metric (at position S-1, from raw logits; none of these models has an unembedding bias):
  logit_diff = logit[token] - logit[counter_token]
  logprob    = log_softmax(logits)[token]
  kl         = KL(P_ref || P_run) = sum_v P_ref(v) (log P_ref(v) - log P_run(v)), P_ref = softmax of the
               stored "reference_logits" (the last logits of the stored "clean_tokens"), held constant.

Gradient variants ("freeze" lists; [] = plain autograd):
  norm       every LayerNorm/RMSNorm divisor is detached (ln_1, ln_2 and ln_final alike, and Qwen 3's
             q_norm/k_norm and Gemma 2's post-attention/post-feedforward norms; Gemma's weight is 1 + w):
               LayerNorm y = (x - mean(x)) / sigma.detach() * w + b,  sigma = sqrt(var_biased(x) + eps)
               RMSNorm   y = x / rms.detach() * w,                    rms   = sqrt(mean(x^2) + eps)
             (the mean is not detached).
  attention  pattern = softmax(masked scaled scores).detach() (Gemma 2: scores soft-capped before the mask);
             z = pattern @ V still passes gradient to V, and the gradient with respect to the pattern is
             still reported, but none reaches q or k through the scores.
  mlp        non-gated MLP: post = pre * (act(pre) / pre).detach(), the ratio taken as 0.5 where
             pre == 0; gated (SwiGLU, GeGLU): post = act(gate).detach() * up (the gate projection gets no
             gradient).
  Each variant freezes exactly the listed parts: [], [norm], [attention], [mlp], [norm, attention, mlp].

Hook points (TransformerLens names; gradient of the metric with respect to the hook's tensor, taken
with retain_grad() on the tensor the forward actually continues from):
  hook_embed                 [pos, d_model] the token-embedding rows (GPT-2: before adding positions; Gemma 2:
                             after the scaling by float32(sqrt(d_model)))
  blocks.l.hook_resid_pre    [pos, d_model]
  blocks.l.hook_attn_out     [pos, d_model] (attention output incl. its bias; Gemma 2: after its post-norm)
  blocks.l.hook_resid_mid    [pos, d_model] = resid_pre + attn_out
  blocks.l.hook_mlp_out      [pos, d_model] (Gemma 2: after its post-norm)
  blocks.l.hook_resid_post   [pos, d_model] = resid_mid + mlp_out (= the next layer's resid_pre)
  blocks.l.mlp.hook_post     [pos, d_mlp]   act(pre), or act(gate) * up for gated MLPs
  blocks.l.attn.hook_q/_k/_v [pos, n_heads * d_head] after the bias (Qwen 3: after q_norm / k_norm), BEFORE
                             rotary embeddings; for grouped-query attention k and v AFTER repeating
                             each kv head for its query heads (query head h uses kv head
                             h // (n_heads / n_kv_heads)), so the
                             gradient is per copy; rotary is computed from that repeated tensor. Columns
                             are head-major (h * d_head + i), in the checkpoint's own row order (the
                             llama2.c file: Meta's interleaved-pair layout; the HF folder: HF layout).
  blocks.l.attn.hook_z       [pos, n_heads * d_head] pattern @ V, heads concatenated
  blocks.l.attn.hook_pattern [n_heads, query, key]; entries outside the causal mask (and the sliding
                             window: query i sees key j iff i - window < j <= i; Gemma 2: even layers
                             only) are reported as 0.
Every {"shape", "data"} is row-major, numbers with 9 significant digits.

The script also checks itself: tiny-gpt2 logits against the picoGPT reference, stories260K logits
against run.c's (reference.json), and each model's gradients at a few hooks against float64 central
differences and torch.autograd.gradcheck (for the frozen variants, of the forward with the frozen
quantities replayed as constants). If build/app/attnscope exists (the build folder: $ATTNSCOPE_BUILD_DIR,
default build/) it also compares AttnScope's logits on the three random folders with this forward's (all
prefixes of the prompt; output goes to a temp folder). For gemma2-softcap it checks that both soft-caps bind.
It exits non-zero if any check fails.
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

torch.set_default_dtype(torch.float64)

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TESTDATA_REL = "../shared/testdata"
OUT_REL = "tests/data/gradients"
OUT_DIR = os.path.join(REPO, OUT_REL)

VARIANTS = [[], ["norm"], ["attention"], ["mlp"], ["norm", "attention", "mlp"]]


def testdata(*parts):
    return os.path.normpath(os.path.join(REPO, TESTDATA_REL, *parts))


# ----------------------------------------------------------------------------------------------------
# Compact JSON: floats with 9 significant digits, no whitespace.

def fmt_float(x):
    x = float(x)
    if x == 0.0:
        return "0"
    if not math.isfinite(x):
        raise ValueError("non-finite number in output")
    s = "%.9g" % x
    if "e" in s:  # 1.5e-05 -> 1.5e-5
        mant, exp = s.split("e")
        sign = "-" if exp[0] == "-" else ""
        s = mant + "e" + sign + exp.lstrip("+-").lstrip("0")
    return s


def dump_json(obj):
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if obj is None:
        return "null"
    if isinstance(obj, (int, np.integer)):
        return str(int(obj))
    if isinstance(obj, (float, np.floating)):
        return fmt_float(obj)
    if isinstance(obj, str):
        return json.dumps(obj, ensure_ascii=False)
    if isinstance(obj, dict):
        return "{" + ",".join(json.dumps(str(k)) + ":" + dump_json(v) for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(dump_json(v) for v in obj) + "]"
    if isinstance(obj, np.ndarray):
        return dump_json(obj.tolist())
    raise TypeError(type(obj))


def write_text(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# ----------------------------------------------------------------------------------------------------
# safetensors

ST_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        arr = np.frombuffer(raw[base + a:base + b], dtype=np.dtype(ST_DTYPES[info["dtype"]]).newbyteorder("<"))
        out[name] = arr.reshape(info["shape"]).astype(np.float64)
    return out


def write_safetensors(path, tensors):
    """tensors: list of (name, float32 numpy array), written in that order."""
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    blobs = []
    for name, arr in tensors:
        data = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ----------------------------------------------------------------------------------------------------
# Models, in one common layout: every projection is y = x @ W (+ b), W [in, out], float64 torch tensors.

def T(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def load_tiny_gpt2():
    folder = testdata("tiny-gpt2")
    cfg = json.load(open(os.path.join(folder, "config.json")))
    w = read_safetensors(os.path.join(folder, "model.safetensors"))
    D, H = cfg["n_embd"], cfg["n_head"]
    layers = []
    for l in range(cfg["n_layer"]):
        p = "h.%d." % l
        ca, cb = w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"]
        layers.append(dict(
            ln1_w=T(w[p + "ln_1.weight"]), ln1_b=T(w[p + "ln_1.bias"]),
            Wq=T(ca[:, :D]), Wk=T(ca[:, D:2 * D]), Wv=T(ca[:, 2 * D:]),
            bq=T(cb[:D]), bk=T(cb[D:2 * D]), bv=T(cb[2 * D:]),
            Wo=T(w[p + "attn.c_proj.weight"]), bo=T(w[p + "attn.c_proj.bias"]),
            ln2_w=T(w[p + "ln_2.weight"]), ln2_b=T(w[p + "ln_2.bias"]),
            Win=T(w[p + "mlp.c_fc.weight"]), bin=T(w[p + "mlp.c_fc.bias"]),
            Wout=T(w[p + "mlp.c_proj.weight"]), bout=T(w[p + "mlp.c_proj.bias"])))
    return dict(
        name="tiny-gpt2", norm="layernorm", eps=cfg["layer_norm_epsilon"], mlp="gelu_new", rope=None,
        n_heads=H, n_kv_heads=H, d_head=D // H, window=None,
        W_E=T(w["wte.weight"]), W_pos=T(w["wpe.weight"]), layers=layers,
        lnf_w=T(w["ln_f.weight"]), lnf_b=T(w["ln_f.bias"]), W_U=T(w["wte.weight"]).T.contiguous())


def load_llama2c(path):
    with open(path, "rb") as f:
        raw = f.read()
    dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len = struct.unpack("<7i", raw[:28])
    shared = vocab > 0
    vocab = abs(vocab)
    hs = dim // n_heads
    kv_dim = n_kv * hs
    data = np.frombuffer(raw[28:], dtype="<f4").astype(np.float64)
    pos = [0]

    def take(*shape):
        n = int(np.prod(shape))
        a = data[pos[0]:pos[0] + n].reshape(shape)
        pos[0] += n
        return a

    emb = take(vocab, dim)
    rms_att = take(n_layers, dim)
    wq = take(n_layers, dim, dim)            # run.c matmul: W [out, in]
    wk = take(n_layers, kv_dim, dim)
    wv = take(n_layers, kv_dim, dim)
    wo = take(n_layers, dim, dim)
    rms_ffn = take(n_layers, dim)
    w1 = take(n_layers, hidden, dim)
    w2 = take(n_layers, dim, hidden)
    w3 = take(n_layers, hidden, dim)
    rms_final = take(dim)
    take(seq_len * hs // 2)  # freq_cis_real (unused)
    take(seq_len * hs // 2)  # freq_cis_imag (unused)
    wcls = emb if shared else take(vocab, dim)
    if pos[0] != data.size:
        raise RuntimeError("llama2.c file: %d floats left over" % (data.size - pos[0]))
    layers = []
    for l in range(n_layers):
        layers.append(dict(ln1_w=T(rms_att[l]), Wq=T(wq[l].T), Wk=T(wk[l].T), Wv=T(wv[l].T), Wo=T(wo[l].T),
                           ln2_w=T(rms_ffn[l]), Wgate=T(w1[l].T), Wup=T(w3[l].T), Wout=T(w2[l].T)))
    return dict(
        name="stories260K", norm="rmsnorm", eps=1e-5, mlp="swiglu", rope="interleaved", rope_theta=10000.0,
        n_heads=n_heads, n_kv_heads=n_kv, d_head=hs, window=None, W_E=T(emb), W_pos=None, layers=layers,
        lnf_w=T(rms_final), W_U=T(wcls).T.contiguous(),
        header=dict(dim=dim, hidden_dim=hidden, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv,
                    vocab_size=vocab, seq_len=seq_len, shared=shared))


def small_config(arch, model_type, head_dim, **fields):
    """config.json of the random test models: 2 layers, d_model 32, d_mlp 48, 4 query / 2 kv heads, the
    64-token vocabulary; fields come after max_position_embeddings, before the token ids."""
    c = {"architectures": [arch], "model_type": model_type, "hidden_size": 32, "intermediate_size": 48,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": head_dim,
         "vocab_size": 64, "max_position_embeddings": 64}
    c.update(fields)
    c.update({"bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"})
    return c


MISTRAL_CONFIG = small_config("MistralForCausalLM", "mistral", 8, rms_norm_eps=1e-05, rope_theta=10000.0,
                              sliding_window=3, tie_word_embeddings=False, hidden_act="silu")


def minimal_tokenizer_json(V):
    """A minimal valid tokenizer.json with exactly V = 64 tokens, only so that the folder opens (AttnScope
    needs a tokenizer beside the weights; the references run token ids, never text). SentencePiece-style
    BPE as in Llama 2's tokenizer.json (a byte-level BPE would need all 256 byte tokens): <unk>, <s>, </s>,
    "▁", the letters a-z, "▁a" .. "▁z" and 8 letter pairs, with the merges that build them."""
    sp = "\u2581"
    letters = [chr(ord("a") + i) for i in range(26)]
    pairs = ["th", "he", "in", "er", "an", "re", "on", "at"]
    pieces = ["<unk>", "<s>", "</s>", sp] + letters + [sp + c for c in letters] + pairs
    assert len(pieces) == V
    merges = [[sp, c] for c in letters] + [[p[0], p[1]] for p in pairs]
    added = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, c in enumerate(pieces[:3])]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": sp},
                                                           {"type": "Replace", "pattern": {"String": " "}, "content": sp}]},
        "pre_tokenizer": None, "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": sp}, "content": " "},
                                                     {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {p: i for i, p in enumerate(pieces)}, "merges": merges}}


def write_hf_folder(folder, config, tensors):
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    write_text(os.path.join(folder, "config.json"), json.dumps(config, indent=2) + "\n")
    write_text(os.path.join(folder, "tokenizer.json"),
               json.dumps(minimal_tokenizer_json(config["vocab_size"]), ensure_ascii=False, indent=1) + "\n")


LLAMA_LAYER = ["input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
               "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


def random_hf_folder(folder, c, seed, layer, embed_std=0.2, qk_std=0.2, norm_center=1.0):
    """Writes a random model (fixed seed) as an HF folder: per layer the tensors named in `layer`, in that
    order (projections N(0, 0.2²), q/k projections N(0, qk_std²), norm weights norm_center + N(0, 0.1²)),
    then model.norm and, unless tie_word_embeddings, lm_head. Returns the float32 tensors by HF name."""
    D, M, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    dh = c["head_dim"]
    QD, KD = c["num_attention_heads"] * dh, c["num_key_value_heads"] * dh
    shapes = {"self_attn.q_proj": (QD, D), "self_attn.k_proj": (KD, D), "self_attn.v_proj": (KD, D),
              "self_attn.o_proj": (D, QD), "mlp.gate_proj": (M, D), "mlp.up_proj": (M, D), "mlp.down_proj": (D, M),
              "self_attn.q_norm": (dh,), "self_attn.k_norm": (dh,)}
    rng = np.random.default_rng(seed)

    def mat(shape, std=0.2):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def normw(n):
        return (norm_center + 0.1 * rng.standard_normal(n)).astype(np.float32)

    t = [("model.embed_tokens.weight", mat((V, D), embed_std))]
    for l in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % l
        for part in layer:
            shape = shapes.get(part, (D,))
            if part.endswith("norm"):
                w = normw(shape)
            else:
                w = mat(shape, qk_std if part in ("self_attn.q_proj", "self_attn.k_proj") else 0.2)
            t.append((p + part + ".weight", w))
    t.append(("model.norm.weight", normw(D)))
    if not c["tie_word_embeddings"]:
        t.append(("lm_head.weight", mat((V, D))))
    write_hf_folder(folder, c, t)
    return dict(t)


def make_mistral_folder(folder):
    """The random Mistral-style model (GQA, sliding window, untied head)."""
    return random_hf_folder(folder, MISTRAL_CONFIG, 20250601, LLAMA_LAYER)


def load_mistral(folder):
    return load_hf_llama(folder, "llama-gqa-swa")


def load_hf_llama(folder, name):
    """A Llama-style HF folder as written by random_hf_folder (Mistral; Qwen 3 with its q_norm/k_norm;
    Gemma 2 with its (1 + w) norms and post-norms); the head is lm_head.weight or, when absent
    (tie_word_embeddings), the embedding."""
    c = json.load(open(os.path.join(folder, "config.json")))
    w = read_safetensors(os.path.join(folder, "model.safetensors"))
    gemma = c["model_type"] == "gemma2"
    nw = (lambda a: T(1.0 + a)) if gemma else T   # Gemma's RMSNorm: x / rms * (1 + w), 1 + w in float64
    layers = []
    for l in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % l
        L = dict(
            ln1_w=nw(w[p + "input_layernorm.weight"]),
            Wq=T(w[p + "self_attn.q_proj.weight"].T), Wk=T(w[p + "self_attn.k_proj.weight"].T),
            Wv=T(w[p + "self_attn.v_proj.weight"].T), Wo=T(w[p + "self_attn.o_proj.weight"].T),
            Wgate=T(w[p + "mlp.gate_proj.weight"].T), Wup=T(w[p + "mlp.up_proj.weight"].T),
            Wout=T(w[p + "mlp.down_proj.weight"].T))
        if gemma:  # post_attention_layernorm norms the attention output; pre_feedforward_layernorm is ln2
            L.update(post_attn_w=nw(w[p + "post_attention_layernorm.weight"]),
                     ln2_w=nw(w[p + "pre_feedforward_layernorm.weight"]),
                     post_mlp_w=nw(w[p + "post_feedforward_layernorm.weight"]))
        else:
            L["ln2_w"] = nw(w[p + "post_attention_layernorm.weight"])
        if p + "self_attn.q_norm.weight" in w:  # Qwen 3
            L.update(qnorm_w=T(w[p + "self_attn.q_norm.weight"]), knorm_w=T(w[p + "self_attn.k_norm.weight"]))
        layers.append(L)
    head = w["lm_head.weight"] if "lm_head.weight" in w else w["model.embed_tokens.weight"]
    return dict(
        name=name, norm="rmsnorm", eps=c["rms_norm_eps"], mlp="swiglu", rope="half",
        rope_theta=float(c["rope_theta"]), n_heads=c["num_attention_heads"], n_kv_heads=c["num_key_value_heads"],
        d_head=c["head_dim"], window=c.get("sliding_window") if c.get("use_sliding_window", True) else None,
        qk_norm="qnorm_w" in layers[0], W_E=T(w["model.embed_tokens.weight"]), W_pos=None,
        layers=layers, lnf_w=nw(w["model.norm.weight"]), W_U=T(head).T.contiguous())


QWEN3_CONFIG = small_config("Qwen3ForCausalLM", "qwen3", 16, rms_norm_eps=1e-06, rope_theta=1000000.0,
                            attention_bias=False, use_sliding_window=False, max_window_layers=2,
                            tie_word_embeddings=True, hidden_act="silu")

GEMMA2_CONFIG = small_config("Gemma2ForCausalLM", "gemma2", 8, rms_norm_eps=1e-06, rope_theta=10000.0,
                             attention_bias=False, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=4,
                             attn_logit_softcapping=1.5, final_logit_softcapping=6.0, sliding_window=3,
                             tie_word_embeddings=True, pad_token_id=0)


def make_qwen3_folder(folder):
    """The random Qwen 3 model: Llama blocks plus per-head q/k RMSNorm weights [head_dim], no biases, tied
    head (no lm_head.weight)."""
    layer = LLAMA_LAYER[:5] + ["self_attn.q_norm", "self_attn.k_norm"] + LLAMA_LAYER[5:]
    return random_hf_folder(folder, QWEN3_CONFIG, 20250602, layer, embed_std=0.5)


def load_qwen3(folder):
    return load_hf_llama(folder, "qwen3-qknorm")


def make_gemma2_folder(folder):
    """The random Gemma 2 model: four norms per layer (stored weight w near 0, used as 1 + w), GeGLU (gelu
    tanh), tied head; larger q/k projections so that the attention soft-cap binds."""
    layer = LLAMA_LAYER[:6] + ["pre_feedforward_layernorm"] + LLAMA_LAYER[6:] + ["post_feedforward_layernorm"]
    return random_hf_folder(folder, GEMMA2_CONFIG, 20250603, layer, embed_std=0.3, qk_std=0.3, norm_center=0.0)


def load_gemma2(folder):
    c = json.load(open(os.path.join(folder, "config.json")))
    m = load_hf_llama(folder, "gemma2-softcap")
    m.update(mlp="geglu_tanh", window_layers=list(range(0, c["num_hidden_layers"], 2)),
             embed_scale=float(np.float32(math.sqrt(c["hidden_size"]))),   # float32(sqrt(d_model))
             attn_scale=float(c["query_pre_attn_scalar"]) ** -0.5,
             attn_softcap=c["attn_logit_softcapping"], final_softcap=c["final_logit_softcapping"])
    return m


# ----------------------------------------------------------------------------------------------------
# The forward pass

class Run:
    """Options and records of one forward pass.
    freeze: set of "norm", "attention", "mlp".
    deltas: {hook name: tensor} added to the hook's tensor (zero by default; for finite differences).
    replay: {key: tensor} frozen (detached) quantities to use instead of computing them, so that the
            frozen variants' gradients are derivatives of an ordinary function (for finite differences).
    """

    def __init__(self, freeze=(), deltas=None, replay=None):
        self.freeze = set(freeze)
        self.deltas = deltas or {}
        self.replay = replay
        self.frozen = {}   # key -> detached value used in this run
        self.hooks = {}    # hook name -> tensor with retained grad

    def hook(self, name, t):
        if name in self.deltas:
            t = t + self.deltas[name]
        if t.requires_grad:
            if t.grad_fn is not None:
                t.retain_grad()
        else:
            t.requires_grad_(True)
        self.hooks[name] = t
        return t

    def const(self, key, value_fn):
        """A frozen quantity: the replayed constant, or value_fn().detach()."""
        if self.replay is not None:
            v = self.replay[key]
        else:
            v = value_fn().detach()
        self.frozen[key] = v
        return v


def norm(m, r, key, x, w, b):
    if m["norm"] == "layernorm":
        xc = x - x.mean(dim=-1, keepdim=True)
        sigma_fn = lambda: torch.sqrt((xc * xc).mean(dim=-1, keepdim=True) + m["eps"])
        sigma = r.const(key, sigma_fn) if "norm" in r.freeze else sigma_fn()
        return xc / sigma * w + b
    rms_fn = lambda: torch.sqrt((x * x).mean(dim=-1, keepdim=True) + m["eps"])
    rms = r.const(key, rms_fn) if "norm" in r.freeze else rms_fn()
    return x / rms * w


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rotary(m, x, S):
    """x: [S, n_heads * d_head] -> rotated, per head."""
    if m["rope"] is None:
        return x
    H, dh = m["n_heads"], m["d_head"]
    half = dh // 2
    inv_freq = 1.0 / (m["rope_theta"] ** (torch.arange(0, half, dtype=torch.float64) * 2.0 / dh))
    ang = torch.arange(S, dtype=torch.float64)[:, None] * inv_freq[None, :]  # [S, half]
    cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    xh = x.reshape(S, H, dh)
    if m["rope"] == "interleaved":  # run.c: pairs (2i, 2i+1), freq 10000^(-2i/head_size)
        a, b = xh[..., 0::2], xh[..., 1::2]
        out = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(S, H, dh)
    else:  # HF rotate_half: pairs (i, i + d/2)
        a, b = xh[..., :half], xh[..., half:]
        out = torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
    return out.reshape(S, H * dh)


def layer_window(m, l):
    """Layer l's sliding window, or None (Gemma 2: only the layers in window_layers)."""
    if m["window"] is None or ("window_layers" in m and l not in m["window_layers"]):
        return None
    return m["window"]


def softcap(x, c):
    """c * tanh(x / c) (Gemma 2's attention-score and final-logit soft-caps); identity when c is None."""
    return x if c is None else c * torch.tanh(x / c)


def attention_mask(S, window):
    i = torch.arange(S)[:, None]
    j = torch.arange(S)[None, :]
    keep = j <= i
    if window is not None:
        keep = keep & (j > i - window)
    return keep


def forward(m, tokens, r):
    """Returns the logits [S, d_vocab]; r.hooks holds the hook tensors."""
    S = len(tokens)
    H, KVH, dh = m["n_heads"], m["n_kv_heads"], m["d_head"]
    rep = H // KVH
    scale = m.get("attn_scale", 1.0 / math.sqrt(dh))
    # Gemma: the embedding times float32(sqrt(d_model)); hook_embed is the scaled row
    embed = m["W_E"][torch.tensor(tokens)] * m.get("embed_scale", 1.0)
    embed = r.hook("hook_embed", embed.clone())
    x = embed + m["W_pos"][:S] if m["W_pos"] is not None else embed
    for l, L in enumerate(m["layers"]):
        p = "blocks.%d." % l
        keep = attention_mask(S, layer_window(m, l))
        resid_pre = r.hook(p + "hook_resid_pre", x)
        h = norm(m, r, (l, "ln1"), resid_pre, L["ln1_w"], L.get("ln1_b"))
        q = h @ L["Wq"]
        k = h @ L["Wk"]
        v = h @ L["Wv"]
        if "bq" in L:
            q, k, v = q + L["bq"], k + L["bk"], v + L["bv"]
        if m.get("qk_norm"):  # Qwen 3: RMSNorm over each head's q and k, before RoPE
            q = norm(m, r, (l, "q_norm"), q.reshape(S, H, dh), L["qnorm_w"], None).reshape(S, H * dh)
            k = norm(m, r, (l, "k_norm"), k.reshape(S, KVH, dh), L["knorm_w"], None).reshape(S, KVH * dh)
        if rep > 1:  # kv head j serves query heads j*rep .. j*rep+rep-1
            k = k.reshape(S, KVH, 1, dh).expand(S, KVH, rep, dh).reshape(S, H * dh)
            v = v.reshape(S, KVH, 1, dh).expand(S, KVH, rep, dh).reshape(S, H * dh)
        q = r.hook(p + "attn.hook_q", q)
        k = r.hook(p + "attn.hook_k", k)
        v = r.hook(p + "attn.hook_v", v)
        qr = rotary(m, q, S).reshape(S, H, dh).transpose(0, 1)   # [H, S, dh]
        kr = rotary(m, k, S).reshape(S, H, dh).transpose(0, 1)
        vh = v.reshape(S, H, dh).transpose(0, 1)

        def pattern_fn():
            scores = softcap(qr @ kr.transpose(1, 2) * scale, m.get("attn_softcap"))
            scores = scores.masked_fill(~keep, float("-inf"))
            return torch.softmax(scores, dim=-1)

        pattern = r.const((l, "pattern"), pattern_fn) if "attention" in r.freeze else pattern_fn()
        pattern = r.hook(p + "attn.hook_pattern", pattern)
        z = r.hook(p + "attn.hook_z", (pattern @ vh).transpose(0, 1).reshape(S, H * dh))
        attn_out = z @ L["Wo"]
        if "bo" in L:
            attn_out = attn_out + L["bo"]
        if "post_attn_w" in L:  # Gemma 2: the block's output is normed before it is added
            attn_out = norm(m, r, (l, "post_attn"), attn_out, L["post_attn_w"], None)
        attn_out = r.hook(p + "hook_attn_out", attn_out)
        resid_mid = r.hook(p + "hook_resid_mid", resid_pre + attn_out)
        h2 = norm(m, r, (l, "ln2"), resid_mid, L["ln2_w"], L.get("ln2_b"))
        if m["mlp"] == "gelu_new":
            pre = h2 @ L["Win"] + L["bin"]
            if "mlp" in r.freeze:
                def ratio_fn():
                    safe = torch.where(pre == 0, torch.ones_like(pre), pre)
                    return torch.where(pre == 0, torch.full_like(pre, 0.5), gelu_new(pre) / safe)
                post = pre * r.const((l, "mlp"), ratio_fn)
            else:
                post = gelu_new(pre)
        else:
            gate = h2 @ L["Wgate"]
            up = h2 @ L["Wup"]
            act_fn = gelu_new if m["mlp"] == "geglu_tanh" else torch.nn.functional.silu  # gelu_pytorch_tanh = gelu_new
            act = r.const((l, "mlp"), lambda: act_fn(gate)) if "mlp" in r.freeze else act_fn(gate)
            post = act * up
        post = r.hook(p + "mlp.hook_post", post)
        mlp_out = post @ L["Wout"]
        if "bout" in L:
            mlp_out = mlp_out + L["bout"]
        if "post_mlp_w" in L:
            mlp_out = norm(m, r, (l, "post_mlp"), mlp_out, L["post_mlp_w"], None)
        mlp_out = r.hook(p + "hook_mlp_out", mlp_out)
        x = r.hook(p + "hook_resid_post", resid_mid + mlp_out)
    xf = norm(m, r, ("final",), x, m["lnf_w"], m.get("lnf_b"))
    return softcap(xf @ m["W_U"], m.get("final_softcap"))


def metric_value(spec, logits):
    last = logits[spec["position"]]
    if spec["kind"] == "logit_diff":
        return last[spec["token"]] - last[spec["counter_token"]]
    logp = torch.log_softmax(last, dim=-1)
    if spec["kind"] == "logprob":
        return logp[spec["token"]]
    ref = torch.log_softmax(T(spec["reference_logits"]), dim=-1)
    return (ref.exp() * (ref - logp)).sum()


def hook_shapes(m, S):
    H, dh, D = m["n_heads"], m["d_head"], m["W_E"].shape[1]
    L0 = m["layers"][0]
    d_mlp = (L0["Win"] if "Win" in L0 else L0["Wup"]).shape[1]
    shapes = {"hook_embed": [S, D]}
    for l in range(len(m["layers"])):
        p = "blocks.%d." % l
        for n in ("hook_resid_pre", "hook_resid_mid", "hook_resid_post", "hook_attn_out", "hook_mlp_out"):
            shapes[p + n] = [S, D]
        shapes[p + "mlp.hook_post"] = [S, d_mlp]
        for n in ("attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_z"):
            shapes[p + n] = [S, H * dh]
        shapes[p + "attn.hook_pattern"] = [H, S, S]
    return shapes


def pattern_keep(m, hook_name, S):
    """The kept (query, key) cells of a blocks.l.attn.hook_pattern hook."""
    return attention_mask(S, layer_window(m, int(hook_name.split(".")[1])))


def gradients(m, tokens, spec, freeze):
    """Metric value, last logits and {hook: gradient} for one variant (float64 tensors)."""
    r = Run(freeze)
    logits = forward(m, tokens, r)
    value = metric_value(spec, logits)
    value.backward()
    grads = {}
    for name, shape in hook_shapes(m, len(tokens)).items():
        t = r.hooks[name]
        g = t.grad if t.grad is not None else torch.zeros_like(t)
        if name.endswith("attn.hook_pattern"):
            keep = pattern_keep(m, name, len(tokens))
            g = torch.where(keep[None, :, :], g, torch.zeros_like(g))
        if list(g.shape) != shape:
            raise RuntimeError("%s: shape %s, expected %s" % (name, list(g.shape), shape))
        grads[name] = g.detach().clone()
    return value.item(), logits[spec["position"]].detach().clone(), grads, r.frozen


def finite_difference_check(m, tokens, spec, freeze, hook_names, eps=1e-6):
    """Max relative error (max |numeric - autograd| / max |autograd|) of the hooks' gradients against
    central differences of the metric in float64; frozen quantities are replayed as constants. Also runs
    torch.autograd.gradcheck on one hook's perturbation."""
    value, _, grads, frozen = gradients(m, tokens, spec, freeze)
    worst = 0.0
    for name in hook_names:
        shape = grads[name].shape
        num = torch.zeros(shape)
        flat = num.view(-1)
        for i in range(flat.numel()):
            vals = []
            for sgn in (1.0, -1.0):
                d = torch.zeros(shape)
                d.view(-1)[i] = sgn * eps
                with torch.no_grad():
                    r = Run(freeze, deltas={name: d}, replay=frozen)
                    vals.append(metric_value(spec, forward(m, tokens, r)).item())
            flat[i] = (vals[0] - vals[1]) / (2 * eps)
        if name.endswith("attn.hook_pattern"):
            keep = pattern_keep(m, name, len(tokens))
            num = torch.where(keep[None, :, :], num, torch.zeros_like(num))
        ana = grads[name]
        err = (num - ana).abs().max().item() / max(ana.abs().max().item(), 1e-300)
        worst = max(worst, err)
        print("    finite differences %-28s freeze %-28s max |grad| %.3e  rel. error %.2e"
              % (name, str(freeze), ana.abs().max().item(), err))
    # gradcheck (autograd's own analytic vs numeric Jacobian) of the metric as a function of one hook's
    # additive perturbation, with the frozen quantities replayed
    name = hook_names[0]

    def f(delta):
        return metric_value(spec, forward(m, tokens, Run(freeze, deltas={name: delta}, replay=frozen)))

    ok = torch.autograd.gradcheck(f, (torch.zeros(grads[name].shape, requires_grad=True),), eps=1e-6, atol=1e-7, rtol=1e-5)
    print("    torch.autograd.gradcheck on %s freeze %s: %s" % (name, freeze, ok))
    return worst


def metric_entry(m, tokens, spec):
    entry = {"kind": spec["kind"]}
    for k in ("token", "counter_token", "position", "clean_tokens", "reference_logits"):
        if k in spec:
            entry[k] = spec[k]
    variants = []
    value = last = None
    for freeze in VARIANTS:
        v, lg, grads, _ = gradients(m, tokens, spec, freeze)
        if value is None:
            value, last = v, lg
        elif abs(v - value) > 1e-12 * (1 + abs(value)):
            raise RuntimeError("metric value changed with the variant")
        variants.append({"freeze": freeze,
                         "gradients": {n: {"shape": list(g.shape), "data": g.reshape(-1).tolist()} for n, g in grads.items()}})
    entry["value"] = value
    entry["logits_last"] = last.tolist()
    entry["variants"] = variants
    return entry


def write_reference(m, model_rel, fmt, tokens, specs):
    doc = {"source": "tools/gradient_references.py, PyTorch %s, float64 autograd" % torch.__version__,
           "model": model_rel, "format": fmt, "tokens": tokens,
           "metrics": [metric_entry(m, tokens, s) for s in specs]}
    path = os.path.join(OUT_DIR, m["name"] + ".json")
    write_text(path, dump_json(doc) + "\n")
    print("  wrote %s (%d bytes)" % (os.path.relpath(path, REPO), os.path.getsize(path)))
    for mt in doc["metrics"]:
        print("    %-10s value %.9g" % (mt["kind"], mt["value"]))
    return path


def last_logits(m, tokens):
    with torch.no_grad():
        return forward(m, tokens, Run()).detach()


# ----------------------------------------------------------------------------------------------------
# Forward checks

def check_tiny_gpt2(m):
    ref = json.load(open(testdata("tiny-gpt2", "reference.json")))
    want = np.array(ref["variants"]["float32"]["logits"])
    with torch.no_grad():
        got = forward(m, ref["token_ids"], Run()).numpy()
    err = np.abs(got - want).max()
    print("  tiny-gpt2 forward vs picoGPT reference.json (18 positions): max |diff| %.2e (logits up to %.1f)"
          % (err, np.abs(want).max()))
    if err > 1e-6:
        raise RuntimeError("tiny-gpt2 forward does not match reference.json")
    return err


def check_stories(m):
    ref = json.load(open(testdata("stories260K", "reference.json")))
    mainp = ref["main"]
    toks = mainp["prompt_token_ids"]
    with torch.no_grad():
        got = forward(m, toks, Run()).numpy()
    worst = 0.0
    scale = 0.0
    for row in mainp["logits_per_prompt_position"]:
        want = np.array(row["logits"])
        worst = max(worst, np.abs(got[row["position"]] - want).max())
        scale = max(scale, np.abs(want).max())
    for o in ref["other_prompts"]:
        want = np.array(o["logits_last_prompt_position"])
        g = last_logits(m, o["prompt_token_ids"])[-1].numpy()
        worst = max(worst, np.abs(g - want).max())
        scale = max(scale, np.abs(want).max())
    argmax = int(np.argmax(got[-1]))
    print("  stories260K forward vs run.c reference.json (5 positions of the main prompt + 2 other prompts' last):"
          " max |diff| %.2e (logits up to %.1f), argmax %d (run.c %d)"
          % (worst, scale, argmax, mainp["argmax_last_prompt_position"]))
    if worst > 1e-4 or argmax != mainp["argmax_last_prompt_position"]:
        raise RuntimeError("stories260K forward does not match run.c")
    return worst


def check_with_attnscope(args, tokens, ours):
    """Optional: if build/app/attnscope exists (the build folder: $ATTNSCOPE_BUILD_DIR, default build/), compare
    its last logits for every prefix of tokens with ours (max |diff| / max |logit|). Returns None when the
    binary is absent or fails."""
    exe = os.path.join(os.environ.get("ATTNSCOPE_BUILD_DIR", os.path.join(REPO, "build")), "app", "attnscope")
    if not os.access(exe, os.X_OK):
        print("    (no %s: AttnScope check skipped)" % exe)
        return None
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "dump.json")
        for n in range(1, len(tokens) + 1):
            cmd = [exe] + args + ["--token-ids", ",".join(map(str, tokens[:n])), "--dump-json", out, "--force"]
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
            if proc.returncode != 0:
                print("    AttnScope failed: %s" % proc.stderr.strip().splitlines()[-1:])
                return None
            got = np.array(json.load(open(out))["logits_last"])
            want = ours[n - 1].numpy()
            worst = max(worst, np.abs(got - want).max() / np.abs(want).max())
    print("    AttnScope (%s) vs this forward, last logits of all %d prefixes: max |diff| / max |logit| = %.2e"
          % (exe, len(tokens), worst))
    return worst


# ----------------------------------------------------------------------------------------------------

def check_softcaps_bind(m, tokens, ours):
    """Dropping either soft-cap must move the logits by more than 1% of the largest."""
    for cap in ("attn_softcap", "final_softcap"):
        uncapped = last_logits(dict(m, **{cap: None}), tokens)
        change = ((uncapped - ours).abs().max() / ours.abs().max()).item()
        print("  %s without %s: logits change by %.3g of max |logit|" % (m["name"], cap, change))
        if not change > 1e-2:
            raise RuntimeError("%s: %s does not bind" % (m["name"], cap))


def random_folder_case(name, make, load, tokens, token, counter_token, fd_checks, check=None):
    """Writes the random model's folder OUT_REL/name and name.json (metric logit_diff at the last position),
    compares AttnScope's logits when it is built, and returns the worst finite-difference error of
    fd_checks: [(freeze, [hook, ...]), ...]."""
    folder = os.path.join(OUT_DIR, name)
    make(folder)
    m = load(folder)
    S = len(tokens)
    ours = last_logits(m, tokens)
    if check is not None:
        check(m, tokens, ours)
    specs = [{"kind": "logit_diff", "token": token, "counter_token": counter_token, "position": S - 1}]
    write_reference(m, OUT_REL + "/" + name, "hf", tokens, specs)
    rel = check_with_attnscope(["--model", OUT_REL + "/" + name], tokens, ours)
    if rel is not None and rel > 1e-4:
        raise RuntimeError("AttnScope's logits differ from this forward's on " + name)
    worst = max(finite_difference_check(m, tokens, specs[0], freeze, hooks) for freeze, hooks in fd_checks)
    for f in sorted(os.listdir(folder)):
        print("  wrote %s/%s (%d bytes)" % (OUT_REL + "/" + name, f, os.path.getsize(os.path.join(folder, f))))
    return worst


def main():
    print("PyTorch", torch.__version__)
    results = {}

    # 1. tiny-gpt2 -------------------------------------------------------------------------------
    m = load_tiny_gpt2()
    check_tiny_gpt2(m)
    tokens = [511, 464, 269, 265, 264, 265, 319]           # <|endoftext|> + "The cat sat on the"
    clean = [511, 464, 269, 265, 264, 265, 285]              # same length, last token differs
    ref_logits = last_logits(m, clean)[-1]
    S = len(tokens)
    specs = [
        {"kind": "logit_diff", "token": 271, "counter_token": 33, "position": S - 1},  # "is" (top-1) vs "B" (top-3)
        {"kind": "logprob", "token": 271, "position": S - 1},
        {"kind": "kl", "position": S - 1, "clean_tokens": clean, "reference_logits": ref_logits.tolist()},
    ]
    # the stored reference logits (9 significant digits) define P_ref, so use them as stored
    specs[2]["reference_logits"] = [float(fmt_float(x)) for x in specs[2]["reference_logits"]]
    write_reference(m, TESTDATA_REL + "/tiny-gpt2", "hf", tokens, specs)
    results["tiny-gpt2"] = max(
        finite_difference_check(m, tokens, specs[0], [], ["blocks.0.attn.hook_pattern", "blocks.1.hook_resid_mid"]),
        finite_difference_check(m, tokens, specs[1], ["norm", "attention", "mlp"], ["blocks.0.mlp.hook_post", "blocks.0.attn.hook_q"]),
        finite_difference_check(m, tokens, specs[2], ["norm"], ["blocks.0.attn.hook_k"]),
        finite_difference_check(m, tokens, specs[2], ["mlp"], ["blocks.1.attn.hook_v"]),
        finite_difference_check(m, tokens, specs[0], ["attention"], ["hook_embed"]))

    # 2. stories260K --------------------------------------------------------------------------------
    m = load_llama2c(testdata("stories260K", "stories260K.bin"))
    check_stories(m)
    tokens = [1, 403, 407, 261, 378, 432, 383]               # BOS "Once upon a time, there"
    S = len(tokens)
    specs = [{"kind": "logit_diff", "token": 286, "counter_token": 382, "position": S - 1}]  # " was" (top-1) vs " we" (top-2)
    write_reference(m, TESTDATA_REL + "/stories260K/stories260K.bin", "llama2c", tokens, specs)
    results["stories260K"] = max(
        finite_difference_check(m, tokens, specs[0], [], ["blocks.1.attn.hook_k", "blocks.0.attn.hook_pattern"]),
        finite_difference_check(m, tokens, specs[0], ["norm", "attention", "mlp"], ["blocks.2.attn.hook_v", "blocks.3.mlp.hook_post"]),
        finite_difference_check(m, tokens, specs[0], ["mlp"], ["blocks.4.hook_resid_pre"]))

    # 3.-5. the random HF folders ---------------------------------------------------------------------
    tokens = [1, 17, 42, 5, 33, 60, 8, 25]
    results["llama-gqa-swa"] = random_folder_case(
        "llama-gqa-swa", make_mistral_folder, load_mistral, tokens, 34, 42,  # top-1 vs top-2
        [([], ["blocks.0.attn.hook_k", "blocks.0.attn.hook_q", "blocks.1.attn.hook_pattern"]),
         (["norm", "attention", "mlp"], ["blocks.0.attn.hook_v", "blocks.0.hook_resid_mid"]),
         (["attention"], ["blocks.0.mlp.hook_post"])])
    # 6 positions for the next two: qwen3's head_dim 16 doubles the q/k/v/z hooks, and gemma2's global layer 1
    # leaves no zero gradients; the files stay near llama-gqa-swa.json's size
    results["qwen3-qknorm"] = random_folder_case(
        "qwen3-qknorm", make_qwen3_folder, load_qwen3, tokens[:6], 52, 24,  # top-1 vs top-2
        [([], ["blocks.0.attn.hook_q", "blocks.0.attn.hook_k", "blocks.1.attn.hook_pattern"]),
         (["norm"], ["blocks.1.attn.hook_k", "blocks.0.hook_resid_mid"]),
         (["norm", "attention", "mlp"], ["blocks.0.attn.hook_v", "blocks.1.mlp.hook_post"])])
    results["gemma2-softcap"] = random_folder_case(
        "gemma2-softcap", make_gemma2_folder, load_gemma2, tokens[:6], 60, 59,  # top-1 vs top-2
        [([], ["blocks.0.attn.hook_pattern", "blocks.0.attn.hook_q", "blocks.1.hook_attn_out"]),
         (["norm"], ["blocks.0.hook_mlp_out", "blocks.1.attn.hook_k"]),
         (["attention"], ["blocks.0.attn.hook_v", "hook_embed"]),
         (["norm", "attention", "mlp"], ["blocks.1.mlp.hook_post", "blocks.0.hook_resid_mid"])],
        check=check_softcaps_bind)

    print("finite-difference max relative errors:", {k: "%.2e" % v for k, v in results.items()})
    if max(results.values()) > 1e-5:
        print("gradient check FAILED", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
