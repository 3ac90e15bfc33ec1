"""Constrained, batched, KV-cached decoding of the four metrics, with per-digit confidence.

The first metric's marker token is appended to the prompt; then each of the
codec's six positions (exponent sign, two exponent digits, three mantissa
digits) is decoded greedily over the tokens allowed at that position only,
and the next metric's marker is fed in the same forward pass as the last
digit (23 incremental passes for four metrics). The per-position
distributions give

* ``confidence`` — the geometric mean of the chosen tokens' probabilities over
  the positions that set the order of magnitude (exponent sign and digits,
  leading digit): the chance the value is right to within its leading digit;
* ``interval`` — the range spanned by the leading digits and exponents that
  hold 90 % of the probability at their positions.
"""

from __future__ import annotations

import math

from . import codec
from .base_model import symbol_id
from .text import MARKERS, METRICS

SCALE_POSITIONS = (0, 1, 2, codec.LEAD)


def allowed_ids(tokenizer) -> list[list[int]]:
    """The token ids allowed at each codec position (``base_model.symbol_id``: one id per symbol, in any
    tokenizer; for ours the token named after the symbol)."""
    return [[symbol_id(tokenizer, t) for t in pos] for pos in codec.POSITIONS]


def decode_batch(model, tokenizer, prompts: list[str], max_length: int = 1536) -> list[dict]:
    """Metrics, confidence and interval for each prompt."""
    import torch

    device = next(model.parameters()).device
    tokenizer.padding_side = "left"
    markers = [symbol_id(tokenizer, m) for m in MARKERS]
    # prompt ids + the first marker's id, exactly as training concatenates them (any tokenizer), left-padded
    seqs = [s[-(max_length - 1):] + markers[:1] for s in tokenizer(prompts, add_special_tokens=False)["input_ids"]]
    n = max(len(s) for s in seqs)
    ids = torch.tensor([[tokenizer.pad_token_id] * (n - len(s)) + s for s in seqs], device=device)
    mask = torch.tensor([[0] * (n - len(s)) + [1] * len(s) for s in seqs], device=device)
    allowed = [torch.tensor(a, device=device) for a in allowed_ids(tokenizer)]
    B = ids.shape[0]
    results = [{"metrics": {}, "confidence": {}, "interval": {}} for _ in range(B)]
    with torch.inference_mode():
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1)
        past = out.cache  # transformers 5: the KV cache (formerly past_key_values)
        next_pos = pos[:, -1:] + 1
        logits = out.logits[:, -1]

        def step(tok: torch.Tensor) -> torch.Tensor:
            """Feed (B, k) tokens; the logits after the last one."""
            nonlocal past, mask, next_pos
            k = tok.shape[1]
            mask = torch.cat([mask, torch.ones((B, k), dtype=mask.dtype, device=device)], dim=1)
            p = next_pos + torch.arange(k, device=device)[None, :]
            o = model(input_ids=tok, attention_mask=mask, position_ids=p, cache=past, use_cache=True,
                      logits_to_keep=1)
            past = o.cache
            next_pos = next_pos + k
            return o.logits[:, -1]

        for mi, metric in enumerate(METRICS):
            chosen = torch.empty((B, codec.LENGTH), dtype=torch.long)
            probs_at: list[torch.Tensor] = []
            for p_i, allow in enumerate(allowed):
                probs = torch.softmax(logits[:, allow].float(), dim=-1)
                best = probs.argmax(-1)
                probs_at.append(probs)
                chosen[:, p_i] = best
                toks = allow[best][:, None]
                if p_i < len(allowed) - 1:
                    logits = step(toks)
                elif mi < len(METRICS) - 1:
                    logits = step(torch.cat([toks, torch.full((B, 1), markers[mi + 1], device=device)], dim=1))
            for b in range(B):
                tokens = [codec.POSITIONS[p][int(chosen[b, p])] for p in range(codec.LENGTH)]
                value = codec.decode(tokens)
                picked = [float(probs_at[p][b].max()) for p in SCALE_POSITIONS]
                conf = math.exp(sum(math.log(max(x, 1e-12)) for x in picked) / len(picked))
                results[b]["metrics"][metric] = value
                results[b]["confidence"][metric] = conf
                results[b]["interval"][metric] = _interval(tokens, [probs_at[p][b] for p in range(codec.LENGTH)])
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
    lead_pos, units_pos = codec.LEAD, codec.LEAD - 1
    lead = [int(d) for d in _top_mass(probs[lead_pos], codec.POSITIONS[lead_pos]) if d != "0"]
    lead = lead or [max(int(tokens[lead_pos]), 1)]
    sign = -1 if tokens[0] == "-" else 1
    tens = int(tokens[1])
    exps = [sign * (tens * 10 + int(d)) for d in _top_mass(probs[units_pos], codec.POSITIONS[units_pos])]
    lo = min(lead) * 10.0 ** min(exps)
    hi = (max(lead) + 1) * 10.0 ** max(exps)
    return (lo, hi)
