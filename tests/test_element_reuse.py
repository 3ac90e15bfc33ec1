"""A statement that reads one element several times loads it once (hlsim 0.28), as an HLS compiler does:
`b[i] = a[i] * a[i] * a[i]` is one read of a[i] per iteration, on one memory port. Before, each textual read
took a port and a memory read: the loop could not reach II 1 on a two-port memory, and the memory's reads
(and their energy) were three times the hand count. The reference: the same kernel spelled with a local,
which was always priced at one read."""
from __future__ import annotations

from conftest import kernel_design, profiled_and_estimated
from llmulator.kernel import analyze
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()
ARRAYS = "    a: {shape: [N], dtype: int32, role: in}\n    b: {shape: [N], dtype: int32, role: out}"


def _design(write, body: str):
    kernel = f"    L_i: for (int i = 0; i < N; i++) {{\n{body}\n    }}"
    return kernel_design(write, ARCH, kernel, ARRAYS, "    b[:] = a * a * a", "{L_i: {pipeline_ii: 1}}",
                         "{a: BRAM, b: BRAM}")


def test_repeated_reads_of_one_element_are_one_load(write):
    cubed = _design(write, "      b[i] = a[i] * a[i] * a[i];")
    local = _design(write, "      int x = a[i];\n      b[i] = x * x * x;")
    p, e = profiled_and_estimated(cubed)
    q, _ = profiled_and_estimated(local)
    # by hand: 64 datapath reads of a, and 64 reads of b's buffer to write it back
    for counts in (p.counters, e.breakdown, q.counters):
        assert counts["reads.BRAM"] == 128
    assert p.metrics["cycles"] == q.metrics["cycles"] == e.metrics["cycles"]
    assert p.breakdown["compute_cycles.L_i"] == q.breakdown["compute_cycles.L_i"]


def test_distinct_elements_and_a_store_between_keep_their_own_loads(write):
    """Only the same element with no store to its array between is shared: `a[i] * a[i] + a[i + 1]` reads two
    elements, and in `(x = a[i], a[i] = x + 1, a[i])` the second read of a[i] follows a store to it."""
    def reads(body: str) -> list[tuple[str, ...]]:
        st = [n for n in analyze(_design(write, body).workload).walk() if getattr(n, "kind", "") == "stmt"][-1]
        return [acc.index_text for acc in st.accesses if acc.array == "a" and acc.is_read]

    assert reads("      b[i] = a[i] * a[i] + a[i + 1];") == [("i",), ("i + 1",)]
    assert reads("      int x;\n      b[i] = (x = a[i], a[i] = x + 1, a[i]);") == [("i",), ("i",)]
