"""Registries that installed distributions extend through Python entry points.

A :class:`PluginRegistry` maps names to the built-in entries of one kind (algorithms,
sellers, reproductions), added with :meth:`PluginRegistry.add` when their modules are
imported, and to the entries that other distributions declare in the registry's entry-point
group (``collabecon.algorithms``, ``collabecon.sellers``, ``collabecon.reproductions``)::

    [project.entry-points."collabecon.algorithms"]
    my-algo = "my_package.module:MyAlgorithm"

The entry points are read once, with :func:`importlib.metadata.entry_points`, when the
registry is first consulted (a lookup, a membership test, a listing), never at import time.
Each is loaded and handed to the registry's ``accept`` function, which returns the value to
register or raises ``TypeError``/``ValueError`` saying what is wrong with the object. An
entry point that fails to load, gives an object ``accept`` refuses, or names an entry that is
already registered (a built-in, or another distribution's) is not registered: a
:class:`PluginWarning` names the group, the entry point and its distribution, and the
reason, in one line. It is a warning of :mod:`warnings`, not a record of the ``collabecon``
logger: a broken installation is the user's to fix, and a program that configures no logging
still sees it (the ``collabecon`` command prints it as one line). The layer that owns a registry owns its group and its ``accept``
(:data:`learning.algorithms.ALGORITHMS`,
:data:`games.price_discrimination.sellers.SELLERS`,
:data:`collabecon.reproductions.REPRODUCTIONS`).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

__all__ = ["PluginRegistry", "PluginWarning"]

V = TypeVar("V")


class PluginWarning(UserWarning):
    """An entry point of a plugin group that is not registered, and why."""


def _origin(entry: EntryPoint) -> str:
    """The entry point and the distribution that declares it, for messages."""
    dist = entry.dist
    where = (
        "an unknown distribution" if dist is None else f"distribution {dist.name} {dist.version}"
    )
    return f"entry point {entry.name!r} ({entry.value}) of {where}"


def _sort_key(entry: EntryPoint) -> tuple[str, str]:
    return ("" if entry.dist is None else entry.dist.name.lower(), entry.name)


class PluginRegistry(Mapping[str, V]):
    """Name -> entry: the built-in entries, then those of the entry-point group ``group``.

    Parameters
    ----------
    group : str
        The entry-point group read on first consultation.
    kind : str
        What an entry is, for messages (``"algorithm"``).
    accept : callable
        ``accept(name, loaded)``: the value to register for the entry point ``name`` whose
        object is ``loaded``; raises ``TypeError`` or ``ValueError`` to refuse it.
    entries : mapping, optional
        The built-in entries known at construction.
    before_plugins : callable, optional
        Called once before the entry points are read, to import the modules that add the
        remaining built-ins, so that a plugin can never take a built-in's name.
    """

    def __init__(
        self,
        group: str,
        kind: str,
        accept: Callable[[str, Any], V],
        entries: Mapping[str, V] | None = None,
        before_plugins: Callable[[], object] | None = None,
    ) -> None:
        self.group = group
        self.kind = kind
        self._accept = accept
        self._before = before_plugins
        self._builtin: dict[str, V] = dict(entries or {})
        self._plugins: dict[str, V] = {}
        self._origins: dict[str, str] = {}
        self._loaded = False
        self._loading = False
        self._lock = threading.RLock()

    def add(self, name: str, value: V) -> None:
        """Register the built-in entry ``value`` as ``name``.

        Raises
        ------
        ValueError
            If ``name`` is registered already.
        """
        if name in self._builtin or name in self._plugins:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._builtin[name] = value

    @property
    def plugins(self) -> dict[str, str]:
        """Name -> the entry point and distribution it came from, for every plugin entry."""
        self._load()
        return dict(self._origins)

    def reload_plugins(self) -> None:
        """Forget the plugin entries; the entry points are read again at the next consultation.

        For a process in which distributions were installed or removed after the registry
        was first consulted.
        """
        with self._lock:
            self._plugins.clear()
            self._origins.clear()
            self._loaded = False

    def __getitem__(self, name: str) -> V:
        """The entry registered as ``name``, built-in or plugin."""
        self._load()
        if name in self._builtin:
            return self._builtin[name]
        return self._plugins[name]

    def __iter__(self) -> Iterator[str]:
        """The names, the built-ins first, then the plugins."""
        self._load()
        return iter([*self._builtin, *self._plugins])

    def __len__(self) -> int:
        """The number of entries, built-in and plugin."""
        self._load()
        return len(self._builtin) + len(self._plugins)

    def __repr__(self) -> str:
        """The group and the names."""
        return f"PluginRegistry({self.group!r}, {list(self)})"

    def _load(self) -> None:
        """Read the group's entry points, once; a consultation while they load sees the rest."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                if self._before is not None:
                    self._before()
                builtin = set(self._builtin)
                for entry in sorted(entry_points(group=self.group), key=_sort_key):
                    self._register(entry, builtin)
                self._loaded = True
            finally:
                self._loading = False

    def _register(self, entry: EntryPoint, builtin: set[str]) -> None:
        origin = _origin(entry)
        name = entry.name
        if name in builtin:
            return self._refuse(
                origin, f"a plugin cannot replace the built-in {self.kind} {name!r}"
            )
        if name in self._origins:
            return self._refuse(origin, f"{name!r} comes already from {self._origins[name]}")
        try:
            loaded = entry.load()
        except Exception as exc:
            return self._refuse(origin, f"it failed to load: {type(exc).__name__}: {exc}")
        try:
            value = self._accept(name, loaded)
        except Exception as exc:
            return self._refuse(origin, f"it is no {self.kind}: {exc}")
        if self._builtin.get(name) is value:  # the plugin called the built-in registration
            del self._builtin[name]
        if name in self._builtin:
            return self._refuse(origin, f"its import registered another {self.kind} {name!r}")
        self._plugins[name] = value
        self._origins[name] = origin

    def _refuse(self, origin: str, reason: str) -> None:
        message = f"{self.group}: {origin} is not registered: {reason}"
        warnings.warn(message.replace("\n", " "), PluginWarning, stacklevel=5)
