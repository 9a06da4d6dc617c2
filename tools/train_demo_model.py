#!/usr/bin/python3
"""Train AttnScope's bundled demo model: a small GPT-2 on the King James Bible.

Everything comes from Debian packages; nothing is downloaded:
  apt-get install bible-kjv bible-kjv-text python3-torch python3-numpy python3-regex \
      libopenblas0-pthread
(libopenblas0-pthread is only for speed: without it Debian's torch falls back to the reference
BLAS, several times slower.)

Run (about 30 minutes on 2 busy cores):
  OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 tools/train_demo_model.py --out resources/demo

Stages:
  1. Corpus: `bible -f "Gen1:1-Rev22:21"` prints one verse per line with its reference; the
     reference is stripped, verses of a chapter are joined with newlines, and each chapter is one
     document.
  2. Tokenizer: byte-level BPE learned GPT-2 style (bytes_to_unicode map and pretokenizer regex
     from openai/gpt-2 src/encoder.py). vocab.json holds the 256 byte symbols first (ids 0..255
     in bytes_to_unicode order, as GPT-2 and tiny-gpt2 do), then one id per merge in rank order,
     then <|endoftext|> as the last id. The training data is encoded with the standard GPT-2
     bpe() algorithm (lowest-rank pair first), the same algorithm the C++ tokenizer runs.
  3. Model: GPT2LMHeadModel written out in torch (Conv1D [in, out] weights, gelu_new, tied
     lm_head). Half of the training sequences get a span of their own corpus text copied to a
     later position, which encourages induction heads.
  4. Files: config.json, model.safetensors (F32, written by hand), vocab.json, merges.txt in
     exact Hugging Face GPT-2 layout; tensor names without the `transformer.` prefix.
  5. Analysis: per-head previous-token, induction and first-token (BOS) attention scores, greedy
     samples; written with the training facts into README.md in the output folder.

Only the standard library, torch, numpy and regex are used.
"""

import argparse
import collections
import json
import math
import os
import re
import struct
import subprocess
import sys
import time

import numpy as np
import regex
import torch
import torch.nn as nn
import torch.nn.functional as F

EOT = "<|endoftext|>"
# GPT-2 pretokenizer, openai/gpt-2 src/encoder.py.
GPT2_SPLIT = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


# ----------------------------------------------------------------------------- corpus

def package_version(pkg):
    """Installed Debian version of `pkg`, via dpkg-query."""
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], check=True,
                          capture_output=True, text=True).stdout.strip()


def load_kjv_chapters():
    """The KJV text from the `bible` program of package bible-kjv (data: bible-kjv-text).

    Returns a list of chapters; each chapter is its verses joined with "\\n".
    """
    out = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True,
                         stdin=subprocess.DEVNULL).stdout.decode("ascii")
    ref = re.compile(r"^(\w+?)(\d+):(\d+) (.*)$")
    chapters, current, key = [], [], None
    for line in out.splitlines():
        m = ref.match(line)
        if not m:
            raise RuntimeError("unexpected line from bible: %r" % line)
        k = (m.group(1), m.group(2))
        if k != key and current:
            chapters.append("\n".join(current))
            current = []
        key = k
        current.append(m.group(4).strip())
    chapters.append("\n".join(current))
    return chapters


# ----------------------------------------------------------------------------- tokenizer

def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode map (openai/gpt-2 src/encoder.py).

    Returns (list of 256 bytes in GPT-2 id order, dict byte -> char)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, {b: chr(c) for b, c in zip(bs, cs)}


def pretokenize(text, byte_map):
    """GPT-2 pretokens of `text`, each mapped to its byte-unicode string."""
    return ["".join(byte_map[b] for b in w.encode("utf-8")) for w in GPT2_SPLIT.findall(text)]


