"""The plugin contract (llmulator.hookspecs) holds for every built-in component, and is enough on its own.

* Every component a built-in plugin registers is an instance of its kind's protocol, and its methods
  accept the arguments the protocol passes (by position, as the callers pass them).
* The optional members are capabilities (protocols of their own), found without naming any plugin:
  dse's vectorised path follows ``BatchEstimator``, ``render --prompt`` follows ``PromptReader``.
* A third-party plugin written only from the contract's documentation (the examples in the hooks'
  docstrings, and a profiler, an estimator and a prompt reader written from the protocols) registers and
  works: its trainer under ``llmulator train``, its verb, its profiler with the limits of
  ``profile --time-limit/--mem-limit``, its estimator in ``estimate``, its prompt in ``render --prompt``.
"""

from __future__ import annotations

import inspect
import json
import re
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
from llmulator import hookspecs, plugins
from llmulator.cli import main

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ["systolic-16x16", "gemm", "gemm-ws-16x16"]

PROTOCOL = {"estimators": hookspecs.Estimator, "profilers": hookspecs.Profiler,
            "calibrators": hookspecs.Calibrator, "generators": hookspecs.Generator,
            "trainers": hookspecs.Trainer}


def _members(proto: type) -> tuple[set[str], dict[str, inspect.Signature]]:
    """(attribute names, method name -> signature) a protocol declares, its bases' included."""
    attrs, methods = set(), {}
    for cls in reversed(proto.__mro__):
        if cls is object or cls.__module__ == "typing" or not getattr(cls, "_is_protocol", False):
            continue
        attrs |= set(getattr(cls, "__annotations__", {}))
        for name, fn in vars(cls).items():
            if inspect.isfunction(fn) and not name.startswith("_"):
                methods[name] = inspect.signature(fn)
    return attrs, methods


def _accepts(impl, proto_sig: inspect.Signature) -> str | None:
    """None if the bound method ``impl`` accepts every call the protocol's signature allows, else why not."""
    sig = inspect.signature(impl)
    params = [p for p in proto_sig.parameters.values() if p.name != "self"]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    try:
        sig.bind(*[object()] * len(positional))
    except TypeError as e:
        return f"does not take the protocol's {len(positional)} positional arguments: {e}"
    if any(p.kind is p.VAR_KEYWORD for p in params) and \
            not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return "does not take **options"
    return None


def _check(obj, proto: type) -> list[str]:
    problems = []
    if not isinstance(obj, proto):
        attrs, methods = _members(proto)
        missing = sorted(m for m in attrs | set(methods) if not hasattr(obj, m))
        problems.append(f"is not a {proto.__name__} (missing: {', '.join(missing)})")
    _, methods = _members(proto)
    for name, proto_sig in methods.items():
        why = _accepts(getattr(obj, name), proto_sig) if hasattr(obj, name) else None
        if why:
            problems.append(f"{name}() {why}")
    return problems


def _builtin(kind: str) -> list[plugins.Registered]:
    return [r for r in plugins.components(kind).values()
            if r.distribution and r.distribution.split()[0] == plugins.BUILTIN_DIST]


@pytest.fixture(autouse=True)
def fresh_plugins():
    plugins.reset()
    yield
    plugins.reset()


@pytest.mark.parametrize("kind", list(PROTOCOL))
def test_every_built_in_component_follows_its_protocol(kind):
    regs = _builtin(kind)
    assert regs, f"no built-in {kind}"
    for r in regs:
        obj = r.factory()  # a fresh instance, as `--model PATH` and the LoRA calibrators make
        assert isinstance(r.name, str) and obj.name == r.name
        assert not _check(obj, PROTOCOL[kind]), f"{kind[:-1]} '{r.name}' ({r.origin}): {_check(obj, PROTOCOL[kind])}"


def test_the_built_in_capabilities_are_declared_not_guessed():
    est = {r.name: r.factory() for r in _builtin("estimators")}
    assert not _check(est["analytical"], hookspecs.BatchEstimator)
    assert not _check(est["llm"], hookspecs.LanguageModelEstimator)
    assert {n for n, e in est.items() if isinstance(e, hookspecs.BatchEstimator)} == {"analytical"}
    assert {n for n, e in est.items() if isinstance(e, hookspecs.PromptReader)} == {
        "llm", "llm-mse", "llm-logmse", "llm-binned"}
    for r in _builtin("calibrators"):
        assert not _check(r.factory(), hookspecs.ContextCalibrator), r.name
    for r in _builtin("profilers"):
        prof = r.factory()
        assert isinstance(prof.time_limit_s, float) and hasattr(prof, "mem_limit_mb")
    from llmulator_plugins.calibrate.loop import CalibrationReport
    attrs, methods = _members(hookspecs.CalibrationReport)
    assert attrs | set(methods) <= set(dir(CalibrationReport)) | {a.name for a in CalibrationReport.__attrs_attrs__}


