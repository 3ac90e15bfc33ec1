"""The plugin manager: loads every plugin from the ``llmulator`` entry-point group.

Built-in plugins (package ``llmulator_plugins``) are registered through the
same entry points as third-party ones, so they use exactly the public
contract (``llmulator.hookspecs``). Components are registered as factories and
built lazily; each kind's ``register_*`` hooks run the first time a component of
that kind is asked for (building the CLI's parser runs only ``register_trainers``
and ``register_commands``).

Isolation: a plugin module that fails to import, or whose ``register_*`` hook
raises, is recorded in :func:`broken` (``llmulator plugins`` lists it) and its
components are missing; the other plugins still load. Two plugins that
register a component of the same kind under the same name are an error that
names both (:class:`~llmulator.errors.UserError`), never a silent override.
Each component remembers the plugin and the distribution (the installed
package, read as ``importlib.metadata`` reads it: ``llmulator.entrypoints``) it
came from, so that a component that raises is blamed on that plugin
(:func:`blame`), not on llmulator.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import attrs
import pluggy

from . import hookspecs
from .errors import UserError

KINDS = ("estimators", "profilers", "calibrators", "generators", "trainers")  # one register_<kind> hook each
BUILTIN_DIST = "llmulator"  # the distribution of the built-in plugins (llmulator_plugins.*)


@attrs.define
class Registered:
    kind: str
    name: str
    factory: Callable[[], Any]
    plugin: str
    distribution: str | None = None  # "name version" of the installed package; None when registered directly
    instance: Any = None

    def get(self) -> Any:
        if self.instance is None:
            self.instance = self.factory()
        return self.instance

    @property
    def origin(self) -> str:
        return origin(self.plugin, self.distribution)


_PM: pluggy.PluginManager | None = None
_REG: dict[str, dict[str, Registered]] = {}  # kind -> name -> component, each kind collected on first use
_DIST: dict[str, str] = {}  # plugin name -> "distribution version"
_BROKEN: dict[tuple[str, str], str] = {}  # (plugin name, stage) -> what went wrong, naming its package


def origin(plugin: str, distribution: str | None) -> str:
    """``plugin 'toy' (package toy-llmulator-plugin 0.0.1)``: where a component comes from."""
    if distribution is None:
        return f"plugin '{plugin}' (registered directly, not from an installed package)"
    return f"plugin '{plugin}' (package {distribution})"


def _dist_of(ep: Any) -> str | None:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None
    return f"{dist.name} {dist.version}"


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    """Load the ``llmulator`` entry points one by one: a plugin that fails to import is recorded, not fatal.

    The same entry point seen twice from one distribution (an editable install also visible through its
    source tree's ``*.egg-info``) loads once; two distributions claiming one entry-point name are an error.
    """
    from .entrypoints import entry_points  # what importlib.metadata finds, without importing it (issue 17)
    for ep in entry_points(hookspecs.PROJECT):
        dist = _dist_of(ep)
        if ep.name in _DIST or (ep.name, "import") in _BROKEN:
            seen = _DIST.get(ep.name)
            if seen is not None and dist is not None and seen.split()[0] != dist.split()[0]:
                raise UserError(f"two installed packages register the llmulator plugin '{ep.name}': "
                                f"{seen} and {dist}; uninstall one of them (`pip uninstall ...`)")
            continue
        if pm.is_blocked(ep.name) or pm.get_plugin(ep.name) is not None:
            continue
        try:
            plugin = ep.load()
        except Exception as e:  # noqa: BLE001 - one broken plugin must not take the tool down
            _BROKEN[ep.name, "import"] = (f"{origin(ep.name, dist)} failed to import ({ep.value}): "
                                f"{type(e).__name__}: {e}")
            continue
        pm.register(plugin, name=ep.name)
        _DIST[ep.name] = dist


def manager() -> pluggy.PluginManager:
    global _PM
    if _PM is None:
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        if not os.environ.get("LLMULATOR_NO_ENTRY_POINTS"):
            _load_entry_points(pm)
        _PM = pm
    return _PM


def reset() -> None:
    """Forget loaded plugins (tests)."""
    global _PM
    _PM = None
    _REG.clear()
    _DIST.clear()
    _BROKEN.clear()


def register_plugin(obj: Any, name: str | None = None, distribution: str | None = None) -> None:
    """Register a plugin object directly (for scripts and tests); ``distribution`` (``"name version"``)
    is what failures of its components are blamed on."""
    pm = manager()
    pm.register(obj, name=name)
    if distribution is not None:
        _DIST[pm.get_name(obj)] = distribution
    _REG.clear()


def _name_of(factory: Any) -> str:
    name = getattr(factory, "name", None)
    if not isinstance(name, str):
        raise TypeError(f"component factory {factory!r} has no string attribute 'name'")
    return name


def components(kind: str) -> dict[str, Registered]:
    """Name -> registered component of one kind (``"estimators"``, ..., ``"trainers"``), in registration
    order; that kind's ``register_*`` hooks run on the first call."""
    if kind not in _REG:
        _REG[kind] = _collect(kind)
    return _REG[kind]


def _collect(kind: str) -> dict[str, Registered]:
    pm = manager()
    found: dict[str, Registered] = {}
    hook = getattr(pm.hook, f"register_{kind}")
    for impl in hook.get_hookimpls():
        plugin_name = pm.get_name(impl.plugin) or repr(impl.plugin)
        dist = _DIST.get(plugin_name)
        mine: list[Registered] = []

        def register(factory, _plugin=plugin_name, _dist=dist, _mine=mine):
            _mine.append(Registered(kind, _name_of(factory), factory, _plugin, _dist))

        try:
            _call(impl, register=register)
        except Exception as e:  # noqa: BLE001 - a broken hook loses its own components only
            _BROKEN[plugin_name, kind] = (f"{origin(plugin_name, dist)}: its register_{kind} hook raised "
                                          f"{type(e).__name__}: {e}")
            continue
        for r in mine:
            other = found.get(r.name)
            if other is not None:
                raise UserError(
                    f"two plugins register the {kind[:-1]} '{r.name}': {other.origin} and {r.origin}"
                    if other.plugin != r.plugin else
                    f"{r.origin} registers the {kind[:-1]} '{r.name}' twice")
            found[r.name] = r
    return found


def registry() -> dict[str, dict[str, Registered]]:
    """Every kind's components (:func:`components` of each kind in :data:`KINDS`)."""
    return {kind: components(kind) for kind in KINDS}


def broken() -> list[str]:
    """What went wrong loading plugins (a module that did not import, a hook that raised), one line each
    naming the plugin and its package; the components concerned are missing from :func:`registry`."""
    registry()
    return list(_BROKEN.values())


def names(kind: str) -> list[str]:
    return list(components(kind))


def entry(kind: str, name: str) -> Registered:
    entries = components(kind)
    if name not in entries:
        known = ", ".join(entries) or "none"
        extra = "".join(f"\n  note: {why}" for why in _BROKEN.values())
        raise UserError(f"unknown {kind[:-1]} '{name}' (registered: {known}); see `llmulator plugins`{extra}")
    return entries[name]


def get(kind: str, name: str) -> Any:
    return entry(kind, name).get()


def blame(kind: str, name: str) -> str:
    """Whom to tell when the component ``name`` raises: its plugin and package, not llmulator
    (unless it is one of llmulator's own)."""
    r = components(kind).get(name)
    if r is None:
        return f"a bug in the plugin that provides the {kind[:-1]} '{name}'"
    if r.distribution is not None and r.distribution.split()[0] == BUILTIN_DIST:
        return (f"a bug in llmulator's built-in {r.origin}; please report it with the command and the "
                "files used")
    return f"a bug in {r.origin}, not in llmulator; report it to that plugin's authors"


def _call(impl: Any, **kwargs: Any) -> Any:
    """Call one hook implementation the way pluggy does (it may take a subset of the hook's arguments)."""
    return impl.function(*[kwargs[a] for a in impl.argnames])


def add_commands(subparsers: Any) -> None:
    """Every plugin's ``register_commands`` in pluggy's call order; one that raises loses its verbs only."""
    pm = manager()
    for impl in reversed(pm.hook.register_commands.get_hookimpls()):
        plugin_name = pm.get_name(impl.plugin) or repr(impl.plugin)
        try:
            _call(impl, subparsers=subparsers)
        except Exception as e:  # noqa: BLE001 - one broken plugin must not take the CLI down
            _BROKEN[plugin_name, "commands"] = (f"{origin(plugin_name, _DIST.get(plugin_name))}: its "
                                                f"register_commands hook raised {type(e).__name__}: {e}")


def add_trainers(make_targets: Callable[[], Any]) -> None:
    """A sub-parser for every registered :class:`~llmulator.hookspecs.Trainer`, plugin by plugin in pluggy's
    call order (as :func:`add_commands` adds verbs), its handler the trainer's ``train``. ``make_targets()``
    makes the sub-parsers object they go into (the ``train`` verb's); it is called before the first target
    only, so no trainer means no verb. A trainer whose factory or ``add_arguments`` raises loses its target
    only (``llmulator plugins`` names it)."""
    import argparse
    try:
        trainers = components("trainers")
    except UserError as e:  # two plugins register one target: `plugins` says so, the other verbs still work
        _BROKEN["", "trainers"] = str(e)
        return
    pm = manager()
    calls = [pm.get_name(i.plugin) or repr(i.plugin) for i in reversed(pm.hook.register_trainers.get_hookimpls())]
    targets = None
    for name, r in sorted(trainers.items(), key=lambda kv: calls.index(kv[1].plugin)):
        try:
            t = r.get()
            targets = targets if targets is not None else make_targets()
            p = targets.add_parser(name, help=t.help, description=t.description or None, epilog=t.epilog or None,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
            t.add_arguments(p)
        except Exception as e:  # noqa: BLE001 - one broken plugin must not take the CLI down
            if targets is not None and targets.choices.pop(name, None) is not None:  # and out of the help listing
                targets._choices_actions = [a for a in targets._choices_actions if a.dest != name]
            _BROKEN[r.plugin, "trainers"] = f"{r.origin}: its trainer '{name}' raised {type(e).__name__}: {e}"
            continue
        p.set_defaults(func=t.train)
