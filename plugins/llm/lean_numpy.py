"""The shipped model's inference in NumPy: no torch, no transformers (the ``numpy`` backend).

Importing torch costs 1.5-3 s in a cold process on this project's 2-core machine, far more than the model's
own work (a 3-layer, 192-wide Llama). :class:`NumpyLlama` is :class:`lean.LeanLlama`'s forward pass (itself
transformers' ``LlamaForCausalLM`` op for op) in float32 NumPy, read from the same ``model.safetensors``
(``safetensors.numpy``); :func:`decode_numpy` is :func:`decode.decode_lean` (per-prompt prefill, the prior's
digits verified as a draft) on it. The products run in another order than torch's kernels, so logits agree
with the torch forward to float32 rounding, not bit for bit, and the decoded digits are the same
(``tests/test_llm_numpy.py``: logits of every pass, and the estimates of library designs).

The estimator takes this path for every checkpoint the lean path supports (:func:`lean.unsupported`) when it
computes in float32 (``estimator.inference_dtype``: float32 on CPUs without native bfloat16, the default
here); a bfloat16 machine keeps the torch lean path, whose bfloat16 products NumPy does not have.
``LLMULATOR_LLM_BACKEND=lean`` (torch) or ``transformers`` forces another backend.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from . import codec
from .decode import _record, allowed_ids, prior_draft, symbol_id
from .lean import LeanCache, unsupported
from .prefix import prefix_cache
from .text import MARKERS, METRICS


class NumpyCache(LeanCache):
    """:class:`lean.LeanCache` on NumPy buffers (float32): keys and values per layer, (batch, heads,
    positions, head_dim), with room to grow; ``truncate`` forgets positions, ``place`` copies a one-row
    cache into a row."""

    def allocate(self, batch: int, heads: int, positions: int, head_dim: int) -> NumpyCache:
        for i in range(len(self.keys)):
            self.keys[i] = np.zeros((batch, heads, positions, head_dim), np.float32)
            self.values[i] = np.zeros((batch, heads, positions, head_dim), np.float32)
        return self

    @staticmethod
    def _zeros(shape: tuple[int, ...], like) -> np.ndarray:
        return np.zeros(shape, np.float32)


def _softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in place where it can (a row of -inf only: its maximum is taken as 0)."""
    m = x.max(-1, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    x = np.subtract(x, m, out=x if x.flags.writeable else None)
    np.exp(x, out=x)
    x /= x.sum(-1, keepdims=True)
    return x


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (np.float32(1.0) + np.exp(-x))


class NumpyLlama:
    """``LlamaForCausalLM``'s inference forward in float32 NumPy, called as :class:`lean.LeanLlama` is."""

    lean = True  # no transformers (what tests and callers ask of the estimator's shared model)
    numpy = True  # decode.decode_batch takes decode_numpy for this model

    def __init__(self, path: str | Path):
        from llmulator.npinfer import load_safetensors
        path = Path(path)
        why = unsupported(path)
        if why:
            raise ValueError(f"{path}: {why}")
        cfg = json.loads((path / "config.json").read_text())
        self.config = SimpleNamespace(**cfg)
        self.layers_n = int(cfg["num_hidden_layers"])
        self.heads = int(cfg["num_attention_heads"])
        self.hidden = int(cfg["hidden_size"])
        self.head_dim = int(cfg.get("head_dim") or self.hidden // self.heads)
        self.eps = np.float32(cfg.get("rms_norm_eps", 1e-6))
        self.scaling = np.float32(self.head_dim ** -0.5)
        self.inter = int(cfg["intermediate_size"])
        sd = {k: np.ascontiguousarray(v, dtype=np.float32)
              for k, v in load_safetensors(path / "model.safetensors").items()}
        self.embed = sd["model.embed_tokens.weight"]
        lm = self.embed if cfg.get("tie_word_embeddings", True) or "lm_head.weight" not in sd else sd["lm_head.weight"]
        self.lm_head_t = np.ascontiguousarray(lm.T)
        self.norm = sd["model.norm.weight"]
        self.layers = []
        for i in range(self.layers_n):
            p = f"model.layers.{i}."
            w = {k: sd[p + n + ".weight"] for k, n in (
                ("in_norm", "input_layernorm"), ("post_norm", "post_attention_layernorm"),
                ("q", "self_attn.q_proj"), ("k", "self_attn.k_proj"), ("v", "self_attn.v_proj"),
                ("o", "self_attn.o_proj"), ("gate", "mlp.gate_proj"), ("up", "mlp.up_proj"),
                ("down", "mlp.down_proj"))}
            # (in, out) matrices: x @ W.T as one GEMM over every row
            self.layers.append({
                "in_norm": w["in_norm"], "post_norm": w["post_norm"],
                "qkv_t": np.ascontiguousarray(np.concatenate([w["q"], w["k"], w["v"]]).T),
                "q_t": np.ascontiguousarray(w["q"].T),
                "kv_t": np.ascontiguousarray(np.concatenate([w["k"], w["v"]]).T),
                "o_t": np.ascontiguousarray(w["o"].T),
                "gate_up_t": np.ascontiguousarray(np.concatenate([w["gate"], w["up"]]).T),
                "down_t": np.ascontiguousarray(w["down"].T)})
        self._params = sum(v.size for k, v in sd.items() if k != "lm_head.weight" or lm is not self.embed)
        rope = cfg.get("rope_parameters") or {}
        base = float(rope.get("rope_theta", cfg.get("rope_theta", 10000.0)))
        # as LlamaRotaryEmbedding: float32 frequencies
        self.inv_freq = (1.0 / (np.float32(base) ** (np.arange(0, self.head_dim, 2, dtype=np.float32)
                                                     / np.float32(self.head_dim)))).astype(np.float32)

    def parameter_count(self) -> int:
        return int(self._params)

    def eval(self) -> NumpyLlama:
        return self

    def new_cache(self, batch: int, positions: int, reserve: int = 32) -> NumpyCache:
        return NumpyCache(self.layers_n, reserve).allocate(batch, self.heads, positions + reserve, self.head_dim)

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray, position_ids: np.ndarray,
                 cache: NumpyCache | None = None, logits_to_keep: int = 0, last_only: bool = False,
                 **_ignored) -> SimpleNamespace:
        """Logits of the last ``logits_to_keep`` positions (0: all) and the grown cache (as LeanLlama's)."""
        cache = cache if cache is not None else NumpyCache(self.layers_n)
        input_ids = np.asarray(input_ids)
        B, q = input_ids.shape
        past = cache.get_seq_length()
        kv = past + q
        att = np.asarray(attention_mask, dtype=bool)
        causal_only = bool(att.all()) and (q == 1 or kv == q)  # no mask beyond causality
        h = self.embed[input_ids]  # (B, q, hidden)
        cos, sin = self._rope(np.asarray(position_ids))  # (B, q, head_dim)
        cos, sin = cos[:, None], sin[:, None]
        trim = last_only and logits_to_keep == 1 and q > 1
        hd, H, hid = self.head_dim, self.heads, self.hidden
        for i, w in enumerate(self.layers):
            residual = h
            x = self._rms(h, w["in_norm"])
            if trim and i == self.layers_n - 1:  # keys and values everywhere, the rest at the last position
                kvs = (x.reshape(B * q, hid) @ w["kv_t"]).reshape(B, q, 2, H, hd)
                ks, vs = kvs[:, :, 0].transpose(0, 2, 1, 3), kvs[:, :, 1].transpose(0, 2, 1, 3)
                ks = ks * cos + _rotate_half(ks) * sin
                ks, vs = cache.update(i, ks, vs)
                x, residual = x[:, -1:], residual[:, -1:]
                qs = (x.reshape(B, hid) @ w["q_t"]).reshape(B, 1, H, hd).transpose(0, 2, 1, 3)
                qs = qs * cos[:, :, -1:] + _rotate_half(qs) * sin[:, :, -1:]
                a = self._attend(qs, ks, vs, att, past=kv - 1, causal_only=causal_only)
                q = 1
            else:
                qkv = (x.reshape(B * q, hid) @ w["qkv_t"]).reshape(B, q, 3, H, hd)
                qs, ks, vs = (qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))
                qs = qs * cos + _rotate_half(qs) * sin
                ks = ks * cos + _rotate_half(ks) * sin
                ks, vs = cache.update(i, ks, vs)
                a = self._attend(qs, ks, vs, att, past=past, causal_only=causal_only)
            a = a.transpose(0, 2, 1, 3).reshape(B * q, hid)
            h = residual + (a @ w["o_t"]).reshape(B, q, hid)
            residual = h
            x = self._rms(h, w["post_norm"]).reshape(B * q, hid)
            gu = x @ w["gate_up_t"]
            gate, up = gu[:, :self.inter], gu[:, self.inter:]
            h = residual + ((_silu(gate) * up) @ w["down_t"]).reshape(B, q, hid)
        h = self._rms(h, self.norm)
        if logits_to_keep:
            h = h[:, -logits_to_keep:, :]
        n = h.shape[1]
        logits = (np.ascontiguousarray(h).reshape(B * n, hid) @ self.lm_head_t).reshape(B, n, -1)
        return SimpleNamespace(logits=logits, cache=cache)

    def _attend(self, qs: np.ndarray, ks: np.ndarray, vs: np.ndarray, att: np.ndarray, past: int,
                causal_only: bool) -> np.ndarray:
        """softmax(q k^T * scale, causal and padding masked) v; (B, H, q, head_dim)."""
        q, kv = qs.shape[2], ks.shape[2]
        if causal_only and q > 1:
            return self._causal(qs, ks, vs)
        scores = np.matmul(qs, ks.transpose(0, 1, 3, 2))
        scores *= self.scaling
        if q > 1 or not causal_only:
            allowed = np.arange(kv)[None, :] <= (np.arange(q) + past)[:, None]  # (q, kv) causal
            if not causal_only:
                pad = att
                if pad.shape[-1] < kv:
                    pad = np.pad(pad, ((0, 0), (0, kv - pad.shape[-1])))
                allowed = allowed[None] & pad[:, None, :kv]  # (B, q, kv)
                allowed = allowed[:, None]
            scores = np.where(allowed, scores, np.float32(-np.inf))
        return np.matmul(_softmax(scores), vs)

    def _causal(self, qs: np.ndarray, ks: np.ndarray, vs: np.ndarray) -> np.ndarray:
        """Causal attention of a prefill (no padding), by blocks of queries: a block reads the keys up to its
        last query only (the upper triangle is neither computed nor exponentiated, as SDPA's causal kernel
        skips it)."""
        q = qs.shape[2]
        out = np.empty(qs.shape[:3] + (vs.shape[-1],), np.float32)
        tri = _upper(_BLOCK)
        for s in range(0, q, _BLOCK):
            e = min(q, s + _BLOCK)
            sc = np.matmul(qs[:, :, s:e], ks[:, :, :e].transpose(0, 1, 3, 2))
            sc *= self.scaling
            sc[:, :, :, s:e] += tri[:e - s, :e - s]
            out[:, :, s:e] = np.matmul(_softmax(sc), vs[:, :, :e])
        return out

    def _rms(self, h: np.ndarray, weight: np.ndarray) -> np.ndarray:
        var = np.mean(h * h, axis=-1, keepdims=True)
        return weight * (h / np.sqrt(var + self.eps))

    def _rope(self, position_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        freqs = position_ids[..., None].astype(np.float32) * self.inv_freq
        emb = np.concatenate((freqs, freqs), axis=-1)
        return np.cos(emb), np.sin(emb)


_BLOCK = 64  # queries per block of a causal prefill
_UPPER: dict[int, np.ndarray] = {}


def _upper(n: int) -> np.ndarray:
    """(n, n) float32: -inf above the diagonal, 0 elsewhere (added to a block's scores: causality)."""
    if n not in _UPPER:
        _UPPER[n] = np.triu(np.full((n, n), -np.inf, np.float32), k=1)
    return _UPPER[n]


def _rotate_half(x: np.ndarray) -> np.ndarray:
    half = x.shape[-1] // 2
    return np.concatenate((-x[..., half:], x[..., :half]), axis=-1)


_PER = 1 + codec.LENGTH  # marker + digits of one metric
_TOTAL = _PER * len(METRICS)  # the output stream: <m0> d d d d d d <m1> ... ; position 0 ends the prompt


def _drafts(prompts: list[str], markers: list[int], allowed_l: list[list[int]],
            draft=prior_draft) -> list[list[int] | None]:
    """The draft of every stream position, per prompt: markers, then the prior's digits (None: no prior)."""
    out = []
    for p in prompts:
        prior = draft(p)
        out.append(None if prior is None else [
            markers[j // _PER] if j % _PER == 0 else
            allowed_l[j % _PER - 1][codec.POSITIONS[j % _PER - 1].index(prior[METRICS[j // _PER]][j % _PER - 1])]
            for j in range(_TOTAL)])
    return out


def _prefill(model: NumpyLlama, seqs: list[list[int]]):
    """Each prompt prefilled alone (causal attention, nothing padded), the caches left-padded into one batch:
    (cache, logits predicting stream position 1, attention mask, next positions)."""
    lengths = [len(s) for s in seqs]
    width = max(lengths)
    cache = model.new_cache(len(seqs), width, reserve=_TOTAL)
    logits = []
    prefixes = prefix_cache(model)
    for b, s in enumerate(seqs):
        one, n = prefixes.start(model, s)   # from a recent prompt's prefill where they start alike
        ids = np.asarray([s[n:]], np.int64)
        out = model(ids, np.ones((1, len(s)), np.int64), np.arange(n, len(s))[None], cache=one, logits_to_keep=1,
                    last_only=True)
        prefixes.remember(s, one)
        cache.place(b, one, width - len(s))
        logits.append(out.logits[0, -1])
    mask = np.asarray([[0] * (width - n) + [1] * n for n in lengths], np.int64)
    return cache, np.stack(logits), mask, np.asarray(lengths, np.int64)[:, None]


def _accepted(out_logits: np.ndarray, feed: np.ndarray, cur: int, end: int, allowed: list[np.ndarray],
              index: list[dict[int, int]], probs: list, chosen: list[list[int]]) -> int:
    """Keep the fed positions up to the first digit some row would have chosen otherwise (recording their
    probabilities and choices); the first position not kept."""
    for j in range(cur + 1, end):
        if j % _PER == 0:
            continue  # a marker: fixed
        kj = j % _PER - 1
        pj = _softmax(out_logits[:, j - cur - 1, allowed[kj]].astype(np.float32))
        choice = pj.argmax(-1)
        if any(index[kj].get(int(feed[b, j - cur]), -1) != int(choice[b]) for b in range(len(feed))):
            return j
        probs[j] = pj
        for b in range(len(feed)):
            chosen[b][j] = int(choice[b])
    return end


def decode_numpy(model: NumpyLlama, tokenizer, prompts: list[str], max_length: int = 1536,
                 draft=prior_draft) -> list[dict]:
    """:func:`decode.decode_lean` on a :class:`NumpyLlama`: per-prompt prefill, the caches left-padded into one
    batch, batched passes that verify the prior's digits as a draft; the same greedy digits."""
    markers = [symbol_id(tokenizer, m) for m in MARKERS]
    allowed_l = allowed_ids(tokenizer)
    allowed = [np.asarray(a, np.int64) for a in allowed_l]
    index = [{t: i for i, t in enumerate(a)} for a in allowed_l]
    seqs = [s[-(max_length - 1):] + markers[:1] for s in tokenizer(prompts, add_special_tokens=False)["input_ids"]]
    B = len(seqs)
    drafts = _drafts(prompts, markers, allowed_l, draft)
    speculate = all(d is not None for d in drafts)
    chosen = [[0] * _TOTAL for _ in range(B)]  # symbol index at each digit position
    probs: list = [None] * _TOTAL  # (B, n allowed) probabilities at each digit position
    cache, nxt, mask, next_pos = _prefill(model, seqs)
    cur = 1
    while True:
        k = cur % _PER - 1
        pr = _softmax(nxt[:, allowed[k]].astype(np.float32))
        best = pr.argmax(-1)
        probs[cur] = pr
        for b in range(B):
            chosen[b][cur] = int(best[b])
        if cur == _TOTAL - 1:
            break
        # feed the chosen token, then the draft up to the last position whose successor is decoded
        end = _TOTAL - 1 if speculate else cur + 1 + (1 if (cur + 1) % _PER == 0 else 0)
        feed = np.empty((B, end - cur), np.int64)
        feed[:, 0] = allowed[k][best]
        for b in range(B):
            for j in range(cur + 1, end):
                feed[b, j - cur] = drafts[b][j] if speculate else markers[j // _PER]
        n = end - cur
        mask = np.concatenate([mask, np.ones((B, n), mask.dtype)], axis=1)
        out_logits = model(feed, mask, next_pos + np.arange(n)[None, :], cache=cache, logits_to_keep=n).logits
        stop = _accepted(out_logits, feed, cur, end, allowed, index, probs, chosen)
        keep = stop - cur
        if keep < n:  # forget what was fed from `stop` on
            cache.truncate(cache.get_seq_length() - (n - keep))
            mask = mask[:, :mask.shape[1] - (n - keep)]
        next_pos = next_pos + keep
        nxt = out_logits[:, keep - 1]
        cur = stop
    results = [{"metrics": {}, "confidence": {}, "interval": {}} for _ in range(B)]
    for mi, metric in enumerate(METRICS):
        base = mi * _PER + 1
        for b in range(B):
            _record(results[b], metric, chosen[b][base:base + codec.LENGTH],
                    [probs[base + p][b] for p in range(codec.LENGTH)])
    return results
