"""Whole networks (issue 23): `llmulator estimate ARCH --network MODEL.onnx`.

The ONNX models are built here with onnx.helper; MAC counts are worked out by hand in the comments.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

onnx = pytest.importorskip("onnx")
from llmulator import cli  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

ARCH = "systolic-16x16"  # 256 MAC units


def _w(name, shape):
    import numpy as np
    return onnx.numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


def _save(model, path):
    onnx.save(model, str(path))
    return str(path)


def cnn(path, batch=1):
    """Strided conv, depthwise, pointwise, grouped-dilated conv, max pool, global pool, flatten, gemm."""
    n = [
        # 3 -> 8, 3x3, stride 2, pad 1: 32x32 -> 16x16; MACs 8*16*16 * 3*3*3 = 55,296
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        # depthwise 8 groups, 3x3, pad 1: MACs 8*16*16 * 3*3 = 18,432
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8),
        # pointwise 8 -> 16: MACs 16*16*16 * 8 = 32,768
        helper.make_node("Conv", ["c2", "w3"], ["c3"], name="pw", kernel_shape=[1, 1]),
        # grouped (4 groups of 4 channels), 3x3, dilation 2, pad 2: MACs 16*16*16 * 4*3*3 = 147,456
        helper.make_node("Conv", ["c3", "w4"], ["c4"], name="gconv", kernel_shape=[3, 3], dilations=[2, 2],
                         pads=[2, 2, 2, 2], group=4),
        helper.make_node("MaxPool", ["c4"], ["p1"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p1"], ["g1"], name="gap"),
        helper.make_node("Flatten", ["g1"], ["f1"], name="flat"),
        # 16 -> 10: MACs 16*10 = 160
        helper.make_node("Gemm", ["f1", "w5"], ["y"], name="fc", transB=1),
    ]
    g = helper.make_graph(n, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [_w("w1", (8, 3, 3, 3)), _w("w2", (8, 1, 3, 3)), _w("w3", (16, 8, 1, 1)),
                           _w("w4", (16, 4, 3, 3)), _w("w5", (10, 16))])
    return _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


CNN_MACS = {"conv1": 55_296, "dw": 18_432, "pw": 32_768, "gconv": 147_456, "fc": 160, "relu1": 0, "pool": 0,
            "gap": 0}


def transformer(path):
    """One attention block on a batch of 2 sequences of 8 tokens, model width 16."""
    n = [
        # projections: (2*8) x 16 x 16 = 4,096 MACs each (B is a weight: the batch folds into M)
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
        helper.make_node("MatMul", ["x", "wk"], ["k"], name="k_proj"),
        helper.make_node("MatMul", ["x", "wv"], ["v"], name="v_proj"),
        helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 2, 1]),
        # scores: 2 x (8 x 16 x 8) = 2,048 MACs, both operands batched
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
        helper.make_node("Softmax", ["s"], ["pr"], name="softmax", axis=-1),
        # context: 2 x (8 x 8 x 16) = 2,048 MACs
        helper.make_node("MatMul", ["pr", "v"], ["o"], name="av"),
        helper.make_node("Add", ["o", "x"], ["y"], name="residual"),
    ]
    g = helper.make_graph(n, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [_w("wq", (16, 16)), _w("wk", (16, 16)), _w("wv", (16, 16))])
    return _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


TRANSFORMER_MACS = {"q_proj": 4096, "k_proj": 4096, "v_proj": 4096, "qk": 2048, "av": 2048, "residual": 0}


def run(capsys, *args):
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def run_json(capsys, *args):
    code, out, err = run(capsys, "estimate", ARCH, *args, "--estimator", "analytical", "--json")
    assert code == 0, err
    return json.loads(out)


def _check_bounds(r, expected):
    by = {lay["name"]: lay for lay in r["layers"]}
    for name, macs in expected.items():
        assert by[name]["macs"] == macs, name
    assert r["mac_units"] == 256
    for lay in r["layers"]:
        (e,) = lay["estimates"]
        assert e["estimator"] == "analytical"
        assert set(e) >= {"metrics", "estimator", "version", "design"}  # the shape of `estimate --json`
        assert e["metrics"]["cycles"] >= lay["macs"] / 256, lay["name"]  # at or above the compute bound


def test_cnn_layers_macs_and_compute_bound(tmp_path, capsys):
    r = run_json(capsys, "--network", cnn(tmp_path / "cnn.onnx"))
    _check_bounds(r, CNN_MACS)
    kinds = {lay["name"]: lay["kind"] for lay in r["layers"]}
    assert kinds == {"conv1": "conv", "relu1": "eltwise", "dw": "depthwise", "pw": "conv", "gconv": "gconv",
                     "pool": "pool", "gap": "pool", "fc": "gemm"}
    assert r["macs"] == sum(CNN_MACS.values())
    assert [u["op"] for u in r["unsupported"]] == ["Flatten"]  # listed, with its share of the bytes
    assert r["unsupported"][0]["macs_share"] == 0 and r["unsupported"][0]["bytes_share"] > 0
    assert r["totals"]["analytical"]["layers"] == 8
    assert r["totals"]["analytical"]["cycles"] == pytest.approx(
        sum(lay["estimates"][0]["metrics"]["cycles"] for lay in r["layers"]))


def test_transformer_block(tmp_path, capsys):
    r = run_json(capsys, "--network", transformer(tmp_path / "t.onnx"))
    _check_bounds(r, TRANSFORMER_MACS)
    by = {lay["name"]: lay for lay in r["layers"]}
    assert by["qk"]["kind"] == by["av"]["kind"] == "bmm" and by["q_proj"]["kind"] == "gemm"
    # repeated shapes share one design (the mapping search ran once for the three projections)
    assert by["q_proj"]["design"] == by["k_proj"]["design"] == by["v_proj"]["design"]
    unsup = {u["name"]: u for u in r["unsupported"]}
    assert "k_t" in unsup  # a transpose moves data: listed, not dropped
    # this int8 array has no exp or divide unit: the softmax is listed with the reason, the rest estimated
    assert "softmax" in unsup and "exp" in unsup["softmax"]["reason"]


def test_table_fits_80_columns_and_dataflow_save(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    model = cnn(tmp_path / "cnn.onnx")
    code, out, err = run(capsys, "estimate", ARCH, "--network", model, "--estimator", "analytical",
                         "--dataflow", "ws", "--save", str(tmp_path / "designs"), "--no-progress")
    assert code == 0, err
    tables = [line for line in out.splitlines() if any(c in line for c in "│┃┏┡└")]
    assert tables and max(len(line) for line in tables) <= 80
    assert "totals per estimator" in out and "dominating layers (analytical)" in out and "Flatten" in out
    saved = sorted(p for p in (tmp_path / "designs").iterdir() if p.is_dir())
    assert len(saved) == 8
    # one saved layer re-estimates alone to the same cycles
    r = run_json(capsys, "--network", model, "--dataflow", "ws")
    conv1 = next(lay for lay in r["layers"] if lay["name"] == "conv1")
    code, out, err = run(capsys, "estimate", str(tmp_path / "designs" / "architecture.yaml"),
                         str(saved[0] / "workload.yaml"), str(saved[0] / "mapping.yaml"), "--estimator",
                         "analytical", "--json")
    assert code == 0, err
    assert json.loads(out)["estimates"][0]["metrics"]["cycles"] == conv1["estimates"][0]["metrics"]["cycles"]


def test_every_estimator_on_a_network(tmp_path, capsys):
    """Each available estimator prices every layer (or refuses it, said per layer), from one batched call."""
    code, out, err = run(capsys, "estimate", ARCH, "--network", transformer(tmp_path / "t.onnx"), "--json")
    assert code == 0, err
    r = json.loads(out)
    names = set(r["totals"])
    assert "analytical" in names and len(names) >= 2, (names, r["skipped"])
    for lay in r["layers"]:
        assert {e["estimator"] for e in lay["estimates"]} | set(lay["refused"]) == names
        for e in lay["estimates"]:
            assert e["metrics"]["cycles"] > 0
    for n, t in r["totals"].items():
        assert t["layers"] + t["refused"] == len(r["layers"]), n


def test_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "net.png"
    code, _, err = run(capsys, "estimate", ARCH, "--network", transformer(tmp_path / "t.onnx"), "--estimator",
                       "analytical", "--plot", str(png), "--no-progress")
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_domain_is_listed_and_the_rest_estimated(tmp_path, capsys):
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
         helper.make_node("Fancy", ["c"], ["y"], name="fancy", domain="com.example")]
    g = helper.make_graph(n, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [_w("w", (8, 4, 1, 1))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])
    r = run_json(capsys, "--network", _save(m, tmp_path / "u.onnx"))
    assert [lay["name"] for lay in r["layers"]] == ["conv"]
    assert r["layers"][0]["macs"] == 8 * 8 * 8 * 4
    (u,) = r["unsupported"]
    assert u["op"] == "com.example.Fancy" and "com.example" in u["reason"]


def test_bad_models_exit_2(tmp_path, capsys):
    # a cycle: a -> b -> a
    n = [helper.make_node("Relu", ["x", "b"], ["a"], name="A"), helper.make_node("Relu", ["a"], ["b"], name="B")]
    g = helper.make_graph(n, "cyc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4])])
    cyc = _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "cyc.onnx")
    code, _, err = run(capsys, "estimate", ARCH, "--network", cyc)
    assert code == 2 and "cycle" in err and "A" in err
    # a symbolic batch with no value; --dim gives it one
    dyn = cnn(tmp_path / "dyn.onnx", batch="batch")
    code, _, err = run(capsys, "estimate", ARCH, "--network", dyn)
    assert code == 2 and "symbolic ('batch')" in err and "--dim batch=1" in err
    r = run_json(capsys, "--network", dyn, "--dim", "batch=1")
    assert r["macs"] == sum(CNN_MACS.values())
    # a truncated file, an empty one, a missing one
    data = (tmp_path / "dyn.onnx").read_bytes()
    (tmp_path / "cut.onnx").write_bytes(data[: len(data) // 3])
    (tmp_path / "empty.onnx").write_bytes(b"")
    for bad, what in (("cut.onnx", "not a readable ONNX model"), ("empty.onnx", "empty"), ("nope.onnx", "no such")):
        code, _, err = run(capsys, "estimate", ARCH, "--network", str(tmp_path / bad))
        assert code == 2 and what in err and bad in err, err
    # WORKLOAD and MAPPING are required without --network, and excluded with it
    code, _, err = run(capsys, "estimate", ARCH)
    assert code == 2 and "--network" in err
    code, _, err = run(capsys, "estimate", ARCH, "gemm", "gemm-ws-16x16", "--network", dyn)
    assert code == 2 and "not both" in err


def test_cli_import_does_not_import_onnx():
    code = ("import sys, llmulator.cli as c; c.build_parser(); "
            "bad = [m for m in ('onnx', 'torch') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
