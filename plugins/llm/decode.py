"""Constrained, batched, KV-cached decoding of the four metrics, with per-digit confidence.

After the prompt, each metric's marker token is forced; then each of the
codec's seven positions is decoded greedily over the tokens allowed at that
position only. The per-position distributions give

* ``confidence`` — the geometric mean of the chosen tokens' probabilities over
  the positions that set the order of magnitude (leading digit, exponent sign
  and digits): the chance the value is right to within its leading digit;
* ``interval`` — the range spanned by the leading digits and exponents that
  hold 90 % of the probability at their positions.
"""

from __future__ import annotations

import math

from . import codec
from .text import MARKERS, METRICS

SCALE_POSITIONS = (0, 4, 5, 6)


def allowed_ids(tokenizer) -> list[list[int]]:
    return [[tokenizer.convert_tokens_to_ids(t) for t in pos] for pos in codec.POSITIONS]


def decode_batch(model, tokenizer, prompts: list[str], max_length: int = 1536) -> list[dict]:
    """Metrics, confidence and interval for each prompt (one forward pass per generated token)."""
    import torch

    device = next(model.parameters()).device
    tokenizer.padding_side = "left"
    enc = tokenizer(prompts, return_tensors="pt", padding=True, truncation=True, max_length=max_length)
    ids, mask = enc["input_ids"].to(device), enc["attention_mask"].to(device)
    allowed = [torch.tensor(a, device=device) for a in allowed_ids(tokenizer)]
    markers = [tokenizer.convert_tokens_to_ids(m) for m in MARKERS]
    B = ids.shape[0]
    results = [{"metrics": {}, "confidence": {}, "interval": {}} for _ in range(B)]
    with torch.inference_mode():
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True)
        past = out.cache  # transformers 5: the KV cache (formerly past_key_values)
        next_pos = pos[:, -1:] + 1

        def step(tok: torch.Tensor):
            nonlocal past, mask, next_pos
            mask = torch.cat([mask, torch.ones((B, 1), dtype=mask.dtype, device=device)], dim=1)
            o = model(input_ids=tok[:, None], attention_mask=mask, position_ids=next_pos, cache=past,
                      use_cache=True)
            past = o.cache
            next_pos = next_pos + 1
            return o.logits[:, -1]

        for mi, metric in enumerate(METRICS):
            logits = step(torch.full((B,), markers[mi], device=device))
            chosen: list[list[str]] = [[] for _ in range(B)]
            probs_at: list[list[torch.Tensor]] = []
            for p_i, allow in enumerate(allowed):
                probs = torch.softmax(logits[:, allow].float(), dim=-1)
                best = probs.argmax(-1)
                probs_at.append(probs)
                toks = allow[best]
                for b in range(B):
                    chosen[b].append(codec.POSITIONS[p_i][int(best[b])])
                if p_i < len(allowed) - 1:
                    logits = step(toks)
            for b in range(B):
                tokens = chosen[b]
                if tokens[0] == "0":  # a leading zero only encodes the value zero
                    tokens = ["0", "0", "0", "e", "+", "0", "0"]
                value = codec.decode(tokens)
                picked = [float(probs_at[p][b].max()) for p in SCALE_POSITIONS]
                conf = math.exp(sum(math.log(max(x, 1e-12)) for x in picked) / len(picked))
                results[b]["metrics"][metric] = value
                results[b]["confidence"][metric] = conf
                results[b]["interval"][metric] = _interval(tokens, [probs_at[p][b] for p in range(len(allowed))])
    return results


def _top_mass(probs, symbols, mass: float = 0.9) -> list[str]:
    order = sorted(range(len(symbols)), key=lambda i: -float(probs[i]))
    out, total = [], 0.0
    for i in order:
        out.append(symbols[i])
        total += float(probs[i])
        if total >= mass:
            break
    return out


def _interval(tokens: list[str], probs) -> tuple[float, float]:
    """Range of values over the leading digits and last exponent digits holding 90 % of their mass."""
    exp = int("".join(tokens[5:7])) * (-1 if tokens[4] == "-" else 1)
    lead = [int(d) for d in _top_mass(probs[0], codec.POSITIONS[0]) if d != "0"] or [int(tokens[0])]
    last = [int(d) for d in _top_mass(probs[6], codec.POSITIONS[6])]
    sign = -1 if tokens[4] == "-" else 1
    exps = [sign * (int(tokens[5]) * 10 + d) for d in last] or [exp]
    lo = min(lead) * 10.0 ** min(exps)
    hi = (max(lead) + 1) * 10.0 ** max(exps)
    return (lo, hi)
