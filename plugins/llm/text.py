"""What the LLM estimator reads and writes, as text and as tokens.

This module owns the model's prompt format: its public API is
:func:`model_prompt` (the text for a design and a hint level),
:func:`checkpoint_settings` (the format and hints a checkpoint was trained with)
and :func:`checkpoint_prompts` (exactly what the checkpoint at a path reads, the
estimator's ``prompts`` and what ``llmulator render --prompt`` prints). It builds
the text from ``llmulator.render``'s public pieces (``kernel_function``,
``input_lines``, ``num``, ``compact``, ``isolate_digits``); the dataset prompt
that ``render.prompt`` writes is another text, which no model reads.

Input (``model_prompt``): a compact form of the design, every number digit by
digit — the hardware the kernel actually uses (clock, PE array, the operator
classes its statements execute on with count, latency, format, energy and area
per operation, every memory level with its geometry and access energies), the
mapping, the sizes, the mapped kernel code without its pragma lines (they
repeat the mapping section) with loop headers shortened, the input
description, and optional *hints*:

* ``none`` — nothing else: the model reads the code only;
* ``static`` — each loop's static trip count per entry (expected values for
  data-dependent loops), as a compiler would report them;
* ``analytical`` — those plus the analytical estimator's four metrics in the
  output's own digit format: the model learns a correction to a fast static
  model (residual learning), which it can copy where the static model is right
  and override where control flow or scheduling makes it wrong.

A checkpoint records its prompt format and hints in ``llmulator.json``
(:func:`checkpoint_settings`), so the estimator always builds the prompt the model
was trained on; any change to the text is a new ``PROMPT_FORMAT`` (the shipped
model's prompts are frozen byte for byte by ``tests/test_prompt_golden.py``).

Output: for each metric its marker token and its six codec tokens
(``<cycles> + 0 4 1 2 3 <energy_pj> ...``) then ``<eos>``.

The tokenizer is a ``tokenizers`` WordLevel model whose pre-tokenizer isolates
every digit, every identifier and every other symbol, so a digit is always one
token; it is saved as ``tokenizer.json`` and loads as a ``transformers`` fast
tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from llmulator.results import METRICS

from . import codec

MARKERS = tuple(f"<{m}>" for m in METRICS)
SPECIALS = ("<pad>", "<eos>", "<unk>", "<bos>", *MARKERS)
# number symbols are ordinary vocabulary (an added token would be cut out of identifiers: "L_k2", "energy")
NUMBER_SYMBOLS = ("e", "+", "-", *codec.DIGITS)
PREDICT = "### predict"
SPLIT = r"\d|[A-Za-z_][A-Za-z0-9_]*|\S"
HINTS = ("none", "static", "analytical")
PROMPT_FORMAT = "compact-v2"
_FOR = re.compile(r"for \(int (\w+) = (.+?); \1 (<=?) (.+?); \1(\+\+|\s*\+=\s*(.+?))\) \{")


def model_prompt(design, variant: str | None = None, hints: str = "none", prior: dict[str, float] | None = None) -> str:
    """The compact text the model reads for one design (see the module docstring).

    ``variant``: the input variant to describe (default: the design's own). ``prior``: the analytical
    estimator's metrics of this design, when the caller has them already (the estimator does: it checks
    its prediction against them); else they are computed here for ``hints="analytical"``."""
    if hints not in HINTS:
        raise ValueError(f"hints must be one of {HINTS}, not {hints!r}")
    from llmulator.render import compact, input_lines, isolate_digits, kernel_function, num
    d = design
    a, m, w = d.arch, d.mapping, d.workload
    variant = variant if variant is not None else d.variant
    used = _used_ops(d)
    out = ["### hw", f"clock {num(a.clock_mhz)}"]
    out.append(f"pe {a.pe_array.rows} x {a.pe_array.cols} {a.pe_array.interconnect} depth "
               f"{a.pe_array.pipeline_depth_cycles}" if a.pe_array else "pe none")
    for o in a.operators.values():
        if o.name in used:
            out.append(f"op {o.name} {o.count} lat {o.latency_cycles} {o.numeric[0]}{o.bits} "
                       f"e {_sci(o.energy_pj)} a {_sci(o.area_um2)}")
    for lv in a.memory:
        cap = "-" if lv.capacity_kib is None else num(lv.capacity_kib)
        out.append(f"mem {lv.name} {lv.kind} {cap} x {lv.instances} w {lv.width_bits} b {lv.banks} "
                   f"p {lv.ports} bw {num(lv.bandwidth_bytes_per_cycle)} lat {lv.latency_cycles} "
                   f"rd {_sci(lv.read_energy_pj)} wr {_sci(lv.write_energy_pj)}")
    out.append("### map")
    for label in d.tree.loops:
        lm = m.loop(label)
        items = [f"{k} {v}" for k, v in (("tile", lm.tile), ("spatial", lm.spatial), ("unroll", lm.unroll),
                                         ("ii", lm.pipeline_ii)) if v]
        if lm.fuse:
            items.append("fuse " + " ".join(lm.fuse))
        if lm.reduction == "tree":
            items.append("reduction tree")
        if items:
            out.append(f"{label} " + " ".join(items))
    if m.order:
        out.append("order " + " ".join(m.order))
    out.append("place " + " ".join(f"{n} {d.placement(n)}" for n in w.arrays))
    for n, p in m.partition.items():
        out.append(f"part {n} {p.type}" + (f" {p.factor}" if p.type != "complete" else "") + f" dim {p.dim}")
    if m.dataflow:
        out.append("dataflow")
    out.append("### sizes")
    out += [f"{p} {d.sizes[p]}" for p in w.parameters]
    out += [f"{s} {num(v['value'])}" for s, v in w.scalars.items()]
    out.append("### code")
    code = [ln for ln in kernel_function(d, False).splitlines() if not ln.lstrip().startswith("#pragma")]
    out += [_FOR.sub(_short_for, ln) for ln in code]
    out.append("### inputs")
    out += input_lines(d, variant)
    if hints != "none":
        out.append("### facts")
        out += _facts(d, hints, prior)
    return isolate_digits(compact("\n".join(out))) + f"{PREDICT}\n"


def checkpoint_settings(path: str | Path) -> dict[str, Any]:
    """What the checkpoint folder at ``path`` was trained to read: its ``llmulator.json`` (``format``,
    ``hints``, ``head``, ...). A checkpoint from before that file read the first prompt format
    (``prompt-v1``, no hints), which this version does not write."""
    import json
    f = Path(path) / "llmulator.json"
    return json.loads(f.read_text()) if f.is_file() else {"format": "prompt-v1", "hints": "none", "head": "digits"}


def checkpoint_prompts(path: str | Path | None, designs: Sequence, priors: Sequence[dict | None] | None = None,
                       settings: dict[str, Any] | None = None) -> list[str]:
    """Exactly the prompt the checkpoint at ``path`` reads for each design: :func:`model_prompt` with the
    hints it was trained with. ``priors``: the designs' analytical metrics, when the caller has them;
    ``settings``: the checkpoint's :func:`checkpoint_settings`, when the caller has read them.

    Raises ``UserError`` when there is no checkpoint at ``path`` or it reads another prompt format."""
    from llmulator.errors import UserError
    if settings is None:
        if path is None or not Path(path).is_dir():
            raise UserError(f"no checkpoint folder at {path or '(none shipped)'}")
        settings = checkpoint_settings(path)
    if settings.get("format") != PROMPT_FORMAT:
        raise UserError(f"the checkpoint at {path} reads prompt format {settings.get('format')!r}; "
                        f"this version writes {PROMPT_FORMAT!r}: retrain it with `llmulator train llm`")
    priors = priors if priors is not None else [None] * len(designs)
    return [model_prompt(d, hints=settings.get("hints", "none"), prior=p) for d, p in zip(designs, priors, strict=True)]


def _short_for(mt: re.Match) -> str:
    var, lo, rel, hi, step = mt.group(1), mt.group(2), mt.group(3), mt.group(4), mt.group(6)
    return f"for {var} {lo} {'to' if rel == '<=' else 'until'} {hi}" + (f" step {step}" if step else "") + " {"


def _used_ops(d) -> set[str]:
    return d.used_operator_classes()


def _sci(value: float) -> str:
    """A real-valued figure in the output's own digit format (``+ 0 4 1 2 3``)."""
    try:
        return " ".join(codec.encode(float(value)))
    except ValueError:
        return "?"


