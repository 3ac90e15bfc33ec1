"""`llmulator import timeloop PATH... --out DIR` and `llmulator export timeloop ARCH WORKLOAD MAPPING --out DIR`."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml


def add_commands(subparsers) -> None:
    p = subparsers.add_parser(
        "import", help="import designs written for another tool (timeloop: Timeloop v0.4 specs)",
        description="Import a design written for another tool into llmulator's three spec files.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  llmulator import timeloop arch.yaml prob.yaml map.yaml --out imported/")
    sub = p.add_subparsers(dest="format", required=True, metavar="FORMAT")
    t = sub.add_parser("timeloop", help="Timeloop v0.4 architecture, problem, mapping (and ERT) files or folders",
                       description="Read Timeloop v0.4 specs (files or folders in any order, recognised by "
                       "their top-level key; a reference-output folder imports as that run's design) and write "
                       "DIR/arch.yaml, DIR/workload.yaml and DIR/mapping.yaml, validated.")
    t.add_argument("paths", nargs="+", metavar="PATH", help="Timeloop YAML files or folders")
    t.add_argument("--out", required=True, metavar="DIR", help="folder to write the three specs into")
    t.add_argument("--name", default=None, help="design name (default: the problem's name)")
    t.set_defaults(func=run_import)
    e = subparsers.add_parser(
        "export", help="export a design as another tool's specs (timeloop: Timeloop v0.4)",
        description="Write a design (architecture, workload, mapping with levels) as another tool's specs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  llmulator export timeloop imported/arch.yaml imported/workload.yaml "
               "imported/mapping.yaml --out tl/")
    esub = e.add_subparsers(dest="format", required=True, metavar="FORMAT")
    x = esub.add_parser("timeloop", help="Timeloop v0.4 arch.yaml, prob.yaml, map.yaml and ERT.yaml",
                        description="Write DIR/arch.yaml, DIR/prob.yaml, DIR/map.yaml and DIR/ERT.yaml.")
    x.add_argument("arch", metavar="ARCH", help="architecture (name or file)")
    x.add_argument("workload", metavar="WORKLOAD", help="workload (name or file)")
    x.add_argument("mapping", metavar="MAPPING", help="mapping with levels (name or file)")
    x.add_argument("--out", required=True, metavar="DIR", help="folder to write the Timeloop specs into")
    x.set_defaults(func=run_export)


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s
                                                               else None))


def _dump(path: Path, data: dict, comment: str) -> None:
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=100)
    path.write_text(f"# {comment}\n" + text)


def import_timeloop(paths: list[str], out: str | Path, name: str | None = None,
                    notes: list[str] | None = None) -> list[Path]:
    """Write DIR/arch.yaml, workload.yaml, mapping.yaml (validated); what was read but not imported (mapper
    settings and constraints) is appended to ``notes`` and written as comments atop mapping.yaml."""
    from llmulator.design import load_design

    from . import convert, reader

    spec = reader.load(paths)
    arch, wl, mp = convert.to_specs(spec, name)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    src = "imported from Timeloop: " + ", ".join(spec.sources)
    files = [out / "arch.yaml", out / "workload.yaml", out / "mapping.yaml"]
    for f, data in zip(files, (arch, wl, mp), strict=True):
        _dump(f, data, src if f.name != "mapping.yaml" or not spec.notes else
              src + "".join(f"\n# note: {n}" for n in spec.notes))
    if notes is not None:
        notes.extend(spec.notes)
    d = load_design(*files)  # validated: schemas, cross-file checks and the tiling's own (tiles that fit)
    from llmulator_plugins.analytical import tiling
    tiling.estimate(d)
    return files


def run_import(args) -> int:
    import sys

    notes: list[str] = []
    files = import_timeloop(args.paths, args.out, args.name, notes)
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    for f in files:
        print(f)
    return 0


def export_timeloop(arch: str, workload: str, mapping: str, out: str | Path) -> list[Path]:
    from llmulator.design import load_design
    from llmulator.library import resolve

    from . import convert

    d = load_design(resolve("architecture", arch), resolve("workload", workload), resolve("mapping", mapping))
    a, p, m, ert = convert.from_design(d)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "arch.yaml", out / "prob.yaml", out / "map.yaml", out / "ERT.yaml"]
    head = f"# exported by llmulator from {d.name}\n"
    files[0].write_text(head + convert.dump_tagged(a))
    for f, data in zip(files[1:], (p, m, ert), strict=True):
        f.write_text(head + yaml.safe_dump(data, sort_keys=False, width=100))
    return files


def run_export(args) -> int:
    for f in export_timeloop(args.arch, args.workload, args.mapping, args.out):
        print(f)
    return 0
