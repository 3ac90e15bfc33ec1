"""The shipped model's inference without transformers: torch + safetensors + tokenizers only.

Importing transformers and building a model through ``from_pretrained`` costs
seconds in a cold process (most of ``llmulator estimate``'s wait); the model
itself is a 3-layer Llama. :class:`LeanLlama` is its forward pass written out
op for op as transformers 5's ``LlamaForCausalLM`` computes it with the
``sdpa`` attention (RMSNorm in float32, rotary embedding from float32
frequencies, ``scaled_dot_product_attention`` with ``is_causal`` exactly where
transformers' mask code skips the mask and the same boolean mask elsewhere,
the KV cache grown by concatenation), so its logits equal transformers'
(``tests/test_llm_lean.py`` checks the shipped checkpoint, prefill and cached
steps, with and without left padding: bit equality, except float32 rounding of
up to 2e-6 on one prompt, where products of other shapes round differently).
:class:`LeanTokenizer` is the ``tokenizers`` object behind the fast tokenizer,
with the few methods decoding calls.

Only plain Llama checkpoints with our own WordLevel tokenizer take this path
(:func:`unsupported` says why another does not); the estimator falls back to
transformers for everything else (``--base-model`` checkpoints, other
architectures, the ablation heads). ``LLMULATOR_LLM_BACKEND=transformers``
forces the fallback.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# torch is imported inside the functions that compute: `unsupported` (which the estimator's `available` calls)
# must not pay for it

_PLAIN = {"attention_bias": False, "mlp_bias": False, "hidden_act": "silu", "pretraining_tp": 1}


def unsupported(path: str | Path) -> str | None:
    """Why the checkpoint in ``path`` cannot take the lean path (None: it can)."""
    path = Path(path)
    try:
        cfg = json.loads((path / "config.json").read_text())
    except (OSError, ValueError) as e:
        return f"config.json: {e}"
    if cfg.get("model_type") != "llama" or cfg.get("architectures") not in (None, ["LlamaForCausalLM"]):
        return f"not a LlamaForCausalLM ({cfg.get('architectures') or cfg.get('model_type')})"
    for k, v in _PLAIN.items():
        if cfg.get(k, v) != v:
            return f"config {k} = {cfg.get(k)!r}"
    rope = cfg.get("rope_parameters") or {}
    if rope.get("rope_type", "default") != "default" or cfg.get("rope_scaling"):
        return f"rope {rope.get('rope_type')!r}"
    if cfg.get("sliding_window") or cfg.get("layer_types"):
        return "sliding-window attention"
    if cfg.get("num_key_value_heads", cfg.get("num_attention_heads")) != cfg.get("num_attention_heads"):
        return "grouped-query attention"
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        return "no model.safetensors or tokenizer.json"
    meta = path / "llmulator.json"
    if meta.is_file() and json.loads(meta.read_text()).get("base_model"):
        return "a --base-model checkpoint (its own tokenizer)"
    return None


class LeanTokenizer:
    """The methods of a transformers fast tokenizer that decoding and ``base_model.symbol_id`` call."""

    padding_side = "left"

    def __init__(self, path: str | Path):
        from tokenizers import Tokenizer
        self._tok = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
        self._tok.no_padding()
        self._tok.no_truncation()
        self._vocab = self._tok.get_vocab(with_added_tokens=True)
        self._inv = {i: t for t, i in self._vocab.items()}
        self._added = {t.content: i for i, t in self._tok.get_added_tokens_decoder().items()}
        self.pad_token_id = self._vocab["<pad>"]
        self.eos_token_id = self._vocab["<eos>"]
        self.unk_token_id = self._vocab["<unk>"]
        self.bos_token_id = self._vocab.get("<bos>")

    def __len__(self) -> int:
        return len(self._vocab)

    def __call__(self, texts: str | list[str], add_special_tokens: bool = False) -> dict[str, Any]:
        if isinstance(texts, str):
            return {"input_ids": self.encode(texts, add_special_tokens)}
        return {"input_ids": [e.ids for e in self._tok.encode_batch(texts, add_special_tokens=add_special_tokens)]}

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return self._tok.encode(text, add_special_tokens=add_special_tokens).ids

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def get_added_vocab(self) -> dict[str, int]:
        return dict(self._added)

    def convert_tokens_to_ids(self, tokens):
        if isinstance(tokens, str):
            return self._vocab.get(tokens, self.unk_token_id)
        return [self._vocab.get(t, self.unk_token_id) for t in tokens]

    def convert_ids_to_tokens(self, ids):
        if isinstance(ids, int):
            return self._inv.get(ids)
        return [self._inv.get(int(i)) for i in ids]


class LeanCache:
    """Keys and values per layer, (batch, heads, positions, head_dim), in buffers with room to grow.

    transformers' DynamicCache concatenates the whole cache again at every step; here a step writes its keys
    and values in place and attention reads the filled part as a view (the same values, and the same logits:
    tested). ``truncate`` forgets positions (a rejected draft); ``place`` puts a one-row cache into a row of a
    batch, right-aligned behind zeros (left padding, masked by the attention mask)."""

    def __init__(self, layers: int, reserve: int = 32):
        self.keys: list[torch.Tensor | None] = [None] * layers
        self.values: list[torch.Tensor | None] = [None] * layers
        self.reserve = reserve
        self.length = 0  # positions filled (the same in every layer after a forward pass)

    def allocate(self, batch: int, heads: int, positions: int, head_dim: int, dtype) -> LeanCache:
        import torch
        for i in range(len(self.keys)):
            self.keys[i] = torch.zeros((batch, heads, positions, head_dim), dtype=dtype)
            self.values[i] = torch.zeros((batch, heads, positions, head_dim), dtype=dtype)
        return self

    def get_seq_length(self) -> int:
        return self.length

    @staticmethod
    def _zeros(shape: tuple[int, ...], like):
        """A zero buffer of ``shape`` of the same kind as ``like`` (the NumPy cache overrides it)."""
        import torch
        return torch.zeros(shape, dtype=like.dtype, device=like.device)

    def update(self, i: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        start, n = self.length, k.shape[-2]
        end = start + n
        buf_k = self.keys[i]
        if buf_k is None or buf_k.shape[-2] < end:
            B, H, _, D = k.shape
            new_k = self._zeros((B, H, end + self.reserve, D), k)
            new_v = self._zeros((B, H, end + self.reserve, D), v)
            if start:
                new_k[:, :, :start] = buf_k[:, :, :start]
                new_v[:, :, :start] = self.values[i][:, :, :start]
            self.keys[i], self.values[i] = new_k, new_v
        self.keys[i][:, :, start:end] = k
        self.values[i][:, :, start:end] = v
        if i == len(self.keys) - 1:
            self.length = end
        return self.keys[i][:, :, :end], self.values[i][:, :, :end]

    def truncate(self, length: int) -> None:
        """Forget every position from ``length`` on."""
        self.length = min(self.length, length)

    def place(self, row: int, one: LeanCache, offset: int) -> None:
        """Copy the filled part of the one-row cache ``one`` into ``row`` from position ``offset`` on."""
        n = one.length
        for i in range(len(self.keys)):
            self.keys[i][row, :, offset:offset + n] = one.keys[i][0, :, :n]
            self.values[i][row, :, offset:offset + n] = one.values[i][0, :, :n]
        self.length = max(self.length, offset + n)


class LeanLlama:
    """``LlamaForCausalLM``'s inference forward, called as decoding calls the transformers model."""

    def __init__(self, path: str | Path, dtype: torch.dtype | None = None):
        import torch
        from safetensors.torch import load_file
        dtype = dtype or torch.float32
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
        self.eps = float(cfg.get("rms_norm_eps", 1e-6))
        self.scaling = self.head_dim ** -0.5
        sd = load_file(str(path / "model.safetensors"))
        # as nn.Parameters: tensors of their own that require grad. torch's matmul dispatch reads that flag (a
        # weight that requires grad folds a strided batch into one mm, even under inference_mode), so every
        # product takes the kernel it takes in transformers. (A tensor straight from load_file is a view of the
        # file's bytes: under inference_mode its views do not require grad, whatever the flag says.)
        sd = {k: v.to(dtype).clone().requires_grad_(True) for k, v in sd.items()}
        self.dtype = dtype
        self.embed = sd["model.embed_tokens.weight"]
        self.lm_head = self.embed if cfg.get("tie_word_embeddings", True) or "lm_head.weight" not in sd \
            else sd["lm_head.weight"]
        self.norm = sd["model.norm.weight"]
        self.layers = []
        for i in range(self.layers_n):
            p = f"model.layers.{i}."
            self.layers.append({k: sd[p + n + ".weight"] for k, n in (
                ("in_norm", "input_layernorm"), ("post_norm", "post_attention_layernorm"),
                ("q", "self_attn.q_proj"), ("k", "self_attn.k_proj"), ("v", "self_attn.v_proj"),
                ("o", "self_attn.o_proj"), ("gate", "mlp.gate_proj"), ("up", "mlp.up_proj"),
                ("down", "mlp.down_proj"))})
        self.inter = int(cfg["intermediate_size"])
        for w in self.layers:
            w["qkv"] = torch.cat([w["q"], w["k"], w["v"]]).detach().requires_grad_(True)
            w["gate_up"] = torch.cat([w["gate"], w["up"]]).detach().requires_grad_(True)
        rope = cfg.get("rope_parameters") or {}
        base = float(rope.get("rope_theta", cfg.get("rope_theta", 10000.0)))
        # as LlamaRotaryEmbedding.compute_default_rope_parameters; a model cast to another dtype casts this
        # buffer too, and the forward reads it back as float32
        inv = 1.0 / (base ** (torch.arange(0, self.head_dim, 2, dtype=torch.float) / self.head_dim))
        self.inv_freq = inv.to(dtype)

    # -- the interface decoding uses ---------------------------------------------------------------------
    lean = True  # decode.decode_batch takes decode_lean for this model

    def parameters(self):
        """The weights (each once: the output layer is the embedding), as a module's parameters."""
        yield self.embed
        if self.lm_head is not self.embed:
            yield self.lm_head
        for w in self.layers:
            yield from (w[k] for k in ("in_norm", "q", "k", "v", "o", "post_norm", "gate", "up", "down"))
        yield self.norm

    def eval(self) -> LeanLlama:
        return self

    def new_cache(self, batch: int, positions: int, reserve: int = 32) -> LeanCache:
        """An empty cache with room for ``positions + reserve`` positions of ``batch`` rows."""
        return LeanCache(self.layers_n, reserve).allocate(batch, self.heads, positions + reserve, self.head_dim,
                                                         self.dtype)

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                 cache: LeanCache | None = None, use_cache: bool = True, logits_to_keep: int = 0,
                 padded: bool | None = None, last_only: bool = False) -> SimpleNamespace:
        """Logits of the last ``logits_to_keep`` positions (0: all) and the grown cache.

        ``padded``: whether ``attention_mask`` holds a zero (computed when not given; the caller that
        knows it saves a pass over the mask). ``last_only`` (with ``logits_to_keep=1``): the last layer computes
        its keys and values at every position (the cache needs them) but its query, attention and MLP at the
        last position only, the one whose logits are read: a prefill does a quarter less work. The logits then
        differ from transformers' in float rounding (a product of one row instead of many), not in meaning."""
        import torch.nn.functional as F
        cache = cache if cache is not None else LeanCache(self.layers_n)
        B, q = input_ids.shape
        past = cache.get_seq_length()
        kv = past + q
        if padded is None:
            padded = not bool(attention_mask.all())
        mask = self._mask(attention_mask, B, q, kv, past, padded)
        is_causal = q > 1 and mask is None
        h = F.embedding(input_ids, self.embed)
        cos, sin = self._rope(position_ids, h.dtype)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        trim = last_only and logits_to_keep == 1 and q > 1
        for i, w in enumerate(self.layers):
            residual = h
            x = self._rms(h, w["in_norm"])
            shape = (B, q, -1, self.head_dim)
            if trim and i == self.layers_n - 1:  # keys and values everywhere, the rest at the last position
                kv_w = w["qkv"][self.hidden:]
                ks, vs = (t.view(shape).transpose(1, 2) for t in F.linear(x, kv_w).split(self.hidden, dim=-1))
                ks = (ks * cos) + (_rotate_half(ks) * sin)
                ks, vs = cache.update(i, ks, vs)
                q, x, residual = 1, x[:, -1:], residual[:, -1:]
                qs = F.linear(x, w["q"]).view(B, 1, -1, self.head_dim).transpose(1, 2)
                qs = (qs * cos[:, :, -1:]) + (_rotate_half(qs) * sin[:, :, -1:])
                mask = self._mask(attention_mask, B, 1, kv, kv - 1, padded)
                is_causal = False
            else:
                qs, ks, vs = (t.view(shape).transpose(1, 2)
                              for t in F.linear(x, w["qkv"]).split(self.hidden, dim=-1))
                qs = (qs * cos) + (_rotate_half(qs) * sin)
                ks = (ks * cos) + (_rotate_half(ks) * sin)
                ks, vs = cache.update(i, ks, vs)
            if is_causal and ks.shape[2] > q:
                ks, vs = ks[:, :, :q, :], vs[:, :, :q, :]
            a = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=mask, dropout_p=0.0, scale=self.scaling,
                                               is_causal=is_causal)
            a = a.reshape(a.shape[0], -1, q, vs.shape[-1]).transpose(1, 2).contiguous()
            a = F.linear(a.reshape(B, q, -1).contiguous(), w["o"])
            h = residual + a
            residual = h
            x = self._rms(h, w["post_norm"])
            gate, up = F.linear(x, w["gate_up"]).split(self.inter, dim=-1)
            h = residual + F.linear(F.silu(gate) * up, w["down"])
        h = self._rms(h, self.norm)
        if logits_to_keep:
            h = h[:, -logits_to_keep:, :]
        return SimpleNamespace(logits=F.linear(h, self.lm_head), cache=cache)

    # -- pieces, each as transformers computes it -----------------------------------------------------------
    def _rms(self, h: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        import torch
        dtype = h.dtype
        x = h.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return weight * x.to(dtype)

    def _rope(self, position_ids: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        import torch
        freqs = position_ids[..., None].float() * self.inv_freq.to(dtype=torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * 1.0).to(dtype=dtype), (emb.sin() * 1.0).to(dtype=dtype)

    @staticmethod
    def _mask(attention_mask: torch.Tensor, B: int, q: int, kv: int, past: int, padded: bool) -> torch.Tensor | None:
        """transformers' ``sdpa_mask``: None where SDPA's ``is_causal`` (or no mask) says it all, else a
        boolean (B, 1, q, kv) mask, causal and padding."""
        import torch
        import torch.nn.functional as F
        if (q == 1 or kv == q) and not padded:
            return None
        pad = attention_mask.to(dtype=torch.bool)
        if pad.shape[-1] < kv:
            pad = F.pad(pad, (0, kv - pad.shape[-1]))
        q_idx = torch.arange(q) + past
        kv_idx = torch.arange(kv)
        causal = kv_idx[None, None, None, :] <= q_idx[None, None, :, None]
        mask = causal & pad[torch.arange(B)[:, None, None, None], kv_idx[None, None, None, :]]
        return mask.expand(B, -1, q, kv)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    import torch
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)
