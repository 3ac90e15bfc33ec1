"""``llmulator.entrypoints`` finds what ``importlib.metadata.entry_points`` finds, in the same order, without
importing it (issue 17: plugin discovery was ~40 ms of a cold ``llmulator estimate``)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import zipfile
from importlib.metadata import entry_points as from_metadata

import pytest
from llmulator import entrypoints

GROUPS = ("llmulator", "console_scripts", "pytest11", "distutils.commands", "mine")


def _rows(eps) -> list[tuple]:
    return [(e.name, e.value, e.group, e.dist.name, e.dist.version) for e in eps]


def _same_as_metadata() -> None:
    importlib.invalidate_caches()
    for group in GROUPS:
        assert _rows(entrypoints.scan(group)) == _rows(from_metadata(group=group)), group


def _dist(site, folder: str, meta: str, eps: str | None, meta_file: str = "METADATA") -> None:
    d = site / folder
    d.mkdir()
    (d / meta_file).write_text(meta)
    if eps is not None:
        (d / "entry_points.txt").write_text(eps)


def test_the_installed_environment_reads_the_same():
    _same_as_metadata()


def test_the_importlib_metadata_backports_finder_reads_the_same():
    """dask and datasets import the ``importlib_metadata`` backport, which puts its finder on ``sys.meta_path``: the
    scan reads the same folders, so it is not unusual (before, the scan raised and fell back)."""
    backport = pytest.importorskip("importlib_metadata")
    assert any(type(f).__name__ == "MetadataPathFinder" for f in sys.meta_path), backport
    entrypoints.scan("llmulator")   # does not raise _Unusual
    _same_as_metadata()


def test_order_duplicates_comments_and_egg_info_read_the_same(tmp_path, monkeypatch):
    site, later = tmp_path / "site", tmp_path / "later"
    site.mkdir()
    later.mkdir()
    _dist(site, "Foo_Bar-1.0.dist-info", "Metadata-Version: 2.1\nName: Foo_Bar\nVersion: 1.0\n\nName: not me\n",
          "# a comment\n[mine]\n  a = pkg_a:obj.attr \n\n[other]\nb = pkg_b\n[mine]\nc=pkg_c [extra]\n")
    _dist(site, "foo.bar-2.0.dist-info", "Name: foo.bar\nVersion: 2.0\n", "[mine]\nshadowed = x\n")  # same name
    _dist(site, "zed.egg-info", "Metadata-Version: 1.0\nName: zed\nVersion: 0.3\nSummary: folded\n  name: no\n",
          "[mine]\nz = zed_mod\n", meta_file="PKG-INFO")
    (site / "loose.egg-info").write_text("Name: loose\nVersion: 1\n")  # an egg-info file: no entry points
    _dist(later, "foo_bar-3.0.dist-info", "Name: foo-bar\nVersion: 3.0\n", "[mine]\nlater = y\n")  # later on path
    _dist(later, "other-1.dist-info", "Name: other\nVersion: 1\n", "[mine]\nlast = w\n")
    monkeypatch.syspath_prepend(str(later))
    monkeypatch.syspath_prepend(str(site))
    _same_as_metadata()
    names = [e.name for e in entrypoints.scan("mine")]
    assert "later" not in names and {"z", "last"} <= set(names)  # the first foo-bar on sys.path only
    assert ("shadowed" in names) != ("a" in names)  # of one folder's two: the first listed


def test_load_imports_the_named_object(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "ep_probe_mod.py").write_text("class Obj:\n    attr = 42\n")
    _dist(site, "probe-1.dist-info", "Name: probe\nVersion: 1\n", "[mine]\np = ep_probe_mod:Obj.attr\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "ep_probe_mod", raising=False)
    (ep,) = [e for e in entrypoints.scan("mine") if e.name == "p"]
    assert ep.load() == 42 and ep.dist.name == "probe"


def test_an_unusual_environment_is_read_by_importlib_metadata(tmp_path, monkeypatch):
    z = tmp_path / "plugins.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("zipped-1.dist-info/METADATA", "Name: zipped\nVersion: 1\n")
        f.writestr("zipped-1.dist-info/entry_points.txt", "[mine]\nzipped = zipped_mod\n")
    monkeypatch.syspath_prepend(str(z))
    with pytest.raises(entrypoints._Unusual):
        entrypoints.scan("mine")
    importlib.invalidate_caches()
    got = _rows(entrypoints.entry_points("mine"))
    assert got == _rows(from_metadata(group="mine")) and ("zipped", "zipped_mod", "mine", "zipped", "1") in got


def test_a_finder_that_provides_distributions_is_asked_through_importlib_metadata(monkeypatch):
    class Finder:
        @staticmethod
        def find_spec(*args):
            return None

        @staticmethod
        def find_distributions(*args, **kwargs):
            return iter(())

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    with pytest.raises(entrypoints._Unusual):
        entrypoints.scan("mine")
    assert _rows(entrypoints.entry_points("llmulator")) == _rows(from_metadata(group="llmulator"))


def test_loading_the_plugins_does_not_import_importlib_metadata():
    code = ("import sys\nfrom llmulator import plugins\nplugins.manager()\nassert plugins.names('estimators')\n"
            "print('importlib.metadata' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"
