"""Prefills of recent prompts, reused by the next prompt that starts with the same tokens.

A prompt's keys and values at a position depend only on the tokens up to it (causal attention), so a
prompt that shares its first n tokens with one prefilled before can start from that prompt's cache and
prefill only the rest. Designs of one sweep share their hardware section, the first quarter or so of the
tokens (the tokenizer isolates every symbol, so the token boundaries of a shared text are shared too).
The logits differ only in float rounding (the rest is a product of other shapes), as a batch of 16 and a
batch of 1 already do (tests/test_llm_prefix.py: the same digits on the library designs).

Works on both lean backends: their caches hold per layer (batch, heads, positions, head_dim) buffers in
``keys`` / ``values`` and a filled ``length``."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

#: prompts kept, most recent last
SIZE = 16
#: a shared prefix shorter than this is prefilled again (the copy would cost about what it saves)
MIN_TOKENS = 32


class PrefixCache:
    """The one-row caches of the last :data:`SIZE` prompts, by their token ids."""

    def __init__(self, size: int = SIZE, min_tokens: int = MIN_TOKENS):
        self.size, self.min_tokens = size, min_tokens
        self.entries: OrderedDict[tuple[int, ...], object] = OrderedDict()
        self.hits = self.reused_tokens = self.prefilled_tokens = 0

    def longest(self, ids: list[int]) -> tuple[object | None, int]:
        """The cache whose prompt shares the most leading tokens with ``ids``, and how many."""
        best, n_best = None, 0
        a = np.asarray(ids)
        for key, cache in self.entries.items():
            b = np.asarray(key[:len(a)])
            diff = np.flatnonzero(a[:len(b)] != b)
            n = int(diff[0]) if diff.size else len(b)
            if n > n_best:
                best, n_best = cache, n
        return best, n_best

    def start(self, model, ids: list[int]):
        """A one-row cache for ``ids`` holding the longest remembered prefix (at least one token is left to
        prefill, whose logits the caller reads), and its length."""
        src, n = self.longest(ids)
        n = min(n, len(ids) - 1)
        one = model.new_cache(1, len(ids), reserve=0)
        if src is None or n < self.min_tokens:
            self.prefilled_tokens += len(ids)
            return one, 0
        for i in range(len(one.keys)):
            one.keys[i][:, :, :n] = src.keys[i][:, :, :n]
            one.values[i][:, :, :n] = src.values[i][:, :, :n]
        one.length = n
        self.hits += 1
        self.reused_tokens += n
        self.prefilled_tokens += len(ids) - n
        return one, n

    def remember(self, ids: list[int], cache) -> None:
        key = tuple(ids)
        self.entries.pop(key, None)
        self.entries[key] = cache
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


def prefix_cache(model) -> PrefixCache:
    """The model's prefix cache (made on first use; ``model._prefixes = PrefixCache(size=0)`` turns it off)."""
    pc = getattr(model, "_prefixes", None)
    if pc is None:
        pc = PrefixCache()
        model._prefixes = pc
    return pc
