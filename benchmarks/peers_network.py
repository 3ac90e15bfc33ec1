"""Whole networks side by side with ZigZag (issue 23 item 5) -> bench-results/peers_network.json, docs/peers.md.

ResNet-18 (zigzag-dse's own ``resnet18.onnx``) and one transformer encoder block (BERT-base sizes, built here
with onnx.helper: Q/K/V projections, the attention products QK^T and AV over 12 heads, output projection, FFN
768 -> 3072 -> 768 with GELU, LayerNorm) on two library architectures, ``systolic-16x16`` and ``edge-tiny``
(8x8), each translated for ZigZag by ``benchmarks/peers/zigzag_inputs.py: accelerator_of`` (the translation
docs/peers.md describes).

* Ours: ``plugins/network``'s ``estimate_network`` with the analytical estimator and ``--dataflow ws``
  (conv: C on PE rows, K on PE cols; products: K on rows, N on cols), the per-layer search choosing the
  temporal tiles and loop order; also the total with ``--dataflow auto``.
* ZigZag 3.9: the same MAC layers (our importer's shapes: convolutions with their strides, the products
  with their batch of heads) as ZigZag YAML layers, the same weight-stationary spatial unrolling, LOMA
  searching the temporal mapping with ``lpf_limit`` LPF (cheaper than its default 6), optimising latency.
  Distinct layer shapes are sent once. It runs once, under ``nice -n 10``, in its own venv
  (``.venv-zigzag``); its results are cached in ``bench-results/peers_network.json`` and reused.

    .venv/bin/python benchmarks/peers_network.py            # run (or reuse the cache), print the tables
    .venv/bin/python benchmarks/peers_network.py --docs     # ... and write the section of docs/peers.md
    .venv/bin/python benchmarks/peers_network.py --rerun    # run ZigZag again even when cached

Layers without MACs (pooling, element-wise, softmax) are ours only and listed apart: ZigZag's cost model
is for layers with MACs (its ONNX front-end passes the others through as dummy nodes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench-results" / "peers_network.json"
DOC = ROOT / "docs" / "peers.md"
BEGIN, END = "<!-- peers_network: begin -->", "<!-- peers_network: end -->"
ZIGZAG_PYTHON = Path(os.environ.get("LLMULATOR_ZIGZAG_PYTHON", ROOT / ".venv-zigzag" / "bin" / "python"))
ARCHS = ("systolic-16x16", "edge-tiny")
LPF_LIMIT = 3
MAC_KINDS = ("conv", "gemm", "bmm")


# -- the transformer block ------------------------------------------------------------------------
def transformer_block(path: Path, seq: int = 128, d: int = 768, heads: int = 12, ff: int = 3072) -> Path:
    """One BERT-base-sized encoder block (post-LayerNorm), batch 1, as an ONNX graph without weight data."""
    from onnx import TensorProto, helper
    hd = d // heads
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", f, [seq, d])]
    for n, shape in (("wq", [d, d]), ("wk", [d, d]), ("wv", [d, d]), ("wo", [d, d]), ("w1", [d, ff]),
                     ("w2", [ff, d]), ("g1", [d]), ("b1", [d]), ("g2", [d]), ("b2", [d])):
        inputs.append(helper.make_tensor_value_info(n, f, shape))
    inits = [helper.make_tensor("heads_shape", TensorProto.INT64, [3], [seq, heads, hd]),
             helper.make_tensor("model_shape", TensorProto.INT64, [2], [seq, d]),
             helper.make_tensor("scale", f, [], [float(hd) ** 0.5])]
    nodes = []
    for p in ("q", "k", "v"):
        nodes += [helper.make_node("MatMul", ["x", f"w{p}"], [f"{p}0"], name=f"{p}_proj"),
                  helper.make_node("Reshape", [f"{p}0", "heads_shape"], [f"{p}1"], name=f"{p}_split")]
    nodes += [helper.make_node("Transpose", ["q1"], ["qh"], name="q_heads", perm=[1, 0, 2]),
              helper.make_node("Transpose", ["k1"], ["kt"], name="k_heads_t", perm=[1, 2, 0]),
              helper.make_node("Transpose", ["v1"], ["vh"], name="v_heads", perm=[1, 0, 2]),
              helper.make_node("MatMul", ["qh", "kt"], ["s0"], name="qk"),
              helper.make_node("Div", ["s0", "scale"], ["s1"], name="scale"),
              helper.make_node("Softmax", ["s1"], ["pr"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["pr", "vh"], ["o0"], name="av"),
              helper.make_node("Transpose", ["o0"], ["o1"], name="merge_heads", perm=[1, 0, 2]),
              helper.make_node("Reshape", ["o1", "model_shape"], ["o2"], name="merge"),
              helper.make_node("MatMul", ["o2", "wo"], ["o3"], name="out_proj"),
              helper.make_node("Add", ["o3", "x"], ["r1"], name="residual1"),
              helper.make_node("LayerNormalization", ["r1", "g1", "b1"], ["n1"], name="ln1", axis=-1),
              helper.make_node("MatMul", ["n1", "w1"], ["h0"], name="ffn1"),
              helper.make_node("Gelu", ["h0"], ["h1"], name="gelu"),
              helper.make_node("MatMul", ["h1", "w2"], ["h2"], name="ffn2"),
              helper.make_node("Add", ["h2", "n1"], ["r2"], name="residual2"),
              helper.make_node("LayerNormalization", ["r2", "g2", "b2"], ["y"], name="ln2", axis=-1)]
    g = helper.make_graph(nodes, "encoder_block", inputs, [helper.make_tensor_value_info("y", f, [seq, d])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    import onnx
    onnx.save(m, str(path))
    return path


def resnet18_path() -> Path | None:
    import glob
    hits = sorted(glob.glob(str(ROOT / ".venv-zigzag/lib/python*/site-packages/zigzag/inputs/workload/resnet18.onnx")))
    return Path(hits[0]) if hits else None


# -- ZigZag inputs ----------------------------------------------------------------------------------
def zigzag_layer(lid: int, name: str, kind: str, p: dict, bits: tuple[int, int]) -> dict:
    """One of our MAC layers as a ZigZag YAML layer (the same loop sizes; no padding: the input is the padded
    extent, as in our workload)."""
    op_bits, out_bits = bits
    prec = {"I": op_bits, "W": op_bits, "O": 32, "O_final": out_bits}
    if kind == "conv":
        batch = int(p.get("N", 1))
        b = "[b]" if batch > 1 else ""
        dims = (["B"] if batch > 1 else []) + ["K", "C", "OY", "OX", "FY", "FX"]
        sizes = ([batch] if batch > 1 else []) + [p["K"], p["C"], p["P"], p["Q"], p["R"], p["S"]]
        return {"id": lid, "name": name, "operator_type": "Conv",
                "equation": f"O{b}[k][oy][ox]+=W[k][c][fy][fx]*I{b}[c][iy][ix]",
                "dimension_relations": [f"ix={p['SW']}*ox+{p['DW']}*fx", f"iy={p['SH']}*oy+{p['DH']}*fy"],
                "loop_dims": dims, "loop_sizes": [int(s) for s in sizes], "operand_precision": prec,
                "operand_source": {"I": lid, "W": lid}}
    if kind == "gemm":
        return {"id": lid, "name": name, "operator_type": "Gemm", "equation": "O[d0][d1]+=I[d0][d2]*W[d2][d1]",
                "loop_dims": ["D0", "D1", "D2"], "loop_sizes": [int(p["M"]), int(p["N"]), int(p["K"])],
                "operand_precision": prec, "operand_source": {"I": lid, "W": lid}}
    if kind == "bmm":  # both operands are activations; W stands for the second (K^T, V). ZigZag's validator
        # allows no other operator type for a product: its B loop is the batch of heads
        return {"id": lid, "name": name, "operator_type": "Gemm",
                "equation": "O[b][d0][d1]+=I[b][d0][d2]*W[b][d2][d1]",
                "loop_dims": ["B", "D0", "D1", "D2"],
                "loop_sizes": [int(p["G"]), int(p["M"]), int(p["N"]), int(p["K"])],
                "operand_precision": prec, "operand_source": {"I": lid, "W": lid}}
    raise ValueError(kind)


def zigzag_mapping(rows: int, cols: int) -> list[dict]:
    """Weight-stationary unrolling, as our --dataflow ws: reduction dimension on PE rows, outputs on PE cols."""
    links = {"O": "O", "W": "I2", "I": "I1"}
    conv = {"D1": [f"C, {rows}"], "D2": [f"K, {cols}"]}
    prod = {"D1": [f"D2, {rows}"], "D2": [f"D1, {cols}"]}
    return [{"name": "default", "spatial_mapping": conv, "memory_operand_links": links},
            {"name": "Conv", "spatial_mapping": conv, "memory_operand_links": links},
            {"name": "Gemm", "spatial_mapping": prod, "memory_operand_links": links}]


def _shape_key(kind: str, p: dict) -> str:
    return kind + ":" + ",".join(f"{k}={p[k]}" for k in sorted(p))


# -- ZigZag runner (executed by .venv-zigzag/bin/python; stdlib + zigzag only) ---------------------
def zigzag_run(folder: str, lpf: int) -> int:
    import logging
    t0 = time.perf_counter()
    from zigzag import api
    t_import = time.perf_counter() - t0
    logging.disable(logging.CRITICAL)
    layers = json.loads(Path(folder, "workload.json").read_text())
    t1 = time.perf_counter()
    _, _, cmes = api.get_hardware_performance_zigzag(
        workload=layers, accelerator=f"{folder}/accelerator.yaml", mapping=f"{folder}/mapping.yaml",
        opt="latency", dump_folder=f"{folder}/out", lpf_limit=lpf, loma_show_progress_bar=False)
    t_api = time.perf_counter() - t1
    out = []
    for cme, _extra in cmes[0][1]:
        out.append({"name": cme.layer.name, "latency_cycles": float(cme.latency_total2),
                    "energy_pj": float(cme.energy_total), "mac_energy_pj": float(cme.mac_energy),
                    "mem_energy_pj": float(cme.mem_energy), "ideal_cycle": float(cme.ideal_cycle),
                    "ideal_temporal_cycle": float(cme.ideal_temporal_cycle),
                    "stall_slack_comb": float(cme.stall_slack_comb),
                    "data_onloading_cycle": float(cme.data_onloading_cycle),
                    "data_offloading_cycle": float(cme.data_offloading_cycle),
                    "spatial_mapping": str(cme.layer.spatial_mapping)[:200],
                    "temporal_mapping": str(cme.mapping.temporal_mapping)[:300]})
    print(json.dumps({"layers": out, "api_seconds": t_api, "import_seconds": t_import}))
    return 0


# -- measuring --------------------------------------------------------------------------------------
def ours(arch: str, model: Path, dataflow: str) -> dict:
    sys.path.insert(0, str(ROOT))
    from llmulator_plugins.network.run import estimate_network
    t0 = time.perf_counter()
    r = estimate_network(arch, str(model), ["analytical"], dataflow, progress=False)
    wall = time.perf_counter() - t0
    layers = []
    for lay in r["layers"]:
        e = next(e for e in lay["estimates"] if e["estimator"] == "analytical")
        layers.append({"name": lay["name"], "kind": lay["kind"], "shape": lay["shape"], "macs": lay["macs"],
                       "cycles": e["metrics"]["cycles"], "energy_pj": e["metrics"]["energy_pj"],
                       "dataflow": lay["dataflow"]})
    params = {lay.name: (lay.kind, dict(lay.params)) for lay in r["_layers"] if lay.kind in MAC_KINDS}
    arch_obj = next(iter(r["_designs"].values())).arch if r["_designs"] else None
    return {"layers": layers, "params": params, "totals": r["totals"]["analytical"], "seconds": wall,
            "unsupported": [u["op"] for u in r["unsupported"]], "_arch": arch_obj,
            "_design": next(iter(r["_designs"].values()), None)}


def run_zigzag(our: dict, arch_name: str, lpf: int, tmp: Path) -> dict:
    import yaml
    sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
    from llmulator_plugins.network.workloads import dtypes
    from zigzag_inputs import accelerator_of
    d = our["_design"]
    op, acc = dtypes(d.arch)
    bits = (int("".join(c for c in op if c.isdigit())), int("".join(c for c in acc if c.isdigit())))
    shapes: dict[str, tuple[str, dict]] = {}
    for kind, p in our["params"].values():
        shapes.setdefault(_shape_key(kind, p), (kind, p))
    keys = list(shapes)
    layers = [zigzag_layer(i, f"L{i}", shapes[k][0], shapes[k][1], bits) for i, k in enumerate(keys)]
    folder = tmp / arch_name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workload.json").write_text(json.dumps(layers))
    pe = d.arch.pe_array
    (folder / "accelerator.yaml").write_text(yaml.safe_dump(accelerator_of(d, bits[0], ["D1"]), sort_keys=False))
    (folder / "mapping.yaml").write_text(yaml.safe_dump(zigzag_mapping(pe.rows, pe.cols), sort_keys=False))
    t0 = time.perf_counter()
    r = subprocess.run(["nice", "-n", "10", str(ZIGZAG_PYTHON), str(Path(__file__).resolve()), "--zigzag-run",
                        str(folder), "--lpf", str(lpf)], capture_output=True, text=True, check=False, timeout=3600)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError("ZigZag failed: " + "\n".join((r.stderr or r.stdout).strip().splitlines()[-8:]))
    out = json.loads(r.stdout.strip().splitlines()[-1])
    by_name = {x["name"]: x for x in out["layers"]}
    per_shape = {k: by_name[f"L{i}"] for i, k in enumerate(keys)}
    return {"per_shape": per_shape, "wall_seconds": wall, "api_seconds": out["api_seconds"],
            "import_seconds": out["import_seconds"], "distinct_layers": len(keys), "lpf_limit": lpf}


def zigzag_version() -> str:
    code = "from importlib.metadata import version; print(version('zigzag-dse'))"
    r = subprocess.run([str(ZIGZAG_PYTHON), "-c", code], capture_output=True, text=True, check=False)
    return r.stdout.strip() if r.returncode == 0 else "?"


def measure(rerun: bool, lpf: int) -> dict:
    cached = json.loads(CACHE.read_text()) if CACHE.is_file() and not rerun else None
    r18 = resnet18_path()
    if r18 is None:
        raise SystemExit("zigzag-dse's resnet18.onnx not found: run scripts/install_zigzag.sh")
    out = {"zigzag": {}, "ours": {}, "ours_auto": {}, "lpf_limit": lpf,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    with tempfile.TemporaryDirectory(prefix="peers-net-") as tmp:
        tmp = Path(tmp)
        nets = {"ResNet-18": r18, "encoder block": transformer_block(tmp / "encoder.onnx")}
        out["load_start"] = os.getloadavg()[0]
        for net, path in nets.items():
            for arch in ARCHS:
                key = f"{net}|{arch}"
                o = ours(arch, path, "ws")
                a = ours(arch, path, "auto")
                mac = [x for x in a["layers"] if x["kind"] in MAC_KINDS]
                out["ours_auto"][key] = {"totals": a["totals"], "seconds": a["seconds"],
                                         "mac_cycles": sum(x["cycles"] for x in mac),
                                         "mac_energy_pj": sum(x["energy_pj"] for x in mac)}
                if cached and key in cached.get("zigzag", {}):
                    z = cached["zigzag"][key]
                else:
                    print(f"ZigZag on {net} / {arch} (lpf_limit {lpf}) ...", file=sys.stderr)
                    z = run_zigzag(o, arch, lpf, tmp / key.replace("|", "_").replace(" ", "_"))
                out["zigzag"][key] = z
                o = {k: v for k, v in o.items() if not k.startswith("_")}
                o["params"] = {n: [k, {kk: vv for kk, vv in p.items()}] for n, (k, p) in o["params"].items()}
                out["ours"][key] = o
        out["load_end"] = os.getloadavg()[0]
    out["zigzag_version"] = (cached or {}).get("zigzag_version") if cached and not rerun else zigzag_version()
    if cached and not rerun:
        out["zigzag_date"] = cached.get("zigzag_date", cached.get("date"))
        out["zigzag_load"] = cached.get("zigzag_load")
    else:
        out["zigzag_date"] = out["date"]
        out["zigzag_load"] = [out["load_start"], out["load_end"]]
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps(out, indent=1, default=str))
    return out


# -- the doc section ----------------------------------------------------------------------------------
def _n(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def section(res: dict) -> str:
    import statistics
    lines = [f"Generated by `.venv/bin/python benchmarks/peers_network.py --docs` on {res['date']} "
             f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; load average "
             f"{res['load_start']:.1f} at the start, {res['load_end']:.1f} at the end). ZigZag (zigzag-dse "
             f"{res['zigzag_version']}) ran once on {res['zigzag_date']} under `nice -n 10` with LOMA "
             f"`lpf_limit={res['lpf_limit']}` (its default is 6), optimising latency; its results are cached in "
             "`bench-results/peers_network.json` and reused by later runs (`--rerun` runs it again).", ""]
    summary = ["| network | architecture | MAC layers | ours cycles (ws) | ZigZag cycles | ratio ours/ZigZag "
               "| ours energy (ws, uJ) | ZigZag energy (uJ) | ratio | per-layer cycle ratio: median (min-max) "
               "| per-layer energy ratio: median (min-max) | ours, --dataflow auto, MAC layers: cycles / energy (uJ) "
               "| ours wall (s) | ZigZag API (s), distinct layers |",
               "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|---|"]
    detail = []
    for key, o in res["ours"].items():
        net, arch = key.split("|")
        z = res["zigzag"][key]
        rows = []
        oc = oe = zc = ze = 0.0
        rc, re_ = [], []
        for lay in o["layers"]:
            if lay["kind"] not in MAC_KINDS:
                continue
            kind, p = o["params"][lay["name"]]
            zl = z["per_shape"][_shape_key(kind, p)]
            oc += lay["cycles"]
            oe += lay["energy_pj"]
            zc += zl["latency_cycles"]
            ze += zl["energy_pj"]
            rc.append(lay["cycles"] / zl["latency_cycles"])
            re_.append(lay["energy_pj"] / zl["energy_pj"])
            rows.append(f"| {lay['name']} | {lay['shape']} | {lay['macs'] / 1e6:,.1f} | {_n(lay['cycles'])} | "
                        f"{_n(zl['latency_cycles'])} | {rc[-1]:.2f} | {lay['energy_pj'] / 1e6:,.2f} | "
                        f"{zl['energy_pj'] / 1e6:,.2f} | {re_[-1]:.2f} | "
                        f"{_n(zl['ideal_temporal_cycle'])} + {_n(zl['stall_slack_comb'])} + "
                        f"{_n(zl['data_onloading_cycle'])}/{_n(zl['data_offloading_cycle'])} |")
        other = [lay for lay in o["layers"] if lay["kind"] not in MAC_KINDS]
        a = res["ours_auto"][key]
        summary.append(f"| {net} | {arch} | {len(rc)} | {_n(oc)} | {_n(zc)} | **{_ratio(oc, zc)}** | "
                       f"{oe / 1e6:,.1f} | {ze / 1e6:,.1f} | **{_ratio(oe, ze)}** | "
                       f"{statistics.median(rc):.2f} ({min(rc):.2f}-{max(rc):.2f}) | "
                       f"{statistics.median(re_):.2f} ({min(re_):.2f}-{max(re_):.2f}) | "
                       f"{_n(a['mac_cycles'])} / {a['mac_energy_pj'] / 1e6:,.1f} | {o['seconds']:.1f} | "
                       f"{z['api_seconds']:.1f}, {z['distinct_layers']} |")
        detail += [f"#### {net} on {arch}", "",
                   "| layer | shape | MMACs | ours cycles | ZigZag cycles | ratio | ours energy (uJ) "
                   "| ZigZag energy (uJ) | ratio | ZigZag: ideal temporal + stall/slack + on/off-load |",
                   "|---|---|---:|---:|---:|---:|---:|---:|---:|---|", *rows, ""]
        if other:
            detail += [f"Not in ZigZag's model (ours only, not in the totals above): {len(other)} layers without "
                       f"MACs ({', '.join(sorted({x['kind'] for x in other}))}), "
                       f"{_n(sum(x['cycles'] for x in other))} cycles and "
                       f"{sum(x['energy_pj'] for x in other) / 1e6:,.1f} uJ by our model. Not modelled by "
                       f"either: {', '.join(sorted(set(o['unsupported']))) or 'nothing'}.", ""]
    return "\n".join(lines + summary + [""] + detail)


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    block = f"{BEGIN}\n\n{text}\n{END}"
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        doc = head + block + rest.split(END, 1)[1]
    else:
        raise SystemExit(f"{DOC}: no {BEGIN} ... {END} markers")
    DOC.write_text(doc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", action="store_true", help="write the network section of docs/peers.md")
    ap.add_argument("--rerun", action="store_true", help="run ZigZag again even when its results are cached")
    ap.add_argument("--lpf", type=int, default=LPF_LIMIT, help=f"LOMA lpf_limit (default {LPF_LIMIT})")
    ap.add_argument("--zigzag-run", metavar="FOLDER", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.zigzag_run:
        return zigzag_run(args.zigzag_run, args.lpf)
    res = measure(args.rerun, args.lpf)
    text = section(res)
    print(text)
    if args.docs:
        write_doc(text)
        print(f"wrote the network section of {DOC.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
