"""The characterize plugin: measure a technology table with open-source EDA tools.

``llmulator characterize`` synthesises each integer operator class at each width with Yosys
against the OSU 0.18 um liberty, times it with OpenSTA, estimates its energy per operation from a
gate-level Icarus simulation annotated into OpenSTA's power report, and writes a technology table
(``core/tech/osu018.yaml`` by default) that architectures use with ``technology: osu018``.
The tools come from ``scripts/install_eda.sh``. The run lives in ``flow.py``, its pieces in one
module per job (``opverilog``, ``scripts``, ``vcd``, ``liberty``, ``sta``, ``tools``, ``measure``,
``table``); see docs/technology.md.
"""

from __future__ import annotations

from llmulator.hookspecs import hookimpl

EPILOG = """examples:
  llmulator characterize                                   # every class at 8, 16, 32 bits -> core/tech/osu018.yaml
  llmulator characterize --classes add,mul --bits 8 --out /tmp/t.yaml --vectors 200
needs yosys, iverilog and OpenSTA and the OSU018 liberty: bash scripts/install_eda.sh
results are cached per design in the work folder: an interrupted run continues where it stopped"""


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


@hookimpl
def register_commands(subparsers):
    import argparse

    from .settings import CLASSES  # constants only: every command's parser runs this hook (start-up time)

    p = subparsers.add_parser(
        "characterize", help="measure operator energy, area and latency with Yosys/OpenSTA/Icarus (OSU018)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--classes", default=",".join(CLASSES),
                   help="operator classes, comma-separated (default: %(default)s)")
    p.add_argument("--bits", default="8,16,32", help="operand widths, comma-separated (default: %(default)s)")
    p.add_argument("--clock-mhz", type=float, default=100.0, help="clock for energy and latency (default: 100)")
    p.add_argument("--out", help="table to write (default: llmulator/tech/osu018.yaml, i.e. core/tech/osu018.yaml)")
    p.add_argument("--vectors", type=int, default=1000, help="random input vectors per design (default: 1000)")
    p.add_argument("--seed", type=int, default=1, help="seed of the random vectors (default: 1)")
    p.add_argument("--work", help="work folder with the per-design cache (default: .eda/work/characterize)")
    p.add_argument("--logic-only", action="store_true",
                   help="tabulate the operator logic alone (leave out the input/output registers' energy and area)")
    p.add_argument("--time-limit", "--timeout", dest="timeout", type=float, default=900.0, metavar="S",
                   help="wall-time limit of one tool run in seconds (default: 900; --timeout is the old name)")
    p.add_argument("--structures", default="pe_psum,pe_os,skew_reg,queue_bit,xbar_in,xbar_out",
                   help="PE-array structures to measure too (the rtl profiler's PE per shape at the --bits widths "
                        "and each --acc-bits accumulator at least as wide, the skew-register bit, the vector-queue "
                        "bit of the buffer periphery, a crosspoint "
                        "of the buffer's crossbar on either side), comma-separated; '' for none "
                        "(default: %(default)s)")
    p.add_argument("--acc-bits", default="16,32,64",
                   help="accumulator (output) widths of the measured PEs, comma-separated (default: %(default)s)")
    p.add_argument("--keep-vcd", action="store_true",
                   help="keep each design's VCD and compiled simulation in the work folder")
    p.set_defaults(func=cmd_characterize)


def cmd_characterize(args) -> int:
    import shlex
    import sys
    from pathlib import Path

    from llmulator.errors import UserError

    from . import flow
    classes = _csv(args.classes)
    try:
        bits = [int(b) for b in _csv(args.bits)]
    except ValueError:
        raise UserError(f"--bits: expected comma-separated integers, got '{args.bits}'") from None
    if not classes or not bits:
        raise UserError("--classes and --bits must name at least one class and one width")
    try:
        acc_bits = [int(b) for b in _csv(args.acc_bits)]
    except ValueError:
        raise UserError(f"--acc-bits: expected comma-separated integers, got '{args.acc_bits}'") from None
    if any(b not in (8, 16, 32, 64) for b in acc_bits):
        raise UserError(f"--acc-bits: each width must be one of 8, 16, 32, 64, got '{args.acc_bits}'")
    out = Path(args.out) if args.out else flow.default_out()
    work = Path(args.work) if args.work else flow.default_work()
    command = "llmulator " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["characterize"] \
        else "llmulator characterize " + " ".join(
            f"--{k.replace('_', '-')} {shlex.quote(str(v))}" for k, v in
            (("classes", args.classes), ("bits", args.bits), ("clock_mhz", f"{args.clock_mhz:g}"),
             ("vectors", args.vectors)))
    summary = flow.run(classes, bits, args.clock_mhz, out, args.vectors, work, seed=args.seed, command=command,
                       logic_only=args.logic_only, timeout=args.timeout, keep_vcd=args.keep_vcd,
                       structures=_csv(args.structures), acc_bits=acc_bits)
    print(f"wrote {summary['out']}: {summary['designs']} designs ({summary['cached']} from the cache in {work}), "
          f"{summary['tool_seconds']:.0f} s of tool time")
    return 0
