"""Every value YAML can produce is accepted with a meaning or refused at its line, and loading is
bounded: an alias bomb, a recursive alias, deep nesting and an oversized file end with exit 2 at
once, never a traceback, a hang or gigabytes of memory."""

from __future__ import annotations

import time

import pytest
from llmulator import yamlsrc
from llmulator.cli import main

BOMB = "\n".join(
    [f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 9) + "]" if i else
     'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]' for i in range(9)]) + "\n"


def _validate(tmp_path, capsys, text: str) -> tuple[int, str]:
    f = tmp_path / "x.yaml"
    f.write_text(text)
    rc = main(["validate", str(f)])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return rc, err


def test_an_alias_bomb_is_refused_at_once(tmp_path, capsys):
    t0 = time.monotonic()
    rc, err = _validate(tmp_path, capsys, BOMB)
    assert rc == 2 and "expands to more than" in err and "x.yaml:1:" in err
    assert time.monotonic() - t0 < 2.0


@pytest.mark.parametrize("text, said", [
    ("a: &a [1, *a]\n", "expands to more than"),
    ("architecture:\n  version: 1\n  clock_mhz: .nan\n", "x.yaml:3:14: error: architecture.clock_mhz: nan is not"),
    ("architecture:\n  version: 1\n  clock_mhz: -.inf\n", "-inf is not a finite number"),
    ("architecture:\n  version: 1\n  name: 2024-01-01\n", "as a date"),
    ("architecture:\n  version: 1\n  name: !!binary aGVsbG8=\n", "!!binary"),
    ("architecture:\n  version: 1\n  clock_mhz: 123456789012345678901234567890\n", "too large"),
    ("architecture:\n  version: 1\n  clock_mhz: 1.0e+308\n", "beyond any quantity"),  # found by fuzzing: hung
    ("x: " + "[" * 200 + "]" * 200 + "\n", "nested"),
])
def test_values_no_spec_field_can_mean_are_refused_at_their_line(tmp_path, capsys, text, said):
    rc, err = _validate(tmp_path, capsys, text)
    assert rc == 2 and said in err, err


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(yamlsrc, "MAX_FILE_BYTES", 1000)
    rc, err = _validate(tmp_path, capsys, "a: " + "x" * 2000 + "\n")
    assert rc == 2 and "at most" in err


def test_merge_keys_and_plain_aliases_still_mean_what_yaml_says(tmp_path):
    data, _ = yamlsrc.load_yaml(tmp_path / "m.yaml", "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\nc: *b\n")
    assert data["c"] == {"x": 1, "y": 2}


def test_arrays_too_large_for_memory_are_refused_by_name_before_allocation(tmp_path, capsys):
    w = tmp_path / "w.yaml"
    w.write_text("""workload:
  version: 1
  name: huge
  parameters: {N: 4000000}
  arrays:
    x: {shape: [N, N], dtype: fp64, role: in}
    y: {shape: [N], dtype: fp64, role: out}
  kernel: |
    L_i: for (int i = 0; i < N; i++) {
      y[i] = x[i][i];
    }
  reference: |
    y[:] = np.diag(x)
""")
    m = tmp_path / "m.yaml"
    m.write_text("mapping:\n  version: 1\n  name: m\n  placement: {x: DRAM, y: DRAM}\n")
    t0 = time.monotonic()
    rc = main(["profile", "hls-fpga", str(w), str(m)])
    err = capsys.readouterr().err
    assert rc == 2 and "'x' [4000000, 4000000]" in err and "GiB" in err and "Traceback" not in err, err
    assert time.monotonic() - t0 < 30


def test_unknown_keys_are_reported_a_few_at_a_time(tmp_path, capsys):
    text = "architecture:\n  version: 1\n" + "".join(f"  k{i}: 1\n" for i in range(5000))
    rc, err = _validate(tmp_path, capsys, text)
    assert rc == 2 and err.count("unknown key '") == 5 and "and 4,995 more unknown keys" in err


def test_fuzzed_library_files_never_end_in_an_internal_error():
    """120 mutated library designs (fixed seed): validate, then the analytical estimate, each ends in
    exit 0 or 2 with a diagnostic — never exit 1. A longer run: benchmarks/fuzz_specs.py."""
    import sys

    from conftest import ROOT
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from fuzz_specs import run_case
    bad = [r for c in range(120) if (r := run_case(c, 0)) is not None]
    assert not bad, "\n\n".join(bad)


def test_deep_nesting_in_a_kernel_or_a_shape_is_a_diagnostic(tmp_path, capsys):
    import yaml
    k = "L_i: for (int i = 0; i < N; i++) { y[i] = " + "(" * 3000 + "x[i]" + ")" * 3000 + "; }\n"
    arrays = {"x": {"shape": ["N"], "dtype": "int32", "role": "in"},
              "y": {"shape": ["N"], "dtype": "int32", "role": "out"}}
    rc, err = _validate(tmp_path, capsys, yaml.safe_dump({"workload": {
        "version": 1, "name": "w", "parameters": {"N": 8}, "arrays": arrays, "kernel": k}}))
    assert rc == 2 and "nests expressions or statements too deeply" in err
    arrays["x"]["shape"] = ["+".join(["N"] * 50000)]
    rc, err = _validate(tmp_path, capsys, yaml.safe_dump({"workload": {
        "version": 1, "name": "w", "parameters": {"N": 8}, "arrays": arrays,
        "kernel": "L_i: for (int i = 0; i < N; i++) { y[i] = x[i]; }\n"}}))
    assert rc == 2 and "nested too deeply" in err


def test_a_damaged_calibration_context_does_not_hide_the_others(tmp_path, monkeypatch, capsys):
    import json
    monkeypatch.setenv("LLMULATOR_HOME", str(tmp_path))
    for name, meta in (("good", {"calibrator": "scale", "estimator": "analytical"}), ("bad", [1, 2, 3]),
                       ("worse", "{not json")):
        d = tmp_path / "contexts" / name
        d.mkdir(parents=True)
        (d / "context.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    from llmulator_plugins.calibrate import store
    assert list(store.list_contexts()) == ["good"]
    err = capsys.readouterr().err
    assert "skipping calibration context 'bad'" in err and "skipping calibration context 'worse'" in err


def test_render_to_a_folder_says_so(tmp_path, capsys):
    assert main(["render", "systolic-16x16", "gemm", "gemm-ws-16x16", "--hls", "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_a_write_that_fails_is_a_message_and_leaves_the_old_file(tmp_path, monkeypatch):
    """A full disk (or a read-only folder) while writing a result: a UserError naming the file, no
    temporary file left, the previous content intact."""
    import errno

    from llmulator.errors import UserError
    from llmulator.fileio import atomic_write_text
    f = tmp_path / "out.json"
    f.write_text("old")
    real = open

    def full_disk_fdopen(fd, mode="r", *a, **k):
        h = real(fd, mode, *a, **k)
        def write(_data):
            raise OSError(errno.ENOSPC, "No space left on device")
        h.write = write
        return h
    monkeypatch.setattr("os.fdopen", full_disk_fdopen)
    with pytest.raises(UserError, match="cannot write .*out.json: No space left on device"):
        atomic_write_text(f, "new")
    assert f.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.json"]
