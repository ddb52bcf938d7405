"""Registries: add a metric, an answer format, a protocol, a model adapter (and its family hooks),
a text encoder, a choice matcher, a scorer or a command with one decorator; every one is a :class:`Registry`.

Modelled on inspect_ai's ``@metric`` / ``@scorer``: a module registers what it defines when it is
imported, and every consumer (the ``musiceval score`` CLI, the gates in ``evals/``, the suite
config) looks names up here instead of in if-chains. A package outside musiceval registers its
own entries by exposing a module under the entry-point group of the registry (for example
``[project.entry-points."musiceval.metrics"] chrf = "mypkg.chrf"``); the registry imports those
modules the first time it is asked for its names.

>>> colours = Registry("colour")
>>> @colours.register("red")
... def red():
...     return "#f00"
>>> colours.get("red")()
'#f00'
>>> colours.get("rde")
Traceback (most recent call last):
...
KeyError: "unknown colour 'rde'; did you mean 'red'? (registered: red)"
"""
from __future__ import annotations

import difflib
import importlib
from typing import Callable, Generic, Iterable, Iterator, Mapping, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one kind, filled by decorators; builtin modules and entry points are
    imported lazily on the first lookup."""

    def __init__(self, kind: str, *, builtin_modules: Iterable[str] = (), entry_point_group: str | None = None,
                 lazy_modules: Mapping[str, str] | None = None):
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._builtin_modules = tuple(builtin_modules)
        self._entry_point_group = entry_point_group
        #: name -> module that registers it, imported only when that name is looked up (a model
        #: adapter that imports torch is not loaded to list the adapters or to load another)
        self._lazy = dict(lazy_modules or {})
        self._loaded = False

    def register(self, name: str, entry: T | None = None, *, replace: bool = False) -> Callable[[T], T] | T:
        """``@registry.register("name")`` on a function or class, or ``registry.register("name", obj)``.

        Registering a name twice is an error unless ``replace=True`` (a test or a plugin that
        deliberately overrides a builtin).
        """
        if not name or not isinstance(name, str):
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")

        def add(obj: T) -> T:
            if name in self._entries and self._entries[name] is not obj and not replace:
                raise ValueError(f"{self.kind} {name!r} is already registered; pass replace=True to override it")
            self._entries[name] = obj
            return obj

        return add(entry) if entry is not None else add

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for module in self._builtin_modules:
            importlib.import_module(module)
        if self._entry_point_group:
            from importlib.metadata import entry_points

            for ep in entry_points(group=self._entry_point_group):
                ep.load()

    def get(self, name: str) -> T:
        self._load()
        if name not in self._entries and name in self._lazy:
            importlib.import_module(self._lazy[name])
        try:
            return self._entries[name]
        except KeyError:
            known = self.names()
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise KeyError(f"unknown {self.kind} {name!r}{hint} (registered: {', '.join(sorted(known))})") from None

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        """Every name, those of lazy modules not imported yet included."""
        self._load()
        return list(dict.fromkeys([*self._entries, *self._lazy]))

    def items(self) -> Iterator[tuple[str, T]]:
        """Every entry (imports the lazy modules)."""
        self._load()
        for name, module in self._lazy.items():
            if name not in self._entries:
                importlib.import_module(module)
        return iter(list(self._entries.items()))
