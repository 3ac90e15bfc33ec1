"""Dependent inputs: the declarative generators (one_hot, normalized, copy_of with mutation_rate,
arange start/step), the Python ``inputs.generator``, variants that change scalars and generator
parameters (through the reference and an hlsim profile), and the worked examples of
docs/spec-reference.md (Input generators, Variants), which are loaded and run here."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml
from llmulator.design import load_design
from llmulator.errors import SpecError, UserError
from llmulator.inputs import (
    check_inputs,
    effective_workload,
    generate_inputs,
    inputs_for,
    resolve_inputs,
    run_reference,
    variants,
)
from llmulator.kernel import analyze
from llmulator.specs import load_workload

ROOT = Path(__file__).resolve().parents[1]


def wl(arrays: str, inputs: str, params: str = "{N: 64}", scalars: str = "", reference: str = "",
       kernel: str = "L_i: for (int i = 0; i < N; i++) { }"):
    """A workload from inline YAML: ``arrays`` and ``inputs`` are the bodies of those sections."""
    text = f"""
workload:
  version: 1
  name: gen
  parameters: {params}
{scalars}
  arrays:
{textwrap.indent(textwrap.dedent(arrays).strip(), "    ")}
  kernel: "{kernel}"
  inputs:
{textwrap.indent(textwrap.dedent(inputs).strip(), "    ")}
"""
    if reference:
        text += "  reference: |\n" + textwrap.indent(textwrap.dedent(reference).strip(), "    ") + "\n"
    return load_workload("gen.yaml", text)


# --- declarative generators ------------------------------------------------------------------

def test_one_hot_rows_have_a_single_one():
    w = wl("""
        x: {shape: [50, 7], dtype: int8, role: in}
        f: {shape: [6, 9], dtype: fp32, role: in}
        c: {shape: [4, 10], dtype: int32, role: in}
    """, """
        arrays:
          x: {distribution: one_hot}
          f: {distribution: one_hot, axis: -1}
          c: {distribution: one_hot, axis: 0}
    """)
    a = generate_inputs(w, w.sizes())
    for name in ("x", "f"):
        assert np.all(a[name].sum(axis=-1) == 1) and np.all(np.count_nonzero(a[name], axis=-1) == 1)
        assert set(np.unique(a[name]).tolist()) == {0, 1}
    assert np.all(a["c"].sum(axis=0) == 1) and np.all(np.count_nonzero(a["c"], axis=0) == 1)
    assert len(set(np.argmax(a["x"], axis=-1).tolist())) > 1, "the hot position is random"


def test_normalized_rows_sum_to_one():
    w = wl("""
        p: {shape: [20, 16], dtype: fp32, role: in}
        q: {shape: [8, 5], dtype: fp64, role: in}
        h: {shape: [3, 4], dtype: fp16, role: in}
    """, """
        arrays:
          p: {distribution: normalized}
          q: {distribution: normalized, axis: 0}
          h: {distribution: normalized}
    """)
    a = generate_inputs(w, w.sizes())
    assert np.all(a["p"] >= 0) and np.allclose(a["p"].sum(axis=-1), 1.0, atol=1e-5)
    assert np.allclose(a["q"].sum(axis=0), 1.0, atol=1e-12)
    assert np.allclose(a["h"].astype(np.float64).sum(axis=-1), 1.0, atol=5e-3)
    assert len(np.unique(a["p"])) > 100, "rows are random, not uniform"


def test_normalized_needs_a_float_dtype_and_one_hot_a_real_axis():
    w = wl("x: {shape: [4, 4], dtype: int32, role: in}", "arrays: {x: {distribution: normalized}}")
    with pytest.raises(UserError, match="'gen', array 'x'.*floating-point"):
        generate_inputs(w, w.sizes())
    w = wl("x: {shape: [4, 4], dtype: int32, role: in}", "arrays: {x: {distribution: one_hot, axis: 2}}")
    with pytest.raises(UserError, match="axis 2"):
        generate_inputs(w, w.sizes())
    w = wl("x: {shape: [4, 4], dtype: fp32, role: in}", "arrays: {x: {distribution: normalized, density: 0.5}}")
    with pytest.raises(UserError, match="density"):
        generate_inputs(w, w.sizes())


def test_arange_start_and_step():
    w = wl("""
        a: {shape: [2, 3], dtype: int16, role: in}
        f: {shape: [4], dtype: fp32, role: in}
        z: {shape: [5], dtype: int32, role: in}
    """, """
        arrays:
          a: {distribution: arange, start: 10, step: -3}
          f: {distribution: arange, start: 0.5, step: 0.25}
          z: {distribution: arange}
    """)
    a = generate_inputs(w, w.sizes())
    assert a["a"].tolist() == [[10, 7, 4], [1, -2, -5]]
    assert a["f"].tolist() == [0.5, 0.75, 1.0, 1.25]
    assert a["z"].tolist() == [0, 1, 2, 3, 4]
    w = wl("a: {shape: [300], dtype: int8, role: in}", "arrays: {a: {distribution: arange, start: -10}}")
    with pytest.raises(UserError, match=r"arange values \[-10, 289\] does not fit dtype int8"):
        generate_inputs(w, w.sizes())


COPY = """
    src: {shape: [N], dtype: uint8, role: in}
    dst: {shape: [N], dtype: uint8, role: in}
    two: {shape: [8, 8], dtype: int32, role: in}
