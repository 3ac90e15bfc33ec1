"""`llmulator synth --relabel`: stale rows get the label generation gives today, once, resumably."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from llmulator.cli import main
from llmulator.dataset import read_records, write_shard
from llmulator_plugins.synth import driver
from llmulator_plugins.synth.card import write_card
from llmulator_plugins.synth.relabel import current_profiler, relabel


def _rows(out):
    return sorted(read_records(out), key=lambda r: r["sample_id"])


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A tiny dataset as generation writes it today: stage 2, 4 samples in 2 shards."""
    out = tmp_path_factory.mktemp("relabel") / "fresh"
    driver.run([2], 4, out, seed=7, shard_size=2, progress=False)
    return out


def _stale_copy(fresh: Path, dst: Path, edit=None) -> Path:
    """A copy of ``fresh`` whose rows say an old profiler labelled them, with wrong cycles."""
    shutil.copytree(fresh, dst)
    for f in sorted((dst / "data").glob("*.parquet")):
        rows = read_records_of(f)
        for r in rows:
            r["profiler"], r["cycles"], r["energy_pj"] = "hlsim 0.1", r["cycles"] * 3 + 1, r["energy_pj"] / 2
            if edit is not None:
                edit(r)
        write_shard(f, rows)
    return dst


def read_records_of(f: Path):
    import pyarrow.parquet as pq
    return pq.read_table(f).to_pylist()


