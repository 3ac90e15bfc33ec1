"""The static analyses that enumerate loop variables (a triangular loop's trip profile, the probability of a branch on
loop indices) stay within their limits whatever the sizes: an outside probe's 9-line kernel (`if ((i * j) % 7 < 3)`
under `j < i < s`) took `estimate` to 24 GB at s = 16,000 and past 13 GB at 10^12, every combination listed before
the limit was applied."""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap

from conftest import ROOT
from llmulator import kernel_values as kv

KERNEL = textwrap.dedent("""
    workload:
      version: 1
      name: brwl
      parameters: {s: SIZE}
      arrays:
        c: {shape: [4], dtype: fp64, role: in}
        y: {shape: [1], dtype: fp64, role: out}
      kernel: |
        double t = 0.0;
        L_i: for (int i = 0; i < s; i++) {
          L_j: for (int j = 0; j < i; j++) {
            L_b: if ((i * j) % 7 < 3) {
              t = t + c[0];
            }
          }
        }
        y[0] = t;
      reference: |
        y[0] = 0.0
""")
MAPPING = "mapping: {version: 1, name: m, loops: {}, placement: {c: BRAM, y: BRAM}}\n"


def test_a_stride_of_the_combinations_is_the_stride_of_all_of_them():
    per = [({"i": i}, range(0, i)) for i in range(40)]
    full = [{"i": i, "j": j} for i in range(40) for j in range(i)]
    for limit in (1000, 100, 7, 1):
        step = -(-len(full) // limit) if len(full) > limit else 1
        assert kv.strided(per, "j", limit) == full[::step]


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def test_huge_trip_counts_neither_list_every_combination_nor_run_out_of_memory(tmp_path):
    """s = 10^12 (5 x 10^23 iterations of the branch): the estimate comes back within 3 GiB of address space, the
    branch's probability from an even stride of the combinations (25/49 over all of them)."""
    (tmp_path / "w.yaml").write_text(KERNEL.replace("SIZE", str(10 ** 12)))
    (tmp_path / "m.yaml").write_text(MAPPING)
    code = ("from llmulator.design import load_design\n"
            f"d = load_design('{ROOT / 'arch_specs/hls-fpga.yaml'}', 'w.yaml', 'm.yaml')\n"
            "assert d.trip_profile('L_j') is None\n"
            "p = d.tree.index_branch_probabilities(d.sizes)\n"
            "print(list(p.values()))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       preexec_fn=_limit_memory)
    assert r.returncode == 0, r.stderr[-2000:]
    (p,) = eval(r.stdout)
    assert abs(p - 25 / 49) < 0.02  # i * j = 0 (mod 7) where either is: 13 of the 49 residue pairs, 1 and 2 six each