"""


@pytest.mark.parametrize("order", ["src_first", "dst_first"])
def test_copy_of_with_mutation_rate_zero_is_the_source(order):
    src = "src: {distribution: randint, range: [0, 3]}"
    dst = "dst: {distribution: randint, range: [0, 3], copy_of: src, mutation_rate: 0}"
    first, second = (src, dst) if order == "src_first" else (dst, src)
    w = wl(COPY, f"arrays:\n  {first}\n  {second}\n  two: {{distribution: randint, range: [0, 3], copy_of: dst}}")
    a = generate_inputs(w, w.sizes())
    assert np.array_equal(a["dst"], a["src"])
    assert np.array_equal(a["two"].reshape(-1), a["src"]), "a copy may change shape, same size, C order"
    # the source keeps the values it has without a copy: a copy does not disturb its random stream
    alone = wl(COPY, "arrays: {src: {distribution: randint, range: [0, 3]}}")
    assert np.array_equal(generate_inputs(alone, alone.sizes())["src"], a["src"])


def test_copy_of_with_mutation_rate_one_differs_in_most_places():
    w = wl(COPY, """
        arrays:
          src: {distribution: randint, range: [0, 255]}
          dst: {distribution: randint, range: [0, 255], copy_of: src, mutation_rate: 1}
    """, params="{N: 4096}")
    a = generate_inputs(w, w.sizes())
    assert np.mean(a["dst"] != a["src"]) > 0.95
    w = wl(COPY, """
        arrays:
          src: {distribution: randint, range: [0, 255]}
          dst: {distribution: randint, range: [0, 255], copy_of: src, mutation_rate: 0.25}
    """, params="{N: 4096}")
    a = generate_inputs(w, w.sizes())
    assert 0.2 < np.mean(a["dst"] != a["src"]) < 0.3


def test_copy_of_cycle_and_unknown_source_are_positioned_errors():
    w = wl(COPY, """
        arrays:
          src: {distribution: zeros, copy_of: two}
          dst: {distribution: zeros}
          two: {distribution: zeros, copy_of: src}
    """)
    with pytest.raises(SpecError, match=r"gen.yaml:\d+.*copy_of forms a cycle: (src -> two -> src|two -> src -> two)"):
        generate_inputs(w, w.sizes())
    with pytest.raises(SpecError, match="cycle"):
        check_inputs(w)
    w = wl(COPY, "arrays: {dst: {distribution: zeros, copy_of: sorce}}")
    with pytest.raises(SpecError, match=r"inputs\.arrays\.dst\.copy_of: array 'dst' is a copy_of unknown array "
                                        r"'sorce'[\s\S]*src"):
        generate_inputs(w, w.sizes())
    w = wl(COPY + "    o: {shape: [N], dtype: uint8, role: out}\n", "arrays: {dst: {distribution: zeros, copy_of: o}}")
    with pytest.raises(SpecError, match="role is 'out'"):
        generate_inputs(w, w.sizes())


def test_copy_of_needs_the_same_number_of_elements_and_values_that_fit():
    w = wl("""
        a: {shape: [10], dtype: int32, role: in}
        b: {shape: [12], dtype: int32, role: in}
        c: {shape: [10], dtype: int8, role: in}
    """, """
        arrays:
          a: {distribution: randint, range: [0, 1000]}
          b: {distribution: zeros, copy_of: a}
    """)
    with pytest.raises(UserError, match="copy_of 'a' has 10 elements.*'b' has 12"):
        generate_inputs(w, w.sizes())
    w = wl("""
        a: {shape: [10], dtype: int32, role: in}
        c: {shape: [10], dtype: int8, role: in}
    """, """
        arrays:
          a: {distribution: randint, range: [500, 1000]}
          c: {distribution: zeros, copy_of: a}
    """)
    with pytest.raises(UserError, match="array 'c'.*copied from 'a'.*int8"):
        generate_inputs(w, w.sizes())


# --- the Python generator --------------------------------------------------------------------

PLANTED = dict(
    params="{N: 200, M: 6}",
    arrays="""
        text: {shape: [N], dtype: uint8, role: in}
        pattern: {shape: [M], dtype: uint8, role: in}
        starts: {shape: [K], dtype: int32, role: in}
        hits: {shape: [N], dtype: int32, role: out}
    """,
    inputs="""
        seed: 4
        params: {alphabet: 4}
        arrays:
          pattern: {distribution: randint, range: [0, 3]}
        generator: |
          text[:] = rng.integers(0, params["alphabet"], size=N)
          # K non-overlapping occurrences of the pattern, at random places
          gaps = rng.multinomial(N - K * M, np.ones(K + 1) / (K + 1))
          pos = 0
          for k in range(K):
              pos += gaps[k]
              starts[k] = pos
              text[pos:pos + M] = pattern
              pos += M
        variants:
          binary:
            params: {alphabet: 2}
    """,
)


def planted(**kw):
    p = {**PLANTED, **kw}
    return wl(p["arrays"], p["inputs"], params=p["params"].replace("M: 6}", "M: 6, K: 5}"))


def test_generator_plants_a_pattern_in_a_text():
    w = planted()
    a = generate_inputs(w, w.sizes())
    t, pat, starts = a["text"], a["pattern"], a["starts"]
    assert t.dtype == np.uint8 and starts.dtype == np.int32 and t.shape == (200,)
    assert len(starts) == 5 and np.all(np.diff(starts) >= 6)
    for s in starts:
        assert np.array_equal(t[s:s + 6], pat)
    assert t.max() <= 3
    b = generate_inputs(w, w.sizes(), "binary")
    outside = np.ones(200, dtype=bool)
    for s in b["starts"]:
        outside[s:s + 6] = False
    assert b["text"][outside].max() <= 1, "the variant's alphabet of 2 letters, except where the pattern sits"
    assert resolve_inputs(w, "binary")["params"] == {"alphabet": 2}
    assert resolve_inputs(w)["params"] == {"alphabet": 4}


def test_generator_is_deterministic_for_one_seed_and_changes_with_the_seed():
    w = planted()
    a, b = generate_inputs(w, w.sizes()), generate_inputs(w, w.sizes())
    assert all(np.array_equal(a[n], b[n]) for n in a)
    c = generate_inputs(w, w.sizes(), seed=5)
    assert not np.array_equal(a["text"], c["text"])


def test_generator_that_is_not_deterministic_is_refused():
    w = wl("x: {shape: [N], dtype: fp32, role: in}", """
        generator: |
          x[:] = np.random.default_rng().random(N)
    """)
    with pytest.raises(UserError, match="not deterministic: array 'x'.*rng"):
        generate_inputs(w, w.sizes())


def test_generator_neighbour_lists_exclude_the_point_itself():
    w = wl("""
        pts: {shape: [N, 2], dtype: fp32, role: in}
        nbr: {shape: [N, K], dtype: int32, role: in}
    """, """
        generator: |
          for i in range(N):
              others = np.delete(np.arange(N), i)
              nbr[i] = rng.choice(others, size=K, replace=False)
    """, params="{N: 40, K: 6}")
    a = generate_inputs(w, w.sizes())
    assert a["nbr"].shape == (40, 6) and a["nbr"].dtype == np.int32
    for i, row in enumerate(a["nbr"]):
        assert i not in row and len(set(row.tolist())) == 6 and row.min() >= 0 and row.max() < 40
    assert a["pts"].min() >= -1 and a["pts"].max() < 1, "arrays the generator leaves keep their defaults"


def test_generator_sees_sizes_scalars_and_declarative_arrays():
    w = wl("""
        a: {shape: [N], dtype: int32, role: in}
        b: {shape: [N], dtype: int32, role: in}
        tw: {shape: [N, 2], dtype: fp64, role: in}
    """, """
        arrays:
          a: {distribution: arange, start: 5}
        generator: |
          b = a * scale + N
          k = np.arange(N)
          tw = np.stack([np.cos(2 * np.pi * k / N), -np.sin(2 * np.pi * k / N)], axis=1)
        variants:
          big: {scalars: {scale: 3}}
    """, params="{N: 8}", scalars="  scalars: {scale: {dtype: int32, value: 2}}")
    a = generate_inputs(w, w.sizes())
    assert a["b"].tolist() == [2 * v + 8 for v in range(5, 13)] and a["b"].dtype == np.int32
    assert np.allclose(a["tw"][2], [0.0, -1.0])
    assert generate_inputs(w, w.sizes(), "big")["b"].tolist() == [3 * v + 8 for v in range(5, 13)]


@pytest.mark.parametrize("code, msg", [
    ("x = np.zeros(N + 1)", r"left array 'x' with shape \(9,\), expected \(8,\) \(the declared shape \[N\]\)"),
    ("x = 'text'", "left str in array 'x', expected a numeric array of dtype int8"),
    ("x = np.full(N, 300)", r"left array 'x' with values in \[300, 300\], which do not fit its dtype int8 "
                            r"\[-128, 127\]"),
    ("x = np.full(N, 0.5)", "non-integer value 0.5 at \\[0\\], expected integers of dtype int8"),
    ("y = np.full(N, 1e6)", "value 1000000.0 at \\[0\\], which overflows its dtype fp16"),
    ("o = np.ones(N)", "assigned 'o', whose role is 'out'"),
    ("a = 1\nb = 2\nx[:] = undefined_name", "input generator of workload 'gen' failed at line 3: NameError"),
    ("x[N + 5] = 1", "failed at line 1: IndexError"),
    ("x = (", "input generator of workload 'gen' has a syntax error at line 1"),
])
def test_generator_errors_name_workload_array_and_line(code, msg):
    w = wl("""
        x: {shape: [N], dtype: int8, role: in}
        y: {shape: [N], dtype: fp16, role: in}
        o: {shape: [N], dtype: fp32, role: out}
    """, "generator: |\n" + textwrap.indent(code, "  "), params="{N: 8}")
    with pytest.raises(UserError, match=msg):
        generate_inputs(w, w.sizes())


def test_generator_parameters_of_a_variant_must_be_declared():
    w = wl("x: {shape: [N], dtype: fp32, role: in}", """
        params: {spread: 1.0}
        generator: "x[:] = params['spread']"
        variants:
          wide: {params: {sprad: 4.0}}
    """)
    with pytest.raises(SpecError, match=r"gen.yaml:\d+:\d+: error: workload.inputs.variants.wide.params.sprad: "
                                        r"variant 'wide' sets generator parameter 'sprad'[\s\S]*spread"):
        generate_inputs(w, w.sizes(), "wide")
    assert generate_inputs(w, w.sizes())["x"].tolist() == [1.0] * 64


# --- variants that change scalars ------------------------------------------------------------

SCALED = dict(
    arrays="""
        a: {shape: [N], dtype: fp32, role: in}
        y: {shape: [N], dtype: fp32, role: out}
    """,
    scalars="  scalars:\n    alpha: {dtype: fp32, value: 1.5}\n    K: {dtype: int32, value: 10}",
    reference="y[:K] = a[:K] * alpha",
)


def test_variant_scalars_override_values_and_reach_the_reference():
    w = wl(SCALED["arrays"], """
        variants:
          big: {scalars: {alpha: 2.5, K: 50}}
          same: {}
    """, scalars=SCALED["scalars"], reference=SCALED["reference"])
    assert variants(w) == ["big", "same"]
    assert resolve_inputs(w, "big")["scalars"] == {"alpha": {"dtype": "fp32", "value": 2.5},
                                                   "K": {"dtype": "int32", "value": 50}}
    assert resolve_inputs(w)["scalars"] == w.scalars
    assert effective_workload(w, "big").scalars["alpha"]["value"] == 2.5
    assert effective_workload(w, "same") is w and effective_workload(w, None) is w
    a = generate_inputs(w, w.sizes(), "big")
    y = run_reference(w, a, w.sizes(), "big")["y"]
    assert np.allclose(y[:50], a["a"][:50] * np.float32(2.5)) and np.all(y[50:] == 0)
    y0 = run_reference(w, a, w.sizes())["y"]
    assert np.allclose(y0[:10], a["a"][:10] * np.float32(1.5)) and np.all(y0[10:] == 0)


@pytest.mark.parametrize("override, msg", [
    ("{alpah: 2.5}", r"variant 'v' sets unknown scalar 'alpah'[\s\S]*expected: one of: K, alpha"),
    ("{K: 2.5}", r"scalar 'K' of variant 'v' is 2.5, which does not fit its dtype int32"),
    ("{K: 3000000000}", r"does not fit its dtype int32"),
])
def test_variant_scalar_errors_point_at_the_field(override, msg):
    w = wl(SCALED["arrays"], f"variants: {{v: {{scalars: {override}}}}}", scalars=SCALED["scalars"])
    with pytest.raises(SpecError, match=r"gen.yaml:\d+:\d+: error: workload.inputs.variants.v.scalars"):
        resolve_inputs(w, "v")
    with pytest.raises(SpecError, match=msg):
        check_inputs(w)


def test_an_infinite_or_absurd_variant_scalar_is_refused_where_yaml_reads_it():
    with pytest.raises(SpecError, match=r"gen.yaml:\d+:\d+: error: workload.inputs.variants.v.scalars.K: "
                                        r"inf is not a finite number"):
        wl(SCALED["arrays"], "variants: {v: {scalars: {K: .inf}}}", scalars=SCALED["scalars"])
    with pytest.raises(SpecError, match=r"scalars.alpha: 1e\+39 is beyond any quantity"):
        wl(SCALED["arrays"], "variants: {v: {scalars: {alpha: 1.0e+39}}}", scalars=SCALED["scalars"])



def test_variant_scalar_reaches_the_reference_and_an_hlsim_profile(write):
    from llmulator_plugins.hlsim.profiler import HlsimProfiler

    arch = write("arch.yaml", """
        architecture:
          version: 1
          name: tiny
          clock_mhz: 100
          compute:
            operators:
              add: {count: 1, bits: 32, numeric: float, latency_cycles: 4}
              mul: {count: 1, bits: 32, numeric: float, latency_cycles: 3}
              cmp: {count: 1, bits: 32, latency_cycles: 1}
          memory:
            - {name: DRAM, kind: dram, width_bits: 64, bandwidth_bytes_per_cycle: 100000, latency_cycles: 0}
            - {name: BUF, kind: sram, capacity_kib: 1024, width_bits: 32, banks: 16, ports: 2, latency_cycles: 1,
               bandwidth_bytes_per_cycle: 100000}
    """)
    work = write("w.yaml", """
        workload:
          version: 1
          name: scaled
          parameters: {N: 64}
          scalars:
            alpha: {dtype: fp32, value: 1.5}
            K: {dtype: int32, value: 10}
          arrays:
            a: {shape: [N], dtype: fp32, role: in}
            y: {shape: [N], dtype: fp32, role: out}
          kernel: |
            L_i: for (int i = 0; i < K; i++) {
              y[i] = a[i] * alpha;
            }
          inputs:
            variants:
              big: {scalars: {alpha: 2.5, K: 50}}
          reference: |
            y[:K] = a[:K] * alpha
    """)
    mp = write("m.yaml", """
        mapping:
          version: 1
          name: m
          loops: {L_i: {pipeline_ii: 1}}
          placement: {a: BUF, y: BUF}
    """)
    prof = HlsimProfiler()
    base = prof.profile(load_design(arch, work, mp))
    assert base.functional_check == "pass" and base.counters["trips.L_i"] == 10
    d = load_design(arch, work, mp, variant="big")
    for inp in (None, inputs_for(d), inputs_for(load_design(arch, work, mp), None, "big")):
        p = prof.profile(d, inp) if inp is not None else prof.profile(d)
        assert p.functional_check == "pass"
        assert p.counters["trips.L_i"] == 50, "the compiled kernel got the variant's K"
        assert p.metrics["cycles"] > base.metrics["cycles"]
    assert d.workload.scalars["K"]["value"] == 50, "the design carries its variant's scalars (render, bounds)"
    assert d.trips("L_i") == 50, "static estimators see the variant's K"
    assert load_design(arch, work, mp).workload.scalars["K"]["value"] == 10, "the base design is left as it was"


# --- the schema ------------------------------------------------------------------------------

def test_schema_accepts_the_new_keys_and_refuses_bad_ones():
    ok = wl("x: {shape: [4, 4], dtype: fp32, role: in}", """
        params: {n: 1, name: text, list: [1, 2]}
        arrays:
          x: {distribution: normalized, axis: 0}
        generator: "pass"
        variants:
          v: {scalars: {}, params: {n: 2}, generator: "x[:] = 0.25"}
    """)
    assert generate_inputs(ok, ok.sizes(), "v")["x"].tolist() == [[0.25] * 4] * 4
    with pytest.raises(SpecError, match=r"mutation_rate: value 1.5 is too large"):
        wl("x: {shape: [4], dtype: fp32, role: in}", "arrays: {x: {distribution: zeros, copy_of: x, "
           "mutation_rate: 1.5}}")
    with pytest.raises(SpecError, match=r"scalars.alpha: wrong type: got \"big\""):
        wl("x: {shape: [4], dtype: fp32, role: in}", "variants: {v: {scalars: {alpha: big}}}")
    with pytest.raises(SpecError, match="invalid value \"onehot\"[\\s\\S]*did you mean 'one_hot'"):
        wl("x: {shape: [4], dtype: fp32, role: in}", "arrays: {x: {distribution: onehot}}")


@pytest.mark.parametrize("value, msg", [
    ("0.25", None),
    ("'N / 4'", None),
    ("-1", "value -1 is too small"),
    ("'N ^ 2'", 'invalid text "N \\^ 2"'),
    ("[1]", "wrong type: got a list"),
])
def test_expected_trips_takes_a_number_or_an_expression(value, msg):
    text = f"""
