"""The three baseline networks' inference in NumPy (no torch): :mod:`models`' forward passes, op for op.

Importing torch costs 1.5-3 s of a cold ``llmulator estimate`` on this project's 2-core machine; these
networks take milliseconds. A checkpoint's ``model.safetensors`` (the torch module's state dict, read with
``safetensors.numpy``) and ``config.json`` build a :class:`NumpyBaseline` whose :meth:`NumpyBaseline.forward`
takes a packed batch (``data.pack``) and returns what ``models.<Kind>.forward`` returns: the normalised
log-metrics, float32, equal to torch's to float32 rounding (``tests/test_baselines_numpy.py``). Training
stays in torch (``models.py``, ``train.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

BUFFERS = ("x_mean", "x_std", "g_mean", "g_std", "y_mean", "y_std")


def _linear(x: np.ndarray, sd: dict[str, np.ndarray], name: str) -> np.ndarray:
    w = sd[name + ".weight"]
    out = x @ w.T
    b = sd.get(name + ".bias")
    if b is not None:
        out += b
    return out


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.float32(0.0), out=x)


def _mlp(x: np.ndarray, sd: dict[str, np.ndarray], prefix: str, layers: int) -> np.ndarray:
    """``models._mlp``: Linear + ReLU pairs (module indices 0, 2, 4, ...)."""
    for i in range(layers):
        x = _relu(_linear(x, sd, f"{prefix}.{2 * i}"))
    return x


def _standard(t: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """``models._standard``: standardised, a never-varied feature (std at the 1e-3 clamp) read as 0."""
    z = (t - mean) / std
    return np.where(std <= np.float32(1e-3), np.float32(0.0), z).astype(np.float32)


def _segment_sum(v: np.ndarray, seg: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros((n, v.shape[1]), v.dtype)
    np.add.at(out, seg, v)
    return out


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float32(eps)) * w + b


def batch_of(packed: dict[str, np.ndarray]) -> dict[str, Any]:
    """``data.to_batch`` without torch: rows with their design index, edges shifted to batch rows, positions."""
    x_off, e_off = packed["x_off"], packed["e_off"]
    n = len(x_off) - 1
    counts = np.diff(x_off)
    seg = np.repeat(np.arange(n), counts)
    e = packed["e"]
    shift = np.repeat(x_off[:-1], np.diff(e_off))
    pos = np.arange(len(packed["x"])) - np.repeat(x_off[:-1], counts)
    return {"x": np.asarray(packed["x"], np.float32), "seg": seg, "n": n, "src": e[:, 0] + shift,
            "dst": e[:, 1] + shift, "etype": e[:, 2].copy(), "g": np.asarray(packed["g"], np.float32),
            "pos": pos, "max_len": int(counts.max()) if n else 0}


class NumpyBaseline:
    """One checkpoint's network (``config["kind"]``: gnn, tlp, tensetmlp) with its normalisation buffers as
    attributes (``x_mean`` ... ``y_std``, float32 arrays, what ``guards.Checker`` reads)."""

    numpy = True  # the estimator runs it under blas_threads, on data.pack's arrays (batch_of)

    def __init__(self, config: dict[str, Any], state: dict[str, np.ndarray]):
        self.kind = config["kind"]
        if self.kind not in ("gnn", "tlp", "tensetmlp"):
            raise ValueError(f"unknown baseline kind {self.kind!r}")
        self.hyper = dict(config.get("hyper", {}))
        self.sd = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in state.items()}
        for k in BUFFERS:
            setattr(self, k, self.sd[k])

    @classmethod
    def load(cls, path: str | Path) -> NumpyBaseline:
        from llmulator.npinfer import load_safetensors
        path = Path(path)
        return cls(json.loads((path / "config.json").read_text()), load_safetensors(path / "model.safetensors"))

    def forward(self, batch: dict[str, Any]) -> np.ndarray:
        """Normalised log-metrics ``(designs, 4)``, float32 (``models.<Kind>.forward``)."""
        sd = self.sd
        x = _standard(batch["x"], self.x_mean, self.x_std)
        a = _mlp(_standard(batch["g"], self.g_mean, self.g_std), sd, "arch", 2)
        return getattr(self, "_" + self.kind)(batch, x, a)

    def __call__(self, batch: dict[str, Any]) -> np.ndarray:
        return self.forward(batch)

    def _gnn(self, batch, x: np.ndarray, a: np.ndarray) -> np.ndarray:
        sd = self.sd
        layers = int(self.hyper.get("layers", 3))
        relations = 2 * int(self.hyper.get("edge_types", 3))
        h = _relu(_linear(x, sd, "embed"))
        n_nodes, hid = h.shape
        src, dst, et = batch["src"], batch["dst"], batch["etype"]
        src, dst, rel = (np.concatenate([src, dst]), np.concatenate([dst, src]),
                         np.concatenate([et, et + relations // 2]))
        key = dst * relations + rel
        deg = np.bincount(key, minlength=n_nodes * relations).astype(np.float32)
        w = (np.float32(1.0) / np.maximum(deg[key], np.float32(1.0)))[:, None]
        for i in range(layers):
            msg = _linear(h, sd, f"rel_lin.{i}").reshape(n_nodes, relations, hid)[src, rel] * w
            agg = np.zeros_like(h)
            np.add.at(agg, dst, msg)
            z = _linear(h, sd, f"self_lin.{i}") + agg
            h = h + _relu(_layer_norm(z, sd[f"norms.{i}.weight"], sd[f"norms.{i}.bias"]))
        seg, n = batch["seg"], batch["n"]
        s = _segment_sum(h, seg, n)
        cnt = np.maximum(np.bincount(seg, minlength=n).astype(np.float32), np.float32(1.0))[:, None]
        mx = np.full((n, hid), np.float32(-1e9))
        np.maximum.at(mx, seg, h)
        mx = np.maximum(np.where(cnt > 0.5, mx, np.float32(0.0)), np.float32(-1e4)).astype(np.float32)
        z = np.concatenate([s / np.float32(8.0), s / cnt, mx, a], 1)
        return _linear(_mlp(z, sd, "head", 2), sd, "head.4")

    def _tlp(self, batch, x: np.ndarray, a: np.ndarray) -> np.ndarray:
        sd = self.sd
        heads = int(self.hyper.get("heads", 4))
        n, length = batch["n"], max(batch["max_len"], 1)
        h = _mlp(x, sd, "step", 3)
        hid = h.shape[1]
        pad = np.zeros((n, length, hid), np.float32)
        pad[batch["seg"], batch["pos"]] = h
        valid = np.zeros((n, length), bool)
        valid[batch["seg"], batch["pos"]] = True
        # nn.MultiheadAttention(batch_first=True), self-attention, key padding masked
        qkv = (pad.reshape(n * length, hid) @ sd["attn.in_proj_weight"].T + sd["attn.in_proj_bias"])
        d = hid // heads
        qkv = qkv.reshape(n, length, 3, heads, d).transpose(2, 0, 3, 1, 4)  # (3, n, heads, L, d)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = np.matmul(q, k.transpose(0, 1, 3, 2)) * np.float32(1.0 / np.sqrt(d))
        scores = np.where(valid[:, None, None, :], scores, np.float32(-np.inf))
        m = scores.max(-1, keepdims=True)
        m[~np.isfinite(m)] = 0.0
        p = np.exp(scores - m)
        total = p.sum(-1, keepdims=True)
        p = p / np.where(total > 0, total, np.float32(1.0))
        att = np.matmul(p, v).transpose(0, 2, 1, 3).reshape(n * length, hid)
        att = _linear(att, sd, "attn.out_proj").reshape(n, length, hid)
        z = pad + att
        for i in range(2):
            z = z + _relu(_linear(z, sd, f"res.{i}"))
        z = np.where(valid[:, :, None], z, np.float32(0.0)).sum(1)
        return _linear(_mlp(np.concatenate([z / np.float32(8.0), a], 1), sd, "decoder", 2), sd, "decoder.4")

    def _tensetmlp(self, batch, x: np.ndarray, a: np.ndarray) -> np.ndarray:
        sd = self.sd
        z = _segment_sum(_mlp(x, sd, "segment", 2), batch["seg"], batch["n"]) / np.float32(4.0)
        for i in range(2):
            z = z + _relu(_linear(z, sd, f"res.{i}"))
        return _linear(_mlp(np.concatenate([z, a], 1), sd, "head", 1), sd, "head.2")
