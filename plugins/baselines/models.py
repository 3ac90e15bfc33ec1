"""The three baseline networks (plain torch; no torch-geometric): GNN, TLP and Tenset-MLP.

All take a batch from ``data.to_batch`` and return normalised log-metrics
``(B, 4)``; input and target normalisation statistics of the training set
are buffers, so one safetensors file holds the whole predictor.

* :class:`GNN` -- relational GraphSAGE-style message passing: per edge type
  and direction its own weight, mean aggregation per type, a residual
  update with LayerNorm; sum/mean/max pooling; the architecture vector
  through an MLP; a regression head.
* :class:`TLP` -- per-step MLP, multi-head self-attention with residual,
  two residual FC blocks, sum over steps (TLP's ``AttentionModule``), then
  the architecture embedding and the decoder.
* :class:`TensetMLP` -- TenSet's ``SegmentSumMLP``: per-statement MLP, sum
  over a design's statements, two residual FC layers, head.

Deviation from the originals, documented in docs/baselines.md: the targets are
four log-metrics with an MSE loss (no ranking loss: we need absolute values),
and the architecture vector is concatenated after pooling (TLP and TenSet
model one hardware target at a time).
"""

from __future__ import annotations

import torch
from torch import nn


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers)


def segment_sum(v: torch.Tensor, seg: torch.Tensor, n: int) -> torch.Tensor:
    return torch.zeros(n, v.shape[1], dtype=v.dtype).index_add_(0, seg, v)


def _standard(t: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """Standardised features; a feature that never varied in training (its std clamped at 1e-3, e.g.
    the figures of an operator class no training architecture had) reads as its training value: the
    model learned nothing about it, and 1/1e-3 would blow a new value up to a saturated prediction."""
    z = (t - mean) / std
    return torch.where(std <= 1e-3, torch.zeros_like(z), z)


class _Base(nn.Module):
    """Normalisation buffers and the architecture branch shared by the three models."""

    def __init__(self, in_dim: int, arch_dim: int, arch_hidden: int = 64):
        super().__init__()
        for name, dim in (("x_mean", in_dim), ("x_std", in_dim), ("g_mean", arch_dim), ("g_std", arch_dim)):
            self.register_buffer(name, torch.zeros(dim) if "mean" in name else torch.ones(dim))
        self.register_buffer("y_mean", torch.zeros(4))
        self.register_buffer("y_std", torch.ones(4))
        self.arch = _mlp([arch_dim, arch_hidden, arch_hidden])

    def set_stats(self, x: torch.Tensor, g: torch.Tensor, y: torch.Tensor) -> None:
        for name, t in (("x", x), ("g", g), ("y", y)):
            getattr(self, f"{name}_mean").copy_(t.mean(0))
            getattr(self, f"{name}_std").copy_(t.std(0).clamp_min(1e-3) if len(t) > 1 else torch.ones(t.shape[1]))

    def inputs(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        return (_standard(batch["x"], self.x_mean, self.x_std),
                self.arch(_standard(batch["g"], self.g_mean, self.g_std)))

    def to_log(self, out: torch.Tensor) -> torch.Tensor:
        """Log-metrics from normalised outputs, kept within 8 training standard deviations (no absurd extrapolation)."""
        return out.clamp(-8.0, 8.0) * self.y_std + self.y_mean


class GNN(_Base):
    def __init__(self, in_dim: int, arch_dim: int, hidden: int = 64, layers: int = 3, edge_types: int = 3):
        super().__init__(in_dim, arch_dim)
        self.relations = 2 * edge_types  # each edge type in both directions
        self.embed = nn.Linear(in_dim, hidden)
        self.self_lin = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.rel_lin = nn.ModuleList(nn.Linear(hidden, hidden * self.relations, bias=False) for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.head = nn.Sequential(*_mlp([3 * hidden + 64, 128, 64]), nn.Linear(64, 4))

    def forward(self, batch) -> torch.Tensor:
        x, a = self.inputs(batch)
        h = torch.relu(self.embed(x))
        n_nodes, hid = h.shape
        src, dst, et = batch["src"], batch["dst"], batch["etype"]
        src, dst, rel = torch.cat([src, dst]), torch.cat([dst, src]), torch.cat([et, et + self.relations // 2])
        key = dst * self.relations + rel
        deg = torch.zeros(n_nodes * self.relations).index_add_(0, key, torch.ones(len(key)))
        w = (1.0 / deg[key].clamp_min(1.0)).unsqueeze(1)
        for lin, rl, norm in zip(self.self_lin, self.rel_lin, self.norms, strict=True):
            msg = rl(h).view(n_nodes, self.relations, hid)[src, rel] * w
            agg = torch.zeros_like(h).index_add_(0, dst, msg)
            h = h + torch.relu(norm(lin(h) + agg))
        seg, n = batch["seg"], batch["n"]
        s = segment_sum(h, seg, n)
        cnt = torch.zeros(n).index_add_(0, seg, torch.ones(len(seg))).clamp_min(1).unsqueeze(1)
        mx = torch.full((n, hid), -1e9).scatter_reduce(0, seg.unsqueeze(1).expand(-1, hid), h, "amax")
        mx = torch.where(cnt > 0.5, mx, torch.zeros_like(mx)).clamp_min(-1e4)
        return self.head(torch.cat([s / 8.0, s / cnt, mx, a], 1))


class TLP(_Base):
    def __init__(self, in_dim: int, arch_dim: int, hidden: int = 128, heads: int = 4):
        super().__init__(in_dim, arch_dim)
        self.step = _mlp([in_dim, 64, hidden, hidden])
        self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.res = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(2))
        self.decoder = nn.Sequential(*_mlp([hidden + 64, 128, 64]), nn.Linear(64, 4))

    def forward(self, batch) -> torch.Tensor:
        x, a = self.inputs(batch)
        n, length = batch["n"], max(batch["max_len"], 1)
        h = self.step(x)
        pad = torch.zeros(n, length, h.shape[1])
        pad[batch["seg"], batch["pos"]] = h
        mask = torch.ones(n, length, dtype=torch.bool)
        mask[batch["seg"], batch["pos"]] = False  # True = padding
        att, _ = self.attn(pad, pad, pad, key_padding_mask=mask, need_weights=False)
        z = pad + att
        for lin in self.res:
            z = z + torch.relu(lin(z))
        z = z.masked_fill(mask.unsqueeze(2), 0.0).sum(1)
        return self.decoder(torch.cat([z / 8.0, a], 1))


class TensetMLP(_Base):
    def __init__(self, in_dim: int, arch_dim: int, hidden: int = 128):
        super().__init__(in_dim, arch_dim)
        self.segment = _mlp([in_dim, hidden, hidden])
        self.res = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(2))
        self.head = nn.Sequential(*_mlp([hidden + 64, 64]), nn.Linear(64, 4))

    def forward(self, batch) -> torch.Tensor:
        x, a = self.inputs(batch)
        z = segment_sum(self.segment(x), batch["seg"], batch["n"]) / 4.0
        for lin in self.res:
            z = z + torch.relu(lin(z))
        return self.head(torch.cat([z, a], 1))


MODELS = {"gnn": GNN, "tlp": TLP, "tensetmlp": TensetMLP}


def build(config: dict) -> nn.Module:
    return MODELS[config["kind"]](config["in_dim"], config["arch_dim"], **config.get("hyper", {}))
