"""The per-layer mapping search's shortcuts (issue 23 item 6) change no result: dataflows pruned by their compute
bound, mappings built without the schema pass, the library GEMM placement found by name."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
from test_network import cnn  # noqa: E402


def _layers(arch, model, monkeypatch=None, prune=True, validate=False):
    from llmulator_plugins.network import mappings
    from llmulator_plugins.network.run import estimate_network
    if monkeypatch is not None:
        if not prune:
            monkeypatch.setattr(mappings.Mapper, "_compute_bound", lambda self, layer, body, df: 0.0)
        if validate:
            monkeypatch.setenv("LLMULATOR_NETWORK_VALIDATE", "1")
    r = estimate_network(arch, model, ["analytical"], progress=False)
    return {lay["name"]: (lay["dataflow"], lay["design"]["mapping"], lay["estimates"][0]["metrics"]["cycles"])
            for lay in r["layers"]}


def test_pruned_search_finds_the_same_mappings(tmp_path, monkeypatch):
    # the CNN's strided, depthwise, pointwise and grouped layers; checked on a BERT-base encoder block, on
    # eyeriss-like, on ResNet-18 and on MobileNet-v2 too, outside the suite
    arch, model = "systolic-16x16", cnn(tmp_path / "cnn.onnx")
    fast = _layers(arch, model)
    with monkeypatch.context() as mp:
        slow = _layers(arch, model, mp, prune=False, validate=True)
    assert fast == slow


def test_compute_bound_is_below_every_dataflows_best(tmp_path):
    from llmulator.library import resolve
    from llmulator_plugins.network import onnx_import
    from llmulator_plugins.network.mappings import Mapper
    from llmulator_plugins.network.run import _key
    layers = onnx_import.layers(onnx_import.load(cnn(tmp_path / "cnn.onnx")))
    for df in ("ws", "os", "rs"):
        m = Mapper(resolve("architecture", "systolic-16x16"), df)
        for lay in layers:
            if lay.kind not in ("conv", "depthwise", "gconv", "gemm"):
                continue
            d, _, why = m.design(lay, _key(lay))
            assert d is not None, why
            from llmulator_plugins.network.workloads import workload_body
            bound = m._compute_bound(lay, workload_body(lay, m.arch, "x"), df)
            assert bound >= lay.macs / 256
            assert m.est.estimate([d])[0].metrics["cycles"] >= bound, (lay.name, df)


def test_layer_list_cached_by_content(tmp_path, monkeypatch):
    from llmulator_plugins.network import onnx_import
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    model = cnn(tmp_path / "cnn.onnx")
    first = onnx_import.load_layers(model)
    assert first == onnx_import.layers(onnx_import.load(model))
    (entry,) = (tmp_path / "cache" / "network").iterdir()

    def no_read(*a, **k):
        raise AssertionError("read the model again")

    monkeypatch.setattr(onnx_import, "load", no_read)  # a second read is served from the cache: no import onnx
    assert onnx_import.load_layers(model) == first
    with pytest.raises(AssertionError):  # other dims (or other bytes, importer code, onnx version): another key
        onnx_import.load_layers(model, {"batch": 2})
    monkeypatch.setenv("LLMULATOR_NETWORK_CACHE", "0")
    with pytest.raises(AssertionError):
        onnx_import.load_layers(model)
    assert entry.is_file()
