"""Whole networks from Timeloop layer problems (issue 23 item 1): `estimate ARCH --network DIR` or
`--network a.yaml,b.yaml`.

The problems are written here in Timeloop's v0.4 `problem:` format as the timeloop-accelergy-exercises
layer shapes write it (one spelled out, the others merged from a base with `{{include_text(...)}}` and
`<<<`); MAC counts worked out by hand in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llmulator import cli
from llmulator.errors import SpecError
from llmulator_plugins.network import timeloop_layers

ARCH = "systolic-16x16"  # 256 MAC units
VENDORED = Path(__file__).parent / "data" / "timeloop" / "layer_shapes" / "resnet18"

# a 3 -> 8 convolution, 3x3, stride 2, written out as in the exercises' CONV/AlexNet files: 16x16 outputs,
# MACs 8 * 16*16 * 3 * 3*3 = 55,296
CONV = """problem:
  version: 0.4
  instance: {C: 3, M: 8, N: 1, P: 16, Q: 16, R: 3, S: 3, Hstride: 2, Wstride: 2, Hdilation: 1, Wdilation: 1}
  shape:
    name: CNN_Layer
    coefficients:
    - {name: Wstride, default: 1}
    - {name: Hstride, default: 1}
    - {name: Wdilation, default: 1}
    - {name: Hdilation, default: 1}
    data_spaces:
    - name: Weights
      projection: [[[C]], [[M]], [[R]], [[S]]]
    - name: Inputs
      projection:
      - [[N]]
      - [[C]]
      - [[R, Wdilation], [P, Wstride]]
      - [[S, Hdilation], [Q, Hstride]]
    - name: Outputs
      projection: [[[N]], [[M]], [[Q]], [[P]]]
      read_write: true
    dimensions: [C, M, R, S, N, P, Q]
"""

# the exercises' problem_base.yaml, cut down: a grouped convolution; the instance gives every bound 1
BASE = """problem_base_ignore: &problem_base
  version: 0.4
  instance: {N: 1, C: 1, H: 1, W: 1, G: 1, R: 1, S: 1, Hdilation: 1, Hstride: 1, Wdilation: 1, Wstride: 1,
             M: 1, P: 1, Q: 1}
  shape:
    coefficients:
    - {name: Wstride, default: 1}
    - {name: Hstride, default: 1}
    - {name: Wdilation, default: 1}
    - {name: Hdilation, default: 1}
    data_spaces:
    - {name: Weights, projection: [[[C]], [[M]], [[R]], [[S]], [[G]]]}
    - {name: Inputs, projection: [[[N]], [[C]], [[R, Wdilation], [P, Wstride]], [[S, Hdilation], [Q, Hstride]],
                                  [[G]]]}
    - {name: Outputs, projection: [[[N]], [[M]], [[Q]], [[P]], [[G]]], read_write: true}
    dimensions: [C, M, R, S, N, P, Q, G]
"""


def layer(instance: str) -> str:
    return "{{include_text('../problem_base.yaml')}}\nproblem:\n  <<<: *problem_base\n  instance: " + instance + "\n"


# depthwise, 8 channels, 3x3 on 16x16 outputs: 8 * 16*16 * 3*3 = 18,432 MACs
DW = layer("{G: 8, P: 16, Q: 16, R: 3, S: 3}")
# fully connected 16 -> 10: 160 MACs
FC = layer("{C: 16, M: 10}")
# a 3-D convolution (a third output position T with its filter offset U): not expressible, listed, never
# dropped; MACs 4*4*4 * 2*2*2 = 512
CONV3D = """problem:
  instance: {C: 1, M: 1, P: 4, Q: 4, T: 4, R: 2, S: 2, U: 2}
  shape:
    data_spaces:
    - {name: Weights, projection: [[[C]], [[M]], [[R]], [[S]], [[U]]]}
    - {name: Inputs, projection: [[[C]], [[R], [P]], [[S], [Q]], [[U], [T]]]}
    - {name: Outputs, projection: [[[M]], [[P]], [[Q]], [[T]]], read_write: true}
    dimensions: [C, M, R, S, U, P, Q, T]
