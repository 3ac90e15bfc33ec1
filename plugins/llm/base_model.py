"""Starting the LLM estimator from a local Hugging Face causal LM (``--base-model PATH``), optionally with LoRA.

Our own model uses our WordLevel tokenizer, where every codec symbol
(``+ - 0 .. 9``) and every metric marker is one token named after itself. A
base model brings its own tokenizer (byte-level BPE writes ``Ġ0``,
sentencepiece ``▁0``, a digit may even merge with its neighbours), so:

* the metric markers (``<cycles>`` ...), a ``<pad>`` and an ``<eos>`` are added
  as special tokens where missing and the embeddings are resized;
* every output symbol maps to **one** id of that vocabulary
  (:func:`symbol_id`: the single token of ``" 0"``, else of ``"0"``, else the
  vocabulary entry ``0``; anything else is a clear error), and the training
  targets are built from those ids (:func:`target_ids`) rather than by
  tokenising the target text, so training and constrained decoding
  (``decode.allowed_ids``) use the very same ids. For our tokenizer the ids
  are exactly the ones tokenising the text gives.

With ``lora`` the base weights stay frozen: a peft LoRA adapter (rank ``r``,
all linear/Conv1D projections of the blocks, never the output layer) plus
trainable rows for the added tokens only (peft's ``trainable_token_indices``).
A save writes the adapter to ``adapter/`` (safetensors; it is what
``--resume`` continues from) **and** a merged full checkpoint next to it, so
the estimator, calibration and benchmarks load it like any other checkpoint
and inference pays nothing for the adapter. ``llmulator.json`` records the
base model's path and ``lora``. Nothing is ever downloaded
(``local_files_only``) and ``trust_remote_code`` is never set.
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

from llmulator.errors import UserError

from .text import MARKERS

ADAPTER = "adapter"
LORA_TARGETS = "all-linear"  # peft: every Linear/Conv1D of the blocks, not the output layer


def check(base_model: str | Path, init=None, head: str = "digits", lora: bool = False) -> Path:
    """The base model's folder, after checking the options that go with it (UserError otherwise)."""
    path = Path(base_model)
    if init is not None:
        raise UserError("--base-model and --init both choose the starting model; give one of them")
    if head != "digits":
        raise UserError(f"--base-model fine-tunes the language model's own digits; the '{head}' ablation head "
                        "reads our Llama trunk only (use it without --base-model)")
    if not (path / "config.json").is_file():
        raise UserError(f"--base-model {base_model}: not a local Hugging Face model folder (expected config.json, "
                        "model weights and a tokenizer there; nothing is downloaded)")
    return path.resolve()


def meta(base_model: str | Path, lora: bool, r: int) -> dict[str, Any]:
    return {"base_model": str(Path(base_model).resolve()), "lora": bool(lora), **({"lora_r": r} if lora else {})}


def is_base_checkpoint(path: str | Path) -> bool:
    """Whether the checkpoint in ``path`` keeps a base model's own tokenizer (its ``llmulator.json`` says so)."""
    f = Path(path) / "llmulator.json"
    return f.is_file() and bool(json.loads(f.read_text()).get("base_model"))


def recorded(path: str | Path) -> tuple[str, bool, int]:
    """(base model, lora, rank) recorded in a checkpoint's ``llmulator.json``."""
    m = json.loads((Path(path) / "llmulator.json").read_text())
    return m["base_model"], bool(m.get("lora")), int(m.get("lora_r", 8))


def load_tokenizer(path: str | Path):
    from transformers import AutoTokenizer
    try:
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError) as e:
        raise UserError(f"cannot load the tokenizer in {path}: {e}") from e


def _load_model(path: str | Path):
    import torch
    from transformers import AutoModelForCausalLM
    try:
        return AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, trust_remote_code=False,
                                                    dtype=torch.float32)  # bf16 is emulated on this kind of CPU
    except (OSError, ValueError, KeyError) as e:
        raise UserError(f"cannot load a causal language model from {path}: {e}") from e


