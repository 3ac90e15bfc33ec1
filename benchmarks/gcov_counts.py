"""hlsim's dynamic counts against gcov's: an execution count that is not ours.

hlsim runs an instrumented copy of the kernel and counts loop iterations, branch sides and the operations of
the statements that ran. Here the workload's kernel text, unchanged, is compiled by gcc with ``--coverage``
into a program that reads the same input arrays hlsim was given, and gcov's per-line execution counts say how
often each statement ran. Each case puts every statement whose count is checked on a line of its own, and
names which counters of hlsim's profile equal the sum of which lines' counts (a loop's iterations: its body's
first statement; a class of operations: the lines that hold its only uses).

    .venv/bin/python benchmarks/gcov_counts.py            # every case; writes docs/gcov-counts.md
    .venv/bin/python benchmarks/gcov_counts.py --no-docs  # print only

The kernels are this file's own (trusted): the program runs outside the sandbox. What C evaluates but hlsim's
datapath model prices differently (both arms of `?:`, the right operand of `&&`) is not among the cases:
docs/timing-model.md, section 4, says how hlsim counts those.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

os.environ.setdefault("LLMULATOR_TRUST_WORKLOAD", "1")  # (the kernels below are this file's own)

ROOT = Path(__file__).resolve().parents[1]
C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t", "int32": "int32_t",
           "uint32": "uint32_t", "int64": "int64_t", "float32": "float", "float64": "double"}

ARCH = """
architecture:
  version: 1
  name: gcov-probe
  clock_mhz: 250
  technology: 45nm
  compute:
    operators:
      add: {count: 4, bits: 32, numeric: int, latency_cycles: 3}
      mul: {count: 2, bits: 32, numeric: int, latency_cycles: 5}
      div: {count: 1, bits: 32, numeric: int, latency_cycles: 7}
      cmp: {count: 4, bits: 32, numeric: int, latency_cycles: 2}
      select: {count: 16, bits: 32, numeric: int, latency_cycles: 0}
      logic: {count: 4, bits: 32, numeric: int, latency_cycles: 1}
  memory:
    - {name: M, kind: sram, capacity_kib: 1024, width_bits: 32, banks: 64, ports: 2, latency_cycles: 2}
"""

#: name -> (kernel, arrays, input generator, loops mapping, {counter: kernel lines (1-based) whose counts sum to it})
CASES: dict[str, tuple[str, str, str, str, dict[str, list[int]]]] = {
    "while-data-exit": (
        """int k = 0;
L_w: while (k < N && x[k] > 0) {
  y[k] = x[k] * 3;
  k++;
}
z[0] = k;""",
        "x: {shape: [N], dtype: int32, role: in}\ny: {shape: [N], dtype: int32, role: out}\n"
        "z: {shape: [1], dtype: int32, role: out}",
        "x[:] = 1\nx[11] = -1", "{}", {"iterations.L_w": [3], "ops.mul": [3]}),
    "for-break": (
        """int pos = -1;
L_s: for (int j = 0; j < N; j++) {
  if (x[j] == 7) {
    pos = j;
    break;
  }
}
z[0] = pos;""",
        "x: {shape: [N], dtype: int32, role: in}\nz: {shape: [1], dtype: int32, role: out}",
        "x[:] = 1\nx[10] = 7\nx[12] = 7", "{}", {"iterations.L_s": [3], "ops.cmp": [3]}),
    "for-continue": (
        """L_i: for (int i = 0; i < N; i++) {
  if (x[i] < 0)
    continue;
  y[i] = x[i] * 5;
}""",
        "x: {shape: [N], dtype: int32, role: in}\ny: {shape: [N], dtype: int32, role: out}",
        "x[:] = np.arange(N) - 5", "{}", {"iterations.L_i": [2], "ops.cmp": [2], "ops.mul": [4]}),
    "do-while-digits": (
        """L_i: for (int i = 0; i < N; i++) {
  int v = x[i];
  int c = 0;
  L_d: do {
    v = v / 10;
    c = c + 1;
  } while (v != 0);
  y[i] = c;
}""",
        "x: {shape: [N], dtype: int32, role: in}\ny: {shape: [N], dtype: int32, role: out}",
        "x[:] = [0, 7, 42, 999, 1000, 5, 123456, 10, 99, 100, 3, 31, 65535, 8, 1, 20]", "{}",
        {"iterations.L_d": [5], "ops.div": [5], "ops.add": [6]}),
    "triangular": (
        """L_i: for (int i = 0; i < N; i++) {
  int s = 0;
  L_j: for (int j = 0; j <= i; j++) {
    s = s + x[j];
  }
  y[i] = s;
}""",
        "x: {shape: [N], dtype: int32, role: in}\ny: {shape: [N], dtype: int32, role: out}",
        "x[:] = np.arange(N)", "{}", {"iterations.L_j": [4], "ops.add": [4]}),
    "data-bounded-zero-trips": (
        """L_i: for (int i = 0; i < N; i++) {
  int s = 0;
  L_j: for (int j = 0; j < x[i]; j++) {
    s = s + j;
  }
  y[i] = s;
}""",
        "x: {shape: [N], dtype: int32, role: in}\ny: {shape: [N], dtype: int32, role: out}",
        "x[:] = [0, 3, 0, 0, 5, 1, 0, 2, 0, 0, 4, 0, 1, 0, 0, 6]", "{}",
        {"iterations.L_j": [4], "ops.add": [4]}),
    "else-if-chain": (
        """L_i: for (int i = 0; i < N; i++) {
  if (x[i] > 5) {
    y[i] = x[i] * 2;
  } else if (x[i] > 0) {
    y[i] = x[i] + 100;
  } else {
    y[i] = x[i] & 3;
  }
}""",
        "x: {shape: [N], dtype: int32, role: in}\ny: {shape: [N], dtype: int32, role: out}",
        "x[:] = np.arange(N) - 4", "{}", {"ops.mul": [3], "ops.add": [5], "ops.logic": [7], "ops.cmp": [2, 4]}),
    "pipelined-while": (
        """int k = 0;
