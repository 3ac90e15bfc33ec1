"""What the LLM estimator reads and writes, as text and as tokens.

Input: the design's prompt (``llmulator.render.prompt``: hardware, mapping,
sizes, code, inputs; every number digit by digit) without the HLS pragma
lines, which repeat the mapping section, followed by ``### predict``.
Output: for each metric its marker token and its seven codec tokens
(``<cycles> 1 2 3 e + 0 4 <energy_pj> ...``) then ``<eos>``.

The tokenizer is a ``tokenizers`` WordLevel model whose pre-tokenizer isolates
every digit, every identifier and every other symbol, so a digit is always one
token; it is saved as ``tokenizer.json`` and loads as a ``transformers`` fast
tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from . import codec

METRICS = ("cycles", "energy_pj", "power_mw", "area_um2")
MARKERS = tuple(f"<{m}>" for m in METRICS)
SPECIALS = ("<pad>", "<eos>", "<unk>", "<bos>", *MARKERS)
# number symbols are ordinary vocabulary (an added token would be cut out of identifiers: "L_k2", "energy")
NUMBER_SYMBOLS = ("e", "+", "-", *codec.DIGITS)
PREDICT = "### predict"
SPLIT = r"\d|[A-Za-z_][A-Za-z0-9_]*|\S"


def model_prompt(design, variant: str | None = None, prompt_text: str | None = None) -> str:
    from llmulator.render import prompt
    text = prompt_text if prompt_text is not None else prompt(design, variant)
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#pragma")]
    return "\n".join(lines) + f"\n{PREDICT}\n"


def strip_prompt(text: str) -> str:
    """A stored prompt (from the synthesizer) in the form the model reads."""
    return model_prompt(None, prompt_text=text)


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
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(tokenizer_file=str(Path(path) / "tokenizer.json"), pad_token="<pad>",
                                   eos_token="<eos>", unk_token="<unk>", bos_token="<bos>")
