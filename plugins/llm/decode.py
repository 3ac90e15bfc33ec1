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

Two implementations of that one greedy decoding:

* :func:`decode_reference` — any causal LM with transformers' calling convention
  (training's evaluation, ``--base-model`` checkpoints, LoRA-calibrated models):
  one batched prefill of the left-padded prompts, then one incremental pass per
  digit, exactly as above;
* :func:`decode_lean` — the shipped model on the lean path (``lean.py``): each
  prompt is prefilled on its own (no padding: causal attention skips the upper
  triangle and no padded rows are computed), the caches are left-padded into
  one batch, and the digits are decoded with *draft verification*: the prompt
  carries the analytical prior in the output's own digits (``static cycles + 0 3
  2 6 0``, hints ``analytical``), which the model copies where it agrees with
  it, so one pass feeds the prior's remaining digits and markers as a draft and
  reads the model's choice at every position at once; the digits up to the
  first position where some row's greedy choice differs from the draft are
  kept, the cache is cut back there, and the next pass goes on from the
  model's own choice. The result is the greedy decoding, position by position,
  in typically 2-6 passes instead of 23. A prompt without a prior is decoded
  one digit per pass.

The two give the same digits; their probabilities differ only in float
rounding (a pass over several tokens multiplies matrices of another shape), as
a batch of 16 and a batch of 1 already differ in :func:`decode_reference`
(``tests/test_llm_lean.py`` compares them on every library design).
"""

from __future__ import annotations

import math
import re

from . import codec
from .base_model import symbol_id
from .prefix import prefix_cache
from .text import MARKERS, METRICS

SCALE_POSITIONS = (0, 1, 2, codec.LEAD)


def allowed_ids(tokenizer) -> list[list[int]]:
    """The token ids allowed at each codec position (``base_model.symbol_id``: one id per symbol, in any
    tokenizer; for ours the token named after the symbol)."""
    return [[symbol_id(tokenizer, t) for t in pos] for pos in codec.POSITIONS]


def decode_batch(model, tokenizer, prompts: list[str], max_length: int = 1536, draft=None) -> list[dict]:
    """Metrics, confidence and interval for each prompt (:func:`decode_lean` for a lean model,
    ``lean_numpy.decode_numpy`` for a NumPy one, else :func:`decode_reference`). ``draft``: prompt -> the
    digits the lean decoders verify first (default :func:`prior_draft`; ``residual.ratio_draft`` for a
    checkpoint that writes ratios to its prior); it changes how many passes they take, never the digits."""
    if getattr(model, "numpy", False):
        from .lean_numpy import decode_numpy
        return decode_numpy(model, tokenizer, prompts, max_length, draft or prior_draft)
    if getattr(model, "lean", False):
        return decode_lean(model, tokenizer, prompts, max_length, draft or prior_draft)
    return decode_reference(model, tokenizer, prompts, max_length)


def decode_reference(model, tokenizer, prompts: list[str], max_length: int = 1536) -> list[dict]:
    """Greedy decoding with one incremental pass per digit, for any model with transformers' call convention."""
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
                _record(results[b], metric, [int(chosen[b, p]) for p in range(codec.LENGTH)],
                        [probs_at[p][b] for p in range(codec.LENGTH)])
    return results


def _record(result: dict, metric: str, chosen: list[int], probs: list) -> None:
    """One metric of one row: its value from the chosen symbol indices, confidence and interval from the
    per-position probabilities."""
    tokens = [codec.POSITIONS[p][chosen[p]] for p in range(codec.LENGTH)]
    picked = [float(probs[p].max()) for p in SCALE_POSITIONS]
    result["metrics"][metric] = codec.decode(tokens)
    result["confidence"][metric] = math.exp(sum(math.log(max(x, 1e-12)) for x in picked) / len(picked))
    result["interval"][metric] = _interval(tokens, probs)


_PRIOR = re.compile(r"^static (\w+) ([+-]) (\d) (\d) (\d) (\d) (\d)$", re.M)


def prior_draft(prompt: str) -> dict[str, list[str]] | None:
    """The analytical prior's symbols of each metric as the prompt writes them (``static cycles + 0 3 2 6 0``);
    None when the prompt carries no prior for some metric."""
    found = {m.group(1): list(m.groups()[1:]) for m in _PRIOR.finditer(prompt)}
    return found if all(m in found for m in METRICS) else None