"""
MACS = {"layer1": 55_296, "layer2": 18_432, "layer10": 160}


def folder(tmp_path: Path, **extra: str) -> Path:
    (tmp_path / "problem_base.yaml").write_text(BASE)
    d = tmp_path / "net"
    d.mkdir()
    for name, text in {"layer1": CONV, "layer2": DW, "layer10": FC, **extra}.items():
        (d / f"{name}.yaml").write_text(text)
    return d


def run(capsys, *args):
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_folder_natural_order_macs_and_compute_bound(tmp_path, capsys):
    d = folder(tmp_path, layer3=CONV3D)
    code, out, err = run(capsys, "estimate", ARCH, "--network", str(d), "--estimator", "analytical", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert [x["name"] for x in r["layers"]] == ["layer1", "layer2", "layer10"]  # natural order, not layer10 first
    assert [x["kind"] for x in r["layers"]] == ["conv", "depthwise", "gemm"]
    assert {x["name"]: x["macs"] for x in r["layers"]} == MACS
    assert r["layers"][0]["shape"] == "3>8 16x16 3x3/2" and r["layers"][2]["shape"] == "1x16x10"
    for x in r["layers"]:
        (e,) = x["estimates"]
        assert e["metrics"]["cycles"] >= x["macs"] / 256, x["name"]  # at or above the compute bound
    (u,) = r["unsupported"]
    assert u["name"] == "layer3" and u["macs"] == 512 and "window" in u["reason"]
    assert u["macs_share"] == pytest.approx(512 / (sum(MACS.values()) + 512))
    assert r["macs"] == sum(MACS.values()) + 512


def test_agrees_with_the_equivalent_onnx_layers(tmp_path, capsys, monkeypatch):
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper

    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    w = [onnx.numpy_helper.from_array(np.zeros(s, dtype=np.float32), n)
         for n, s in (("w1", (8, 3, 3, 3)), ("w2", (8, 1, 3, 3)), ("w3", (10, 16)))]
    nodes = [helper.make_node("Conv", ["x1", "w1"], ["y1"], name="layer1", kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["x2", "w2"], ["y2"], name="layer2", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              group=8),
             helper.make_node("Gemm", ["x3", "w3"], ["y3"], name="layer10", transB=1)]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
           for n, s in (("x1", [1, 3, 32, 32]), ("x2", [1, 8, 16, 16]), ("x3", [1, 16]))]
    outs = [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None) for k in (1, 2, 3)]
    model = helper.make_model(helper.make_graph(nodes, "three", ins, outs, w),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, str(tmp_path / "three.onnx"))
    d = folder(tmp_path)
    files = ",".join(str(d / f"{n}.yaml") for n in MACS)  # the comma-separated form, in the order given
    got = {}
    for net in (str(tmp_path / "three.onnx"), files):
        code, out, err = run(capsys, "estimate", ARCH, "--network", net, "--estimator", "analytical", "--json")
        assert code == 0, err
        got[net] = {x["name"]: (x["kind"], x["macs"], x["design"]["workload"], x["design"]["mapping"],
                                x["estimates"][0]["metrics"]["cycles"], x["estimates"][0]["metrics"]["energy_pj"])
                    for x in json.loads(out)["layers"]}
    onnx_r, tl_r = got.values()
    # the same workload (kind and shape), the same mapping chosen, the same cycles and energy
    assert tl_r == onnx_r and {k: v[1] for k, v in tl_r.items()} == MACS


def test_vendored_resnet18():
    layers = timeloop_layers.load_layers(str(VENDORED))
    assert [x.name for x in layers] == [f"{k:02d}" for k in range(21)]
    # 20 convolutions and the classifier: 1,814,073,344 MACs (ResNet-18's well-known 1.8 G)
    assert [x.kind for x in layers] == ["conv"] * 20 + ["gemm"]
    assert layers[0].macs == 64 * 112 * 112 * 3 * 7 * 7 and layers[0].params["SH"] == 2
    assert layers[20].params == {"M": 1, "N": 1000, "K": 512}
    assert sum(x.macs for x in layers) == 1_814_073_344


def test_bad_files_exit_2_with_file_and_line(tmp_path, capsys):
    d = folder(tmp_path)
    # the exercises' spelling HStride is not the coefficient Hstride (Timeloop would ignore it: stride 1)
    (d / "layer2.yaml").write_text(layer("{G: 8, P: 16, Q: 16, R: 3, S: 3, HStride: 2}"))
    code, _, err = run(capsys, "estimate", ARCH, "--network", str(d))
    assert code == 2 and f"{d / 'layer2.yaml'}:4:" in err and "'HStride'" in err and "did you mean Hstride" in err
    (d / "layer2.yaml").write_text(CONV.replace("  version: 0.4\n", "  version: 0.4\n  instanse: {}\n"))
    code, _, err = run(capsys, "estimate", ARCH, "--network", str(d))
    assert code == 2 and f"{d / 'layer2.yaml'}:3:" in err and "unknown key 'instanse'" in err
    (d / "layer2.yaml").write_text(CONV.replace("N: 1, P: 16,", "N: 1,"))  # P missing from the instance
    with pytest.raises(SpecError) as e:
        timeloop_layers.load_layers(str(d))
    (diag,) = e.value.diagnostics
    assert diag.file == str(d / "layer2.yaml") and diag.line == 3 and "dimension P is missing" in diag.message
    code, _, err = run(capsys, "estimate", ARCH, "--network", str(d / "layer1.yaml"), "--dim", "batch=1")
    assert code == 2 and "--dim" in err
    code, _, err = run(capsys, "estimate", ARCH, "--network", f"{d / 'layer1.yaml'},{d / 'nope.yaml'}")
    assert code == 2 and "nope.yaml: no such file" in err


def test_groups_linear_layers_and_sparse_problems(tmp_path):
    d = folder(tmp_path, **{
        # 2 groups of 4 -> 4 channels, 3x3, dilation 2 on 8x8 outputs: 2 * 4*8*8 * 4*3*3 = 18,432 MACs
        "g": layer("{G: 2, C: 4, M: 4, P: 8, Q: 8, R: 3, S: 3, Hdilation: 2, Wdilation: 2}"),
        # a linear layer on 32 tokens (the exercises' GPT-2 form): 32 * 64 * 128 = 262,144 MACs
        "lin": layer("{C: 64, M: 128, P: 32}"),
        # 4 heads of a 16 x 8 x 16 product: 4 * 16*8*16 = 8,192 MACs
        "heads": layer("{G: 4, C: 8, M: 16, P: 16}"),
        "sparse": CONV.replace("Wdilation: 1}", "Wdilation: 1, densities: {Weights: 0.5}}"),
    })
    by = {x.name: x for x in timeloop_layers.load_layers(str(d))}
    assert by["g"].kind == "gconv" and by["g"].macs == 18_432 and by["g"].shape == "8>8 8x8 3x3 d2 g2"
    assert by["g"].params == {"G": 2, "K": 4, "C": 4, "P": 8, "Q": 8, "R": 3, "S": 3, "SH": 1, "SW": 1, "DH": 2,
                              "DW": 2}
    assert (by["lin"].kind, by["lin"].params, by["lin"].macs) == ("gemm", {"M": 32, "N": 128, "K": 64}, 262_144)
    assert (by["heads"].kind, by["heads"].params) == ("bmm", {"G": 4, "M": 16, "N": 16, "K": 8})
    assert by["heads"].macs == 8_192
    assert by["sparse"].kind is None and by["sparse"].macs == 55_296 and "densities" in by["sparse"].reason


def test_dse_network_on_timeloop_problems(tmp_path, capsys):
    (tmp_path / "problem_base.yaml").write_text(BASE)
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "fc.yaml").write_text(FC)
    sp = tmp_path / "hw.yaml"
    sp.write_text("space:\n  version: 1\n  name: hw\n  hardware:\n    pe_array: {square: [4, 16]}\n")
    code, out, err = run(capsys, "dse", ARCH, "--network", str(tmp_path / "net"), "--space", str(sp), "--verify", "1",
                         "--search-budget", "200", "--json", "--no-progress", "--out", str(tmp_path / "out"))
    assert code == 0, err
    s = json.loads(out)
    assert s["evaluated"] == s["valid"] == 2 and s["mapped_layers"] == 1 and not s["unsupported"]
    assert s["ranked"][0]["cycles"] >= 160 / 256  # the compute bound of 160 MACs on the larger array
    (v,) = s["verified"]
    assert v["measured"]["cycles"] == pytest.approx(v["predicted"]["cycles"])
