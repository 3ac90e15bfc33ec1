"""Speed of `llmulator estimate ARCH --network MODEL.onnx` (issue 23 item 6) -> docs/networks.md.

Cold runs: a fresh `llmulator` process per run (imports, ONNX load and shape inference, the per-layer
mapping search with the analytical model, the estimate), wall time measured around the process.
ResNet-18 is zigzag-dse's `resnet18.onnx` when that package is installed (the peers' venv,
.venv-zigzag), else the same network built here; ResNet-50 (torchvision's v1.5 layout, BN folded)
is built here with onnx.helper, its weights declared as typed graph inputs so the file holds no data.

    .venv/bin/python benchmarks/bench_network.py            # writes the speed section of docs/networks.md
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "networks.md"
BEGIN, END = "<!-- bench_network: begin -->", "<!-- bench_network: end -->"


def resnet(depth: int, path: Path) -> Path:
    """ResNet-18/34 (basic blocks) or -50 (bottlenecks) at 224x224, batch 1, as an ONNX graph without weights."""
    from onnx import TensorProto, helper
    blocks = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3]}[depth]
    bottleneck = depth >= 50
    nodes, inputs = [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])]
    count = [0]

    def conv(x, cin, cout, k, stride=1, name="conv"):
        count[0] += 1
        w = f"w{count[0]}"
        inputs.append(helper.make_tensor_value_info(w, TensorProto.FLOAT, [cout, cin, k, k]))
        y = f"{name}{count[0]}"
        nodes.append(helper.make_node("Conv", [x, w], [y], name=y, kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4))
        return y

    def relu(x):
        nodes.append(helper.make_node("Relu", [x], [x + "_r"], name=x + "_relu"))
        return x + "_r"

    x = relu(conv("x", 3, 64, 7, 2))
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], name="maxpool", kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]))
    x, cin = "pool", 64
    for stage, n in enumerate(blocks):
        width = 64 * 2 ** stage
        cout = width * 4 if bottleneck else width
        for b in range(n):
            stride = 2 if b == 0 and stage > 0 else 1
            if bottleneck:
                y = relu(conv(x, cin, width, 1))
                y = relu(conv(y, width, width, 3, stride))
                y = conv(y, width, cout, 1)
            else:
                y = relu(conv(x, cin, width, 3, stride))
                y = conv(y, width, cout, 3)
            short = conv(x, cin, cout, 1, stride, "down") if (stride != 1 or cin != cout) else x
            nodes.append(helper.make_node("Add", [y, short], [y + "_add"], name=y + "_add"))
            x, cin = relu(y + "_add"), cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="avgpool"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
    inputs.append(helper.make_tensor_value_info("fc_w", TensorProto.FLOAT, [1000, cin]))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w"], ["y"], name="fc", transB=1))
    g = helper.make_graph(nodes, f"resnet{depth}", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                                          None)])
    import onnx
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def zigzag_model(name: str) -> Path | None:
    hits = sorted(glob.glob(str(ROOT / ".venv-zigzag/lib/python*/site-packages/zigzag/inputs/workload" / name)))
    return Path(hits[0]) if hits else None


def cold(arch: str, model: Path, extra: list[str], cache: Path) -> tuple[float, dict]:
    """(wall s, the --json result with ``cpu_s``: the process's user + system CPU seconds); ``cache`` is the
    process's LLMULATOR_CACHE (an empty folder: the model is read and shape-inferred; one that holds the
    model's layer list: no ``import onnx``)."""
    import resource
    exe = str(ROOT / ".venv" / "bin" / "llmulator")
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([exe, "estimate", arch, "--network", str(model), "--estimator", "analytical", "--json",
                        *extra], capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env={**os.environ, "LLMULATOR_CACHE": str(cache)})
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"llmulator failed ({p.returncode}):\n{p.stderr[-2000:]}")
    r = json.loads(p.stdout)
    r["cpu_s"] = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return wall, r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="systolic-16x16")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-write", action="store_true", help="print, do not update docs/networks.md")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-network-"))
    r18 = zigzag_model("resnet18.onnx")
    models = [("ResNet-18", r18 if r18 else resnet(18, tmp / "resnet18.onnx"),
               "zigzag-dse's resnet18.onnx" if r18 else "built by this script", 5.0),
              ("ResNet-50", resnet(50, tmp / "resnet50.onnx"), "built by this script (no weights)", 15.0)]
    mb = zigzag_model("mobilenetv2.onnx")
    if mb:
        models.append(("MobileNet-v2", mb, "zigzag-dse's mobilenetv2.onnx", None))
    load0 = os.getloadavg()[0]
    rows = []
    for label, path, origin, goal in models:
        walls, cpus, inner = [], [], None
        warm_walls, warm_cpus = [], []
        for k in range(a.runs):
            w, r = cold(a.arch, path, [], tmp / f"cache-{label}-{k}")  # a fresh cache: the model is read
            walls.append(w)
            cpus.append(r["cpu_s"])
            inner = r
            w, r = cold(a.arch, path, [], tmp / f"cache-{label}-{k}")  # the same cache: its layer list is there
            warm_walls.append(w)
            warm_cpus.append(r["cpu_s"])
        inner["cpu_median"] = sorted(cpus)[len(cpus) // 2]
        inner["warm"] = (sorted(warm_walls), sorted(warm_cpus)[len(warm_cpus) // 2])
        rows.append((label, origin, goal, walls, inner))
        print(f"{label}: {[f'{w:.2f}' for w in walls]} s, layer list cached {[f'{w:.2f}' for w in warm_walls]} s; "
              f"in-process {inner['seconds']}", file=sys.stderr)
    load1 = os.getloadavg()[0]
    lines = [BEGIN, "",
             "Generated by `.venv/bin/python benchmarks/bench_network.py` on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
             f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; load average "
             f"{load0:.2f} at the start and {load1:.2f} at the end (other engineers' processes share these cores, so "
             "wall times vary with it). Architecture `" + a.arch + "`, analytical estimator, per-layer mapping search "
             f"(`--dataflow auto`: ws, os and rs searched per distinct layer shape), {a.runs} cold processes each "
             "with an empty cache (the ONNX file read and shape-inferred), and as many with the model's layer list "
             "in the cache (`$LLMULATOR_CACHE/network`: no `import onnx`).",
             "",
             "| network | model file | layers estimated (distinct) | not modelled | MACs | "
             "cold wall, median (min-max) | CPU s of the process (median) | cold wall, layer list cached: median "
             "(min-max) / CPU s | goal | in the process: model / "
             "mappings / estimate | total cycles | total energy |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, origin, goal, walls, r in rows:
        s = r["seconds"]
        walls = sorted(walls)
        med = walls[len(walls) // 2]
        unsup = sorted({u["op"] for u in r["unsupported"]})
        t = r["totals"]["analytical"]
        lines.append(f"| {label} | {origin} | {len(r['layers'])} ({r['distinct_designs']}) | "
                     f"{', '.join(unsup) or '-'} | "
                     f"{r['macs'] / 1e9:.2f} G | **{med:.2f} s** ({walls[0]:.2f}-{walls[-1]:.2f}) | "
                     f"{r['cpu_median']:.2f} s | **{r['warm'][0][len(r['warm'][0]) // 2]:.2f} s** "
                     f"({r['warm'][0][0]:.2f}-{r['warm'][0][-1]:.2f}) / {r['warm'][1]:.2f} s | "
                     f"{'-' if goal is None else f'<= {goal:g} s'} | {s['load']:.2f} / {s['mapping']:.2f} / "
                     f"{s['estimate']:.2f} s | {t['cycles']:,.0f} | {t['energy_pj'] / 1e6:,.1f} uJ |")
    lines += ["", END]
    block = "\n".join(lines)
    print(block)
    if not a.no_write:
        text = DOC.read_text(encoding="utf-8")
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _m: block, text, flags=re.S)
        DOC.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