workload:
  version: 1
  name: h
  parameters: {{N: 8}}
  arrays:
    x: {{shape: [N], dtype: int32, role: in}}
  kernel: "L_w: while (x[0] > 0) {{ x[0]--; }}"
  hints:
    L_w: {{expected_trips: {value}}}
"""
    if msg is None:
        load_workload("h.yaml", text)
        return
    with pytest.raises(SpecError) as e:
        load_workload("h.yaml", text)
    out = str(e.value)
    assert re.search(r"h.yaml:10:\d+: error: workload.hints.L_w.expected_trips: " + msg, out), out
    assert "expected: number >= 0, or an expression" in out, out
    assert "expected: integer" not in out


# --- the worked examples of docs/spec-reference.md -------------------------------------------

def _doc_examples(section: str) -> list[str]:
    text = (ROOT / "docs" / "spec-reference.md").read_text(encoding="utf-8")
    m = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    return re.findall(r"```yaml\n(.*?)```", m.group(1), re.S) if m else []


DOC_EXAMPLES = [(s, i, y) for s in ("Input generators", "Variants") for i, y in enumerate(_doc_examples(s))]


@pytest.mark.parametrize("section, i, text", DOC_EXAMPLES, ids=[f"{s}-{i}" for s, i, _ in DOC_EXAMPLES])
def test_spec_reference_examples_validate_and_generate(section, i, text):
    assert "workload" in yaml.safe_load(text), "every example is a complete workload"
    w = load_workload(f"<spec-reference {section} example {i}>", text)
    analyze(w)  # the kernel is one llmulator reads
    check_inputs(w)
    for v in [None, *variants(w)]:
        for preset in [None, *sorted(w.presets)]:
            sizes = w.sizes(preset)
            a = generate_inputs(w, sizes, v)
            b = generate_inputs(w, sizes, v)
            assert all(np.array_equal(a[n], b[n]) for n in a)
            if w.reference:
                run_reference(w, a, sizes, v)


def test_spec_reference_has_worked_examples():
    """The sections exist (the examples above are collected from them)."""
    assert len(_doc_examples("Input generators")) >= 3
    assert len(_doc_examples("Variants")) >= 1


def test_validate_checks_variant_scalars_and_copy_sources(write, capsys):
    from llmulator.cli import main

    w = write("w.yaml", """
        workload:
          version: 1
          name: v
          parameters: {N: 8}
          scalars:
            K: {dtype: int32, value: 4}
          arrays:
            a: {shape: [N], dtype: int32, role: in}
            y: {shape: [N], dtype: int32, role: out}
          kernel: |
            L_i: for (int i = 0; i < K; i++) {
              y[i] = a[i];
            }
          inputs:
            variants:
              big: {scalars: {K: 2.5}}
    """)
    assert main(["validate", str(w)]) == 2
    assert "scalar 'K' of variant 'big' is 2.5" in capsys.readouterr().err