def decode_lean(model, tokenizer, prompts: list[str], max_length: int = 1536, draft=None) -> list[dict]:
    """The greedy decoding of :func:`decode_reference` on a lean model: per-prompt prefill, batched passes
    that verify the prior's digits as a draft (module docstring)."""
    import torch

    markers = [symbol_id(tokenizer, m) for m in MARKERS]
    allowed_l = allowed_ids(tokenizer)
    allowed = [torch.tensor(a) for a in allowed_l]
    index = [{t: i for i, t in enumerate(a)} for a in allowed_l]
    seqs = [s[-(max_length - 1):] + markers[:1] for s in tokenizer(prompts, add_special_tokens=False)["input_ids"]]
    B = len(seqs)
    per = 1 + codec.LENGTH  # marker + digits of one metric
    total = per * len(METRICS)  # the output stream: <m0> d d d d d d <m1> ... ; position 0 ends the prompt
    # the draft of every stream position, per row: markers, then the prior's digits (None: no draft)
    drafts = []
    for p in prompts:
        prior = (draft or prior_draft)(p)
        drafts.append(None if prior is None else [
            markers[j // per] if j % per == 0 else
            allowed_l[j % per - 1][codec.POSITIONS[j % per - 1].index(prior[METRICS[j // per]][j % per - 1])]
            for j in range(total)])
    speculate = all(d is not None for d in drafts)
    results = [{"metrics": {}, "confidence": {}, "interval": {}} for _ in range(B)]
    chosen = [[0] * total for _ in range(B)]  # symbol index at each digit position
    probs: list = [None] * total  # (B, n allowed) probabilities at each digit position
    with torch.inference_mode():
        lengths = [len(s) for s in seqs]
        width = max(lengths)
        cache = model.new_cache(B, width, reserve=total)
        logits = []
        prefixes = prefix_cache(model)
        for b, s in enumerate(seqs):  # each prompt alone: causal attention, nothing padded
            one, n = prefixes.start(model, s)   # from a recent prompt's prefill where they start alike
            ids = torch.tensor([s[n:]])
            out = model(input_ids=ids, attention_mask=torch.ones((1, len(s)), dtype=torch.long),
                        position_ids=torch.arange(n, len(s))[None], cache=one, logits_to_keep=1, padded=False,
                        last_only=True)
            prefixes.remember(s, one)
            cache.place(b, one, width - len(s))
            logits.append(out.logits[0, -1])
        nxt = torch.stack(logits)  # predicts stream position `cur`
        padded = min(lengths) < width
        mask = torch.tensor([[0] * (width - n) + [1] * n for n in lengths])
        next_pos = torch.tensor(lengths)[:, None]
        cur = 1
        while True:
            k = cur % per - 1
            pr = torch.softmax(nxt[:, allowed[k]].float(), dim=-1)
            best = pr.argmax(-1)
            probs[cur] = pr
            for b in range(B):
                chosen[b][cur] = int(best[b])
            if cur == total - 1:
                break
            # feed the chosen token, then the draft up to the last position whose successor is decoded
            end = total - 1 if speculate else cur + 1 + (1 if (cur + 1) % per == 0 else 0)
            feed = torch.empty((B, end - cur), dtype=torch.long)
            feed[:, 0] = allowed[k][best]
            for b in range(B):
                for j in range(cur + 1, end):
                    feed[b, j - cur] = drafts[b][j] if speculate else markers[j // per]
            n = end - cur
            mask = torch.cat([mask, torch.ones((B, n), dtype=mask.dtype)], dim=1)
            o = model(input_ids=feed, attention_mask=mask, position_ids=next_pos + torch.arange(n)[None, :],
                      cache=cache, logits_to_keep=n, padded=padded)
            out_logits = o.logits  # [:, i] predicts position cur + i + 1
            # keep the fed positions up to the first digit some row would have chosen otherwise
            stop = end
            for j in range(cur + 1, end):
                if j % per == 0:
                    continue  # a marker: fixed
                kj = j % per - 1
                pj = torch.softmax(out_logits[:, j - cur - 1, allowed[kj]].float(), dim=-1)
                choice = pj.argmax(-1)
                if any(index[kj].get(int(feed[b, j - cur]), -1) != int(choice[b]) for b in range(B)):
                    stop = j
                    break
                probs[j] = pj
                for b in range(B):
                    chosen[b][j] = int(choice[b])
            keep = stop - cur
            if keep < n:  # forget what was fed from `stop` on
                cache.truncate(cache.get_seq_length() - (n - keep))
                mask = mask[:, :mask.shape[1] - (n - keep)]
            next_pos = next_pos + keep
            nxt = out_logits[:, keep - 1]
            cur = stop
    for mi, metric in enumerate(METRICS):
        base = mi * per + 1
        for b in range(B):
            _record(results[b], metric, chosen[b][base:base + codec.LENGTH],
                    [probs[base + p][b] for p in range(codec.LENGTH)])
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
