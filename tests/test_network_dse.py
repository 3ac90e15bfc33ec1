"""`llmulator dse ARCH --network MODEL.onnx --space HW.yaml` (issue 23 item 4): hardware values for a whole network.

A tiny network (one conv, a ReLU, one gemm) on systolic-16x16 and a two-point space, so that it runs in seconds.
"""

from __future__ import annotations

import json

import pytest

onnx = pytest.importorskip("onnx")
from llmulator import cli  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

ARCH = "systolic-16x16"


def tiny(path):
    import numpy as np
    w = [onnx.numpy_helper.from_array(np.zeros(s, dtype=np.float32), n) for n, s in (("w1", (16, 8, 3, 3)),
                                                                                      ("w2", (10, 16)))]
    n = [  # conv 8 -> 16, 3x3 on 8x8 (no pad): 6x6 out, MACs 16*6*6*8*9 = 41,472
        helper.make_node("Conv", ["x", "w1"], ["c"], name="conv", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "w2"], ["y"], name="fc", transB=1),  # MACs 16*10 = 160
    ]
    g = helper.make_graph(n, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], w)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return str(path)


def space(path, body):
    path.write_text("space:\n  version: 1\n  name: net-hw\n" + body)
    return str(path)


def run(capsys, *args):
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_dse_network_ranks_hardware_and_verifies_the_winner_per_layer(tmp_path, capsys):
    model = tiny(tmp_path / "tiny.onnx")
    sp = space(tmp_path / "hw.yaml", "  hardware:\n    pe_array: {square: [4, 16]}\n")
    code, out, err = run(capsys, "dse", ARCH, "--network", model, "--space", sp, "--dataflow", "ws",
                         "--search-budget", "200", "--verify", "1", "--json", "--out", str(tmp_path / "out"))
    assert code == 0, err
    s = json.loads(out)
    assert s["evaluated"] == s["valid"] == 2 and s["strategy"] == "exhaustive"
    assert s["mapped_layers"] == 4 and [u["op"] for u in s["unsupported"]] == ["Flatten"]
    best, worst = s["ranked"]
    assert best["params"] == "pe_array.square=16" and best["cycles"] < worst["cycles"]
    # the conv's compute bound on 4x4 = 16 MAC units: the whole network cannot be faster than that
    assert worst["cycles"] >= 41_472 / 16
    (v,) = s["verified"]
    assert v["params"] == best["params"]
    assert {name for row in v["layers"] for name in row["layers"]} == {"conv", "relu", "gap", "fc"}
    for row in v["layers"]:
        assert row["measured"] is not None, row["error"]
        assert row["measured"]["cycles"] > 0
    # the point's total is its layers' sum, predicted and measured
    assert v["predicted"]["cycles"] == pytest.approx(sum(r["predicted"]["cycles"] for r in v["layers"]))
    assert v["measured"]["cycles"] == pytest.approx(sum(r["measured"]["cycles"] for r in v["layers"]))
    assert (tmp_path / "out" / "summary.json").is_file() and (tmp_path / "out" / "profiles.json").is_file()


def test_dse_network_bad_input_exit_2(tmp_path, capsys):
    model = tiny(tmp_path / "tiny.onnx")
    bad = space(tmp_path / "bad.yaml", "  hardware:\n    memory:\n      GLBB: {capacity_kib: [64]}\n")
    code, _, err = run(capsys, "dse", ARCH, "--network", model, "--space", bad)
    assert code == 2 and "unknown memory level 'GLBB'" in err and "did you mean 'GLB'" in err
    mp = space(tmp_path / "mp.yaml", "  mapping:\n    order: all\n  hardware:\n    pe_array: {square: [8]}\n")
    code, _, err = run(capsys, "dse", ARCH, "--network", model, "--space", mp)
    assert code == 2 and "no effect with --network" in err
    code, _, err = run(capsys, "dse", ARCH, "--space", mp)
    assert code == 2 and "--network" in err
    code, _, err = run(capsys, "dse", ARCH, "gemm", "--network", model, "--space", mp)
    assert code == 2 and "not both" in err
