"""The bundled library travels with the package: a wheel installed in a fresh environment finds it, and
``LLMULATOR_LIBRARY`` takes both a folder with sub-folders and a flat folder of YAML files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from llmulator import library
from llmulator.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_a_flat_library_folder_is_read_by_top_level_key(tmp_path, monkeypatch, capsys):
    flat = tmp_path / "mine"
    flat.mkdir()
    w = (ROOT / "library" / "workloads" / "gemm.yaml").read_text().replace("name: gemm\n", "name: my-gemm\n", 1)
    (flat / "my-gemm.yaml").write_text(w)
    (flat / "notes.yaml").write_text("something: else\n")
    monkeypatch.setenv("LLMULATOR_LIBRARY", str(flat))
    assert library.resolve("workload", "my-gemm") == flat / "my-gemm.yaml"
    assert "my-gemm" in {e["name"] for e in library.entries("workload")}
    assert "notes" not in {e["name"] for e in library.entries("workload") + library.entries("architecture")}
    assert library.resolve("workload", "gemm").parent.name == "workloads"  # the bundled one still found
    assert main(["list", "--kind", "workload", "--json"]) == 0
    assert "my-gemm" in {e["name"] for e in json.loads(capsys.readouterr().out)["workload"]}


@pytest.mark.slow
def test_a_built_wheel_installed_elsewhere_runs_the_readme_example(tmp_path):
    """Build the wheel, install it (no dependencies) into a fresh venv that borrows this environment's
    third-party packages, and run the README's estimate from a folder outside the repository."""
    wheels = tmp_path / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                        str(wheels), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    wheel = next(wheels.glob("llmulator-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # third-party packages from this environment, as a plain path (its .pth files, the editable
    # install's finder among them, are not processed): the wheel's llmulator is the one imported
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                        str(wheel)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("LLMULATOR_LIBRARY", "PYTHONPATH")}
    where = subprocess.run([str(py), "-c", "import llmulator, llmulator_library; print(llmulator.__file__); "
                            "print(llmulator_library.__file__)"], cwd=work, env=env, capture_output=True,
                           text=True, timeout=120)
    assert where.returncode == 0 and str(ROOT) not in where.stdout, where.stdout + where.stderr
    out = subprocess.run([str(py), "-m", "llmulator.cli", "estimate", "systolic-16x16", "gemm", "gemm-ws-16x16",
                          "--estimator", "analytical", "--json"], cwd=work, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout)["estimates"][0]["metrics"]["cycles"] > 0
    listed = subprocess.run([str(py), "-m", "llmulator.cli", "list", "--json"], cwd=work, env=env,
                            capture_output=True, text=True, timeout=120)
    assert len(json.loads(listed.stdout)["mapping"]) >= 100
    shutil.rmtree(tmp_path / "wheels", ignore_errors=True)
