"""The plugin contract: the whole of it, in one file.

A plugin is a module (or object) with one or more of the hook implementations
below, registered through the entry-point group ``llmulator`` in its
``pyproject.toml``::

    [project.entry-points.llmulator]
    my_estimator = "my_package.my_module"

The built-in plugins (``llmulator_plugins.*``) are registered the same way and
use exactly this contract: nothing in llmulator recognises a plugin by its
name. A worked third-party example is ``docs/examples/my_estimator.py``
(docs/plugins.md); the records components receive and return are listed field
by field in docs/api.md; ``tests/test_contract.py`` checks every built-in
component against the protocols below.

Hooks
-----
Each ``register_*`` hook receives a ``register`` callable and calls it once per
component it provides, with a *factory*: a class, or a zero-argument callable
with a string attribute ``name``, that builds the component on first use.
Factories keep start-up fast: nothing heavy (torch) is imported until a
component is used. Six kinds of component, one hook each:

==========================  ==================  =====================================
hook                        component protocol  used by
==========================  ==================  =====================================
``register_estimators``     :class:`Estimator`  ``estimate``, ``bench``, ``dse``, ...
``register_profilers``      :class:`Profiler`   ``profile``, ``synth``, ``dse --verify``
``register_calibrators``    :class:`Calibrator` ``calibrate``, ``estimate --context``
``register_generators``     :class:`Generator`  ``synth``
``register_trainers``       :class:`Trainer`    ``train NAME``
``register_commands``       (argparse verbs)    any other verb
==========================  ==================  =====================================

Capabilities
------------
Some members are optional. Each optional group is a protocol of its own, holding
only those members (:class:`BatchEstimator`, :class:`PromptReader`,
:class:`LanguageModelEstimator`, :class:`ContextCalibrator`), and callers test for
it with ``isinstance`` (the protocols are ``runtime_checkable``), never by a
component's name. Two
leniencies keep older components working: a component without ``available()``
counts as available (:func:`why_unavailable`), and a profiler without the limit
attributes is run with its own (:func:`set_limits`).

Errors
------
Raise ``llmulator.errors.SpecError`` (with ``Diagnostic``\\ s) for a problem in
the user's specs (an estimator that cannot price a design "refuses" it) and
``llmulator.errors.UserError`` for bad usage; anything else is reported as a
bug in your plugin, named with its package (docs/plugins.md).

Importing this module is cheap (pluggy and typing only): the CLI imports it
before every verb.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pluggy

if TYPE_CHECKING:  # annotations only: importing the records here would slow every CLI start
    import argparse

    import numpy as np

    from .design import Design
    from .inputs import Inputs
    from .results import Estimate, Profile

PROJECT = "llmulator"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# ----------------------------------------------------------------------------------------------
# component protocols


@runtime_checkable
class Estimator(Protocol):
    """Predicts metrics of designs without running them (``llmulator estimate``).

    ``name`` is its column in ``estimate`` and the value of ``--estimator NAME``; ``version``
    changes when its predictions do (it is recorded with every estimate). An estimator that reads a
    checkpoint takes an optional ``path`` in its constructor and reads ``LLMULATOR_<NAME>_MODEL``
    otherwise (what ``bench --model NAME=PATH`` sets).
    """

    name: str
    version: str

    def available(self) -> str | None:
        """None when usable, else a one-line reason (``"no model at ..."``): ``estimate`` then skips it
        and ``llmulator plugins`` shows the reason. Must be cheap: it runs before every estimate (look a
        package up with ``importlib.util.find_spec``; do not import torch here)."""
        ...

    def estimate(self, designs: Sequence[Design]) -> list[Estimate]:
        """One :class:`~llmulator.results.Estimate` per design, in order (batched: one call, many
        designs). Metrics are named from the shared vocabulary (``cycles``, ``energy_pj``, ``power_mw``,
        ``area_um2``; any subset). Raise ``SpecError`` for a design it cannot price."""
        ...


@runtime_checkable
class BatchEstimator(Protocol):
    """Capability of an :class:`Estimator`: prices many mappings of one single-nest design at once, as
    NumPy arrays.

    ``llmulator dse`` takes its vectorised path with an estimator that has it (the built-in
    ``analytical`` estimator does) and materialises one Design per point otherwise; results must
    equal ``estimate`` on the materialised designs, except on rows the batch marks not ``exact``:
    there its cycles and energy must be lower bounds of ``estimate``'s, and ``dse`` re-prices with
    ``estimate`` the rows it ranks first (best-first, until every point it reports is exact).
    """

    def nest_labels(self, design: Design) -> list[str]:
        """The loop labels of the design's single top-level nest, outermost first: the columns of
        ``evaluate_batch``'s arrays. Raise ``ValueError`` for a design with several nests."""
        ...

    def evaluate_batch(self, design: Design, tiles: np.ndarray, spatial: np.ndarray | None = None,
                       order: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Metrics of B mappings at once. ``tiles`` (B, L) over ``nest_labels(design)``; ``spatial``
        (B, L): 0 temporal, 1 PE rows, 2 PE columns; ``order`` (B, L): each loop's position in the
        mapping sequence (0 outermost). Returns arrays of shape (B,): ``cycles``, ``energy_pj``,
        ``power_mw``, ``area_um2`` and ``valid`` (booleans: the tiles fit every memory level);
        optionally ``exact`` (booleans; absent means all True): False where the row's cycles and
        energy are only lower bounds of what ``estimate`` says for that mapping (the analytical
        estimator leaves the PE array's waits for banked buffers to ``estimate``)."""
        ...


@runtime_checkable
class PromptReader(Protocol):
    """Capability of an :class:`Estimator` whose model reads a text prompt.

    ``llmulator render --prompt`` prints, for a design, exactly the text such an estimator's model
    reads (``prompts``); ``--model PATH`` sets ``path`` on a fresh instance to show another
    checkpoint's. ``prompts`` must not load the model (rendering a prompt needs no torch).
    """

    path: Path | None  # the checkpoint folder the model is read from (None: none shipped)

    def prompts(self, designs: Sequence[Design]) -> list[str]:
        """The prompt of each design, byte for byte what the model at ``path`` reads. Raise
        ``UserError`` when the checkpoint cannot say (none there, or a prompt format this version
        does not write)."""
        ...


@runtime_checkable
class LanguageModelEstimator(PromptReader, Protocol):
    """Capability of an :class:`Estimator` that is a digit-writing causal language model the LoRA
    calibrators (``dpo``, ``sft``) can adapt: its checkpoint and prompts (:class:`PromptReader`), its
    output head and a way to load it."""

    head: str  # its output head: "digits" (the method) or an ablation head

    def load(self) -> tuple[Any, Any]:
        """(model, tokenizer), loaded on first call."""
        ...


@runtime_checkable
class Profiler(Protocol):
    """Measures a design by running it on concrete inputs (``llmulator profile``): the ground truth.

    Its limits are declared attributes, read on every run; ``profile --time-limit/--mem-limit``,
    ``synth`` and ``dse --verify`` set them through :func:`set_limits`.
    """

    name: str
    version: str
    time_limit_s: float  # wall-time limit of one run, seconds
    mem_limit_mb: int | None  # memory limit of one run, MiB (None: none; a profiler that cannot enforce one says so)

    def available(self) -> str | None:
        """None when usable, else a one-line reason (``"SCALE-Sim is not installed: ..."``)."""
        ...

    def profile(self, design: Design, inputs: Inputs | None = None) -> Profile:
        """Run the design once on ``inputs`` (None: generated from the workload's description and
        seed, ``llmulator.inputs.inputs_for(design)``) and return a :class:`~llmulator.results.Profile`:
        metrics in the shared vocabulary, counters (``trips.L``, ``iterations.L``, ...) and
        ``functional_check`` ("pass", "fail: ...", "not-run")."""
        ...


@runtime_checkable
class CalibrationReport(Protocol):
    """What a calibrator's ``calibrate`` returns: what ``llmulator calibrate`` prints."""

    context: str  # the saved context's name (``estimate --context NAME``)
    #: one per iteration, each with ``iteration``, ``ape`` ({metric: %}), ``profiler_runs``, ``seconds``, ``update``
    iterations: list[Any]
    stopped: str  # "converged" | "max-iters" | "budget"
    static_ape: float  # the chosen metric's error before calibration, %
    final_ape: float  # and after, %
    profiler_runs: int
    rollbacks: int  # updates undone because they made the check worse
    buffer_entries: int  # feedback entries kept in the replay buffer
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``calibrate --json``)."""
        ...


@runtime_checkable
class Calibrator(Protocol):
    """Adapts an estimator to a design's actual inputs from profiler feedback (``llmulator calibrate``)."""

    name: str
    version: str

    def available(self) -> str | None:
        """None when usable, else a one-line reason (``"needs the ml extra"``)."""
        ...

    def calibrate(self, design: Design, inputs: Any, estimator: Estimator, profiler: Profiler,
                  **options: Any) -> CalibrationReport:
        """Estimate, profile, learn, repeat until the estimate is within ``tol`` % or the budget of
        profiler runs is spent. ``inputs``: one :class:`~llmulator.inputs.Inputs`, a list of them, or
        None (the workload's own). Options the verb passes: ``context``, ``seed``, ``on_iteration``
        (called with each iteration), ``max_iters``, ``budget``, ``tol``, ``metric``, ``steps``, ``lr``,
        ``threads``; accept ``**options`` for the rest."""
        ...


@runtime_checkable
class ContextCalibrator(Protocol):
    """Capability of a :class:`Calibrator` whose results are saved as named contexts, usable later
    with ``llmulator estimate --context NAME`` (all the built-in calibrators)."""

    def contexts(self) -> dict[str, dict[str, Any]]:
        """The saved contexts this calibrator made: name -> metadata with at least ``estimator`` (the
        name of the estimator it calibrates)."""
        ...

    def apply(self, estimator: Estimator, context: str) -> Estimator:
        """``estimator`` corrected by the saved ``context``: an Estimator whose ``name`` is
        ``"<estimator>@<context>"``."""
        ...


@runtime_checkable
class Sample(Protocol):
    """One generated design, as a Generator returns it: three spec documents as plain dicts (the
    YAML files' contents under their top-level key) and the keys the dataset splits by. The
    dataset module's record ``llmulator.dataset.SampleSpec`` has exactly these fields; a generator
    may return one of those or any object that has them."""

    stage: int  # the generator's stage
    generator: str  # the generator's name
    arch: dict[str, Any]  # the body of an ``architecture:`` file
    workload: dict[str, Any]  # the body of a ``workload:`` file
    mapping: dict[str, Any]  # the body of a ``mapping:`` file
    preset: str | None  # size preset (None: the parameters' defaults)
    variant: str | None  # input variant (None: the workload's own inputs)
    input_seed: int  # seed of the concrete inputs the profiler labels it with
    app: str  # application (held-out-application split)
    hw: str  # hardware configuration id (held-out-hardware split)
    input_dist: str  # input distribution id (held-out-input split)
    family: str  # application family (leave-one-family-out)
    mutations: list[str]  # what a mutating generator changed ([] for none)


@runtime_checkable
class Generator(Protocol):
    """Draws synthetic designs for ``llmulator synth`` (docs/synthesizer.md)."""

    name: str
    stage: int  # 1, 2 or 3: ``synth --stages`` picks generators by stage

    def sample(self, group_rng: np.random.Generator, rng: np.random.Generator) -> Sample:
        """One design as a :class:`Sample`. ``group_rng`` is shared by the consecutive samples of a
        group (program, sizes, mapping structure), ``rng`` is this sample's own (hardware variant,
        inputs). A draw that cannot make a valid design raises ``llmulator.dataset.Rejected`` (with
        the reason) or ``SpecError``, and ``synth`` draws another."""
        ...


@runtime_checkable
class Trainer(Protocol):
    """A target of the shared ``llmulator train`` verb: ``llmulator train NAME --data ... --out ...``.

    ``llmulator train --help`` lists every registered trainer with its ``help``; ``train NAME --help``
    shows ``description``, the options ``add_arguments`` adds and ``epilog`` (kept as written).
    """

    name: str  # the target: ``llmulator train NAME``
    help: str  # one line for ``llmulator train --help``
    description: str  # the first paragraph of ``train NAME --help`` ("" for none)
    epilog: str  # text under the options of ``train NAME --help``, e.g. examples ("" for none)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add this target's options to its sub-parser (import nothing heavy here: it runs on every
        CLI start)."""
        ...

    def train(self, args: argparse.Namespace) -> int:
        """Run the training the parsed ``args`` ask for; the exit status (0: success)."""
        ...


# ----------------------------------------------------------------------------------------------
# the two leniencies, in one place


def why_unavailable(component: Any) -> str | None:
    """The component's ``available()``: None when usable, else the reason. A component that does not
    define ``available`` counts as available (the contract's one optional method)."""
    check = getattr(component, "available", None)
    return check() if check is not None else None


def set_limits(profiler: Any, time_limit_s: float | None = None, mem_limit_mb: int | None = None) -> None:
    """Set a profiler's declared limits (:class:`Profiler`); None leaves one as it is. A profiler that
    does not declare a limit keeps its own behaviour: nothing is added to it."""
    for attr, value in (("time_limit_s", time_limit_s), ("mem_limit_mb", mem_limit_mb)):
        if value is not None and hasattr(profiler, attr):
            setattr(profiler, attr, value)


# ----------------------------------------------------------------------------------------------
# hooks


@hookspec
def register_estimators(register):
    """Register this plugin's estimators (:class:`Estimator`).

    :param register: call ``register(factory)`` once per estimator; ``factory`` is a class (or a
        zero-argument callable with a ``name`` attribute) built the first time the estimator is used.
    :return: nothing (the return value is ignored).

    Two plugins that register the same name are an error naming both. Example::

        @hookimpl
        def register_estimators(register):
            from .estimator import MyEstimator  # imported when the hook runs, not at plugin import

            register(MyEstimator)
    """


@hookspec
def register_profilers(register):
    """Register this plugin's profilers (:class:`Profiler`).

    :param register: call ``register(factory)`` once per profiler, as for estimators.
    :return: nothing.

    Example::

        @hookimpl
        def register_profilers(register):
            from .profiler import MyProfiler

            register(MyProfiler)  # class MyProfiler: name, version, time_limit_s, mem_limit_mb, ...
    """


@hookspec
def register_calibrators(register):
    """Register this plugin's calibrators (:class:`Calibrator`; with ``contexts``/``apply`` a
    :class:`ContextCalibrator`).

    :param register: call ``register(factory)`` once per calibrator.
    :return: nothing.

    Example::

        @hookimpl
        def register_calibrators(register):
            from .calibrators import MyCalibrator

            register(MyCalibrator)
    """


@hookspec
def register_generators(register):
    """Register this plugin's data generators (:class:`Generator`) for ``llmulator synth``.

    :param register: call ``register(factory)`` once per generator; ``synth`` uses the first
        generator registered for each stage it is asked for.
    :return: nothing.

    Example::

        @hookimpl
        def register_generators(register):
            from .generators import MyGenerator  # name = "mine", stage = 2

            register(MyGenerator)
    """


@hookspec
def register_trainers(register):
    """Register this plugin's training targets (:class:`Trainer`) under the shared ``train`` verb.

    :param register: call ``register(factory)`` once per target. Trainers are built when the CLI's
        parser is (every start), so their factories and ``add_arguments`` must be cheap; import
        torch inside ``train``.
    :return: nothing.

    The ``train`` verb exists when at least one trainer is registered; two plugins registering the
    same target name are an error naming both. Example::

        class MyTrainer:
            name = "mymodel"
            help = "my learned estimator"
            description = ""
            epilog = "example:\\n  llmulator train mymodel --data data/demo --out models/mine"

            def add_arguments(self, parser):
                parser.add_argument("--data", required=True, help="dataset folder made by `llmulator synth`")
                parser.add_argument("--out", required=True, help="checkpoint folder")

            def train(self, args):
                from pathlib import Path  # import the heavy part (torch) here, when it runs

                Path(args.out).mkdir(parents=True, exist_ok=True)
                (Path(args.out) / "model.txt").write_text(f"trained on {args.data}\\n")
                return 0


        @hookimpl
        def register_trainers(register):
            register(MyTrainer)
    """


@hookspec
def register_commands(subparsers):
    """Add CLI verbs (anything that is not a component of the kinds above).

    :param subparsers: the CLI's argparse sub-parsers object (``argparse._SubParsersAction``).
    :return: nothing.

    A verb's handler receives the parsed arguments and returns the exit status; raise ``UserError``
    for bad usage. Import heavy modules inside the handler: the CLI calls this hook on every start.
    Example::

        @hookimpl
        def register_commands(subparsers):
            p = subparsers.add_parser("hello", help="say hello")
            p.add_argument("--name", default="world", help="whom to greet (default: world)")
            p.set_defaults(func=lambda args: print(f"hello {args.name}") or 0)
    """