def symbol_id(tokenizer, symbol: str) -> int:
    """The one token id that stands for an output symbol (codec symbol, metric marker or ``<eos>``)."""
    if symbol == "<eos>" and tokenizer.eos_token_id is not None:
        return tokenizer.eos_token_id
    added = tokenizer.get_added_vocab()
    if symbol in added:
        return added[symbol]
    unk = tokenizer.unk_token_id
    for text in (" " + symbol, symbol):  # as the target text writes it (after a space), else on its own
        ids = tokenizer.encode(text, add_special_tokens=False)
        if len(ids) == 1 and ids[0] != unk:
            return ids[0]
    vid = tokenizer.get_vocab().get(symbol)
    if vid is not None and vid != unk:
        return vid
    raise UserError(f"the tokenizer has no single token for the output symbol {symbol!r} (it writes it as "
                    f"{tokenizer.convert_ids_to_tokens(tokenizer.encode(symbol, add_special_tokens=False))}); "
                    "the digit format needs one token per digit and sign")


def target_ids(tokenizer, targets: list[str]) -> list[list[int]]:
    """Token ids of target texts (``<cycles> + 0 4 1 2 3 ... <eos>``), one id per whitespace-separated symbol."""
    table: dict[str, int] = {}
    out = []
    for t in targets:
        syms = t.split()
        for s in syms:
            if s not in table:
                table[s] = symbol_id(tokenizer, s)
        out.append([table[s] for s in syms])
    return out


def check_symbols(tokenizer) -> None:
    """Every output symbol has its own token (UserError otherwise): decoding tells them apart by id."""
    from . import codec
    symbols = sorted({*codec.SIGNS, *codec.DIGITS, *MARKERS, "<eos>"})
    ids = {s: symbol_id(tokenizer, s) for s in symbols}
    if len(set(ids.values())) != len(ids):
        raise UserError(f"the tokenizer maps different output symbols to the same token: {ids}")


def _prepare_tokenizer(tokenizer) -> list[int]:
    """Add the markers, ``<pad>`` and ``<eos>`` where missing; the ids of the added tokens."""
    from tokenizers import AddedToken
    before = set(tokenizer.get_vocab().values())
    if tokenizer.pad_token is None:
        tokenizer.add_special_tokens({"pad_token": "<pad>"})
    if tokenizer.eos_token is None:
        tokenizer.add_special_tokens({"eos_token": "<eos>"})
    missing = [m for m in MARKERS if m not in tokenizer.get_vocab()]
    tokenizer.add_tokens([AddedToken(m, special=True, normalized=False) for m in missing], special_tokens=True)
    return sorted(set(tokenizer.get_vocab().values()) - before)


def load(base_model: str | Path, lora: bool = False, r: int = 8):
    """(tokenizer, model) to fine-tune: the base with our tokens added, wrapped in a LoRA adapter if ``lora``."""
    tokenizer = load_tokenizer(base_model)
    model = _load_model(base_model)
    new = _prepare_tokenizer(tokenizer)
    check_symbols(tokenizer)
    _fit_embeddings(model, tokenizer)
    if not lora:
        return tokenizer, model
    from peft import LoraConfig, get_peft_model
    cfg = LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules=LORA_TARGETS,
                     trainable_token_indices=new or None, task_type="CAUSAL_LM")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # peft's notes on Conv1D fan_in_fan_out and resized embeddings
        return tokenizer, get_peft_model(model, cfg)


def _fit_embeddings(model, tokenizer) -> None:
    if len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(len(tokenizer))
    model.config.pad_token_id = tokenizer.pad_token_id
    model.config.eos_token_id = tokenizer.eos_token_id


def resume(out: str | Path, base_model: str | Path, lora: bool):
    """(tokenizer, model) of an interrupted run: the full checkpoint, or the base with the saved adapter."""
    tokenizer = load_tokenizer(out)
    if not lora:
        return tokenizer, _load_model(out)
    from peft import PeftModel
    model = _load_model(base_model)
    _fit_embeddings(model, tokenizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tokenizer, PeftModel.from_pretrained(model, str(Path(out) / ADAPTER), is_trainable=True)


def save_model(model, folder: str | Path) -> None:
    """Safetensors weights: a plain model as is; a LoRA model as its adapter plus a merged full copy."""
    folder = Path(folder)
    if not hasattr(model, "merge_and_unload"):
        model.save_pretrained(folder, safe_serialization=True)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # peft: the resized embedding matrix is saved with the adapter
        model.save_pretrained(folder / ADAPTER, safe_serialization=True)
        merged = copy.deepcopy(model).merge_and_unload()
    merged.save_pretrained(folder, safe_serialization=True)
