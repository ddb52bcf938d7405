"""Every release gate of musiceval in one namespace: ``from musiceval.evals.release_gates import *``
in a repository's ``evals/test_musiceval.py`` collects them all (see :mod:`musiceval.evals`)."""
from __future__ import annotations

from importlib import import_module

from musiceval.evals import MODULES

__all__: list[str] = []
for _name in MODULES:
    _module = import_module(_name)
    for _attr in _module.__all__:
        if _attr in __all__:
            raise ImportError(f"{_name}.{_attr}: the name is taken by another gate module; rename it")
        globals()[_attr] = getattr(_module, _attr)
        __all__.append(_attr)