L_w: while (k < N && x[k] != 0) {
  y[k] = x[k] * x[k];
  k++;
}
z[0] = k;""",
        "x: {shape: [N], dtype: int32, role: in}\ny: {shape: [N], dtype: int32, role: out}\n"
        "z: {shape: [1], dtype: int32, role: out}",
        "x[:] = 2\nx[9] = 0", "{L_w: {pipeline_ii: 1}}", {"iterations.L_w": [3], "ops.mul": [3]}),
}


def _workload(name: str, kernel: str, arrays: str, generator: str, n: int) -> str:
    ref = "  reference: |\n    pass\n"  # (the counts are checked, not the outputs: gcc's run checks nothing)
    return (f"workload:\n  version: 1\n  name: {name}\n  parameters: {{N: {n}}}\n  arrays:\n"
            f"{textwrap.indent(arrays, '    ')}\n  kernel: |\n{textwrap.indent(kernel, '    ')}\n"
            f"  inputs:\n    generator: |\n{textwrap.indent(generator, '      ')}\n{ref}")


def design_of(name: str, work: Path, n: int = 16):
    """The case's design (one SRAM level holds every array: no tile transfers), written under ``work``."""
    from llmulator.design import load_design
    kernel, arrays, gen, loops, _ = CASES[name]
    placement = "{" + ", ".join(f"{ln.split(':')[0]}: M" for ln in arrays.splitlines()) + "}"
    (work / "a.yaml").write_text(ARCH.lstrip())
    (work / "w.yaml").write_text(_workload(name, kernel, arrays, gen, n))
    (work / "m.yaml").write_text(f"mapping:\n  version: 1\n  name: m\n  loops: {loops}\n  placement: {placement}\n")
    return load_design(work / "a.yaml", work / "w.yaml", work / "m.yaml")


def gcov_line_counts(design, arrays: dict[str, np.ndarray], work: Path) -> dict[int, int]:
    """Kernel line (1-based) -> how many times gcc's build of the kernel text ran it on ``arrays``."""
    wl = design.workload
    kernel = textwrap.dedent(wl.kernel).strip("\n").splitlines()
    lines = ["#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>"]
    lines += [f"#define {k} {int(v)}" for k, v in design.sizes.items()]
    for name, spec in wl.arrays.items():
        dims = "".join(f"[{s}]" for s in wl.shape(name, design.sizes))
        lines.append(f"{C_TYPES[spec.dtype]} {name}{dims};")
    lines.append("static void kern(void) {")
    first = len(lines) + 1
    lines += kernel + ["}", "int main(void) {"]
    for name in wl.arrays:
        lines.append(f'  {{ FILE *f = fopen("{name}.bin", "rb"); if (!f || fread({name}, 1, sizeof {name}, f) '
                     f'!= sizeof {name}) return 3; fclose(f); }}')
    lines += ["  kern();", "  return 0;", "}"]
    (work / "k.c").write_text("\n".join(lines) + "\n")
    for name in wl.arrays:
        a = arrays.get(name)
        a = np.zeros(wl.shape(name, design.sizes), dtype=wl.arrays[name].dtype) if a is None else a
        np.ascontiguousarray(a).tofile(work / f"{name}.bin")
    subprocess.run(["gcc", "-O0", "--coverage", "k.c", "-o", "k"], cwd=work, check=True, capture_output=True)
    subprocess.run(["./k"], cwd=work, check=True, capture_output=True)
    out = subprocess.run(["gcov", "--json-format", "--stdout", "k.gcda"], cwd=work, check=True,
                         capture_output=True, text=True).stdout
    f = next(f for f in json.loads(out)["files"] if f["file"].endswith("k.c"))
    return {ln["line_number"] - first + 1: int(ln["count"]) for ln in f["lines"]
            if 1 <= ln["line_number"] - first + 1 <= len(kernel)}


def compare(name: str, work: Path) -> list[tuple[str, int, float]]:
    """(counter, gcov's count, hlsim's) for every counter the case names."""
    from llmulator.inputs import inputs_for
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    d = design_of(name, work)
    inp = inputs_for(d)
    p = HlsimProfiler().profile(d, inp)
    counts = gcov_line_counts(d, inp.arrays, work)
    return [(c, sum(counts.get(ln, 0) for ln in lines), p.counters.get(c, 0.0))
            for c, lines in CASES[name][4].items()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-docs", action="store_true", help="print the table, do not write docs/gcov-counts.md")
    args = ap.parse_args(argv)
    rows = []
    for name in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            for counter, want, got in compare(name, Path(tmp)):
                rows.append(f"| {name} | `{counter}` | {want} | {got:g} | {'yes' if got == want else '**no**'} |")
    table = "\n".join(["| case | counter | gcov | hlsim | equal |", "|---|---|---|---|---|", *rows])
    if args.no_docs:
        print(table)
    else:
        from _report import write_report
        how = " ".join(__doc__.split("\n\n")[1].split())
        write_report(ROOT / "docs" / "gcov-counts.md", "hlsim's dynamic counts against gcov",
                     ".venv/bin/python benchmarks/gcov_counts.py", f"{how}\n\n{table}")
    return 0 if all(r.endswith("yes |") for r in rows) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main())