def test_relabel_restores_what_generation_gives_and_a_second_run_does_nothing(fresh, tmp_path, capsys):
    out = _stale_copy(fresh, tmp_path / "d")
    (out / "features-gnn-v1.npz").write_bytes(b"stale")  # a derived cache of the old labels
    assert main(["synth", "--relabel", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "4 rows re-profiled by " + current_profiler() in text and "(were hlsim 0.1 4)" in text
    assert "label changed: 4 rows (cycles 4, energy_pj 4, area_um2 0)" in text
    assert "0 rows no longer label" in text and "features-gnn-v1.npz" in text
    assert _rows(out) == _rows(fresh)  # every field, as generation writes it today
    assert not (out / "features-gnn-v1.npz").exists()
    summary = json.loads((out / "relabel.json").read_text())
    assert summary["complete"] and summary["rows_relabelled"] == 4 and summary["changed"]["cycles"] == 4

    stamps = {f: f.stat().st_mtime_ns for f in (out / "data").glob("*.parquet")}
    assert main(["synth", "--relabel", "--out", str(out), "--no-progress"]) == 0
    assert "nothing to relabel" in capsys.readouterr().out
    assert {f: f.stat().st_mtime_ns for f in (out / "data").glob("*.parquet")} == stamps  # no shard rewritten
    card = write_card(out, tmp_path / "card.md", library=False)
    assert f"every row labelled by {current_profiler()} (relabelled by `llmulator synth --relabel`" in card


def test_an_interrupted_relabel_resumes_shard_by_shard(fresh, tmp_path):
    out = _stale_copy(fresh, tmp_path / "d")
    shards = sorted((out / "data").glob("*.parquet"))

    def stop(path):
        raise KeyboardInterrupt  # Ctrl-C once the first shard is written

    with pytest.raises(KeyboardInterrupt):
        relabel(out, progress=False, on_shard=stop)
    profilers = [{r["profiler"] for r in read_records_of(f)} for f in shards]
    assert profilers == [{current_profiler()}, {"hlsim 0.1"}]  # the first shard is done, the second untouched
    done = []
    summary = relabel(out, progress=False, on_shard=done.append)
    assert done == [shards[1]]  # only the shard left is redone
    assert summary["complete"] and summary["rows_relabelled"] == 4 and summary["shards_rewritten"] == 2
    assert _rows(out) == _rows(fresh)


def test_a_row_that_no_longer_labels_is_redrawn_and_counted(fresh, tmp_path, capsys):
    def corrupt(r):
        if r["index"] == 1:  # specs that no longer build a design
            r["mapping_yaml"] = r["mapping_yaml"].replace("mapping:", "mapping:\n  no_such_field: 1", 1)

    out = _stale_copy(fresh, tmp_path / "d", corrupt)
    summary = relabel(out, progress=False)
    assert [d["sample_id"] for d in summary["redrawn"]] == ["s2-0000001"] and summary["dropped"] == []
    assert _rows(out) == _rows(fresh)  # the driver's draw for that index is the sample it made

    out2 = _stale_copy(fresh, tmp_path / "e", corrupt)
    (out2 / "dataset.json").unlink()  # no seed: the sample cannot be redrawn
    assert main(["synth", "--relabel", "--out", str(out2), "--no-progress"]) == 0
    assert "1 rows no longer label and could not be redrawn: dropped\n    s2-0000001" in capsys.readouterr().out
    assert [r["sample_id"] for r in _rows(out2)] == ["s2-0000000", "s2-0000002", "s2-0000003"]


def test_relabel_of_a_folder_without_shards_is_bad_usage(tmp_path, capsys):
    assert main(["synth", "--relabel", "--out", str(tmp_path / "none")]) == 2
    assert "no Parquet shards" in capsys.readouterr().err
    assert main(["synth", "--out", str(tmp_path / "none")]) == 2
    assert "needs --n" in capsys.readouterr().err


def _refuse_first_profile(monkeypatch) -> list:
    """hlsim raises InvariantError (a broken physical bound: a timing-model bug) on its first profile only."""
    from llmulator.errors import InvariantError
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    real, calls = HlsimProfiler.profile, []

    def profile(self, design, inputs=None):
        calls.append(design.name)
        if len(calls) == 1:
            raise InvariantError(f"hlsim broke a physical bound on design {design.name}: a test's refusal")
        return real(self, design, inputs)
    monkeypatch.setattr(HlsimProfiler, "profile", profile)
    return calls


def test_a_draw_the_profiler_refuses_is_kept_and_drawn_again(fresh, tmp_path, monkeypatch, capsys):
    """One refused profile stopped a 40,832-row run with a traceback (2026-12-07); now the run goes on, the
    sample is drawn again, and the refused design is kept with the command that reproduces it."""
    _refuse_first_profile(monkeypatch)
    out = tmp_path / "d"
    assert main(["synth", "--stages", "2", "--n", "4", "--seed", "7", "--shard-size", "2", "--out", str(out),
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "synth: s2-0000000: hlsim broke a physical bound" in text and "1 draws refused" in text
    rows = _rows(out)
    assert [r["sample_id"] for r in rows] == [f"s2-000000{k}" for k in range(4)]
    assert rows[1:] == _rows(fresh)[1:]  # the other samples are what an undisturbed run draws
    assert json.loads((out / "dataset.json").read_text())["refused"] == 1
    folder = out / "refused" / "s2-0000000-g0a0"
    info = json.loads((folder / "refusal.json").read_text())
    assert info["message"].endswith("a test's refusal") and info["reproduce"].startswith("llmulator profile ")
    card = write_card(out, tmp_path / "card.md", library=False)
    assert "**Refused draws:** hlsim refused 1 drawn designs" in card
    monkeypatch.undo()
    assert main(info["reproduce"].split()[1:]) == 0  # the three files are the refused design, and it profiles


def test_a_row_the_profiler_now_refuses_is_redrawn_and_kept(fresh, tmp_path, monkeypatch, capsys):
    out = _stale_copy(fresh, tmp_path / "d")
    _refuse_first_profile(monkeypatch)
    assert main(["synth", "--relabel", "--out", str(out), "--no-progress"]) == 0
    assert "1 draws the profiler refused" in capsys.readouterr().out
    summary = json.loads((out / "relabel.json").read_text())
    assert summary["refused"] == ["s2-0000000-relabel"]
    assert [d["sample_id"] for d in summary["redrawn"]] == ["s2-0000000"]
    assert (out / "refused" / "s2-0000000-relabel" / "workload.yaml").is_file()
    assert _rows(out) == _rows(fresh)  # the redraw of that index is the sample generation made
