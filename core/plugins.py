"""The plugin manager: loads every plugin from the ``llmulator`` entry-point group.

Built-in plugins (package ``llmulator_plugins``) are registered through the
same entry points as third-party ones, so they use exactly the public
contract. Components are registered as factories and built lazily.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import attrs
import pluggy

from . import hookspecs
from .errors import UserError

KINDS = ("estimators", "profilers", "calibrators", "generators")


@attrs.define
class Registered:
    kind: str
    name: str
    factory: Callable[[], Any]
    plugin: str
    instance: Any = None

    def get(self) -> Any:
        if self.instance is None:
            self.instance = self.factory()
        return self.instance


_PM: pluggy.PluginManager | None = None
_REG: dict[str, dict[str, Registered]] | None = None


def manager() -> pluggy.PluginManager:
    global _PM
    if _PM is None:
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        if not os.environ.get("LLMULATOR_NO_ENTRY_POINTS"):
            pm.load_setuptools_entrypoints(hookspecs.PROJECT)
        _PM = pm
    return _PM


def reset() -> None:
    """Forget loaded plugins (tests)."""
    global _PM, _REG
    _PM = None
    _REG = None


def register_plugin(obj: Any, name: str | None = None) -> None:
    """Register a plugin object directly (for scripts and tests)."""
    global _REG
    manager().register(obj, name=name)
    _REG = None


def _name_of(factory: Any) -> str:
    name = getattr(factory, "name", None)
    if not isinstance(name, str):
        raise TypeError(f"component factory {factory!r} has no string attribute 'name'")
    return name


def registry() -> dict[str, dict[str, Registered]]:
    global _REG
    if _REG is None:
        pm = manager()
        reg: dict[str, dict[str, Registered]] = {k: {} for k in KINDS}
        for kind in KINDS:
            hook = getattr(pm.hook, f"register_{kind}")
            for impl in hook.get_hookimpls():
                plugin_name = pm.get_name(impl.plugin) or repr(impl.plugin)

                def register(factory, _kind=kind, _plugin=plugin_name):
                    n = _name_of(factory)
                    reg[_kind][n] = Registered(_kind, n, factory, _plugin)

                impl.function(register=register)
        _REG = reg
    return _REG


def names(kind: str) -> list[str]:
    return list(registry()[kind])


def get(kind: str, name: str) -> Any:
    entries = registry()[kind]
    if name not in entries:
        known = ", ".join(entries) or "none"
        raise UserError(f"unknown {kind[:-1]} '{name}' (registered: {known}); see `llmulator plugins`")
    return entries[name].get()


def add_commands(subparsers: Any) -> None:
    manager().hook.register_commands(subparsers=subparsers)