def learn_bpe(word_counts, byte_order, byte_map, vocab_size):
    """Learn byte-level BPE merges on pretoken counts.

    Each step merges the most frequent adjacent pair (ties: lexicographically smallest pair, for
    determinism) in every word, left to right, until the vocabulary (256 bytes + merge results +
    <|endoftext|>) has `vocab_size` entries. Pair counts are updated incrementally.
    Returns (vocab dict token -> id, list of merges (a, b) in rank order).
    """
    vocab = {byte_map[b]: i for i, b in enumerate(byte_order)}
    words = [list(w) for w in word_counts]
    counts = list(word_counts.values())
    pair_counts = collections.Counter()
    where = collections.defaultdict(set)
    for wi, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_counts[(a, b)] += counts[wi]
            where[(a, b)].add(wi)
    merges = []
    while len(vocab) < vocab_size - 1 and pair_counts:
        best = min(pair_counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        if pair_counts[best] < 2:
            break
        a, b = best
        new = a + b
        merges.append(best)
        if new not in vocab:
            vocab[new] = len(vocab)
        for wi in list(where[best]):
            w = words[wi]
            c = counts[wi]
            for p in zip(w, w[1:]):
                pair_counts[p] -= c
                if pair_counts[p] <= 0:
                    del pair_counts[p]
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(new)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            words[wi] = out
            for p in zip(out, out[1:]):
                pair_counts[p] += c
                where[p].add(wi)
        del where[best]
        pair_counts.pop(best, None)
    vocab[EOT] = len(vocab)
    return vocab, merges


class GPT2Encoder:
    """Standard GPT-2 byte-level BPE encoder (openai/gpt-2 src/encoder.py bpe())."""

    def __init__(self, vocab, merges, byte_map):
        self.vocab = vocab
        self.inv = {i: t for t, i in vocab.items()}
        self.ranks = {m: r for r, m in enumerate(merges)}
        self.byte_map = byte_map
        self.byte_unmap = {c: b for b, c in byte_map.items()}
        self.cache = {}

    def bpe(self, token):
        """Merge the lowest-rank adjacent pair, all its occurrences, until none is mergeable."""
        if token in self.cache:
            return self.cache[token]
        word = list(token)
        while len(word) > 1:
            pairs = set(zip(word, word[1:]))
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            a, b = best
            out, i = [], 0
            while i < len(word):
                try:
                    j = word.index(a, i)
                except ValueError:
                    out.extend(word[i:])
                    break
                out.extend(word[i:j])
                i = j
                if i < len(word) - 1 and word[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = out
        self.cache[token] = word
        return word

    def encode(self, text):
        return [self.vocab[t] for w in pretokenize(text, self.byte_map) for t in self.bpe(w)]

    def decode(self, ids):
        s = "".join(self.inv[i] for i in ids)
        return bytes(self.byte_unmap[c] for c in s).decode("utf-8", errors="replace")


def write_tokenizer(out_dir, vocab, merges):
    """vocab.json and merges.txt in the layout Hugging Face's GPT2Tokenizer saves."""
    with open(os.path.join(out_dir, "vocab.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(vocab, ensure_ascii=False))
    with open(os.path.join(out_dir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write("%s %s\n" % (a, b))


# ----------------------------------------------------------------------------- model

def gelu_new(x):
    """GELU, tanh approximation (HF ACT2FN["gelu_new"])."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class Conv1D(nn.Module):
    """HF GPT-2 Conv1D: weight [in, out], y = x @ W + b."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(
            *x.shape[:-1], -1)


class Block(nn.Module):
    def __init__(self, d, n_head, eps):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.attn = nn.Module()
        self.attn.c_attn = Conv1D(d, 3 * d)
        self.attn.c_proj = Conv1D(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.mlp = nn.Module()
        self.mlp.c_fc = Conv1D(d, 4 * d)
        self.mlp.c_proj = Conv1D(4 * d, d)

    def forward(self, x, return_pattern=False):
        B, T, D = x.shape
        H = self.n_head
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-1, -2) / math.sqrt(D // H)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        pattern = s.softmax(-1)
        z = pattern @ v
        z = z.transpose(1, 2).reshape(B, T, D)
        x = x + self.attn.c_proj(z)
        x = x + self.mlp.c_proj(gelu_new(self.mlp.c_fc(self.ln_2(x))))
        return x, (pattern if return_pattern else None)


class GPT2(nn.Module):
    """GPT2LMHeadModel (HF transformers modeling_gpt2), dropout-free, tied lm_head."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg["n_embd"]
        self.wte = nn.Embedding(cfg["vocab_size"], d)
        self.wpe = nn.Embedding(cfg["n_positions"], d)
        self.h = nn.ModuleList([Block(d, cfg["n_head"], cfg["layer_norm_epsilon"])
                                for _ in range(cfg["n_layer"])])
        self.ln_f = nn.LayerNorm(d, eps=cfg["layer_norm_epsilon"])
        for name, p in self.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                std = 0.02
                if name.endswith("c_proj.weight"):
                    std = 0.02 / math.sqrt(2 * cfg["n_layer"])  # GPT-2 paper, residual scaling
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, return_patterns=False):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        patterns = []
        for blk in self.h:
            x, p = blk(x, return_patterns)
            patterns.append(p)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return logits, patterns


# ----------------------------------------------------------------------------- files

def write_safetensors(path, tensors):
    """safetensors format: u64 LE header length, JSON header (space-padded to 8), LE data."""
    header = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, t in tensors:
        a = np.ascontiguousarray(t.detach().cpu().numpy().astype("<f4"))
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Read back an F32 safetensors file into {name: tensor}; checks offsets are contiguous."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out, expect = {}, 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        a, b = info["data_offsets"]
        assert info["dtype"] == "F32" and a == expect, name
        expect = b
        arr = np.frombuffer(data[8 + n + a:8 + n + b], dtype="<f4").reshape(info["shape"])
        out[name] = torch.from_numpy(arr.copy())
    assert 8 + n + expect == len(data), "trailing bytes"
    return out


def state_for_export(model):
    """(name, tensor) pairs in HF GPT-2 order, without the `transformer.` prefix."""
    names = ["wte.weight", "wpe.weight"]
    for i in range(model.cfg["n_layer"]):
        for part in ["ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"]:
            names += ["h.%d.%s.weight" % (i, part), "h.%d.%s.bias" % (i, part)]
    names += ["ln_f.weight", "ln_f.bias"]
    sd = model.state_dict()
    return [(n, sd[n]) for n in names]


def hf_config(cfg, eot_id):
    return {
        "activation_function": "gelu_new",
        "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0, "summary_first_dropout": 0.0,
        "bos_token_id": eot_id, "eos_token_id": eot_id,
        "initializer_range": 0.02, "layer_norm_epsilon": cfg["layer_norm_epsilon"],
        "model_type": "gpt2", "n_ctx": cfg["n_positions"], "n_embd": cfg["n_embd"],
        "n_head": cfg["n_head"], "n_inner": None, "n_layer": cfg["n_layer"],
        "n_positions": cfg["n_positions"], "scale_attn_weights": True,
        "tie_word_embeddings": True, "torch_dtype": "float32", "use_cache": True,
        "vocab_size": cfg["vocab_size"],
    }


# ----------------------------------------------------------------------------- training

def make_batch(stream, batch, n_ctx, eot_id, gen, repeat_frac, half_frac=0.0, random_frac=0.0, vocab=0):
    """[batch, n_ctx] windows of the token stream, each starting with <|endoftext|> as BOS.

    With probability `repeat_frac` a span (8..64 tokens) of the window is copied to a later
    position inside it, so the second copy can be predicted by induction.
    With probability `half_frac` the window is [BOS] + A + A + …: a corpus span of random length T
    (4..n_ctx/2) repeated to fill it. With probability `random_frac` the window is [BOS] + R + R + …
    with R of random length T made of uniformly random token ids (the synthetic induction task of
    Olsson et al. 2022, where only copying lowers the loss). The period varies, so attending to a
    fixed offset cannot stand in for induction.
    """
    starts = torch.randint(0, len(stream) - n_ctx, (batch,), generator=gen)
    x = torch.empty(batch, n_ctx, dtype=torch.long)
    x[:, 0] = eot_id
    for r, s in enumerate(starts.tolist()):
        x[r, 1:] = stream[s:s + n_ctx - 1]
        u = torch.rand(1, generator=gen).item()
        half = (n_ctx - 1) // 2
        if u < random_frac + half_frac:
            # a block of random period T (so no fixed positional offset can stand in for copying),
            # repeated to fill the window: random ids, or corpus text
            T = int(torch.randint(4, half + 1, (1,), generator=gen))
            if u < random_frac:
                block = torch.randint(0, vocab - 1, (T,), generator=gen)
            else:
                block = x[r, 1:1 + T].clone()
            reps = (n_ctx - 1 + T - 1) // T
            x[r, 1:] = block.repeat(reps)[:n_ctx - 1]
            continue
        if torch.rand(1, generator=gen).item() < repeat_frac:
            L = int(torch.randint(8, min(65, n_ctx // 2 - 1), (1,), generator=gen))
            src = int(torch.randint(1, n_ctx - 2 * L, (1,), generator=gen))
            dst = int(torch.randint(src + L, n_ctx - L + 1, (1,), generator=gen))
            x[r, dst:dst + L] = x[r, src:src + L].clone()
    return x


def train(model, stream, val_stream, args, eot_id, log):
    gen = torch.Generator().manual_seed(args.seed)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    n_ctx = args.train_ctx or model.cfg["n_positions"]
    warm = max(1, args.steps // 20)
    t0 = time.time()
    history = []
    for step in range(args.steps):
        if time.time() - t0 > args.max_minutes * 60:
            log("stopped at step %d: --max-minutes %.0f reached" % (step, args.max_minutes))
            break
        lr = args.lr * min(1.0, (step + 1) / warm) * (
            0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, step / args.steps))))
        for g in opt.param_groups:
            g["lr"] = lr
        x = make_batch(stream, args.batch, n_ctx, eot_id, gen, args.repeat_frac, args.half_frac,
                       args.random_frac, model.cfg["vocab_size"])
        logits, _ = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        history.append(loss.item())
        if step % 25 == 0 or step == args.steps - 1:
            log("step %d/%d loss %.4f (mean of last 25: %.4f) lr %.2e  %.0fs" % (
                step, args.steps, loss.item(), np.mean(history[-25:]), lr, time.time() - t0))
    return time.time() - t0, history


@torch.no_grad()
def eval_loss(model, stream, eot_id, n_ctx, n_windows=64):
    """Mean next-token loss on non-overlapping held-out windows (BOS first, no repeated spans)."""
    losses = []
    for s in range(0, min(len(stream) - n_ctx, n_windows * (n_ctx - 1)), n_ctx - 1):
        x = torch.cat([torch.tensor([eot_id]), stream[s:s + n_ctx - 1]])[None]
        logits, _ = model(x[:, :-1])
        losses.append(F.cross_entropy(logits[0], x[0, 1:]).item())
    return float(np.mean(losses))


# ----------------------------------------------------------------------------- analysis

@torch.no_grad()
def head_scores(model, seqs, period):
    """Per-head scores on [batch, 1 + k*period] sequences: BOS then a block repeated k times.

    previous-token: mean A[i, i-1] over i >= 1; induction: mean A[i, i-period+1] over positions
    i whose token occurred one period earlier (i >= 1+period); first-token: mean A[i, 0], i >= 1.
    Returns {(layer, head): (prev, induction, bos)}.
    """
    _, patterns = model(seqs, return_patterns=True)
    T = seqs.shape[1]
    i_all = torch.arange(1, T)
    i_ind = torch.arange(1 + period, T)
    out = {}
    for l, p in enumerate(patterns):
        for h in range(p.shape[1]):
            a = p[:, h]
            prev = a[:, i_all, i_all - 1].mean().item()
            ind = a[:, i_ind, i_ind - period + 1].mean().item()
            bos = a[:, i_all, 0].mean().item()
            out[(l, h)] = (prev, ind, bos)
    return out


@torch.no_grad()
def greedy(model, enc, prompt, n, eot_id):
    ids = [eot_id] + enc.encode(prompt)
    for _ in range(n):
        logits, _ = model(torch.tensor([ids[-model.cfg["n_positions"]:]]))
        ids.append(int(logits[0, -1].argmax()))
    return enc.decode(ids[1:])


def analyse(model, enc, eot_id, seed):
    phrase = " In the beginning God created the heaven and the earth."
    p_ids = enc.encode(phrase)
    phrase_seq = torch.tensor([[eot_id] + p_ids * 3])
    g = torch.Generator().manual_seed(seed)
    period = 50
    rand = torch.randint(0, eot_id, (16, period), generator=g)
    rand_seq = torch.cat([torch.full((16, 1), eot_id), rand, rand], dim=1)
    return {
        "phrase": (phrase, len(p_ids), head_scores(model, phrase_seq, len(p_ids))),
        "random": (period, head_scores(model, rand_seq, period)),
    }


def score_table(scores):
    lines = ["| head | prev-token (phrase) | induction (phrase) | BOS (phrase) | "
             "prev-token (random) | induction (random) | BOS (random) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    ph = scores["phrase"][2]
    rd = scores["random"][1]
    for key in sorted(ph):
        a, b = ph[key], rd[key]
        lines.append("| L%dH%d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |" % (
            key[0], key[1], a[0], a[1], a[2], b[0], b[1], b[2]))
    return "\n".join(lines)


def best_heads(scores):
    rd = scores["random"][1]
    prev = max(rd, key=lambda k: rd[k][0])
    ind = max(rd, key=lambda k: rd[k][1])
    return prev, rd[prev][0], ind, rd[ind][1]


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="resources/demo")
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--n-positions", type=int, default=256)
    ap.add_argument("--steps", type=int, default=240)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--repeat-frac", type=float, default=0.5)
    ap.add_argument("--half-frac", type=float, default=0.0,
                    help="fraction of windows [BOS]+A+A (corpus text repeated)")
    ap.add_argument("--random-frac", type=float, default=0.0,
                    help="fraction of windows [BOS]+R+R (random token ids repeated)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--init-from", default=None,
                    help="start from this model.safetensors (same shape) instead of random init")
    ap.add_argument("--train-ctx", type=int, default=0,
                    help="training window length (default n_positions)")
    ap.add_argument("--max-minutes", type=float, default=30.0,
                    help="stop training early (and say so in README.md) after this wall time")
    ap.add_argument("--analyse-only", action="store_true",
                    help="skip training; load the files in --out and re-run the analysis")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    log_lines = []

    def log(msg):
        print(msg, flush=True)
        log_lines.append(msg)

    t_start = time.time()
    chapters = load_kjv_chapters()
    log("corpus: %d chapters, %d characters" % (len(chapters), sum(map(len, chapters))))
    byte_order, byte_map = bytes_to_unicode()

    if args.analyse_only:
        with open(os.path.join(args.out, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        with open(os.path.join(args.out, "merges.txt"), encoding="utf-8") as f:
            merges = [tuple(l.rstrip("\n").split(" ")) for l in f.readlines()[1:]]
    else:
        word_counts = collections.Counter()
        for ch in chapters:
            word_counts.update(pretokenize(ch, byte_map))
        t = time.time()
        vocab, merges = learn_bpe(word_counts, byte_order, byte_map, args.vocab_size)
        log("BPE: %d merges, vocab %d, %.0fs" % (len(merges), len(vocab), time.time() - t))
        write_tokenizer(args.out, vocab, merges)
    eot_id = vocab[EOT]
    assert eot_id == len(vocab) - 1
    enc = GPT2Encoder(vocab, merges, byte_map)

    t = time.time()
    # Hold out every 50th chapter for the validation loss.
    train_ids, val_ids = [], []
    for ci, ch in enumerate(chapters):
        target = val_ids if ci % 50 == 25 else train_ids
        target.append(eot_id)
        target.extend(enc.encode(ch))
    stream = torch.tensor(train_ids, dtype=torch.long)
    val_stream = torch.tensor(val_ids, dtype=torch.long)
    log("encoded: %d train tokens, %d validation tokens, %.0fs" % (
        len(train_ids), len(val_ids), time.time() - t))
    assert enc.decode(enc.encode(chapters[0])) == chapters[0]

    cfg = {"vocab_size": len(vocab), "n_positions": args.n_positions, "n_embd": args.n_embd,
           "n_layer": args.n_layer, "n_head": args.n_head, "layer_norm_epsilon": 1e-5}
    model = GPT2(cfg)
    model_path = os.path.join(args.out, "model.safetensors")
    if args.analyse_only:
        model.load_state_dict(read_safetensors(model_path), strict=True)
        train_time, history = float("nan"), [float("nan")]
    else:
        n_params = sum(p.numel() for p in model.parameters())
        log("model: %d parameters" % n_params)
        if args.init_from:
            model.load_state_dict(read_safetensors(args.init_from), strict=True)
            log("initialised from %s" % args.init_from)
        train_time, history = train(model, stream, val_stream, args, eot_id, log)
        with open(os.path.join(args.out, "config.json"), "w") as f:
            json.dump(hf_config(cfg, eot_id), f, indent=2)
            f.write("\n")
        write_safetensors(model_path, state_for_export(model))

    # Verify the written file by loading it into a fresh model.
    model = GPT2(cfg)
    model.load_state_dict(read_safetensors(model_path), strict=True)
    model.eval()
    val_loss = eval_loss(model, val_stream, eot_id, cfg["n_positions"])
    log("validation loss %.4f" % val_loss)

    scores = analyse(model, enc, eot_id, args.seed)
    log(score_table(scores))
    prompts = ["In the beginning", "And Jesus said unto them,", "The LORD is my shepherd;"]
    samples = [(p, greedy(model, enc, p, 30, eot_id)) for p in prompts]
    for p, s in samples:
        log("sample: %r" % s)

    files = ["config.json", "model.safetensors", "vocab.json", "merges.txt"]
    sizes = {f: os.path.getsize(os.path.join(args.out, f)) for f in files}
    total = sum(sizes.values())
    log("sizes: %s total %d" % (sizes, total))
    if args.analyse_only:
        return

    prev_h, prev_s, ind_h, ind_s = best_heads(scores)
    final_train = float(np.mean(history[-50:]))
    cmd = "OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 " + " ".join(sys.argv)
    readme = README_TEMPLATE.format(
        kjv_version=package_version("bible-kjv"),
        text_version=package_version("bible-kjv-text"),
        cmd=cmd, seed=args.seed,
        n_layer=cfg["n_layer"], n_head=cfg["n_head"], n_embd=cfg["n_embd"],
        n_positions=cfg["n_positions"], vocab=cfg["vocab_size"], n_merges=len(merges),
        n_params=sum(p.numel() for p in model.parameters()),
        init=("initialised from `%s` (the output of an earlier run, see below)" % args.init_from
              if args.init_from else "from random GPT-2 init (normal 0.02, c_proj 0.02/sqrt(2L))"),
        train_ctx=args.train_ctx or cfg["n_positions"],
        steps=len(history), planned=args.steps, batch=args.batch, lr=args.lr, repeat_frac=args.repeat_frac,
        train_tokens=len(train_ids), val_tokens=len(val_ids),
        train_min=train_time / 60, total_min=(time.time() - t_start) / 60,
        final_train=final_train, val_loss=val_loss,
        prev_h="L%dH%d" % prev_h, prev_s=prev_s, ind_h="L%dH%d" % ind_h, ind_s=ind_s,
        phrase=scores["phrase"][0], phrase_len=scores["phrase"][1],
        table=score_table(scores),
        samples="\n".join("- `%s`" % s.replace("\n", "\\n") for _, s in samples),
        sizes="\n".join("| `%s` | %d |" % (f, sizes[f]) for f in files), total=total,
        threads=args.threads)
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(readme)


README_TEMPLATE = """# Demo model

A small GPT-2 (Hugging Face `GPT2LMHeadModel` layout) trained from scratch on the King James
Bible, bundled so AttnScope has a real model to show without downloads. Made by
`tools/train_demo_model.py`; every number below was written by that script.

## Corpus

- Debian package `bible-kjv-text` {text_version} (the compressed text `/usr/lib/bible.data`), read
  through the `bible` program of package `bible-kjv` {kjv_version}:
  `apt-get install bible-kjv bible-kjv-text`, then `bible -f "Gen1:1-Rev22:21"`.
- Licence: the KJV text is in the public domain (its copyright expired; see
  `/usr/share/doc/bible-kjv-text/copyright`). The retrieval program is "provided for unrestricted
  use provided that this legend is included"; Debian's additions are GPL-2+. Only the text, not the
  program, went into these files.
- Verse references are stripped; the verses of a chapter are joined with newlines, and each of the
  1,189 chapters is one document preceded by `<|endoftext|>`. Every 50th chapter (index 25 mod 50)
  is held out for validation: {train_tokens} training tokens, {val_tokens} validation tokens.

## Tokenizer

Byte-level BPE learned on the corpus, GPT-2 style: GPT-2's `bytes_to_unicode` map and pretokenizer
regex (via `python3-regex`, so `\\p{{L}}`/`\\p{{N}}` are exact). `vocab.json` has the 256 byte symbols
as ids 0..255 in GPT-2's byte order (as in tiny-gpt2), then {n_merges} merge results in rank order,
then `<|endoftext|>` as the last id ({vocab} tokens). `merges.txt` starts with `#version: 0.2`.
The training data was encoded with the standard GPT-2 `bpe()` (lowest-rank pair first).

## Model and training

- n_layer {n_layer}, n_head {n_head}, n_embd {n_embd}, n_positions = n_ctx {n_positions},
  vocab_size {vocab}, gelu_new, tied lm_head, LayerNorm eps 1e-5; {n_params} parameters, F32.
  `bos_token_id` = `eos_token_id` = `<|endoftext|>`.
- Weights {init}.
- {steps} steps (of {planned} planned; fewer only if `--max-minutes` cut training short) of AdamW (betas 0.9/0.95, weight decay 0.1 on matrices, peak lr {lr}, linear
  warm-up then cosine decay to 10%), batch {batch} x {train_ctx} tokens, grad-clip 1.0, seed
  {seed}, {threads} CPU threads, no dropout.
- Every training window starts with `<|endoftext|>` as BOS, like the analysis prompts.
- To encourage induction heads, a fraction {repeat_frac} of the training windows get a random
  span (8..64 tokens, at most half the window) of their own corpus text copied to a later position in the window.
- Command: `{cmd}`
- Training took {train_min:.1f} minutes (whole script {total_min:.1f} minutes).
- Final training loss (mean of the last 50 steps, which include the repeated spans):
  {final_train:.3f}. Validation loss on held-out chapters: {val_loss:.3f} nats/token.

## Attention heads

Scores from the attention patterns (softmax output) of the saved file, BOS prepended:
- "phrase": `{phrase}` ({phrase_len} tokens) repeated 3 times.
- "random": 16 sequences of 50 uniformly random token ids (seed {seed}) each repeated twice.
- previous-token = mean attention from position i to i-1; induction = mean attention from a
  position in a later repeat to the token after the previous occurrence of its token (i-T+1,
  period T); BOS = mean attention to position 0.

Strongest on random tokens: **{prev_h} previous-token {prev_s:.2f}**, **{ind_h} induction {ind_s:.2f}**.

{table}

## Greedy samples (30 new tokens)

{samples}

## Files

| file | bytes |
| --- | --- |
{sizes}
| total | {total} |
"""

if __name__ == "__main__":
    main()