def _facts(d, hints: str, prior: dict[str, float] | None = None) -> list[str]:
    from llmulator.render import num
    lines = []
    for label in d.tree.loops:
        try:
            t = d.trips(label)
            lines.append(f"trips {label} {num(round(t)) if abs(t - round(t)) < 1e-9 else f'{t:.3g}'}")
        except Exception:  # noqa: BLE001 - a loop whose expected trips are unknown is written as such
            lines.append(f"trips {label} ?")
    if hints == "analytical":
        try:
            if prior is None:
                from llmulator_plugins.analytical.estimator import AnalyticalEstimator
                prior = AnalyticalEstimator().estimate([d])[0].metrics
            lines += [f"static {mt} {_sci(prior[mt])}" for mt in METRICS]
        except Exception:  # noqa: BLE001 - designs the static model cannot price get no prior
            lines.append("static none")
    return lines


def target_text(metrics: dict[str, float]) -> str:
    return " ".join(f"<{m}> " + " ".join(codec.encode(metrics[m])) for m in METRICS) + " <eos>"


def build_tokenizer(corpus: Iterable[str], vocab_size: int = 4096):
    """Train the WordLevel tokenizer on prompts; returns a transformers fast tokenizer."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(SPLIT), behavior="isolated")])
    trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS))
    tok.train_from_iterator(_with_symbols(corpus), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>",
                                   bos_token="<bos>")


def _with_symbols(corpus: Iterable[str]):
    yield " ".join(NUMBER_SYMBOLS)
    yield from corpus


def load_tokenizer(path: str | Path):
    from . import base_model
    if base_model.is_base_checkpoint(path):  # started from a --base-model: its own tokenizer, our tokens added
        return base_model.load_tokenizer(path)
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(tokenizer_file=str(Path(path) / "tokenizer.json"), pad_token="<pad>",
                                   eos_token="<eos>", unk_token="<unk>", bos_token="<bos>")