def test_every_built_in_generator_returns_a_sample():
    from llmulator.errors import SpecError
    for r in _builtin("generators"):
        gen = r.factory()
        for attempt in range(20):
            try:
                s = gen.sample(np.random.default_rng([7, attempt]), np.random.default_rng([8, attempt]))
                break
            except Exception as e:  # noqa: BLE001 - what synth's driver counts as a rejected draw
                if not isinstance(e, (SpecError, KeyError, ValueError)) and type(e).__name__ != "Rejected":
                    raise
        else:
            pytest.fail(f"generator '{r.name}' made no sample in 20 draws")
        assert isinstance(s, hookspecs.Sample) and s.stage == gen.stage and s.generator == gen.name


def test_the_hookspec_names_no_plugin_type():
    src = Path(hookspecs.__file__).read_text()
    assert not re.search(r"llmulator_plugins\.\w+\.\w+", src), "the contract must not name a plugin's type"
    assert "import llmulator_plugins" not in src and "from llmulator_plugins" not in src


def test_the_train_verb_is_made_of_registered_trainers_only(capsys):
    from llmulator.cli import build_parser
    p = build_parser()
    verbs = next(a for a in p._actions if a.dest == "verb").choices
    targets = next(a for a in verbs["train"]._actions if a.dest == "model").choices
    assert list(targets) == ["llm", "gnn", "tlp", "tensetmlp"]
    assert not any("_llmulator" in k for k in vars(verbs["train"]))  # no private attribute on argparse
    assert main(["plugins", "--json", "--no-check"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows if r["kind"] == "trainer"} == {"llm", "gnn", "tlp", "tensetmlp"}


# -- a third-party plugin written from the documentation --------------------------------------------


def _doc_example(hook) -> str:
    """The code block after ``Example::`` in a hook's docstring."""
    doc = inspect.getdoc(hook)
    return textwrap.dedent(doc.split("Example::", 1)[1]).strip("\n") + "\n"


THIRD_PARTY = '''
from pathlib import Path

from llmulator.hookspecs import hookimpl
from llmulator.results import Estimate, Profile

SEEN = {}


class ToyProfiler:
    name = "toy-prof"
    version = "0.1"
    time_limit_s = 60.0
    mem_limit_mb = 2048

    def available(self):
        return None

    def profile(self, design, inputs=None):
        SEEN["limits"] = (self.time_limit_s, self.mem_limit_mb)
        return Profile(self.name, self.version, {"cycles": 1.0}, functional_check="not-run", design=design.name)


class ToyEstimator:
    name = "toy-est"
    version = "0.1"

    def available(self):
        return None

    def estimate(self, designs):
        return [Estimate(self.name, self.version, {"cycles": 42.0}, design=d.name) for d in designs]


class ToyReader(ToyEstimator):
    name = "toy-reader"
    path = None

    def prompts(self, designs):
        return [f"{d.name} read from {self.path}\\n" for d in designs]


class NotAnalytical:
    """A batch estimator under another name: dse's vectorised path must take it."""
    name = "not-analytical"
    version = "0.1"

    def __init__(self):
        from llmulator_plugins.analytical.estimator import AnalyticalEstimator
        self.inner = AnalyticalEstimator()

    def available(self):
        return None

    def estimate(self, designs):
        return self.inner.estimate(designs)

    def nest_labels(self, design):
        return self.inner.nest_labels(design)

    def evaluate_batch(self, design, tiles, spatial=None, order=None):
        return self.inner.evaluate_batch(design, tiles, spatial, order)


@hookimpl
def register_profilers(register):
    register(ToyProfiler)


@hookimpl
def register_estimators(register):
    register(ToyEstimator)
    register(ToyReader)
    register(NotAnalytical)
'''


@pytest.fixture
def third_party(tmp_path):
    code = THIRD_PARTY + "\n\n" + _doc_example(hookspecs.register_trainers) + "\n\n" + \
        _doc_example(hookspecs.register_commands)
    mod = types.ModuleType("toy_third_party")
    exec(compile(code, "toy_third_party.py", "exec"), mod.__dict__)  # noqa: S102 - the docs' own example
    plugins.register_plugin(mod, name="toy", distribution="toy-plugin 0.1")
    return mod


def test_a_plugin_written_from_the_docs_trains_adds_a_verb_and_is_listed(third_party, tmp_path, capsys):
    out = tmp_path / "mine"
    assert main(["train", "mymodel", "--data", "data/demo", "--out", str(out)]) == 0
    assert (out / "model.txt").read_text() == "trained on data/demo\n"
    assert main(["hello", "--name", "plugin"]) == 0
    assert capsys.readouterr().out == "hello plugin\n"
    assert main(["plugins", "--json"]) == 0
    rows = {(r["kind"], r["name"]): r for r in json.loads(capsys.readouterr().out)}
    assert rows["trainer", "mymodel"]["package"] == "toy-plugin 0.1"
    assert rows["profiler", "toy-prof"]["available"] is True


def test_profile_sets_the_declared_limits(third_party, capsys):
    assert main(["profile", *DESIGN, "--profiler", "toy-prof", "--time-limit", "5", "--mem-limit", "100",
                 "--json"]) == 0
    assert third_party.SEEN["limits"] == (5.0, 100)


def test_estimate_and_render_prompt_use_only_the_protocols(third_party, tmp_path, capsys):
    assert main(["estimate", *DESIGN, "--estimator", "toy-est", "--json"]) == 0
    (e,) = json.loads(capsys.readouterr().out)["estimates"]
    assert e["metrics"] == {"cycles": 42.0}
    assert main(["render", *DESIGN, "--prompt", "--estimator", "toy-reader"]) == 0
    assert capsys.readouterr().out == "gemm/gemm-ws-16x16/systolic-16x16 read from None\n"
    assert main(["render", *DESIGN, "--prompt", "--estimator", "toy-reader", "--model", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"gemm/gemm-ws-16x16/systolic-16x16 read from {tmp_path}\n"
    assert plugins.get("estimators", "toy-reader").path is None  # --model made an instance of its own
    assert main(["render", *DESIGN, "--prompt", "--estimator", "toy-est"]) == 2
    assert "has no model that reads a prompt" in capsys.readouterr().err


def test_dse_takes_its_fast_path_by_capability_not_by_name(third_party):
    from llmulator_plugins.dse.evaluate import Evaluator
    from llmulator_plugins.dse.space import load_space

    space = load_space(ROOT / "spaces" / "gemm-small-systolic.yaml", ROOT / "arch_specs" / "systolic-16x16.yaml",
                       ROOT / "workloads" / "gemm.yaml")
    batch = Evaluator(space, plugins.get("estimators", "not-analytical"))
    assert batch.fast
    pts = np.arange(min(space.size, 40))
    a = batch.evaluate(pts)
    b = Evaluator(space, plugins.get("estimators", "analytical")).evaluate(pts)
    assert np.array_equal(a["valid"], b["valid"]) and np.allclose(a["cycles"], b["cycles"], equal_nan=True)

    class Named:  # the built-in's name, without the capability: priced design by design
        name = "analytical"
        version = "x"

        def available(self):
            return None

        def estimate(self, designs):
            return plugins.get("estimators", "analytical").estimate(designs)

    assert not Evaluator(space, Named()).fast


# -- the house: docs/architecture.md's map of rooms matches the code --------------------------------


def _core_imports() -> dict[str, set[str]]:
    """Each module of core/ -> the llmulator / llmulator_plugins modules it imports, function-level imports
    included and ``if TYPE_CHECKING:`` blocks left out."""
    import ast
    out = {}
    for f in sorted((ROOT / "core").glob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
                node.body = []
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:  # from . import x / from .x import y
                    mods = [node.module] if node.module else [a.name for a in node.names]
                    found |= {f"llmulator.{m.split('.')[0]}" for m in mods}
                elif node.module and node.module.split(".")[0] in ("llmulator", "llmulator_plugins"):
                    found.add(node.module if node.module != "llmulator" else "llmulator")
                    if node.module == "llmulator":
                        found |= {f"llmulator.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] in ("llmulator", "llmulator_plugins")}
        out[f.stem] = found
    return out


def _layers() -> dict[str, int]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Rooms of `core/`", 1)[1].split("\nRoom by room", 1)[0]
    layer = {}
    for row in section.splitlines():
        m = re.match(r"\| (\d+) [^|]*\| ([^|]*) \|", row)
        if m:
            for name in re.findall(r"`(\w+)`", m.group(2)):
                assert name not in layer, f"docs/architecture.md puts `{name}` in two layers"
                layer[name] = int(m.group(1))
    return layer


def test_every_core_room_is_on_the_map_and_imports_only_its_layer_or_above():
    layer = _layers()
    imports = _core_imports()
    missing = sorted(m for m in imports if m != "__init__" and m not in layer)
    assert not missing, f"core modules missing from the layer table of docs/architecture.md: {missing}"
    for mod, found in imports.items():
        assert not any(t.startswith("llmulator_plugins") for t in found), f"core/{mod}.py imports a plugin"
        if mod == "__init__":
            continue
        for t in found:
            dep = t.split(".")[1] if "." in t else None
            if dep in layer and dep != mod:
                assert layer[dep] <= layer[mod], (f"core/{mod}.py (layer {layer[mod]}) imports {dep} (layer "
                                                  f"{layer[dep]}): move one, and say so in docs/architecture.md")


def test_every_plugin_is_on_the_map():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split("## Rooms of `plugins/`", 1)[1]
    named = set(re.findall(r"^\| `(\w+)` \|", text, flags=re.M))
    present = {p.name for p in (ROOT / "plugins").iterdir() if (p / "__init__.py").is_file()}
    assert present <= named, f"plugins missing from docs/architecture.md: {sorted(present - named)}"
